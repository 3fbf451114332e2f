# Writes the toolchain's version to OUT (a C++ source defining
# tpu::toolchainVersion()): the project version and, when SRC is a git
# checkout, `git describe` of it (below). Run at build time
# (cmake -P, from the tpu_version target in the top CMakeLists.txt), so that
# the version of a tool names the commit it was built from, not the one
# CMake was configured at. configure_file leaves OUT untouched when the text
# is the same, so an unchanged version rebuilds nothing.
#
#   cmake -DSRC=<source dir> -DGIT=<git or empty> -DPROJECT_VERSION=<x.y.z>
#         -DIN=<Version.cpp.in> -DOUT=<Version.cpp> -P TpuVersion.cmake
#
# `describe --long` names the commit even at a tag (v0.1.0-0-g<hash>). The
# tree is "-dirty" when tracked files differ from HEAD; `status` with
# --no-optional-locks tells without rewriting the index (`describe --dirty`
# refreshes and writes it, which a git command the user runs during the
# build could trip over).
set(TPU_TOOLCHAIN_VERSION ${PROJECT_VERSION})
if(GIT AND EXISTS ${SRC}/.git)
  execute_process(COMMAND ${GIT} describe --always --long
    WORKING_DIRECTORY ${SRC}
    OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET RESULT_VARIABLE result)
  execute_process(
    COMMAND ${GIT} --no-optional-locks status --porcelain
      --untracked-files=no
    WORKING_DIRECTORY ${SRC}
    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET RESULT_VARIABLE statusResult)
  if(result EQUAL 0 AND describe)
    if(statusResult EQUAL 0 AND changes)
      set(describe "${describe}-dirty")
    endif()
    set(TPU_TOOLCHAIN_VERSION "${PROJECT_VERSION} (${describe})")
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
