# `cmake --install` installs libcollie, its public headers under include/collie (same relative
# paths as in the tree) and a package config so `find_package(collie)` works.
include(CMakePackageConfigHelpers)
install(TARGETS collie EXPORT collieTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET collie_cli)
  install(TARGETS collie_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
foreach(dir core device store comm debug metrics perf launch)
  install(DIRECTORY src/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/collie/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
foreach(dir monitored_barrier probes reports debug_server)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/collie/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT collieTargets NAMESPACE collie:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collie)
configure_package_config_file(cmake/collieConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/collieConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collie)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/collieConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/collieConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/collieConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collie)
