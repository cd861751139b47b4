#!/usr/bin/env bash
# Builds and runs every test: the release build (-march=native, the AVX2 paths) and the sanitizer
# build (address + undefined behaviour, the portable paths; the library tests and examples: the build-only
# checks and zcoll-bench run in the release build, CMakePresets.json). Exits non-zero on any failure.
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
