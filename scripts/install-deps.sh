#!/usr/bin/env bash
# Installs the Debian packages zcoll builds and tests with, if any is missing.
set -euo pipefail
packages=(g++ cmake ninja-build libfmt-dev catch2 libboost-mpi-dev libboost-context-dev openmpi-bin liblz4-dev libzstd-dev libblosc-dev libzfp-dev
          python3-matplotlib python3-numpy python3-dev pybind11-dev python3-torch python3-pytest python3-pytest-timeout clang-14 libclang-rt-14-dev libomp-14-dev gfortran ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "zcoll: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
