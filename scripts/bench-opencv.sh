#!/usr/bin/env bash
# Issue 18's comparison: pixflow's CPU operators against OpenCV's, with 2 threads each.
#
# OpenCV is a benchmark comparison tool here, not a dependency of pixflow: this script installs
# Debian's python3-opencv (4.6 on Debian 12) when `import cv2` fails, and nothing else uses it.
#
#   scripts/bench-opencv.sh                                  # build/bin/pixflow, 5 rounds of 5
#   scripts/bench-opencv.sh --pixflow before=/tmp/old/bin/pixflow --pixflow after=build/bin/pixflow
#   scripts/bench-opencv.sh --ops gauss5x5 --rounds 9 --check
#   scripts/bench-opencv.sh --ops maxpool2x2,floyd_steinberg,chan_vese-1k   # pixflow side only
#   scripts/bench-opencv.sh --per-core [REV ...]             # CPU time of one core, see below
#
# The default mode (scripts/bench/opencv_compare.py) interleaves `pixflow bench` and the OpenCV
# calls in one run and reports wall-time medians. --per-core measures instead the CPU time one
# core spends in each kernel (scripts/bench/kernel_cpu_time.cpp, compiled here from the kernel
# sources of the working tree and of each git revision REV given, with the compiler policy of
# cmake/PixflowOperator.cmake) and OpenCV's calls the same way, one thread each: a figure that
# other work on a shared machine does not inflate (a thread waiting for a core spends no CPU
# time), at the price of not showing how two threads share the memory bus.
#
# Environment: PYTHON (the Python with numpy: /usr/bin/python3, Debian's, where apt installs cv2),
# CXX (g++).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
CXX=${CXX:-g++}
if ! "$PYTHON" -c 'import cv2' 2>/dev/null; then
  echo "bench-opencv: installing python3-opencv (a comparison tool for this benchmark only)" >&2
  apt-get install -y --no-install-recommends python3-opencv >/dev/null
fi
export PYTHONPATH="build/python${PYTHONPATH:+:$PYTHONPATH}"

if [ "${1:-}" != --per-core ]; then
  exec "$PYTHON" scripts/bench/opencv_compare.py "$@"
fi
shift

# kernel_cpu_time built from the kernels of a source tree ($1: a folder holding plugins/)
build_harness() {
  local src=$1 out=$2 objs=()
  local -A policy=(
    [plugins/gauss5x5/kernels/gauss5x5_cpu.cpp]="-ffp-contract=off -fno-trapping-math"
    [plugins/basic/kernels/grayscale.cpp]="-ffp-contract=off -fno-trapping-math"
    [plugins/integral/kernels/integral.cpp]=""
    [plugins/maxpool2x2/kernels/maxpool2x2.cpp]=""
    [plugins/floyd_steinberg/kernels/floyd_steinberg.cpp]=""
    [plugins/chan_vese/kernels/chan_vese_cpu.cpp]="-ffp-contract=fast -fno-math-errno -fno-trapping-math -fassociative-math -fno-signed-zeros"
  )
  local incs=(-I"$PWD/sdk/include")
  for f in "${!policy[@]}"; do incs+=(-I"$src/$(dirname "$f")"); done
  for f in "${!policy[@]}"; do
    # shellcheck disable=SC2086
    "$CXX" -O3 -DNDEBUG -std=c++20 -fopenmp-simd ${policy[$f]} "${incs[@]}" -c "$src/$f" -o "$out.$(basename "$f").o"
    objs+=("$out.$(basename "$f").o")
  done
  "$CXX" -O2 -std=c++20 "${incs[@]}" scripts/bench/kernel_cpu_time.cpp "${objs[@]}" -ltbb -o "$out"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
labels=(now)
build_harness "$PWD" "$work/now"
for rev in "$@"; do
  mkdir -p "$work/$rev"
  git archive "$rev" plugins | tar -x -C "$work/$rev"
  build_harness "$work/$rev" "$work/$rev/harness"
  labels+=("$rev")
done
for label in "${labels[@]}"; do
  exe=$work/now
  [ "$label" = now ] || exe=$work/$label/harness
  echo "== pixflow kernels of $label"
  "$exe" --repeat 5
done
echo "== OpenCV, one thread"
"$PYTHON" scripts/bench/opencv_compare.py --per-core
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
