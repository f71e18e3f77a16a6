#!/usr/bin/env bash
# Issue 18's "state each kernel's limiter": Nsight Compute (ncu) counters of each CUDA kernel of
# the benchmarks in pipelines/bench/, on the GPU machine, from the repository root, with the
# GPU pack of scripts/gpu-check.sh carried (gpu-pack/). One line per kernel launch: duration,
# DRAM and L2 throughput, SM throughput, issue-slot use, active warps (each as % of its peak).
# The clocks are left alone (--clock-control none, as /work/.library/device/METHOD.md asks).
#   scripts/gpu-profile.sh                      # every benchmark below
#   BENCHES="gauss5x5-8k chan_vese-1k" scripts/gpu-profile.sh
#   DETAIL=integral_lookback BENCHES=integral-8k scripts/gpu-profile.sh
#       one launch of the kernels whose names match DETAIL with every section (--set full:
#       warp states, stall reasons, source counters), saved as $OUT/<bench>.ncu-rep, its details
#       page as <bench>-details.txt and the stall samples per SASS line as <bench>-sass.csv
set -euo pipefail
cd "$(dirname "$0")/.."
pack=${PACK:-gpu-pack}
export LD_LIBRARY_PATH="$PWD/$pack/lib:$PWD/$pack/build/lib:${LD_LIBRARY_PATH:-}" PIXFLOW_SOURCE_DIR="$PWD" PIXFLOW_PLUGIN_PATH=
px=$pack/build/bin/pixflow
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes.sum
out=${OUT:-out/profile}
mkdir -p "$out"
if [ -n "${DETAIL:-}" ]; then
  status=0
  for b in ${BENCHES:?DETAIL needs BENCHES}; do
    ncu --clock-control none --set full --import-source yes -k "regex:$DETAIL" -c 1 -f -o "$out/$b" \
      "$px" bench "pipelines/bench/$b.toml" --backend cuda --repeat 1 > "$out/$b.log" 2>&1 ||
      { echo "$b: ncu failed"; tail -5 "$out/$b.log"; status=1; continue; }
    ncu --import "$out/$b.ncu-rep" --page details > "$out/$b-details.txt" 2>&1 || { echo "$b: no details page"; status=1; }
    ncu --import "$out/$b.ncu-rep" --page source --csv --print-source sass > "$out/$b-sass.csv" 2>&1 ||
      { echo "$b: no source page"; status=1; }
  done
  exit $status
fi
for b in ${BENCHES:-gauss5x5-8k integral-8k jpeg-chain-8k floyd_steinberg-8k chan_vese-1k chan_vese-4k grayscale-8k maxpool2x2-8k}; do
  ncu --clock-control none --metrics "$metrics" --csv --page raw -c 6 \
    "$px" bench "pipelines/bench/$b.toml" --backend cuda --repeat 1 > "$out/$b.csv" 2> "$out/$b.err" || {
      echo "$b: ncu failed"; tail -5 "$out/$b.err"; continue; }
  python3 - "$b" "$out/$b.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[2])) if len(r) > 10]
head, units, data = rows[0], rows[1], rows[2:]
col = {h: i for i, h in enumerate(head)}
seen = set()
for r in data:
    k = r[col["Kernel Name"]].split("(")[0][:48]
    if k in seen: continue
    seen.add(k)
    g = lambda m: r[col[m]]
    print(f"{sys.argv[1]:20s} {k:48s} {g('gpu__time_duration.sum'):>9s} {units[col['gpu__time_duration.sum']]}  dram {g('dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6s}%"
          f"  l2 {g('lts__throughput.avg.pct_of_peak_sustained_elapsed'):>6s}%  sm {g('sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6s}%"
          f"  issue {g('sm__inst_issued.avg.pct_of_peak_sustained_active'):>6s}%  warps {g('sm__warps_active.avg.pct_of_peak_sustained_active'):>6s}%"
          f"  dram {g('dram__bytes.sum'):>9s} {units[col['dram__bytes.sum']]}")
PY
done
