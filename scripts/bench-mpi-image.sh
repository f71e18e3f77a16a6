#!/usr/bin/env bash
# Issue 17's second measurement: one image split over MPI ranks (docs/mpi.md, "One image over the
# ranks"). A WxW RGB u8 image through gauss5x5 three times, saved as .npy, run by one process and
# by `mpiexec --oversubscribe -np NP` for each NP, in alternating rounds. The source is either
# `synth` (part of the chain: each rank makes only its rows) or `load` of a PPM (every rank reads
# the whole file). Prints per run the median wall time, and the payload bytes each rank sent
# (pixflow's own note, "mpi: rank R sent N bytes, ran T ms": T is the rank's run, from the
# compiled plan to its file, without mpiexec's start); checks that every run wrote the same file.
# -np 1 is the plain process (no mpiexec). Each NP runs with each halo mode of HALOS (--mpi-halo:
# exchange, the default, sends the stencils' halo rows to the neighbour ranks; recompute computes
# them again), printed as "-np 4 exchange"; "halo" in the bytes is the halo rows' share.
#
#   scripts/bench-mpi-image.sh                       # 4096x4096, NPS="2 4", synth and load
#   SIZE=2048 REPEAT=5 NPS="2" scripts/bench-mpi-image.sh
#
# Environment: PIXFLOW (build/bin/pixflow), SIZE (4096), NPS ("2 4"), REPEAT (3), SOURCES
# ("synth load"), HALOS ("exchange recompute"), EXT (npy: written by every rank with MPI-IO; png: gathered at rank 0),
# MPIEXEC (mpiexec), MPIEXEC_FLAGS, WORK (/tmp/pixflow-bench-mpi-image).
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
SIZE=${SIZE:-4096}
NPS=${NPS:-2 4}
REPEAT=${REPEAT:-3}
HALOS=${HALOS:-exchange recompute}
SOURCES=${SOURCES:-synth load}
EXT=${EXT:-npy} # npy: every rank writes its rows (MPI-IO); png: gathered at rank 0, which encodes
MPIEXEC=${MPIEXEC:-mpiexec}
WORK=${WORK:-/tmp/pixflow-bench-mpi-image}
[ -x "$PIXFLOW" ] || { echo "error: $PIXFLOW is not an executable; set PIXFLOW=<build>/bin/pixflow" >&2; exit 1; }
"$PIXFLOW" --version | grep -q "MPI: *on" || { echo "error: $PIXFLOW was built without MPI (PIXFLOW_WITH_MPI)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$WORK"
now() { date +%s.%N; }
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

chain='[nodes.b1]
op = "gauss5x5"
input = "src"
[nodes.b2]
op = "gauss5x5"
input = "b1"
[nodes.b3]
op = "gauss5x5"
input = "b2"
[nodes.out]
op = "save"
input = "b3"
path = "x.npy"'
src_synth="[nodes.src]
op = \"synth\"
pattern = \"shapes\"
width = $SIZE
height = $SIZE
channels = 3"
if [[ " $SOURCES " == *" load "* && ! -f "$WORK/in-$SIZE.ppm" ]]; then
  printf '%s\n[nodes.out]\nop = "save"\ninput = "src"\npath = "%s"\n' "$src_synth" "$WORK/in-$SIZE.ppm" > "$WORK/gen.toml"
  "$PIXFLOW" run "$WORK/gen.toml" --backend cpu >/dev/null
fi
configs=1
for np in $NPS; do for h in $HALOS; do configs+=" $np-$h"; done; done
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $SIZE x $SIZE x 3 u8, gauss5x5 x3 -> .$EXT"
for source in $SOURCES; do
  if [ "$source" = synth ]; then printf '%s\n%s\n' "$src_synth" "$chain" > "$WORK/$source.toml"
  else printf '[nodes.src]\nop = "load"\npath = "%s"\n%s\n' "$WORK/in-$SIZE.ppm" "$chain" > "$WORK/$source.toml"; fi
  declare -A walls=() runs=() chains=()
  for round in $(seq "$REPEAT"); do
    for cfg in $configs; do
      np=${cfg%%-*} halo=${cfg#*-}
      out="$WORK/out-$source-$cfg.$EXT"
      t0=$(now)
      rep="$WORK/report-$source-$cfg-$round.json"
      if [ "$np" = 1 ]; then "$PIXFLOW" run "$WORK/$source.toml" --backend cpu --set out.path="$out" --report "$rep" >/dev/null 2>"$WORK/err-$cfg"
      else "$MPIEXEC" --oversubscribe ${MPIEXEC_FLAGS:-} -np "$np" "$PIXFLOW" run "$WORK/$source.toml" --backend cpu \
             --mpi-halo "$halo" --set out.path="$out" --report "$rep" >/dev/null 2>"$WORK/err-$cfg"; fi
      t1=$(now)
      walls[$cfg]+="$(awk "BEGIN { print $t1 - $t0 }") "
      runs[$cfg]+="$(python3 -c "import json; print(json.load(open('$rep'))['wall_ms'] / 1000)") "
      chains[$cfg]+="$(python3 -c "import json; print(sum(n['ms'] for n in json.load(open('$rep'))['nodes'] if n['id'] in ('b1', 'b2', 'b3')) / 1000)") "
    done
  done
  for cfg in $configs; do
    np=${cfg%%-*} halo=${cfg#*-}
    [ "$np" = 1 ] && halo=""
    cmp -s "$WORK/out-$source-1.$EXT" "$WORK/out-$source-$cfg.$EXT" || { echo "error: -np $np $halo wrote another file" >&2; exit 1; }
    w=$(echo "${walls[$cfg]}" | tr ' ' '\n' | grep . | median)
    rw=$(echo "${runs[$cfg]}" | tr ' ' '\n' | grep . | median)
    cw=$(echo "${chains[$cfg]}" | tr ' ' '\n' | grep . | median)
    sent=$( (grep -o 'rank [0-9]* sent [0-9]* bytes\( ([0-9]* of them halo rows)\)\?, ran [0-9.]* ms' "$WORK/err-$cfg" || true) |
      sed 's/ (\([0-9]*\) of them halo rows)/ halo=\1/' |
      awk '{ b = $4 " B"; h = ($6 ~ /^halo=/) ? " (halo " substr($6, 6, length($6) - 6) " B)" : ""; t = $NF == "ms" ? $(NF - 1) : 0
             printf "%s%s: %s%s in %.2f s", (NR > 1 ? ", " : ""), $2, b, h, t / 1000 }')
    echo "$source -np $np $halo: medians: process ${w} s, rank 0's run ${rw} s, its b1+b2+b3 ${cw} s (rounds: ${walls[$cfg]})"
    [ -n "$sent" ] && echo "    last run, per rank: sent, in its run of: $sent"
  done
  unset walls runs chains
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); every run wrote the same file"
