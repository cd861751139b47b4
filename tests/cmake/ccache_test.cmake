# ctest driver: ccache never makes a build use a stale object.
#   cmake -DZCOLL_SOURCE_DIR=... -DWORK_DIR=... -DCXX_COMPILER=... -DGENERATOR=... -P ccache_test.cmake
# Builds tests/cmake/ccache_project through zcoll's launcher with a cache of its own and checks, by running
# the program after each step:
#   1. a first build prints the values its headers hold;
#   2. a changed header (plain, then the precompiled one) is in the next build's program;
#   3. a header changed back is served from the cache (hits > 0) and the program has the old value again,
#      not the one last built;
#   4. a copy of the project in another folder, built in a new build folder, is served from the cache
#      (base_dir: what makes a fresh CI clone reuse objects) and prints its own values.
file(REMOVE_RECURSE "${WORK_DIR}")
set(ENV{CCACHE_DIR} "${WORK_DIR}/cache")
unset(ENV{CCACHE_DISABLE})
unset(ENV{CCACHE_RECACHE})
find_program(ccache ccache REQUIRED)

function(write_values source value pch_value)
  file(WRITE "${source}/value.hpp" "#pragma once\ninline constexpr int zcoll_value = ${value};\n")
  file(WRITE "${source}/pch_value.hpp" "#pragma once\ninline constexpr int zcoll_pch_value = ${pch_value};\n")
endfunction()

function(make_project source value pch_value)
  file(COPY "${CMAKE_CURRENT_LIST_DIR}/ccache_project/" DESTINATION "${source}")
  write_values("${source}" ${value} ${pch_value})
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${source}" -B "${source}/build" -G "${GENERATOR}"
                          "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DZCOLL_SOURCE_DIR=${ZCOLL_SOURCE_DIR}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
endfunction()

# Builds, runs, and checks the program's output and the number of cache hits of the build.
function(build_and_expect source expected hits_wanted)
  execute_process(COMMAND "${ccache}" --zero-stats OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${source}/build" OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND "${source}/build/ccache_check" OUTPUT_VARIABLE output COMMAND_ERROR_IS_FATAL ANY)
  string(STRIP "${output}" output)
  if(NOT output STREQUAL expected)
    message(FATAL_ERROR "${source}: the program printed '${output}', its headers hold '${expected}': a stale object")
  endif()
  execute_process(COMMAND "${ccache}" --print-stats OUTPUT_VARIABLE stats COMMAND_ERROR_IS_FATAL ANY)
  set(hits 0)
  foreach(kind direct_cache_hit preprocessed_cache_hit)
    if(stats MATCHES "(^|\n)${kind}\t([0-9]+)")
      math(EXPR hits "${hits} + ${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if(hits_wanted AND hits EQUAL 0)
    message(FATAL_ERROR "${source}: no compilation was served from the cache (ccache --print-stats:\n${stats})")
  endif()
  message(STATUS "${source}: '${output}', ${hits} cache hit(s)")
endfunction()

set(first "${WORK_DIR}/first")
make_project("${first}" 1 10)
build_and_expect("${first}" "1 10" FALSE)
write_values("${first}" 2 10)
build_and_expect("${first}" "2 10" FALSE)
write_values("${first}" 2 20)
build_and_expect("${first}" "2 20" FALSE)
write_values("${first}" 1 20)
build_and_expect("${first}" "1 20" TRUE)

set(second "${WORK_DIR}/second")
make_project("${second}" 1 10)
build_and_expect("${second}" "1 10" TRUE)
