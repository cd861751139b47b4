# Compile through ccache when it is found (zcoll's own builds only: the top-level CMakeLists.txt includes
# this before any target is defined, and tests/cmake/ccache_test.cmake builds a small project through it to check
# that a changed header is always rebuilt).
#
#   ZCOLL_CCACHE=ON|OFF   use ccache where it is found (ON); ccache absent or OFF, compilers run directly
#
# The launcher is set for C++ and CUDA (nvcc) unless the caller chose one (CMAKE_<LANG>_COMPILER_LAUNCHER).
# ccache's settings travel with the launcher, so the user's ccache.conf keeps the rest (cache size and
# place); correctness never depends on them, since ccache hashes the compiler, its options and the
# contents of every file the compilation reads:
#   base_dir=<source dir>       paths below the source folder are hashed relative to the build folder,
#                               so a fresh clone elsewhere (CI) reuses objects compiled in another clone
#   sloppiness=pch_defines,time_macros
#                               what ccache's manual requires to cache compilations that use a GCC
#                               precompiled header (-include cmake_pch.hxx): the .gch is hashed by content
#                               either way; no file time is trusted instead of a file's contents
# -fdebug-prefix-map=<source dir>=. makes the debug information of the sanitizer builds name files
# relative to the source folder, so those objects do not depend on where the clone is (and ccache then
# leaves the working directory out of the hash, as its manual describes).
option(ZCOLL_CCACHE "Compile zcoll's own programs through ccache when it is found" ON)

function(zcoll_use_ccache source_dir)
  if(NOT ZCOLL_CCACHE)
    return()
  endif()
  find_program(ZCOLL_CCACHE_PROGRAM ccache)
  if(NOT ZCOLL_CCACHE_PROGRAM)
    message(STATUS "zcoll: ccache not found, compiling without a cache")
    return()
  endif()
  set(launcher "${CMAKE_COMMAND}" -E env "CCACHE_BASEDIR=${source_dir}"
               "CCACHE_SLOPPINESS=pch_defines,time_macros" "${ZCOLL_CCACHE_PROGRAM}")
  foreach(lang CXX CUDA)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER "${launcher}" PARENT_SCOPE)
    endif()
  endforeach()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fdebug-prefix-map=${source_dir}=.>)
  message(STATUS "zcoll: compiling through ${ZCOLL_CCACHE_PROGRAM}")
endfunction()
