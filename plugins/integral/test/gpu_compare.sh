#!/usr/bin/env bash
# H2 integral run: tests, sanitizers, new-vs-old bench (same run), ncu kernel times.
# Needs gpu-pack-int/ (scripts/gpu-check.sh pack, PIXFLOW_GPU_TAG=int) with the plugin built from main
# copied to gpu-pack-int/old/pixflow_integral.so; run from the repository root on the GPU machine.
export LD_LIBRARY_PATH=$PWD/gpu-pack-int/lib:$PWD/gpu-pack-int/build/lib PIXFLOW_SOURCE_DIR=$PWD PIXFLOW_PLUGIN_PATH=
B=gpu-pack-int/build/bin; P=gpu-pack-int/build/lib/pixflow/plugins
cp $P/pixflow_integral.so gpu-pack-int/new.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
T=integral-8k.toml; PB=pipelines/bench/$T
bench() { $B/pixflow bench $PB --backend cuda --repeat 20 "$@" 2>&1 | grep -E '^(sat|device)|bandwidth' ; }
for i in 1 2 3; do
  cp gpu-pack-int/new.so $P/pixflow_integral.so; echo "NEW u32 $(bench | tr '\n' ' ')"
  cp gpu-pack-int/old/pixflow_integral.so $P/pixflow_integral.so; echo "OLD u32 $(bench | tr '\n' ' ')"
done
cp gpu-pack-int/new.so $P/pixflow_integral.so; echo "NEW u64 $(bench --set sat.dtype=auto | grep sat)"
cp gpu-pack-int/old/pixflow_integral.so $P/pixflow_integral.so; echo "OLD u64 $(bench --set sat.dtype=auto | grep sat)"
cp gpu-pack-int/new.so $P/pixflow_integral.so
ncu --clock-control none --kernel-name regex:'tile|scan' -c 8 $B/pixflow bench $PB --backend cuda --repeat 1 2>&1 | grep -E '_kernel|Duration|Memory Throughput' | sed -e 's/void pixflow::integral:://' -e 's/(anonymous namespace):://' | cut -c1-110 > $OUT/ncu.txt; head -24 $OUT/ncu.txt
$B/pixflow_tests --gtest_filter='*ntegral*:*Strip*' > $OUT/tests.log 2>&1; grep -E '^\[  (FAILED|PASSED|SKIPPED) ' $OUT/tests.log | head -20
timeout 100 compute-sanitizer --tool memcheck $B/pixflow_tests --gtest_filter='IntegralCuda*:Integral/*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -3 $OUT/memcheck.log
timeout 70 compute-sanitizer --tool racecheck $B/pixflow_tests --gtest_filter='IntegralCuda*' > $OUT/racecheck.log 2>&1; echo "racecheck rc=$?"; tail -3 $OUT/racecheck.log
