#!/usr/bin/env bash
# Quick start 2: install what is missing, build, and run the whole test suite (CTest).
# CUDA tests report SKIPPED on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"
