#!/usr/bin/env bash
# The Python module on the GPU machine (scripts/gpu-check.sh run calls this, from the repository
# root): build pixflow._pixflow for this machine's python3 (the one with PyTorch and CuPy), against
# the packed libpixflow_framework.so and the source tree's headers, then run
#   1. the module's pytest suite (python/tests) on the GPU: test_gpu.py must not skip here;
#   2. python/gpu/torch_roundtrip.py: torch tensor -> pixflow -> torch.from_dlpack, checked
#      against the CPU, transfer counts 0, and run() timed on a torch stream.
# Why build here: the module must match this python3 (3.12 here, 3.11 where the pack is made),
# and pybind11 is a pip package here (`python3 -m pybind11 --cmakedir`); the framework and
# plugins are not rebuilt (python/CMakeLists.txt builds on its own against a prebuilt library).
# Prints one line per step: ran, FAILED, or SKIPPED with the reason. Exit status: 1 when a step
# failed, 0 otherwise (a skipped step is printed, not failed: the lead reads the output).
# usage: python/gpu/check.sh PACK_DIR OUT_DIR
set -uo pipefail
pack=$1 out=$2
build=build-python-gpu
status=0
lib=$pack/build/lib/libpixflow_framework.so
py=$(command -v python3 || true)

skip() { echo "python: SKIPPED: $*"; exit 0; }
[ -n "$py" ] || skip "no python3 on PATH"
[ -f "$lib" ] || skip "$lib not found (run scripts/gpu-check.sh pack first)"
pybind11_dir=$("$py" -m pybind11 --cmakedir 2>/dev/null) || skip "pybind11 is not installed for $py (pip install pybind11)"
command -v cmake >/dev/null || skip "no cmake"
echo "python: $("$py" --version 2>&1) at $py, pybind11 $("$py" -m pybind11 --version 2>/dev/null), $(cmake --version | head -1)"

[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The compiler: Debian's/Ubuntu's g++ (or $PIXFLOW_PY_CXX), not whatever $CXX names. The GPU
# machine's $CXX (/opt/gcc/bin/g++) links libstdc++ statically: the module then exported its own
# libstdc++, which the framework's calls bound to (ostream << double crashed in set(), every
# exception path after it). The check after the build refuses such a module.
cxx=${PIXFLOW_PY_CXX:-$(command -v /usr/bin/g++ || command -v g++)}
echo "python: compiler $cxx ($("$cxx" -dumpfullversion 2>/dev/null))"
if ! { CXX="$cxx" cmake -S python -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$py" \
         -Dpybind11_DIR="$pybind11_dir" -DPIXFLOW_FRAMEWORK_LIBRARY="$PWD/$lib" &&
       cmake --build "$build" -j"$(nproc)"; } > "$out/python-build.log" 2>&1; then
  echo "python: module build FAILED (see $out/python-build.log):"
  grep -E "error|Error" "$out/python-build.log" | head -20
  exit 1
fi
module=$(ls "$build"/pixflow/_pixflow*.so)
echo "python: module built: $module"
if ! readelf -d "$module" | grep -q 'NEEDED.*libstdc++'; then
  echo "python: FAILED: $module does not load the shared libstdc++ (a static C++ runtime inside the module"
  echo "        would interpose the framework's); build it with the system g++ (PIXFLOW_PY_CXX)"
  exit 1
fi

export PYTHONPATH="$PWD/$build${PYTHONPATH:+:$PYTHONPATH}"
export PIXFLOW_BIN="$PWD/$pack/build/bin/pixflow" PIXFLOW_PLUGIN_DIR="$PWD/$pack/build/lib/pixflow/plugins"
export PIXFLOW_TEST_PLUGIN_DIR="$PWD/$pack/build/tests/test_plugins" PIXFLOW_SOURCE_DIR="$PWD" PIXFLOW_PLUGIN_PATH=
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

# 1. The pytest suite (test_install.py skips: there is no build tree to install from here).
"$py" -X faulthandler -m pytest -p no:cacheprovider -v -rs --tb=short python/tests > "$out/python-tests.log" 2>&1 || status=1
grep -E "^(SKIPPED|FAILED|ERROR) " "$out/python-tests.log" || true
if [ "$status" -ne 0 ]; then
  # What failed, on stdout (the logs come back packed, this is what the lead reads first).
  echo "python: pytest failed; its last lines:"
  tail -60 "$out/python-tests.log"
  if grep -q "Fatal Python error" "$out/python-tests.log" && command -v gdb >/dev/null; then
    crashed=$(grep -oE "python/tests/[a-z_]+\.py::[A-Za-z_0-9]+ " "$out/python-tests.log" | tail -1)
    echo "python: backtrace of $crashed under gdb:"
    gdb -q -batch -ex run -ex bt --args "$py" -m pytest -p no:cacheprovider -x ${crashed:-python/tests} 2>&1 | grep -E "^#|signal" | head -40
  elif grep -q "Fatal Python error" "$out/python-tests.log"; then
    crashed=$(grep -oE "python/tests/[a-z_]+\.py::[A-Za-z_0-9]+ " "$out/python-tests.log" | tail -1)
    echo "python: native backtrace of $crashed (no gdb here):"
    PIXFLOW_PY_BACKTRACE=1 "$py" -m pytest -p no:cacheprovider -x ${crashed:-python/tests} 2>&1 |
      sed -n '/native backtrace/,$p' | head -40 | c++filt
  fi
  if [ -n "${crashed:-}" ]; then
    echo "python: the suite without $crashed:"
    "$py" -m pytest -p no:cacheprovider -rs --tb=short --deselect "${crashed% }" python/tests 2>&1 | tail -40
  fi
fi
summary=$(tail -1 "$out/python-tests.log")
echo "python: pytest: $summary"
if grep -qE "^SKIPPED .*test_gpu.py" "$out/python-tests.log"; then
  echo "python: test_gpu.py skipped on the GPU machine: that is a failure of the check"
  status=1
fi

# 2. The torch round trip.
"$py" python/gpu/torch_roundtrip.py "$PIXFLOW_PLUGIN_DIR" 2>&1 | tee "$out/python-torch.txt"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || status=1
exit $status
