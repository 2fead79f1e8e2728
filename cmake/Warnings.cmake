# SPDX-License-Identifier: BSD-2-Clause
# Strict warnings for our own targets (third-party code is never compiled here).
function(iwarp_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wconversion -Wsign-conversion -Wmissing-prototypes
    -Wstrict-prototypes -Wvla -Wformat=2 -Wundef -Wpointer-arith -Wcast-qual
    -Wwrite-strings -Wimplicit-fallthrough)
  if(IWARP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
