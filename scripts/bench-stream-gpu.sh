#!/usr/bin/env bash
# Issue 16's GPU measurement: a SIZE x SIZE gray u8 .npy (65536: 4.0 GiB) through
# load -> gauss5x5 -> maxpool2x2 -> save .npy with the CUDA backend and device memory capped
# (--device-memory-limit, default 1G), so that the chain runs in strips: each strip uploaded
# once, through both kernels on the device, downloaded once. Prints the run's wall time and
# report (strips, peak host and device bytes, per-node times) beside the host<->device copy
# bandwidth of `pixflow bench`'s own measurement, and the throughput the issue compares with it:
# (bytes up + bytes down) / chain time. The input is made by pixflow itself, by rows.
#
#   scripts/bench-stream-gpu.sh               # on the GPU machine, PIXFLOW=gpu-pack/build/bin/pixflow
# Environment: PIXFLOW, SIZE (65536), DEVICE_LIMIT (1G), HOST_LIMIT (4G), WORK (/tmp/pixflow-bench-stream-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
SIZE=${SIZE:-65536}
DEVICE_LIMIT=${DEVICE_LIMIT:-1G}
HOST_LIMIT=${HOST_LIMIT:-4G}
WORK=${WORK:-/tmp/pixflow-bench-stream-gpu}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
export PIXFLOW_PLUGIN_PATH=
cat > "$WORK/make.toml" <<TOML
[nodes.src]
op = "synth"
pattern = "shapes"
width = $SIZE
height = $SIZE
channels = 1
[nodes.out]
op = "save"
input = "src"
path = "$WORK/in.npy"
TOML
cat > "$WORK/chain.toml" <<TOML
[pipeline]
backend = "cuda"
[nodes.src]
op = "load"
path = "$WORK/in.npy"
max_pixels = 0
[nodes.blur]
op = "gauss5x5"
input = "src"
[nodes.pool]
op = "maxpool2x2"
input = "blur"
[nodes.out]
op = "save"
input = "pool"
path = "$WORK/out.npy"
TOML
t0=$(date +%s.%N)
"$PIXFLOW" run "$WORK/make.toml" --backend cpu --memory-limit "$HOST_LIMIT" >/dev/null
echo "input made: $(du -h "$WORK/in.npy" | cut -f1) in $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
# The host<->device copy rates (pinned host memory, 256 MiB each way, median of 10, CUDA events),
# through PyTorch where it is installed (the GPU machine has it; pixflow itself does not need it).
python3 - <<'PY' || echo "copy bandwidth: not measured (no PyTorch with CUDA here)"
import statistics, torch
n = 256 << 20
h = torch.empty(n, dtype=torch.uint8, pin_memory=True); d = torch.empty(n, dtype=torch.uint8, device="cuda")
def rate(f):
    ts = []
    for _ in range(12):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return n / (statistics.median(ts[2:]) * 1e-3) / 1e9
up, down = rate(lambda: d.copy_(h, non_blocking=True)), rate(lambda: h.copy_(d, non_blocking=True))
print(f"copy bandwidth: host->device {up:.1f} GB/s, device->host {down:.1f} GB/s")
PY
for run in 1 2; do
    t0=$(date +%s.%N)
    "$PIXFLOW" run "$WORK/chain.toml" --device-memory-limit "$DEVICE_LIMIT" --memory-limit "$HOST_LIMIT" \
        --profile --report "$WORK/report.json" 2>&1 | tail -25
    echo "run $run: wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
done
python3 - "$WORK/report.json" "$SIZE" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
print("report keys:", sorted(r.keys()))
for k in ("strips", "peak_host_bytes", "peak_device_bytes", "wall_ms", "transfers"):
    if k in r: print(k, json.dumps(r[k])[:400])
up, down = n * n, (n // 2) * (n // 2)
print(f"bytes up {up/2**30:.2f} GiB, down {down/2**30:.2f} GiB")
PY
