#!/usr/bin/env bash
# Builds and runs every test (CMakePresets.json, docs/reliability.md); CI runs exactly this:
#   release  -march=native: every test on the native code paths (AVX2, and AVX-512 where the CPU has
#            it) at -O2/-O3, zcoll-bench and its tests, the examples, the CUDA build, the header,
#            compile-fail, package and ccache checks
#   asan     every test under address + undefined-behaviour sanitizers, built by clang 14 (portable
#            paths, and the AVX2 and AVX-512 variants of the vector-path tests), MPI under mpirun with 1,
#            2, 3, 4 and 7 ranks: GCC builds the release preset, so every test compiles with both compilers
#   fuzz     every codec's decode and round-trip libFuzzer target for ZCOLL_FUZZ_SECONDS (default 10)
#            seconds each, from the seed corpora (fuzz/run; 0 leaves them out)
#   tsan     the threaded code under the thread sanitizer: transport::Local and the collectives, and
#            zcoll-mpi-tests under mpirun with 1, 2, 3, 4 and 7 ranks
# Compilers run through ccache where it is installed (cmake/ZcollCcache.cmake). A quick subset of an
# existing release build: ctest --preset release -L quick. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# The wall time of each stage, for the summary at the end (CI must stay under 35 minutes cold).
stage_times=()
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  stage_times+=("$(printf '%-14s %4d s' "$name" $((SECONDS - start)))")
}

stage "dependencies" scripts/install-deps.sh
jobs=$(nproc)
fuzz_seconds=${ZCOLL_FUZZ_SECONDS:-10}
[[ $fuzz_seconds =~ ^[0-9]+$ ]] ||
  { echo "scripts/test.sh: ZCOLL_FUZZ_SECONDS must be a whole number of seconds, not '$fuzz_seconds'" >&2; exit 2; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One preset: configure, build, test; the ctest output is kept for the totals below.
run_preset() {
  local preset=$1
  echo "=== zcoll tests: $preset"
  stage "$preset build" bash -c "cmake --preset $preset >/dev/null && cmake --build --preset $preset -j $jobs"
  stage "$preset tests" bash -c "ctest --preset $preset -j $jobs | tee $logs/ctest-$preset.log; exit \${PIPESTATUS[0]}"
}

run_preset release
run_preset asan
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "=== zcoll tests: fuzz ($fuzz_seconds s per codec and target)"
  stage "fuzz" bash -c "fuzz/run --seconds $fuzz_seconds | tee $logs/fuzz.log; exit \${PIPESTATUS[0]}"
fi
run_preset tsan

# Totals of the whole run: ctest's "N tests failed out of M" and skipped tests per preset, fuzz inputs.
# Only a run in which nothing failed gets here (set -e and pipefail end it at the first failure).
tests=$(awk '/tests failed out of/ { n += $NF } END { print n + 0 }' "$logs"/ctest-*.log)
skipped=$(grep -h '(Skipped)$' "$logs"/ctest-*.log | wc -l)
inputs=0
[ -f "$logs/fuzz.log" ] && inputs=$(awk '$4 == "inputs" { n += $3 } END { print n + 0 }' "$logs/fuzz.log")
echo "zcoll: ${inputs} fuzz inputs executed"
echo "ci: $((tests - skipped)) passed, 0 failed, ${skipped} skipped"
echo "ci: wall time per stage:"
printf '  %s\n' "${stage_times[@]}"
