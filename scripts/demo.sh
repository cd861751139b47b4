#!/usr/bin/env bash
# The main job: install what is missing, build zcoll-bench (release, -march=native), and compare the
# codecs on the real fields bundled in bench/data, beside a memcpy of the same buffer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target zcoll-bench
bench=build/release/bench/zcoll-bench
mkdir -p out
"$bench" codec --input bench/data/navy_winds_uwnd_132x73x144.f32 --dims 132,73,144 --type f32 \
  --codec fzlight,highratio-1d,highratio-2d,highratio-3d,fp16,int8,identity --rel 1e-2,1e-3,1e-4 --repeat 7 --csv out/demo-navy.csv --json out/demo-navy.json
echo
"$bench" codec --input bench/data/echam5_t_17x96x192.f32 --dims 17,96,192 --type f32 \
  --codec fzlight,highratio-1d,highratio-2d,highratio-3d,fp16,int8,identity --rel 1e-2,1e-3,1e-4 --repeat 7 --csv out/demo-echam5.csv --json out/demo-echam5.json
echo
echo "CSV and JSON in out/; 'build/release/bench/zcoll-bench --help' for more."
