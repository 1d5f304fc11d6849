# Layering check: core/ calls nothing above it (autograd, cpu, ops, nn, ...).  Every
# header that src/core's files reach, directly or through the headers they include, must
# be core's own, the kernel ABI's (kernels/) or a public one (ctorch/); the op list
# (ops/ops.def, rows the kernel ABI numbers its ops by) is data.  Fails naming
# each include that breaks the rule.
#
#   cmake -DSRC=<a source tree's src dir> -P core_includes.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT SRC)
  message(FATAL_ERROR "usage: cmake -DSRC=<src dir> -P core_includes.cmake")
endif()
get_filename_component(SRC "${SRC}" ABSOLUTE)
file(GLOB todo ${SRC}/core/*.c ${SRC}/core/*.h)
if(NOT todo)
  message(FATAL_ERROR "no files in ${SRC}/core")
endif()
set(seen "")
set(bad "")
while(todo)
  list(POP_FRONT todo f)
  if(f IN_LIST seen)
    continue()
  endif()
  list(APPEND seen ${f})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(l ${lines})
    string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" inc "${l}")
    if(inc MATCHES "^(core|kernels)/")
      list(APPEND todo ${SRC}/${inc})
    elseif(NOT inc MATCHES "^ctorch/" AND NOT inc STREQUAL "ops/ops.def")
      string(APPEND bad "\n  ${f}: ${l}")
    endif()
  endforeach()
endwhile()
if(bad)
  message(FATAL_ERROR "core/ reaches headers from above it (only core/, kernels/ and "
                      "ctorch/ are allowed):${bad}")
endif()
list(LENGTH seen n)
message(STATUS "core/: ${n} files, every include within core/, kernels/ or ctorch/")
