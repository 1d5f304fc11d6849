# libctorch_mpi.so, the MPI backend of ct_dist_init (Note [The MPI plugin],
# src/dist/backend.h): built when CMake finds MPI, next to libctorch.so in the build
# tree and installed beside it, where ct_dist_init looks first.  Without MPI the
# library builds all the same and ct_dist_is_available() is false.
find_package(MPI COMPONENTS C QUIET)
# Where the library looks for it besides its own directory (src/dist/plugin.c): the
# install's libdir, and the build tree's (for its programs linked statically).
if(CMAKE_LIBRARY_OUTPUT_DIRECTORY)
  set(CT_PLUGIN_BUILD_DIR ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
else()
  set(CT_PLUGIN_BUILD_DIR ${PROJECT_BINARY_DIR})
endif()
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/dist/plugin.c PROPERTIES COMPILE_DEFINITIONS
  "CTORCH_INSTALL_LIBDIR=\"${CMAKE_INSTALL_FULL_LIBDIR}\";CTORCH_BUILD_LIBDIR=\"${CT_PLUGIN_BUILD_DIR}\"")
if(MPI_C_FOUND)
  add_library(ctorch_mpi MODULE ${PROJECT_SOURCE_DIR}/src/dist/mpi_plugin.c)
  target_include_directories(ctorch_mpi PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(ctorch_mpi PRIVATE MPI::MPI_C)
  # In this directory, so beside libctorch.so; only its entry point is exported.
  set_target_properties(ctorch_mpi PROPERTIES C_VISIBILITY_PRESET hidden)
  set(CTORCH_HAVE_MPI_PLUGIN ON)
  message(STATUS "ctorch: MPI ${MPI_C_VERSION} found, building the plugin libctorch_mpi.so")
else()
  set(CTORCH_HAVE_MPI_PLUGIN OFF)
  message(STATUS "ctorch: MPI not found, no distributed backend (libctorch_mpi.so) is built")
endif()
