#!/usr/bin/env bash
# Builds and runs every test (CMakePresets.json, docs/reliability.md):
#   release  -march=native: zcoll-bench and its tests, the examples, the tests that need an optimized
#            build (contraction, soak), the header, compile-fail and package checks
#   asan     every test under address + undefined-behaviour sanitizers (portable paths, and the AVX2
#            variant of the vector-path tests), MPI under mpirun with 1, 2, 3, 4 and 7 ranks
#   tsan     the threaded code (transport::Local, the collectives) under the thread sanitizer
#   fuzz     with ZCOLL_FUZZ_SECONDS=N: every codec's decode and round-trip fuzz targets for N seconds
#            each (fuzz/run; long runs: see docs/reliability.md)
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
for preset in release asan; do
  echo "=== zcoll tests: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
# Under the thread sanitizer CI runs transport::Local and the collectives; the MPI tests under it
# (`cmake --build --preset tsan && ctest --preset tsan`, docs/reliability.md) take a minute more than
# CI's 20 have left.
echo "=== zcoll tests: tsan"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs" --target zcoll-collective-tests
ctest --preset tsan -j "$jobs" -LE mpi
# The libFuzzer runs (a fourth build, clang's) are by hand or on request: ZCOLL_FUZZ_SECONDS=N runs every
# codec and target N seconds here. CI's 20 minutes no longer hold them beside the DLRM layer's builds;
# zcoll-tests replays the fuzz regression inputs through the same codec table under ASan.
if [ -n "${ZCOLL_FUZZ_SECONDS:-}" ]; then
  echo "=== zcoll tests: fuzz ($ZCOLL_FUZZ_SECONDS s per codec and target)"
  fuzz/run --seconds "$ZCOLL_FUZZ_SECONDS"
fi
