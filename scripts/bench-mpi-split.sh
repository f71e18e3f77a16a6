#!/usr/bin/env bash
# Issue 17's third measurement: the operators that need more than halos to run over MPI ranks
# (docs/mpi.md, "Carried states from rank to rank" and "Whole-image operators split over the
# ranks"). Two pipelines, each run by one process and by `mpiexec --oversubscribe -np NP` for
# each NP, in alternating rounds:
#   floyd     synth (gray, SIZE x SIZE) -> gauss5x5 -> floyd_steinberg -> .pgm (MPI-IO): the
#             blur splits, the error row is relayed from rank to rank (output identical: checked)
#   chan_vese synth (gray, CV_SIZE x CV_SIZE, shapes) -> chan_vese (tol 0, CV_ITER iterations)
#             -> .pgm: split, halo rows and sums per iteration (mask compared: share of equal pixels)
# Prints per run the median wall time of the command (mpiexec's start included), rank 0's run
# (the report's wall_ms), the operator's time on rank 0 (its band), and per rank the payload
# bytes sent, its run time and how long it waited for the relayed state (pixflow's note "mpi:
# rank R sent N bytes, ran T ms, of which W ms waiting for carried states from the rank above").
#
#   scripts/bench-mpi-split.sh                  # SIZE=4096, CV_SIZE=512, CV_ITER=100, NPS="2 4"
#
# Environment: PIXFLOW (build/bin/pixflow), SIZE, CV_SIZE, CV_ITER, NPS, REPEAT (3), CASES
# ("floyd chan_vese"), MPIEXEC
# (mpiexec), MPIEXEC_FLAGS, WORK (/tmp/pixflow-bench-mpi-split).
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
SIZE=${SIZE:-4096}
CV_SIZE=${CV_SIZE:-512}
CV_ITER=${CV_ITER:-100}
NPS=${NPS:-2 4}
REPEAT=${REPEAT:-3}
MPIEXEC=${MPIEXEC:-mpiexec}
WORK=${WORK:-/tmp/pixflow-bench-mpi-split}
[ -x "$PIXFLOW" ] || { echo "error: $PIXFLOW is not an executable; set PIXFLOW=<build>/bin/pixflow" >&2; exit 1; }
"$PIXFLOW" --version | grep -q "MPI: *on" || { echo "error: $PIXFLOW was built without MPI (PIXFLOW_WITH_MPI)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$WORK"
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

cat > "$WORK/floyd.toml" <<TOML
[nodes.src]
op = "synth"
pattern = "shapes"
width = $SIZE
height = $SIZE
channels = 1
[nodes.b]
op = "gauss5x5"
input = "src"
[nodes.op]
op = "floyd_steinberg"
input = "b"
[nodes.out]
op = "save"
input = "op"
path = "x.pgm"
TOML
cat > "$WORK/chan_vese.toml" <<TOML
[nodes.src]
op = "synth"
pattern = "shapes"
width = $CV_SIZE
height = $CV_SIZE
channels = 1
[nodes.op]
op = "chan_vese"
input = "src"
tol = 0.0
max_iter = $CV_ITER
[nodes.out]
op = "save"
input = "op"
path = "x.pgm"
TOML

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for case in ${CASES:-floyd chan_vese}; do
  declare -A walls=() runs=() ops=()
  for round in $(seq "$REPEAT"); do
    for np in 1 $NPS; do
      out="$WORK/out-$case-$np.pgm"
      rep="$WORK/report-$case-$np.json"
      t0=$(now)
      if [ "$np" = 1 ]; then "$PIXFLOW" run "$WORK/$case.toml" --backend cpu --set out.path="$out" --report "$rep" >/dev/null 2>"$WORK/err-$case-$np"
      else "$MPIEXEC" --oversubscribe ${MPIEXEC_FLAGS:-} -np "$np" "$PIXFLOW" run "$WORK/$case.toml" --backend cpu \
             --set out.path="$out" --report "$rep" >/dev/null 2>"$WORK/err-$case-$np"; fi
      t1=$(now)
      walls[$np]+="$(awk "BEGIN { print $t1 - $t0 }") "
      runs[$np]+="$(python3 -c "import json; print(json.load(open('$rep'))['wall_ms'] / 1000)") "
      ops[$np]+="$(python3 -c "import json; print(sum(n['ms'] for n in json.load(open('$rep'))['nodes'] if n['id'] == 'op') / 1000)") "
    done
  done
  for np in 1 $NPS; do
    if [ "$case" = floyd ]; then
      cmp -s "$WORK/out-$case-1.pgm" "$WORK/out-$case-$np.pgm" || { echo "error: floyd -np $np wrote another file" >&2; exit 1; }
      same="identical"
    else
      same=$(python3 -c "
a = open('$WORK/out-$case-1.pgm', 'rb').read(); b = open('$WORK/out-$case-$np.pgm', 'rb').read()
n = $CV_SIZE * $CV_SIZE; a, b = a[-n:], b[-n:]
print('mask %.4f%% equal' % (100.0 * sum(x == y for x, y in zip(a, b)) / n))")
    fi
    w=$(echo "${walls[$np]}" | tr ' ' '\n' | grep . | median)
    rw=$(echo "${runs[$np]}" | tr ' ' '\n' | grep . | median)
    ow=$(echo "${ops[$np]}" | tr ' ' '\n' | grep . | median)
    echo "$case -np $np: medians: process ${w} s, rank 0's run ${rw} s, its '$case' ${ow} s; $same (rounds: ${walls[$np]})"
    sent=$( (grep -o 'rank [0-9]* sent [0-9]* bytes, ran [0-9.]* ms.*' "$WORK/err-$case-$np" || true) |
      awk '{ printf "%s%s: %s B in %.2f s", (NR > 1 ? ", " : ""), $2, $4, $7 / 1000
             if ($11 != "") printf " (%.3f s waiting for the rank above)", $11 / 1000 }')
    [ -n "$sent" ] && echo "    last run, per rank: sent, in its run of: $sent"
  done
  unset walls runs ops
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
