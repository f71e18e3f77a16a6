#!/usr/bin/env bash
# Quick start 1: install what is missing, build, and run the demo pipeline on a built-in
# synthetic image; the images go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
mkdir -p out
build/bin/pixflow run pipelines/blur.toml --set out.path=out/blur.png --profile --report out/blur-report.json
build/bin/pixflow run pipelines/blur.toml --set blur.sigma=0.1 --set out.path=out/source.png >/dev/null
build/bin/pixflow graph pipelines/blur.toml -o out/blur.dot
echo "demo: wrote out/source.png (sigma 0.1, nearly the input), out/blur.png, out/blur-report.json, out/blur.dot"
