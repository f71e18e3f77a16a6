#!/usr/bin/env bash
# Installs what pixflow needs to build on Debian 12 (as root, or with sudo), skipping what is
# already there. The CUDA Toolkit is not a Debian package: when nvcc is found (on PATH or in
# /usr/local/cuda/bin), the CUDA implementations are built too.
set -euo pipefail
packages=(cmake ninja-build g++ make pkg-config file
          libopenimageio-dev openimageio-tools python3-imath  # OIIO's CMake package names /usr/bin/iconvert, Imath's its Python module
          libpng-dev libjpeg62-turbo-dev  # load/save's own PNG and JPEG codecs (plugins/io/kernels/png.cpp, jpeg.cpp)
          libtbb-dev libboost-dev libboost-filesystem-dev libtomlplusplus-dev libgtest-dev libgmock-dev
          libcli11-dev nlohmann-json3-dev
          clang libc++-dev libc++abi-dev  # clang + libc++: the SDK test builds a plugin with them
          clang-format  # the layout check (scripts/format.sh --check, CTest Style.SourcesAreClangFormatted)
          libclang-rt-14-dev libomp-dev   # clang's sanitizer and libFuzzer runtimes, its OpenMP (scripts/fuzz.sh)
          pybind11-dev python3-dev python3-pytest python3-numpy  # the Python module (python/) and its tests
          libopenmpi-dev openmpi-bin)  # batches over MPI ranks (PIXFLOW_WITH_MPI, docs/mpi.md) and their mpiexec tests
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
