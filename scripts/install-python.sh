#!/usr/bin/env bash
# Installs the Python package zcoll into the user's Python (its user site-packages), from this source
# tree, with Debian's tools only and offline: apt packages (scripts/install-deps.sh), CMake, a C++ compiler.
#
#   scripts/install-python.sh                  # into /usr/bin/python3's user site-packages
#   PYTHON=python3.11 scripts/install-python.sh
#   scripts/install-python.sh --prefix DIR     # into DIR/zcoll instead (then PYTHONPATH=DIR)
#   ZCOLL_CUDA=ON scripts/install-python.sh     # also zcoll._zcoll_cuda, for CUDA tensors (needs nvcc and CCCL)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-/usr/bin/python3}
cuda=${ZCOLL_CUDA:-OFF}
case "$cuda" in ON|OFF) ;; *) echo "install-python.sh: ZCOLL_CUDA='$cuda'; expected ON or OFF" >&2; exit 2 ;; esac
target=""
if [ "${1:-}" = "--prefix" ]; then
  [ -n "${2:-}" ] || { echo "install-python.sh: --prefix needs a directory" >&2; exit 2; }
  target=$2
elif [ -n "${1:-}" ]; then
  echo "install-python.sh: unknown argument '$1' (expected --prefix DIR)" >&2
  exit 2
fi
scripts/install-deps.sh
[ -n "$target" ] || target=$("$python" -c 'import site; print(site.getusersitepackages())')
build=build/python-install
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v "$python")" \
  -DZCOLL_BUILD_TESTS=OFF -DZCOLL_BUILD_BENCH=OFF -DZCOLL_BUILD_EXAMPLES=OFF -DZCOLL_BUILD_TOOLS=OFF \
  -DZCOLL_BUILD_MPI_LIBRARY=OFF -DZCOLL_BUILD_PYTHON=ON -DZCOLL_INSTALL=ON -DZCOLL_PYTHON_INSTALL_DIR="$target" \
  -DZCOLL_ENABLE_CUDA="$cuda" >/dev/null
targets=(zcoll-python)
[ "$cuda" = OFF ] || targets+=(zcoll-python-cuda)  # a build without nvcc or CCCL has no such target: it fails here
cmake --build "$build" --target "${targets[@]}"
cmake --install "$build" --component python
cd /tmp && "$python" -c "import zcoll, sys; print('zcoll installed:', zcoll.__file__)" 2>/dev/null ||
  echo "zcoll installed into $target (put it on PYTHONPATH to import it)"
