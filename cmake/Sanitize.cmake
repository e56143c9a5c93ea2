# Sanitizer and fuzzing builds (issue 17). Both apply to every target defined after this file.
#   -DCOLLIE_SANITIZE=address,undefined   ASan + UBSan (UB aborts: -fno-sanitize-recover)
#   -DCOLLIE_SANITIZE=thread              TSan
#   -DCOLLIE_FUZZ=ON                      libFuzzer targets in tests/fuzz (clang only; adds
#                                         coverage instrumentation and ASan+UBSan by default)
option(COLLIE_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)
set(COLLIE_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined | thread")

if(COLLIE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "COLLIE_FUZZ=ON needs clang (libFuzzer): configure a separate build with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  if(NOT COLLIE_SANITIZE)
    set(COLLIE_SANITIZE "address,undefined")
  endif()
endif()

if(COLLIE_SANITIZE)
  if(NOT COLLIE_SANITIZE MATCHES "^(address|undefined|address,undefined|undefined,address|thread)$")
    message(FATAL_ERROR "COLLIE_SANITIZE='${COLLIE_SANITIZE}': use address,undefined or thread")
  endif()
  # -g1: line tables are all a report's stack needs; full -g only adds compile and link time.
  add_compile_options(-fsanitize=${COLLIE_SANITIZE} -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=${COLLIE_SANITIZE})
  if(COLLIE_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
