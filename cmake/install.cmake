# Installs the libraries and headers with the two ways to find them: a CMake package
# (find_package(ctorch 0.2) and ctorch::ctorch / ctorch::ctorch_static) and ctorch.pc.
include(CMakePackageConfigHelpers)
set(CT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ctorch)

install(TARGETS ctorch ctorch_static EXPORT ctorchTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS ctorch_run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The MPI plugin beside the library, where ct_dist_init looks for it (not a target
# users link: it is loaded).
if(CTORCH_HAVE_MPI_PLUGIN)
  install(TARGETS ctorch_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ctorchTargets NAMESPACE ctorch:: DESTINATION ${CT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ctorchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ctorchConfig.cmake INSTALL_DESTINATION ${CT_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same minor version satisfies.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ctorchConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ctorchConfig.cmake ${PROJECT_BINARY_DIR}/ctorchConfigVersion.cmake
  DESTINATION ${CT_CMAKE_DIR})

# ctorch.pc is written at install time, so that `cmake --install build --prefix P`
# puts P in it (the prefix given at configure time may not be the one used).  Outside
# the linker's default directories its Libs carry an rpath, so that a program built
# with `cc app.c $(pkg-config --cflags --libs ctorch)` finds libctorch.so when run.
# oneDNN has no .pc file of its own: the static library's users link it directly.
set(CT_PC_ONEDNN "")
if(CT_HAVE_ONEDNN)
  set(CT_PC_ONEDNN " -ldnnl")
endif()
set(CT_SYSTEM_LIBDIRS ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES} ${CMAKE_PLATFORM_IMPLICIT_LINK_DIRECTORIES})
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(CT_SYSTEM_LIBDIRS \"${CT_SYSTEM_LIBDIRS}\")
  set(CT_PC_ONEDNN \"${CT_PC_ONEDNN}\")
  set(CT_PC_IN \"${PROJECT_SOURCE_DIR}/cmake/ctorch.pc.in\")
  set(CT_PC_OUT \"${PROJECT_BINARY_DIR}/ctorch.pc\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/write_pc.cmake\")")
install(FILES ${PROJECT_BINARY_DIR}/ctorch.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
