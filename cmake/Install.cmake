# `cmake --install` installs libcollie (target collie_shared), its public headers under
# include/collie (same relative paths as in the tree), the collie command and a package config
# so `find_package(collie)` works.
include(CMakePackageConfigHelpers)
install(TARGETS collie_shared EXPORT collieTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET collie_cli)
  install(TARGETS collie_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The public API: the headers whose declarations libcollie.so exports (COLLIE_API,
# src/core/export.h) and nothing else, so every installed declaration links. A header added here
# marks its declarations COLLIE_API and includes only headers of this list (the install test
# compiles each installed header on its own and links the consumer against the library).
set(COLLIE_PUBLIC_HEADERS
  src/core/export.h src/core/dtype.h src/core/env.h src/core/error.h src/core/log.h
  src/core/reduce_kernel.h src/core/reduce_op.h src/core/tensor.h src/core/timeout.h
  src/device/device_runtime.h
  src/store/store.h src/store/hash_store.h src/store/file_store.h src/store/prefix_store.h
  src/store/tcp_store.h src/store/tcp_store_server.h
  src/stack/init.h src/comm/process_group.h src/comm/work.h src/comm/options.h src/comm/op.h
  src/comm/capabilities.h src/comm/registry.h src/comm/wrapper.h
  monitored_barrier/monitored_barrier.h)
foreach(h ${COLLIE_PUBLIC_HEADERS})
  get_filename_component(dir ${h} DIRECTORY)
  string(REGEX REPLACE "^src/" "" dir "${dir}")
  install(FILES ${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/collie/${dir})
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

# Every public dependency of collie_shared needs its find_dependency() in collieConfig.cmake.in;
# without it an installed consumer fails on an unknown imported target instead of a named package.
get_target_property(_collie_public collie_shared INTERFACE_LINK_LIBRARIES)
file(READ cmake/collieConfig.cmake.in _collie_config)
foreach(lib IN LISTS _collie_public)
  if(lib MATCHES "^([A-Za-z0-9_.+-]+)::")
    set(_pkg ${CMAKE_MATCH_1})
    if(NOT _collie_config MATCHES "find_dependency\\(${_pkg}[ )]")
      message(FATAL_ERROR "collie_shared links ${lib} PUBLIC but cmake/collieConfig.cmake.in has "
                          "no find_dependency(${_pkg})")
    endif()
  endif()
endforeach()
