#!/usr/bin/env bash
# The embedding API from an application's point of view (CTest runs this): install pixflow into a
# temporary prefix, build examples/embedding out of tree against it (find_package(pixflow),
# pixflow::pixflow) and run its program, which checks its own results. The benchmark next to it is
# built too when the CUDA toolkit is there; it runs on a GPU machine (scripts/gpu-check.sh run).
# usage: embedding_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"

echo "== install into a temporary prefix"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
[ -f "$tmp/prefix/include/pixflow/pixflow.hpp" ] || { echo "pixflow/pixflow.hpp is not installed"; exit 1; }

echo "== out-of-tree build of examples/embedding"
cmake -S "$src/examples/embedding" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build"

echo "== its program, with the installed plugins"
out=$(env -u PIXFLOW_PLUGIN_PATH "$tmp/build/embed")
echo "$out"
grep -q '^ok: 640x480 -> 320x240, twice$' <<<"$out" || { echo "the example did not report ok"; exit 1; }
echo "embedding example: built out of tree and ran"
