#!/usr/bin/env bash
# Issue 8's measurement: N synthetic WxW RGB images through pipelines/batch-blur-pool.toml
# (load -> gauss5x5 -> maxpool2x2 -> save), as one batch run (`pixflow run --input --output`)
# against `pixflow run` once per image in a shell loop. Prints the median wall time of each over
# REPEAT alternating rounds, images/s, the ratio, the load average before and after, and checks
# that both write identical files.
#
#   scripts/bench-batch.sh                        # CPU, 64 x 2048x2048 PNG, build-batch/bin/pixflow
#   PIXFLOW=build/bin/pixflow REPEAT=5 scripts/bench-batch.sh
#   BACKEND=cuda EXT=ppm scripts/bench-batch.sh   # GPU machine (its pack has no OpenImageIO)
#   BACKEND=cuda EXT=ppm DEVICES=0 ONLY=batch scripts/bench-batch.sh    # then DEVICES=0,1
#   ISOLATE=1 ONLY=batch scripts/bench-batch.sh   # the batch with --isolate (worker processes)
#
# Environment: PIXFLOW (the executable), N (64), SIZE (2048), PATTERN (synth pattern: shapes),
# EXT (png), BACKEND (cpu | cuda | auto; default cpu), DEVICES (--devices for the batch run),
# MAX_IN_FLIGHT (--max-in-flight; default: pixflow's), ISOLATE (1: --isolate, 0: --no-isolate;
# default: pixflow's, in-process for the installation's plugins), REPEAT (3), ONLY (batch | loop: run one
# side only), WORK (scratch folder: /tmp/pixflow-bench-batch; the inputs are kept for reuse).
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build-batch/bin/pixflow}
N=${N:-64}
SIZE=${SIZE:-2048}
PATTERN=${PATTERN:-shapes}
EXT=${EXT:-png}
BACKEND=${BACKEND:-cpu}
REPEAT=${REPEAT:-3}
ONLY=${ONLY:-}
WORK=${WORK:-/tmp/pixflow-bench-batch}
PIPELINE=pipelines/batch-blur-pool.toml
[ -x "$PIXFLOW" ] || { echo "error: $PIXFLOW is not an executable; set PIXFLOW=<build>/bin/pixflow" >&2; exit 1; }

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ---- inputs: generated once by pixflow itself (synth -> save), one seed per image
in="$WORK/in-$SIZE-$PATTERN-$EXT"
mkdir -p "$in"
cat > "$WORK/gen.toml" <<EOF
[nodes.src]
op = "synth"
pattern = "$PATTERN"
width = $SIZE
height = $SIZE
channels = 3
dtype = "u8"

[nodes.out]
op = "save"
input = "src"
path = "x.$EXT"
EOF
have=$(find "$in" -name "*.$EXT" | wc -l)
if [ "$have" -ne "$N" ]; then
  echo "generating $N ${SIZE}x${SIZE} RGB $PATTERN .$EXT images in $in"
  rm -f "$in"/*
  for i in $(seq -w 1 "$N"); do
    "$PIXFLOW" run "$WORK/gen.toml" --set src.seed="$((10#$i))" --set out.path="$in/img$i.$EXT" > /dev/null
  done
fi

# ---- the two ways to run it
set_args=(--backend "$BACKEND" --set "out.path=$WORK/x.$EXT")
batch_args=()
[ -n "${DEVICES:-}" ] && batch_args+=(--devices "$DEVICES")
[ -n "${MAX_IN_FLIGHT:-}" ] && batch_args+=(--max-in-flight "$MAX_IN_FLIGHT")
[ "${ISOLATE:-}" = 1 ] && batch_args+=(--isolate)
[ "${ISOLATE:-}" = 0 ] && batch_args+=(--no-isolate)
run_batch() {
  rm -rf "$WORK/batch"
  "$PIXFLOW" run "$PIPELINE" "${set_args[@]}" --input "$in" --output "$WORK/batch" --quiet "${batch_args[@]}" \
    --report "$WORK/batch-report.json" --trace "$WORK/batch-trace.json"
}
run_loop() {
  rm -rf "$WORK/loop"
  mkdir -p "$WORK/loop"
  for f in "$in"/*."$EXT"; do
    "$PIXFLOW" run "$PIPELINE" --backend "$BACKEND" --set "src.path=$f" --set "out.path=$WORK/loop/$(basename "$f")" > /dev/null
  done
}

echo "machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "pixflow: $PIXFLOW; backend $BACKEND${DEVICES:+; devices $DEVICES}${ISOLATE:+; isolate $ISOLATE}; $N x ${SIZE}x${SIZE} RGB .$EXT ($PATTERN)"
echo "load average before: $(load)"
batch_s=() loop_s=()
for r in $(seq 1 "$REPEAT"); do
  if [ "$ONLY" != loop ]; then
    t0=$(now); run_batch; t1=$(now)
    batch_s+=("$(calc "$t1 - $t0")")
    printf 'round %d: batch %.2f s (load %s)\n' "$r" "${batch_s[-1]}" "$(load)"
  fi
  if [ "$ONLY" != batch ]; then
    t0=$(now); run_loop; t1=$(now)
    loop_s+=("$(calc "$t1 - $t0")")
    printf 'round %d: loop  %.2f s (load %s)\n' "$r" "${loop_s[-1]}" "$(load)"
  fi
done
echo "load average after: $(load)"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
if [ "$ONLY" != loop ]; then
  b=$(median "${batch_s[@]}")
  printf 'batch run:        median %.2f s, %.2f images/s (report: %s, trace: %s)\n' "$b" "$(calc "$N / $b")" \
    "$WORK/batch-report.json" "$WORK/batch-trace.json"
fi
if [ "$ONLY" != batch ]; then
  l=$(median "${loop_s[@]}")
  printf 'per-image loop:   median %.2f s, %.2f images/s\n' "$l" "$(calc "$N / $l")"
fi
if [ -z "$ONLY" ]; then
  printf 'speed-up: %.2fx (target >= 1.8x)\n' "$(calc "$l / $b")"
  if diff -rq "$WORK/batch" "$WORK/loop" > /dev/null; then echo "outputs: identical (batch vs loop)"
  else echo "error: batch and loop outputs differ" >&2; exit 1; fi
fi
