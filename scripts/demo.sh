#!/usr/bin/env bash
# The main job: install what is missing, build zcoll-bench (release, -march=native), compare the codecs on
# the real fields bundled in bench/data beside a memcpy of the same buffer, then run a compressed allreduce
# beside the uncompressed schedule: over a modelled 1 Gbit/s link between 4 local ranks (where compression
# pays), and over shared memory under mpirun beside native MPI (a fast link, where it does not). No root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target zcoll-bench
bench=build/release/bench/zcoll-bench
mkdir -p out
"$bench" codec --input bench/data/navy_winds_uwnd_132x73x144.f32 --dims 132,73,144 --type f32 \
  --codec fzlight,highratio-1d,highratio-2d,highratio-3d,fp16,int8,identity --reference sz3,szp --rel 1e-2,1e-3,1e-4 --repeat 7 --csv out/demo-navy.csv --json out/demo-navy.json
echo
"$bench" codec --input bench/data/echam5_t_17x96x192.f32 --dims 17,96,192 --type f32 \
  --codec fzlight,highratio-1d,highratio-2d,highratio-3d,fp16,int8,identity --reference sz3,szp --rel 1e-2,1e-3,1e-4 --repeat 7 --csv out/demo-echam5.csv --json out/demo-echam5.json
echo
# The navy field rotated per rank is each rank's gradient; 1 Gbit/s and 20 us a message per sender.
"$bench" coll --transport local:4 --link 1,20 --op allreduce --schedule ring --codec fzlight --rel 1e-4 \
  --sizes 4M:16M --input bench/data/navy_winds_uwnd_132x73x144.f32 --repeat 3 --csv out/demo-allreduce-1gbit.csv
echo
if command -v mpirun >/dev/null; then
  # Shared memory moves tens of GB/s: the codec's 1-5 GB/s is then the bottleneck, and native MPI wins.
  root_flag=(); [ "$(id -u)" = 0 ] && root_flag=(--allow-run-as-root)  # containers run as root
  mpirun --oversubscribe "${root_flag[@]}" -np 2 "$bench" coll --transport mpi --op allreduce --schedule ring --codec fzlight --rel 1e-4 \
    --sizes 4M:16M --input bench/data/navy_winds_uwnd_132x73x144.f32 --repeat 3 --csv out/demo-allreduce-shm.csv
  echo
fi
echo "CSV and JSON in out/; 'build/release/bench/zcoll-bench --help' for more."
