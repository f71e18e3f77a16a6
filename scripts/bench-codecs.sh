#!/usr/bin/env bash
# Issue 18, "Batches at the speed of their codecs": a batch run against the codec limit of its
# files. For each of PPM, PNG and JPEG: N synthetic SIZE x SIZE RGB images, then
#   - scripts/bench/codec_limit.cpp (built here with the io plugin's codec sources): the same
#     files read and decoded, and the batch's own outputs (from a first batch run saving them as
#     .npy, read before the loop) encoded and written, by a plain TBB loop with THREADS threads that computes
#     nothing; it also splits one thread's work per image into read, decode, encode and write.
#     Its outputs must equal the batch's byte for byte (checked);
#   - `pixflow run PIPELINE --input DIR --output DIR` (outputs in the input's format);
# and prints the images/s of each (best of REPEAT rounds, alternating) and batch / limit. The
# batch's wall time is split into the process's start (loading the plugins and their libraries:
# before run_batch), its setup (the checks, the first compile, the workers: on a GPU the CUDA
# context and pools) and the images (from its --report: setup_s, images_s); "after its setup" is
# the rate of the images alone, what a longer batch tends to. The tool's rate excludes its own
# process start.
#
#   scripts/bench-codecs.sh                                  # CPU, 64 x 2048x2048, build/bin/pixflow
#   BACKEND=cuda scripts/bench-codecs.sh                     # the GPU machine (target: >= 80%)
#   FORMATS="ppm" N=16 REPEAT=5 scripts/bench-codecs.sh
#
#   PIPELINE=copy OUT=/dev/shm/pf scripts/bench-codecs.sh   # load -> save: the batch's own cost
#
# Environment: PIXFLOW (build/bin/pixflow), PIPELINE (pipelines/batch-blur-pool.toml; `copy`:
# load -> save, no compute; any pipeline with one load and one save), N (64), SIZE (2048), PATTERN (synth pattern:
# shapes), FORMATS ("ppm png jpg"), BACKEND (cpu), THREADS (nproc), REPEAT (3), BATCH_ARGS (more
# arguments for the batch run, e.g. "--max-in-flight 8"), WORK (/tmp/pixflow-bench-codecs: the
# inputs are kept for reuse), CODECS (native: the tool's PNG and JPEG on libpng and libjpeg, as the
# plugin's; oiio: through OpenImageIO), OUT (where both write their outputs: $WORK; /dev/shm/... keeps the
# disk's write-back out of the figures), CXX (g++), CODEC_LIMIT (a codec_limit tool built elsewhere,
# e.g. by scripts/gpu-mpi-check.sh pack for a machine without the build's headers: used as is).
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
PIPELINE=${PIPELINE:-pipelines/batch-blur-pool.toml}
N=${N:-64}
SIZE=${SIZE:-2048}
PATTERN=${PATTERN:-shapes}
FORMATS=${FORMATS:-ppm png jpg}
BACKEND=${BACKEND:-cpu}
THREADS=${THREADS:-$(nproc)}
REPEAT=${REPEAT:-3}
WORK=${WORK:-/tmp/pixflow-bench-codecs}
OUT=${OUT:-$WORK}
CXX=${CXX:-g++}
[ -x "$PIXFLOW" ] || { echo "error: $PIXFLOW is not an executable; set PIXFLOW=<build>/bin/pixflow" >&2; exit 1; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
mkdir -p "$WORK"

# ---- the tool, from the io plugin's kernel sources: PNG and JPEG on libpng and libjpeg as the
# plugin has them (CODECS=oiio: through OpenImageIO instead, the plugin's path before they were
# built in), OpenImageIO for the rest when pkg-config finds it
CODECS=${CODECS:-native}
tool=${CODEC_LIMIT:-$WORK/codec_limit-$CODECS}
srcs=(file codecs netpbm npy grey_palette)
defs=() libs=()
if [ "$CODECS" = native ]; then
  srcs+=(png jpeg)
  defs=(-DPIXFLOW_IO_PNG=1 -DPIXFLOW_IO_JPEG=1)
  libs=(-lpng -ljpeg)
fi
if pkg-config --exists OpenImageIO 2>/dev/null; then
  srcs+=(oiio stderr_capture)
  defs+=(-DPIXFLOW_WITH_OIIO=1)
  read -r -a more <<< "$(pkg-config --libs OpenImageIO)"
  libs+=("${more[@]}")
fi
newest=$(ls -t scripts/bench/codec_limit.cpp plugins/io/kernels/* | head -1)
if [ -z "${CODEC_LIMIT:-}" ] && { [ ! -x "$tool" ] || [ "$newest" -nt "$tool" ]; }; then
  echo "building $tool"
  objs=()
  for s in "${srcs[@]}"; do
    "$CXX" -O2 -DNDEBUG -std=c++20 "${defs[@]}" -Isdk/include -Iplugins/io/kernels -c "plugins/io/kernels/$s.cpp" -o "$WORK/$s.o"
    objs+=("$WORK/$s.o")
  done
  "$CXX" -O2 -DNDEBUG -std=c++20 -Isdk/include -Iplugins/io/kernels scripts/bench/codec_limit.cpp "${objs[@]}" \
    "${libs[@]}" -ltbb -o "$tool"
fi

# ---- inputs: PPM by pixflow's synth, then PNG and JPEG converted from them by a batch
ppm=$WORK/in-$SIZE-$PATTERN-ppm
mkdir -p "$ppm"
if [ "$(find "$ppm" -name '*.ppm' | wc -l)" -ne "$N" ]; then
  echo "generating $N ${SIZE}x${SIZE} RGB $PATTERN images in $ppm"
  rm -f "$ppm"/*
  printf '[nodes.src]\nop = "synth"\npattern = "%s"\nwidth = %d\nheight = %d\nchannels = 3\ndtype = "u8"\n\n[nodes.out]\nop = "save"\ninput = "src"\npath = "x.ppm"\n' \
    "$PATTERN" "$SIZE" "$SIZE" > "$WORK/gen.toml"
  for i in $(seq -w 1 "$N"); do
    "$PIXFLOW" run "$WORK/gen.toml" --set src.seed="$((10#$i))" --set out.path="$ppm/img$i.ppm" > /dev/null
  done
fi
printf '[nodes.src]\nop = "load"\npath = "x.ppm"\n\n[nodes.out]\nop = "save"\ninput = "src"\npath = "x.ppm"\n' > "$WORK/convert.toml"
[ "$PIPELINE" = copy ] && PIPELINE=$WORK/convert.toml
for ext in $FORMATS; do
  d=$WORK/in-$SIZE-$PATTERN-$ext
  [ "$ext" = ppm ] && continue
  if [ "$(find "$d" -name "*.$ext" 2>/dev/null | wc -l)" -ne "$N" ]; then
    echo "converting to .$ext in $d"
    rm -rf "$d"
    "$PIXFLOW" run "$WORK/convert.toml" --set "out.path=x.$ext" --input "$ppm" --output "$d" --quiet
  fi
done

echo "machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "pixflow: $PIXFLOW; $PIPELINE; backend $BACKEND; $N x ${SIZE}x${SIZE} RGB; $THREADS threads for the tool"
echo "load average before: $(load)"
read -r -a extra <<< "${BATCH_ARGS:-}"
summary=()
for ext in $FORMATS; do
  d=$WORK/in-$SIZE-$PATTERN-$ext
  best_tool=0 best_batch=0 best_steady=0
  # the images the tool encodes: the batch's own outputs, saved losslessly (.npy)
  rm -rf "$OUT/ref"
  "$PIXFLOW" run "$PIPELINE" --backend "$BACKEND" --set "out.path=x.npy" --input "$d" --output "$OUT/ref" --quiet "${extra[@]}"
  from=(--encode-from "$OUT/ref")
  for r in $(seq 1 "$REPEAT"); do
    rm -rf "$OUT/out-tool" "$OUT/out-batch"
    t=$("$tool" --input "$d" --output "$OUT/out-tool" --ext ".$ext" --threads "$THREADS" --repeat 1 "${from[@]}" |
      sed -n 's/^codec limit: \([0-9.]*\) images.*/\1/p')
    t0=$(date +%s.%N)
    "$PIXFLOW" run "$PIPELINE" --backend "$BACKEND" --set "out.path=x.$ext" --input "$d" --output "$OUT/out-batch" \
      --quiet "${extra[@]}" --report "$WORK/report-$ext.json"
    t1=$(date +%s.%N)
    b=$(awk "BEGIN { print $N / ($t1 - $t0) }")
    # the batch's report splits its own time: setup before the first image, then the images
    read -r setup images steady < <("${PYTHON:-python3}" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["setup_s"], r["images_s"], r["images_per_s_after_setup"])' "$WORK/report-$ext.json")
    start=$(awk "BEGIN { print $t1 - $t0 - $setup - $images }")
    printf '.%s round %d: codec limit %.1f images/s | batch %.1f images/s: process start %.3f s, setup %.3f s, images %.3f s (%.1f images/s) | load %s\n' \
      "$ext" "$r" "$t" "$b" "$start" "$setup" "$images" "$steady" "$(load)"
    best_tool=$(awk "BEGIN { print ($t > $best_tool) ? $t : $best_tool }")
    best_batch=$(awk "BEGIN { print ($b > $best_batch) ? $b : $best_batch }")
    best_steady=$(awk "BEGIN { print ($steady > $best_steady) ? $steady : $best_steady }")
  done
  if ! diff -rq "$OUT/out-tool" "$OUT/out-batch" > /dev/null; then
    echo "error: the tool's .$ext outputs differ from the batch's: it did not encode what the batch encodes" >&2
    exit 1
  fi
  # the parts of one thread's work per image, from a last run of the tool
  "$tool" --input "$d" --output "$OUT/out-tool" --ext ".$ext" --threads "$THREADS" --repeat 1 "${from[@]}" | tail -2 |
    sed "s/^/.$ext /"
  summary+=("$(printf '.%s: codec limit %.1f images/s; batch %.1f images/s whole (%.0f%% of the limit), %.1f images/s after its setup (%.0f%%)' \
    "$ext" "$best_tool" "$best_batch" "$(awk "BEGIN { print 100 * $best_batch / $best_tool }")" "$best_steady" \
    "$(awk "BEGIN { print 100 * $best_steady / $best_tool }")")")
done
rm -rf "$OUT/out-tool" "$OUT/out-batch" "$OUT/ref"
echo "load average after: $(load)"
printf '%s\n' "${summary[@]}"
