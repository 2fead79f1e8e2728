# IWARP_SANITIZE: ASan + UBSan for everything built in this tree; UB aborts the test.
if(IWARP_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(IWARP_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "IWARP_FUZZ needs clang (libFuzzer)")
  endif()
  # Instrument the library for coverage; the fuzz binaries add -fsanitize=fuzzer at link.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
