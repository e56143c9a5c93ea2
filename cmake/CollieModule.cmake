# Every module folder is one OBJECT library (collie_<name>); collie_link_library() links all
# of them into the single shared libcollie, so static registrars (backends, wrappers) are kept.

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
  target_link_libraries(collie_${name} PUBLIC collie_settings ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  set_property(GLOBAL APPEND PROPERTY COLLIE_MODULES collie_${name})
endfunction()

function(collie_link_library)
  get_property(mods GLOBAL PROPERTY COLLIE_MODULES)
  add_library(collie SHARED)
  add_library(collie::collie ALIAS collie)
  set_target_properties(collie PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0
                                          EXPORT_NAME collie)
  target_link_libraries(collie PRIVATE ${mods} PUBLIC fmt::fmt Threads::Threads)
  target_include_directories(collie PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/collie>)
  target_compile_features(collie PUBLIC cxx_std_20)
endfunction()
