#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan+UBSan, no CUDA) into build-fuzz/ and
# runs them from the seed corpora: tests/fuzz/corpus/<format>, and for the pipeline front end also
# every example and error pipeline. A finding (crash, sanitizer report, leak, timeout, uncaught
# exception) fails the script and leaves the input that caused it in build-fuzz/findings/.
#
#   scripts/fuzz.sh                    # CI: every target for 40 s, as many at once as there are
#                                      # cores; new inputs go to a scratch folder, never the tree
#   scripts/fuzz.sh fuzz_codec_npy ... # the same for some targets
#   scripts/fuzz.sh long [TARGET...]   # 10^7 executions per target, spread over every core
#                                      # (-jobs), growing build-fuzz/corpus/<target> run after run
#
# Environment: SECONDS_PER_TARGET (default 40; long: no limit), RUNS (long: executions per
# target, default 10000000), JOBS (default: the number of cores), PIXFLOW_FUZZ_PREBUILT=1 (use
# build-fuzz/ as it is: no setup, no build; for a long run on a machine with more cores).
#
# Targets: fuzz_pipeline (TOML text and --set overrides to a checked graph, every plugin but
# chan_vese), fuzz_codec_{npy,pgm,ppm,pfm,png,jpg} (the io plugin's codecs called directly, with a write
# and read-back round trip), fuzz_descriptor (the plugin descriptor validator).
set -euo pipefail
cd "$(dirname "$0")/.."
long=0
if [ "${1:-}" = long ]; then long=1; shift; fi
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
all=(fuzz_pipeline fuzz_codec_npy fuzz_codec_pgm fuzz_codec_ppm fuzz_codec_pfm fuzz_codec_png fuzz_codec_jpg fuzz_descriptor)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
    [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (targets: ${all[*]})" >&2; exit 2; }
done

started=$(date +%s)
if [ -n "${PIXFLOW_FUZZ_PREBUILT:-}" ]; then
    # Targets built elsewhere (another machine's build-fuzz/, for a long run on more cores):
    # neither setup.sh nor the build runs.
    for t in "${targets[@]}"; do [ -x "build-fuzz/bin/$t" ] || { echo "fuzz: build-fuzz/bin/$t is missing" >&2; exit 2; }; done
else
scripts/setup.sh
mkdir -p build-fuzz
# -O1 -gline-tables-only: OSS-Fuzz's flags (15% less compile time than -O2 -g for the framework's
# files; findings keep file:line). Kernels the targets never run are built plain (tests/fuzz).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIXFLOW_FUZZ=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DPIXFLOW_WITH_CUDA=OFF -DPIXFLOW_WITH_OIIO=OFF -DPIXFLOW_WITH_PYTHON=OFF -DPIXFLOW_BUILD_TESTS=OFF \
    >build-fuzz/build.log 2>&1 || { tail -20 build-fuzz/build.log; exit 1; }
# The pipeline fuzzer needs the plugins (their infer), every one but chan_vese, whose CPU kernel
# templates use GCC's target_clones (clang 14 has it only for plain functions): the pipeline
# fuzzer then sees chan_vese as an unknown op. The other targets need no plugin.
plugins=
if [[ " ${targets[*]} " == *" fuzz_pipeline "* ]]; then
    plugins=$(ninja -C build-fuzz -t targets all | sed -n 's|^lib/pixflow/plugins/\(pixflow_[a-z0-9_]*\)\.so:.*|\1|p' |
        grep -v '^pixflow_chan_vese$' | sort -u)
fi
# shellcheck disable=SC2086 # $plugins is a list
cmake --build build-fuzz -j"$jobs" --target "${targets[@]}" $plugins >>build-fuzz/build.log 2>&1 ||
    { grep -E 'error|FAILED' build-fuzz/build.log | head -20; exit 1; }
echo "fuzz: built ${targets[*]} in $(($(date +%s) - started)) s"
fi

mkdir -p build-fuzz/findings
touch build-fuzz/findings/.since # what this run finds is newer
export PIXFLOW_PLUGIN_PATH= PIXFLOW_PLUGIN_CACHE=off
# intercept_tls_get_addr=0: as in scripts/sanitize.sh (GCC 12's DTLS misreading, which crashed the
# leak tracer at exit).
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1
symbolizer=/usr/lib/llvm-14/bin/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH=$symbolizer

seeds_of() { # the seed folders of a target, relative to the top folder
    case "$1" in
    fuzz_pipeline) echo tests/fuzz/corpus/pipeline pipelines pipelines/bench tests/errors ;;
    fuzz_descriptor) echo tests/fuzz/corpus/descriptor ;;
    *) echo "tests/fuzz/corpus/${1#fuzz_codec_}" ;;
    esac
}
dict_of() { # a libFuzzer dictionary of the format's keywords, where there is one
    local d=tests/fuzz/${1#fuzz_}.dict
    [ "$1" = fuzz_codec_pgm ] || [ "$1" = fuzz_codec_ppm ] && d=tests/fuzz/codec_pnm.dict
    [ -f "$d" ] && echo "-dict=$PWD/$d"
    return 0
}

# One target, in build-fuzz/run/<target>/ (libFuzzer's -jobs logs land in the working folder).
# Writes <target>.log and <target>.result ("executions speed exit-status").
fuzz_one() {
    local t=$1 run=build-fuzz/run/$1 bin=$PWD/build-fuzz/bin/$1 corpus seeds=() s
    rm -rf "$run" && mkdir -p "$run"
    for s in $(seeds_of "$t"); do seeds+=("$PWD/$s"); done
    if ((long)); then
        corpus=$PWD/build-fuzz/corpus/$t
        mkdir -p "$corpus"
    else
        corpus=$(mktemp -d)
    fi
    local args=(-timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1
        -artifact_prefix="$PWD/build-fuzz/findings/$t-")
    local d
    d=$(dict_of "$t")
    [ -n "$d" ] && args+=("$d")
    local rc=0
    if ((long)); then
        local runs=${RUNS:-10000000}
        args+=(-jobs="$jobs" -workers="$jobs" -runs=$(((runs + jobs - 1) / jobs)))
        [ -n "${SECONDS_PER_TARGET:-}" ] && args+=(-max_total_time="$SECONDS_PER_TARGET")
        (cd "$run" && "$bin" "${args[@]}" "$corpus" "${seeds[@]}") \
            >"$run/main.log" 2>&1 || rc=$?
        cat "$run"/fuzz-*.log >"build-fuzz/$t.log" 2>/dev/null || cp "$run/main.log" "build-fuzz/$t.log"
    else
        args+=(-max_total_time="${SECONDS_PER_TARGET:-40}")
        (cd "$run" && "$bin" "${args[@]}" "$corpus" "${seeds[@]}") \
            >"build-fuzz/$t.log" 2>&1 || rc=$?
        rm -rf "$corpus"
    fi
    # Each process prints its final stats: executions add up, speeds too (they ran side by side).
    awk -v rc="$rc" '/stat::number_of_executed_units/ {n += $2} /stat::average_exec_per_sec/ {s += $2}
        END {print n + 0, s + 0, rc}' "build-fuzz/$t.log" >"build-fuzz/$t.result"
}

status=0
if ((long)); then
    for t in "${targets[@]}"; do fuzz_one "$t"; done
else
    # CI: up to $jobs targets at once, each on one core.
    running=0
    for t in "${targets[@]}"; do
        fuzz_one "$t" &
        running=$((running + 1))
        if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
    done
    wait || true
fi
for t in "${targets[@]}"; do
    read -r execs speed rc <"build-fuzz/$t.result"
    found=$(find build-fuzz/findings -name "$t-*" -newer build-fuzz/findings/.since 2>/dev/null | head -5)
    if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
        echo "fuzz: $t: $execs executions ($speed/s), no finding"
    else
        echo "fuzz: $t: FINDING (exit $rc) after $execs executions; log build-fuzz/$t.log, input(s): ${found:-none written}"
        grep -m20 -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|deadly|Test unit written|fuzz_codec:' \
            "build-fuzz/$t.log" || tail -20 "build-fuzz/$t.log"
        status=1
    fi
done
echo "fuzz: $( ((status)) && echo FAIL || echo PASS) ($(($(date +%s) - started)) s)"
exit $status
