# SPDX-License-Identifier: BSD-2-Clause
# Man pages: every man/<name>.<section>.md (pandoc Markdown, man/README.md) becomes
# <build>/man/<name>.<section> through `pandoc -s -t man` (options: man/README.md), as part of `all`,
# installed to ${CMAKE_INSTALL_MANDIR}/man<section>. Each further name on a page's NAME line
# (section 3: every function of the page) gets a link page `.so man<section>/<name>.<section>`,
# so `man iwarp_reg_mr` opens iwarp_verbs(3). Adding a page needs no change here.
#   IWARP_MAN=AUTO (default): built when pandoc is found; ON: configure fails without it; OFF.
set(IWARP_MAN AUTO CACHE STRING "Build and install the man pages with pandoc: AUTO, ON or OFF")
set_property(CACHE IWARP_MAN PROPERTY STRINGS AUTO ON OFF)
if(NOT IWARP_MAN MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "IWARP_MAN must be AUTO, ON or OFF, not '${IWARP_MAN}'")
endif()

if(NOT IWARP_MAN STREQUAL "OFF")
  find_program(IWARP_PANDOC pandoc)
  if(NOT IWARP_PANDOC)
    if(IWARP_MAN STREQUAL "ON")
      message(FATAL_ERROR "IWARP_MAN=ON but pandoc is not installed (apt-get install pandoc)")
    endif()
    message(STATUS "Man pages: not built, pandoc not found (apt-get install pandoc; IWARP_MAN=ON "
                   "makes this an error)")
  endif()
endif()

if(NOT IWARP_MAN STREQUAL "OFF" AND IWARP_PANDOC)
  file(GLOB iwarp_man_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/man/*.md)
  set(iwarp_man_outputs "")
  set(iwarp_man_dir ${PROJECT_BINARY_DIR}/man)
  file(MAKE_DIRECTORY ${iwarp_man_dir})
  foreach(src ${iwarp_man_sources})
    get_filename_component(file ${src} NAME)
    if(NOT file MATCHES "^([A-Za-z0-9_.+-]+)\\.([1-9])([a-z]*)\\.md$")
      continue()  # README.md and anything else not named <name>.<section>.md
    endif()
    set(page ${CMAKE_MATCH_1})
    set(sec ${CMAKE_MATCH_2}${CMAKE_MATCH_3})  # 3, or 3iwarp: the file name's suffix
    set(mandir man${CMAKE_MATCH_2})             # the directory: man3
    set(out ${iwarp_man_dir}/${page}.${sec})
    add_custom_command(OUTPUT ${out}
      COMMAND ${IWARP_PANDOC} -s -f markdown-smart -t man -V adjusting=l -M hyphenate=false -o ${out} ${src}
      DEPENDS ${src}
      COMMENT "pandoc man/${file}"
      VERBATIM)
    list(APPEND iwarp_man_outputs ${out})
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/${mandir})

    # Link pages for the other names of the NAME line ("a, b, c - what they do"), read at
    # configure time: a changed page re-runs the configure step.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    file(READ ${src} text)
    if(text MATCHES "\n# NAME[ \t]*\n+([^\n]*(\n[^\n]+)*)")
      string(REGEX REPLACE "<!--[^>]*-->" "" names "${CMAKE_MATCH_1}")
      string(REGEX REPLACE "\n" " " names "${names}")
      string(REGEX REPLACE " +- .*" "" names "${names}")
      string(REGEX REPLACE "\\\\_" "_" names "${names}")
      string(REGEX REPLACE "[ \t]*,[ \t]*" ";" names "${names}")
      foreach(name ${names})
        string(STRIP "${name}" name)
        if(name STREQUAL page OR NOT name MATCHES "^[A-Za-z0-9_.+-]+$")
          continue()
        endif()
        set(link ${iwarp_man_dir}/links/${name}.${sec})
        file(CONFIGURE OUTPUT ${link} CONTENT ".so ${mandir}/${page}.${sec}\n")
        install(FILES ${link} DESTINATION ${CMAKE_INSTALL_MANDIR}/${mandir})
      endforeach()
    endif()
  endforeach()
  add_custom_target(man ALL DEPENDS ${iwarp_man_outputs})
  list(LENGTH iwarp_man_outputs n)
  message(STATUS "Man pages: ${n} built with ${IWARP_PANDOC}")
endif()
