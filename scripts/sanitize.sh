#!/usr/bin/env bash
# The whole test suite once more under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
# included): a CPU build (g++, no CUDA: the GPU check runs compute-sanitizer instead) in
# build-asan/. Any report fails a test, and so this script. tests/sanitizers/lsan.supp lists the
# only leaks accepted: third-party and thread-local allocations, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIXFLOW_SANITIZE=ON -DPIXFLOW_WITH_CUDA=OFF \
    >build-asan.log 2>&1 || { tail -20 build-asan.log; exit 1; }
cmake --build build-asan -j"$jobs" >>build-asan.log 2>&1 || { tail -40 build-asan.log; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
cd build-asan
# The SDK example test builds a third party's plugin out of tree: packaging, not memory safety.
ctest --output-on-failure -j"$jobs" -E '^SdkExample' 
