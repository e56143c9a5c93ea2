# Every module folder is one OBJECT library (collie_<name>); collie_link_library() links all of
# them twice, both times whole, so static registrars (the backends') are kept:
#   collie_shared  libcollie.so, what `cmake --install` ships (collie::collie). Modules compile
#                  with hidden visibility: it exports only what core/export.h's COLLIE_API marks
#                  (the public API of the installed headers, cmake/Install.cmake).
#   collie         what in-tree programs (the collie command, tests, benchmarks) link: the same
#                  objects as a static archive linked whole, so they also reach internals.
# No program links both (two copies of every singleton: registries, logger, flight recorder).

add_library(collie_settings INTERFACE)
# Warnings are errors in CI and development; packagers building with another compiler whose new
# warnings would break the build can turn it off: -DCOLLIE_WERROR=OFF.
option(COLLIE_WERROR "Treat compiler warnings as errors" ON)
target_compile_options(collie_settings INTERFACE -Wall -Wextra $<$<BOOL:${COLLIE_WERROR}>:-Werror>)
target_include_directories(collie_settings INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)

# collie_module(NAME SOURCES a.cpp ... [DEPS targets...] [PRIVATE_DEPS targets...])
function(collie_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(collie_${name} OBJECT ${M_SOURCES})
  set_target_properties(collie_${name} PROPERTIES CXX_VISIBILITY_PRESET hidden
                                                  VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(collie_${name} PUBLIC collie_settings ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  set_property(GLOBAL APPEND PROPERTY COLLIE_MODULES collie_${name})
endfunction()

function(collie_link_library)
  get_property(mods GLOBAL PROPERTY COLLIE_MODULES)
  set(include_dirs $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
                   $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)

  add_library(collie_shared SHARED)
  add_library(collie::collie ALIAS collie_shared)
  set_target_properties(collie_shared PROPERTIES OUTPUT_NAME collie VERSION ${PROJECT_VERSION}
                                                 SOVERSION 0 EXPORT_NAME collie)
  # fmt: core/log.h includes <fmt/format.h>; Threads: the API starts and joins threads. Both are
  # find_dependency()'d by collieConfig.cmake, which must list every PUBLIC dependency here.
  target_link_libraries(collie_shared PRIVATE ${mods} PUBLIC fmt::fmt Threads::Threads)
  # --exclude-libs: symbols of any static third-party archive linked in (a libgloo.a, where the
  # distribution ships one) stay internal too;
  # --no-undefined: the library resolves everything it uses itself.
  target_link_options(collie_shared PRIVATE LINKER:--exclude-libs,ALL LINKER:--no-undefined)
  target_include_directories(collie_shared PUBLIC ${include_dirs}
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/collie>)
  target_compile_features(collie_shared PUBLIC cxx_std_20)

  add_library(collie_static STATIC)
  set_target_properties(collie_static PROPERTIES OUTPUT_NAME collie_internal)
  target_link_libraries(collie_static PRIVATE ${mods} PUBLIC fmt::fmt Threads::Threads)
  add_library(collie INTERFACE)
  target_link_libraries(collie INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,collie_static>")
  target_include_directories(collie INTERFACE ${include_dirs})
  target_compile_features(collie INTERFACE cxx_std_20)
endfunction()
