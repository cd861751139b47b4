#!/usr/bin/env bash
# Runs zcoll-bench codec on every field of a data folder at relative bounds 1e-2, 1e-3, 1e-4, one thread,
# and collects the rows in one CSV: the measurement behind docs/performance.md.
#   bench/run_fields.sh DATA_DIR [OUT_CSV] [extra zcoll-bench options...]
set -euo pipefail
data=${1:?usage: bench/run_fields.sh DATA_DIR [OUT_CSV] [options]}
out=${2:-out/fields.csv}
shift $(( $# >= 2 ? 2 : 1 ))
bench=${ZCOLL_BENCH:-build/release/bench/zcoll-bench}
mkdir -p "$(dirname "$out")"
rm -f "$out"
run() {  # file dims type [options]
  local file=$1 dims=$2 type=$3; shift 3
  local tmp; tmp=$(mktemp)
  "$bench" codec --input "$data/$file" --dims "$dims" --type "$type" --codec fzlight --rel 1e-2,1e-3,1e-4 \
    --repeat 7 --csv "$tmp" "$@" "${extra[@]}"
  if [ -f "$out" ]; then tail -n +2 "$tmp" >> "$out"; else cp "$tmp" "$out"; fi
  rm -f "$tmp"
  echo
}
extra=("$@")
run isabel_velmag_12x25x125x125.f32 12,25,125,125 f32
run navy_winds_uwnd_132x73x144.f32 132,73,144 f32
run echam5_t_17x96x192.f32 17,96,192 f32
run sperr_wmag_91x91x91.f32 91,91,91 f32
run levitus_temp_20x180x360_fill.f32 20,180,360 f32
run levitus_temp_20x180x360_fill.f32 20,180,360 f32 --fill -1e10
run penobscot_xl1155_601x1501.f32 601,1501 f32
run isabel_velmag_12x25x125x125.f64 12,25,125,125 f64
echo "rows in $out"
