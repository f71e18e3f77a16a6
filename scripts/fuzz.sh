#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan+UBSan) into build-fuzz/ and runs each
# for a bounded time, starting from the seed corpora: tests/fuzz/corpus/<format>, and for the
# pipeline front end also every example and error pipeline. New inputs go to a scratch folder,
# never into the repository; a finding (crash, sanitizer report, leak, timeout) fails the script
# and leaves the input that caused it in build-fuzz/findings/.
#
#   scripts/fuzz.sh              # 60 s per target (CI)
#   SECONDS_PER_TARGET=600 RUNS=10000000 scripts/fuzz.sh fuzz_pipeline   # a long run of one target
set -euo pipefail
cd "$(dirname "$0")/.."
per=${SECONDS_PER_TARGET:-60}
runs=${RUNS:--1}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p build-fuzz
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIXFLOW_FUZZ=ON \
    -DPIXFLOW_WITH_CUDA=OFF -DPIXFLOW_WITH_OIIO=OFF -DPIXFLOW_BUILD_TESTS=OFF >build-fuzz/build.log 2>&1 ||
    { tail -20 build-fuzz/build.log; exit 1; }
targets=("$@")
((${#targets[@]})) || targets=(fuzz_pipeline fuzz_codec_npy fuzz_codec_pgm fuzz_codec_ppm fuzz_codec_pfm fuzz_descriptor)
# Every plugin but chan_vese, whose CPU kernel templates use GCC's target_clones (clang 14 has it
# only for plain functions): the pipeline fuzzer then sees chan_vese as an unknown op.
plugins=$(ninja -C build-fuzz -t targets all | sed -n 's|^lib/pixflow/plugins/\(pixflow_[a-z0-9_]*\)\.so:.*|\1|p' |
    grep -v '^pixflow_chan_vese$' | sort -u)
cmake --build build-fuzz -j"$jobs" --target "${targets[@]}" $plugins >>build-fuzz/build.log 2>&1 ||
    { grep -E 'error|FAILED' build-fuzz/build.log | head -20; exit 1; }
mkdir -p build-fuzz/findings
export PIXFLOW_PLUGIN_PATH= ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
status=0
for t in "${targets[@]}"; do
    seeds=(tests/fuzz/corpus/${t#fuzz_codec_})
    [ "$t" = fuzz_pipeline ] && seeds=(tests/fuzz/corpus/pipeline pipelines pipelines/bench tests/errors)
    [ "$t" = fuzz_descriptor ] && seeds=(tests/fuzz/corpus/descriptor)
    work=$(mktemp -d)
    log=build-fuzz/$t.log
    set +e
    (cd build-fuzz && TMPDIR=$work "./bin/$t" -max_total_time="$per" -runs="$runs" -timeout=10 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix=findings/"$t"- "$work" "${seeds[@]/#/../}") >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    speed=$(grep -m1 'stat::average_exec_per_sec' "$log" | awk '{print $2}')
    if [ "$rc" -eq 0 ]; then
        echo "fuzz: $t: ${execs:-?} executions (${speed:-?}/s), no finding"
    else
        echo "fuzz: $t: FINDING (exit $rc) after ${execs:-?} executions; log $log, input in build-fuzz/findings/"
        grep -m20 -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|deadly|Test unit written' "$log" || tail -20 "$log"
        status=1
    fi
    rm -rf "$work"
done
exit $status
