#!/usr/bin/env bash
# Issue 17's measurement: the cost of running a batch over MPI ranks. The inputs and pipeline of
# scripts/bench-batch.sh (N synthetic WxW RGB images through pipelines/batch-blur-pool.toml), run
# as one batch by one process and by `mpiexec -np NP` on this machine, in alternating rounds.
# Prints the median wall time and CPU time (user + system, every process of the run) of each,
# their ratios, how many images each rank ran, the load average before and after, and checks that
# both write identical files. On a machine shared with other work, the CPU time is the steadier
# measure of what MPI costs: the wall time also depends on how the scheduler shares the cores.
#
#   scripts/bench-mpi.sh                        # 64 x 2048x2048 PNG, NP=2, build/bin/pixflow
#   NP=4 N=16 SIZE=1024 EXT=ppm scripts/bench-mpi.sh
#   MPIEXEC_FLAGS="--bind-to none" scripts/bench-mpi.sh
#
# Environment: PIXFLOW (build/bin/pixflow), NP (2), N (64), SIZE (2048), EXT (png), BACKEND (cpu),
# REPEAT (3), MPIEXEC (mpiexec), MPIEXEC_FLAGS (extra mpiexec options), WORK (scratch folder, shared
# with bench-batch.sh: /tmp/pixflow-bench-batch; the inputs are kept for reuse).
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
NP=${NP:-2}
N=${N:-64}
SIZE=${SIZE:-2048}
EXT=${EXT:-png}
BACKEND=${BACKEND:-cpu}
REPEAT=${REPEAT:-3}
MPIEXEC=${MPIEXEC:-mpiexec}
WORK=${WORK:-/tmp/pixflow-bench-batch}
PIPELINE=pipelines/batch-blur-pool.toml
[ -x "$PIXFLOW" ] || { echo "error: $PIXFLOW is not an executable; set PIXFLOW=<build>/bin/pixflow" >&2; exit 1; }
"$PIXFLOW" --version | grep -q "MPI: *on" || { echo "error: $PIXFLOW was built without MPI (PIXFLOW_WITH_MPI)" >&2; exit 1; }
# As root too (a container), without the single-copy path that containers often forbid.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

now() { date +%s.%N; }
# Runs "$@"; sets WALL and CPU (user + system seconds of it and its children, mpiexec's ranks too,
# from the children's line of the shell's `times`, which must run in this shell, not a subshell).
timed() {
  local t0 t1 c0 c1
  times > "$WORK/times"; c0=$(cpu_of "$WORK/times")
  t0=$(now)
  "$@"
  t1=$(now)
  times > "$WORK/times"; c1=$(cpu_of "$WORK/times")
  WALL=$(calc "$t1 - $t0")
  CPU=$(calc "$c1 - $c0")
}
cpu_of() { tail -1 "$1" | awk '{ split($1, u, "m"); split($2, s, "m"); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }'; }
calc() { awk "BEGIN { print $1 }"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ---- inputs: as bench-batch.sh makes them (synth -> save, one seed per image)
in="$WORK/in-$SIZE-shapes-$EXT"
mkdir -p "$in"
cat > "$WORK/gen.toml" <<EOF
[nodes.src]
op = "synth"
pattern = "shapes"
width = $SIZE
height = $SIZE
channels = 3
dtype = "u8"

[nodes.out]
op = "save"
input = "src"
path = "x.$EXT"
EOF
if [ "$(find "$in" -name "*.$EXT" | wc -l)" -ne "$N" ]; then
  echo "generating $N ${SIZE}x${SIZE} RGB .$EXT images in $in"
  rm -f "$in"/*
  for i in $(seq -w 1 "$N"); do
    "$PIXFLOW" run "$WORK/gen.toml" --set src.seed="$((10#$i))" --set out.path="$in/img$i.$EXT" > /dev/null
  done
fi

args=(run "$PIPELINE" --backend "$BACKEND" --set "out.path=$WORK/x.$EXT" --input "$in" --quiet)
run_one() {
  rm -rf "$WORK/one"
  "$PIXFLOW" "${args[@]}" --output "$WORK/one" --report "$WORK/one-report.json"
}
run_ranks() {
  rm -rf "$WORK/ranks"
  # shellcheck disable=SC2086 # MPIEXEC_FLAGS is a list of options
  "$MPIEXEC" --oversubscribe ${MPIEXEC_FLAGS:-} -np "$NP" "$PIXFLOW" "${args[@]}" --output "$WORK/ranks" \
    --report "$WORK/ranks-report.json"
}

echo "machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "pixflow: $PIXFLOW; backend $BACKEND; $N x ${SIZE}x${SIZE} RGB .$EXT; $MPIEXEC -np $NP ${MPIEXEC_FLAGS:-}"
echo "load average before: $(load)"
one_s=() ranks_s=() one_cpu=() ranks_cpu=()
for r in $(seq 1 "$REPEAT"); do
  timed run_one
  one_s+=("$WALL") one_cpu+=("$CPU")
  printf 'round %d: one process %.2f s, CPU %.2f s (load %s)\n' "$r" "$WALL" "$CPU" "$(load)"
  timed run_ranks
  ranks_s+=("$WALL") ranks_cpu+=("$CPU")
  printf 'round %d: %d ranks     %.2f s, CPU %.2f s (load %s)\n' "$r" "$NP" "$WALL" "$CPU" "$(load)"
done
echo "load average after: $(load)"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
o=$(median "${one_s[@]}")
m=$(median "${ranks_s[@]}")
oc=$(median "${one_cpu[@]}")
mc=$(median "${ranks_cpu[@]}")
printf 'one process: median %.2f s, %.2f images/s, CPU %.2f s\n' "$o" "$(calc "$N / $o")" "$oc"
printf '%d ranks:     median %.2f s, %.2f images/s, CPU %.2f s\n' "$NP" "$m" "$(calc "$N / $m")" "$mc"
printf 'ranks / one process: wall %.3f, CPU %.3f\n' "$(calc "$m / $o")" "$(calc "$mc / $oc")"
python3 - "$WORK/ranks-report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("images per rank (last round):", ", ".join(f"rank {x['rank']}: {x['images']} ({x['threads']} thread(s))" for x in r["ranks"]))
EOF
if diff -rq "$WORK/one" "$WORK/ranks" > /dev/null; then echo "outputs: identical (one process vs $NP ranks)"
else echo "error: the outputs of one process and of $NP ranks differ" >&2; exit 1; fi
