#!/usr/bin/env bash
# Issue 16's two-GPU measurement: one SIZE x SIZE RGB u8 image (32768: 3 GiB) through a
# compute-heavy CUDA chain (gauss5x5 REPEAT times, default 8), in strips of ROWS rows on one GPU
# (`--devices 0`) and spread over two (`--devices 0,1`: strip k on GPU k % 2). Both runs use the
# same strips, pipelined (upload, kernels and download of different strips overlap), so the
# baseline is the best one GPU does. The chain's input is made whole on the host first (synth is
# read by two nodes, so it is not in the chain), and the chain ends with maxpool2x2 on the GPU
# and a CPU copy (convert to u8): 3 GiB of strips go up, 0.75 GiB come down. The figure is the
# chain's host time from the report once its buffers are allocated (strips[].ms - setup_ms:
# pinning host memory is a cost of the process, paid once by a batch), median of RUNS runs; the
# setup is printed apart. That the bytes are the same on one GPU and two is tested by
# StripsMultiGpu.AChainSpreadOverTwoGpusGivesTheOneGpuBits.
#
#   scripts/bench-multigpu.sh            # on a machine with two GPUs; PIXFLOW=gpu-pack/build/bin/pixflow
# Environment: PIXFLOW, SIZE (32768), REPEAT (8), ROWS (1024), RUNS (5), WORK (/tmp/pixflow-bench-multigpu)
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
SIZE=${SIZE:-32768}
REPEAT=${REPEAT:-8}
RUNS=${RUNS:-5}
ROWS=${ROWS:-1024}
WORK=${WORK:-/tmp/pixflow-bench-multigpu}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
{
  printf '[nodes.src]\nop = "synth"\npattern = "noise"\nwidth = %d\nheight = %d\nchannels = 3\nbackend = "cpu"\n' "$SIZE" "$SIZE"
  prev=src
  for k in $(seq 1 "$REPEAT"); do
    printf '[nodes.b%d]\nop = "gauss5x5"\ninput = "%s"\nbackend = "cuda"\n' "$k" "$prev"
    prev=b$k
  done
  printf '[nodes.pool]\nop = "maxpool2x2"\ninput = "%s"\nbackend = "cuda"\n' "$prev"
  printf '[nodes.host]\nop = "convert"\ninput = "pool"\ndtype = "u8"\nbackend = "cpu"\n'
  printf '[nodes.pool2]\nop = "maxpool2x2"\ninput = "src"\nbackend = "cpu"\n'
} > "$WORK/chain.toml"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for devs in 0 0,1; do
  for r in $(seq 1 "$RUNS"); do
    "$PIXFLOW" run "$WORK/chain.toml" --devices "$devs" --strip-rows "$ROWS" --report "$WORK/r.json" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
    python3 -c "
import json,sys
r=json.load(open('$WORK/r.json'))
ch=[s for s in r['strips'] if any(n.startswith('b') for n in s['nodes'])]
print(ch[0]['ms'] - ch[0]['setup_ms'] if ch else 'nan')
" >> "$WORK/ms-$devs"
  done
  python3 -c "
import json
r=json.load(open('$WORK/r.json'))
for s in r['strips']: print('  chain', ' -> '.join(s['nodes']), ':', s['count'], 'strips of', s['rows'], 'rows, gpus', s.get('gpus', []))
print('  h2d %.2f GB, d2h %.2f GB, peak device %.2f GB' % (r['transfers']['h2d']['bytes']/1e9, r['transfers']['d2h']['bytes']/1e9, r['peak_device_bytes']/1e9))
print('  setup ms (buffers):', ', '.join('%.1f' % s['setup_ms'] for s in r['strips']))
print('  node ms, summed over strips:', ', '.join('%s %.1f' % (n['id'], n['ms']) for n in r['nodes'] if n.get('strips')))
"
  echo "devices $devs: chain ms (median of $RUNS): $(median < "$WORK/ms-$devs")   all: $(tr '\n' ' ' < "$WORK/ms-$devs")"
done
one=$(median < "$WORK/ms-0"); two=$(median < "$WORK/ms-0,1")
python3 -c "print('speed-up, two GPUs over one: %.2fx (target 1.7x)' % ($one / $two))"
