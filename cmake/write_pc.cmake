# Writes ctorch.pc for the prefix being installed to (run by `cmake --install`, see
# install.cmake): CT_PC_IN, CT_PC_OUT, CT_SYSTEM_LIBDIRS (the linker's own
# directories) and the install directories are set by the caller.
get_filename_component(ct_libdir "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}" ABSOLUTE)
set(ct_system_dirs)
foreach(dir ${CT_SYSTEM_LIBDIRS})
  get_filename_component(dir "${dir}" ABSOLUTE)
  list(APPEND ct_system_dirs "${dir}")
endforeach()
list(FIND ct_system_dirs "${ct_libdir}" ct_found) # (install scripts run without policies: no IN_LIST)
if(ct_found GREATER -1)
  set(CT_PC_RPATH "")
else()
  set(CT_PC_RPATH " -Wl,-rpath,\${libdir}")
endif()
configure_file("${CT_PC_IN}" "${CT_PC_OUT}" @ONLY)
