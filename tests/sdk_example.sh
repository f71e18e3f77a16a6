#!/usr/bin/env bash
# The SDK from a user's point of view (CTest runs this): install pixflow into a temporary
# prefix, build sdk/examples/sobel out of tree against it with g++ (CUDA too when nvcc exists)
# and run its own tests and example pipeline, run its pipeline with the installed pixflow, then
# build the same plugin with clang++ and libc++ and check that the g++-built pixflow loads it and
# gets the same image; check that the tutorial shows every file of the example; and build, test
# and run what `pixflow new-operator` writes.
# usage: sdk_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
example="$src/sdk/examples/sobel"
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"

echo "== install into a temporary prefix"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
px="$tmp/prefix/bin/pixflow"
# (output captured first: grep -q closing a pipe early would fail the pipeline under pipefail)
ops=$(env -u PIXFLOW_PLUGIN_PATH "$px" ops)
grep -q '^gauss5x5' <<<"$ops" || { echo "installed pixflow does not find its plugins: $ops"; exit 1; }

echo "== g++ build of the example, out of tree"
cmake -S "$example" -B "$tmp/gcc" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/gcc"
(cd "$tmp/gcc" && ctest --output-on-failure)

echo "== its pipeline, with the installed pixflow"
cd "$tmp"
"$px" --plugin-path "$tmp/gcc/plugins" run "$example/sobel.toml" --backend cpu --set out.path="$tmp/gcc.pgm"

echo "== clang++ and libc++ build of the same plugin, loaded by the g++-built pixflow"
CXX=clang++ cmake -S "$example" -B "$tmp/clang" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_CXX_FLAGS="-stdlib=libc++" \
  -DCMAKE_MODULE_LINKER_FLAGS="-stdlib=libc++" -DSOBEL_WITH_CUDA=OFF -DPIXFLOW_BUILD_TESTS=OFF >/dev/null
cmake --build "$tmp/clang"
plugin="$tmp/clang/plugins/pixflow_sobel.so"
libs=$(ldd "$plugin")
grep -q 'libc++' <<<"$libs" || { echo "the clang plugin does not use libc++: $libs"; exit 1; }
listing=$("$px" --plugin-path "$plugin" plugins)
grep -A1 "loaded    $plugin" <<<"$listing" | grep -q 'sobel 1.0.0' || { echo "$listing"; exit 1; }
"$px" --plugin-path "$plugin" run "$example/sobel.toml" --backend cpu --set out.path="$tmp/clang.pgm"
cmp "$tmp/gcc.pgm" "$tmp/clang.pgm"
echo "sdk example: g++ and clang++/libc++ plugins agree byte for byte"

echo "== docs/writing-operators.md shows every file of the example, its subfolders included"
for f in $(cd "$example" && find . -type f | sed 's|^\./||' | sort); do
  grep -qxF "<!-- file: sdk/examples/sobel/$f -->" "$src/docs/writing-operators.md" ||
    { echo "docs/writing-operators.md does not show sdk/examples/sobel/$f"; exit 1; }
done

echo "== pixflow new-operator: the skeleton builds, its tests pass, its pipeline runs"
"$px" new-operator my_gain --dir "$tmp/my_gain"
cmake -S "$tmp/my_gain" -B "$tmp/my_gain/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null  # as `pixflow new-operator` says: no extra flags
cmake --build "$tmp/my_gain/build"
(cd "$tmp/my_gain/build" && ctest --output-on-failure)
(cd "$tmp/my_gain" && "$px" --plugin-path build/plugins run my_gain.toml --backend cpu)
[ -s "$tmp/my_gain/out/my_gain.pfm" ] || { echo "the skeleton's pipeline wrote nothing"; exit 1; }
echo "sdk example: new-operator skeleton builds and runs"
