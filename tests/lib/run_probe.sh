#!/usr/bin/env bash
# Runs collectives_probe under mpirun twice — plain MPI, then with libzcoll-mpi.so preloaded and the
# ZCOLL_ variables given — and compares the runs with check_probe.py (see there for what is checked).
#
#   run_probe.sh WORKDIR RANKS PROBE LIBRARY COMPRESSED [NAME=VALUE ...] -- MPIEXEC [FLAGS ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$1 ranks=$2 probe=$3 library=$4 compressed=$5
shift 5
settings=()
while [ "$1" != "--" ]; do settings+=("$1"); shift; done
shift
launcher=("$@")
values=5000

rm -rf "$work"
mkdir -p "$work/plain" "$work/preloaded"
"${launcher[@]}" -n "$ranks" "$probe" "$work/plain" "$values"

# Open MPI's mpirun passes variables to the ranks with -x (setting LD_PRELOAD on mpirun itself would
# preload the library into the launcher too); other launchers pass on their own environment.
if "${launcher[0]}" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
  exports=(-x "LD_PRELOAD=$library" -x "ZCOLL_REPORT=$work/report.json")
  for s in "${settings[@]}"; do exports+=(-x "$s"); done
  "${launcher[@]}" -n "$ranks" "${exports[@]}" "$probe" "$work/preloaded" "$values"
else
  env "${settings[@]}" "ZCOLL_REPORT=$work/report.json" LD_PRELOAD="$library" \
    "${launcher[@]}" -n "$ranks" "$probe" "$work/preloaded" "$values"
fi
/usr/bin/python3 "$here/check_probe.py" --ranks "$ranks" --plain "$work/plain" --preloaded "$work/preloaded" \
  --report "$work/report.json" --compressed "$compressed"
