#!/usr/bin/env bash
# Issue 18's comparison: pixflow's CPU operators against OpenCV's, interleaved in one run (see
# scripts/bench/opencv_compare.py for the method and the exact calls), with 2 threads each.
#
# OpenCV is a benchmark comparison tool here, not a dependency of pixflow: this script installs
# Debian's python3-opencv (4.6 on Debian 12) when `import cv2` fails, and nothing else uses it.
#
#   scripts/bench-opencv.sh                                  # build/bin/pixflow, 5 rounds of 5
#   scripts/bench-opencv.sh --pixflow before=/tmp/old/bin/pixflow --pixflow after=build/bin/pixflow
#   scripts/bench-opencv.sh --ops gauss5x5 --rounds 9 --check
#   scripts/bench-opencv.sh --ops maxpool2x2,floyd_steinberg,chan_vese-1k   # pixflow side only
#
# Environment: PYTHON (the Python with numpy: /usr/bin/python3, Debian's, where apt installs cv2).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
if ! "$PYTHON" -c 'import cv2' 2>/dev/null; then
  echo "bench-opencv: installing python3-opencv (a comparison tool for this benchmark only)" >&2
  apt-get install -y --no-install-recommends python3-opencv >/dev/null
fi
export PYTHONPATH="build/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" scripts/bench/opencv_compare.py "$@"
