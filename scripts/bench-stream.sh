#!/usr/bin/env bash
# Issue 16 item 3's measurement: a SIZE x SIZE RGB u8 .npy (32768: 3.0 GiB) through
# load -> gauss5x5 -> maxpool2x2 -> save .npy under a host memory budget, so that the image never
# exists whole (load reads bands of rows, save writes them). Prints the peak RSS and wall time
# from /usr/bin/time -v, the run report's peak_host_bytes and strips, and checks the output:
#   1. against an independent reference computed in bands (a small C++ program built here: reads
#      rows with pread, separable Gaussian in double with reflect101 borders, round to nearest
#      even, 2x2 max); the operator's float arithmetic may round a sample 1 apart, so the check
#      is |difference| <= 1, and the count of samples that differ is printed;
#   2. against the whole-image run (no strips) on a CROP x CROP crop of the input: the crop's
#      output must equal the full output, byte for byte, wherever the crop's right and bottom
#      edges do not reach (rows and columns below CROP/2 - 1), and the crop run in strips must
#      equal the crop run whole, byte for byte.
# The input is made by pixflow itself, by rows (synth -> save under the same budget).
#
#   scripts/bench-stream.sh                       # 32768, --memory-limit 256M, build/bin/pixflow
#   SIZE=4096 LIMIT=64M scripts/bench-stream.sh   # a quick run
#
# Environment: PIXFLOW (build/bin/pixflow), SIZE (32768), LIMIT (256M: the process itself, with its
# plugins and libraries, is about 135 MiB, so that the peak RSS stays under 512 MiB), CROP (4096), WORK (scratch
# folder: /tmp/pixflow-bench-stream, deleted at the end unless KEEP=1).
#
#   scripts/bench-stream.sh --io                  # host throughput of load and save by rows (below)
#
# --io: a SIZE x SIZE gray u8 .npy (IOSIZE, 16384: 256 MiB, in the page cache once made) through
# load -> save and load -> gauss5x5 -> maxpool2x2 -> save .npy, --backend cpu --strip-rows 1024,
# RUNS times each (5); prints each run's wall and per-node times (the --report, summed over
# strips) and the floor: `dd bs=16M` of the file to /dev/null (the read) and into a new file (a
# read and a write), the same number of times, each after a `sync`; checks that load -> save gives the file back.
set -euo pipefail
cd "$(dirname "$0")/.."
PIXFLOW=${PIXFLOW:-build/bin/pixflow}
if [ "${1:-}" = --io ]; then
  IOSIZE=${IOSIZE:-16384}
  RUNS=${RUNS:-5}
  WORK=${WORK:-/tmp/pixflow-bench-stream-io}
  mkdir -p "$WORK"
  [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
  export PIXFLOW_PLUGIN_PATH=
  node() { printf '[nodes.%s]\nop = "%s"\n%s\n' "$1" "$2" "$3"; }
  { node src synth "pattern = \"noise\"
width = $IOSIZE
height = $IOSIZE
channels = 1
dtype = \"u8\"
seed = 3"; node out save "input = \"src\"
path = \"$WORK/in.npy\""; } > "$WORK/make.toml"
  { node src load "path = \"$WORK/in.npy\""; node out save "input = \"src\"
path = \"$WORK/out.npy\""; } > "$WORK/copy.toml"
  { node src load "path = \"$WORK/in.npy\""; node blur gauss5x5 'input = "src"'; node pool maxpool2x2 'input = "blur"'
    node out save "input = \"pool\"
path = \"$WORK/out2.npy\""; } > "$WORK/chain.toml"
  "$PIXFLOW" run "$WORK/make.toml" --backend cpu --strip-rows 1024 > /dev/null 2>&1
  cat "$WORK/in.npy" > /dev/null # into the page cache
  echo "input: $(stat -c %s "$WORK/in.npy") bytes; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for k in $(seq "$RUNS"); do
    secs() { sed -n 's/.*copied, \([0-9.e-]*\) s.*/\1/p'; } # dd's own timing
    r=$(dd if="$WORK/in.npy" of=/dev/null bs=16M 2>&1 | secs)
    rm -f "$WORK/dd.bin"
    sync
    w=$(dd if="$WORK/in.npy" of="$WORK/dd.bin" bs=16M 2>&1 | secs)
    echo "floor: dd read $r s, dd read+write $w s"
  done
  rm -f "$WORK/dd.bin"
  report() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], "wall %.0f ms:" % r["wall_ms"], ", ".join("%s %.0f" % (n["id"], n["ms"]) for n in r["nodes"]))' "$1" "$2"; }
  for k in $(seq "$RUNS"); do
    sync # no dirty pages of earlier runs: their writeback would land in this run's save
    "$PIXFLOW" run "$WORK/copy.toml" --backend cpu --strip-rows 1024 --report "$WORK/r.json" > /dev/null 2>&1
    report "$WORK/r.json" "load -> save"
    cmp -s "$WORK/in.npy" "$WORK/out.npy" || { echo "error: load -> save did not give the file back" >&2; exit 1; }
    sync
    "$PIXFLOW" run "$WORK/chain.toml" --backend cpu --strip-rows 1024 --report "$WORK/r.json" > /dev/null 2>&1
    report "$WORK/r.json" "load -> gauss5x5 -> maxpool2x2 -> save"
  done
  exit 0
fi
SIZE=${SIZE:-32768}
LIMIT=${LIMIT:-256M}
CROP=${CROP:-4096}
WORK=${WORK:-/tmp/pixflow-bench-stream}
KEEP=${KEEP:-0}
[ -x "$PIXFLOW" ] || { echo "error: $PIXFLOW is not an executable; set PIXFLOW=<build>/bin/pixflow" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time is missing (Debian package: time)" >&2; exit 1; }
[ "$CROP" -le "$SIZE" ] || CROP=$SIZE
mkdir -p "$WORK"
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT
export PIXFLOW_PLUGIN_PATH=

# ---- the reference and the comparisons: a C++ program of its own, no pixflow code ---------------
cat > "$WORK/ref.cpp" <<'EOF'
// bench-stream's reference: .npy u8 (H, W, C) files only, read and written by rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>
struct Npy { int fd; long h, w, c; long data; };
static Npy open_npy(const char* path, bool write = false) {
    Npy n{open(path, write ? O_RDWR : O_RDONLY), 0, 0, 1, 0};
    if (n.fd < 0) { perror(path); exit(2); }
    char head[4096] = {0};
    if (pread(n.fd, head, sizeof head - 1, 0) < 10) { fprintf(stderr, "%s: short\n", path); exit(2); }
    unsigned len = (unsigned char)head[8] | (unsigned char)head[9] << 8;
    n.data = 10 + len;
    const char* s = strstr(head + 10, "'shape': ("); // after the preamble, which holds a 0 byte
    if (!s || !strstr(head + 10, "|u1")) { fprintf(stderr, "%s: not a u8 .npy\n", path); exit(2); }
    if (sscanf(s + 10, "%ld, %ld, %ld", &n.h, &n.w, &n.c) < 2) { fprintf(stderr, "%s: shape\n", path); exit(2); }
    return n;
}
static void header(int fd, long h, long w, long c) {
    std::string d = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(h) + ", " +
                    std::to_string(w) + ", " + std::to_string(c) + "), }";
    while ((10 + d.size() + 1) % 64) d += ' ';
    d += '\n';
    std::string pre("\x93NUMPY\x01\x00", 8);
    pre += char(d.size() & 0xFF), pre += char(d.size() >> 8);
    pre += d;
    if (pwrite(fd, pre.data(), pre.size(), 0) != long(pre.size())) { perror("write"); exit(2); }
}
static void get(const Npy& n, long y, unsigned char* row) {
    const long rb = n.w * n.c;
    if (pread(n.fd, row, rb, n.data + y * rb) != rb) { fprintf(stderr, "short read at row %ld\n", y); exit(2); }
}
static long reflect(long i, long n) { // reflect101, period 2(n-1)
    if (n == 1) return 0;
    long p = 2 * (n - 1), m = ((i % p) + p) % p;
    return m < n ? m : p - m;
}
int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "ref" && argc == 5) { // ref IN.npy OUT.npy SIGMA: gauss5x5 (reflect101) then maxpool2x2
        Npy in = open_npy(argv[2]);
        const double sigma = atof(argv[4]);
        double w[5], sum = 0;
        for (int k = 0; k < 5; ++k) sum += w[k] = std::exp(-double((k - 2) * (k - 2)) / (2 * sigma * sigma));
        for (double& x : w) x /= sum;
        const long H = in.h, W = in.w, C = in.c, oh = H / 2, ow = W / 2, rs = W * C;
        int out = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0644);
        header(out, oh, ow, C);
        const long data = lseek(out, 0, SEEK_END);
        std::vector<unsigned char> raw(rs);
        std::vector<double> hrow[8]; // horizontal passes of input rows, cached by row % 8
        long cached[8];
        for (int k = 0; k < 8; ++k) hrow[k].resize(rs), cached[k] = -1;
        auto hpass = [&](long y) -> const double* {
            const int slot = int(y % 8);
            if (cached[slot] == y) return hrow[slot].data();
            get(in, y, raw.data());
            for (long x = 0; x < W; ++x)
                for (long c = 0; c < C; ++c) {
                    double a = 0;
                    for (int d = -2; d <= 2; ++d) a += w[d + 2] * raw[reflect(x + d, W) * C + c];
                    hrow[slot][x * C + c] = a;
                }
            cached[slot] = y;
            return hrow[slot].data();
        };
        std::vector<unsigned char> g[2], o(ow * C);
        g[0].resize(rs), g[1].resize(rs);
        for (long oy = 0; oy < oh; ++oy) {
            for (int k = 0; k < 2; ++k) {
                const long y = 2 * oy + k;
                const double* r[5];
                for (int d = -2; d <= 2; ++d) r[d + 2] = hpass(reflect(y + d, H));
                for (long i = 0; i < rs; ++i) {
                    double a = 0;
                    for (int d = 0; d < 5; ++d) a += w[d] * r[d][i];
                    g[k][i] = (unsigned char)std::clamp(std::nearbyint(a), 0.0, 255.0);
                }
            }
            for (long x = 0; x < ow; ++x)
                for (long c = 0; c < C; ++c) {
                    const long a = 2 * x * C + c, b = (2 * x + 1) * C + c;
                    o[x * C + c] = std::max({g[0][a], g[0][b], g[1][a], g[1][b]});
                }
            if (pwrite(out, o.data(), o.size(), data + oy * long(o.size())) != long(o.size())) { perror("write"); return 2; }
        }
        return 0;
    }
    if (mode == "crop" && argc == 5) { // crop IN.npy OUT.npy N: the top-left N x N
        Npy in = open_npy(argv[2]);
        const long n = atol(argv[4]);
        int out = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0644);
        header(out, n, n, in.c);
        const long data = lseek(out, 0, SEEK_END);
        std::vector<unsigned char> row(in.w * in.c);
        for (long y = 0; y < n; ++y) {
            get(in, y, row.data());
            if (pwrite(out, row.data(), n * in.c, data + y * n * in.c) != n * in.c) { perror("write"); return 2; }
        }
        return 0;
    }
    if (mode == "cmp" && argc == 7) { // cmp A.npy B.npy ROWS COLS TOL: the top-left ROWS x COLS
        Npy a = open_npy(argv[2]), b = open_npy(argv[3]);
        const long rows = atol(argv[4]), cols = atol(argv[5]), tol = atol(argv[6]);
        if (a.c != b.c || rows > std::min(a.h, b.h) || cols > std::min(a.w, b.w)) { fprintf(stderr, "shapes differ\n"); return 2; }
        std::vector<unsigned char> ra(a.w * a.c), rb(b.w * b.c);
        long differ = 0, worst = 0;
        for (long y = 0; y < rows; ++y) {
            get(a, y, ra.data()), get(b, y, rb.data());
            for (long i = 0; i < cols * a.c; ++i) {
                long d = std::labs(long(ra[i]) - long(rb[i]));
                differ += d != 0, worst = std::max(worst, d);
            }
        }
        printf("%ld x %ld x %ld samples compared: %ld differ, largest difference %ld\n", rows, cols, a.c, differ, worst);
        return worst > tol ? 1 : 0;
    }
    fprintf(stderr, "usage: ref IN OUT SIGMA | crop IN OUT N | cmp A B ROWS COLS TOL\n");
    return 2;
}
EOF
g++ -O3 -march=native -std=c++17 -o "$WORK/ref" "$WORK/ref.cpp"

# ---- the pipelines ----------------------------------------------------------------------------------
cat > "$WORK/gen.toml" <<EOF
[nodes.src]
op = "synth"
pattern = "noise"
width = $SIZE
height = $SIZE
channels = 3
dtype = "u8"
seed = 16
[nodes.save]
op = "save"
input = "src"
path = "$WORK/in.npy"
EOF
chain() { # chain IN OUT: the measured pipeline
    cat <<EOF
[nodes.load]
op = "load"
path = "$1"
max_pixels = 0
[nodes.blur]
op = "gauss5x5"
input = "load"
[nodes.pool]
op = "maxpool2x2"
input = "blur"
[nodes.save]
op = "save"
input = "pool"
path = "$2"
EOF
}
chain "$WORK/in.npy" "$WORK/out.npy" > "$WORK/run.toml"
chain "$WORK/crop.npy" "$WORK/crop-whole.npy" > "$WORK/crop-whole.toml"
chain "$WORK/crop.npy" "$WORK/crop-strips.npy" > "$WORK/crop-strips.toml"

measure() { # measure NAME ARGS...: runs pixflow under /usr/bin/time -v, prints its figures
    local name=$1
    shift
    /usr/bin/time -v "$PIXFLOW" "$@" 2> "$WORK/$name.time" > "$WORK/$name.out" || {
        cat "$WORK/$name.out" "$WORK/$name.time" >&2
        exit 1
    }
    local rss wall
    rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f MiB", $2 / 1024 }' "$WORK/$name.time")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$WORK/$name.time")
    echo "$name: peak RSS $rss, wall $wall (m:ss)"
    grep -h "^note: strips\|strips:" "$WORK/$name.out" "$WORK/$name.time" | head -2 | sed 's/^/  /' || true
}

echo "pixflow $("$PIXFLOW" --version 2>/dev/null | head -1); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "input: ${SIZE}x${SIZE} RGB u8 .npy ($(awk "BEGIN { printf \"%.2f GiB\", $SIZE * $SIZE * 3 / 2^30 }")), --memory-limit $LIMIT"
measure generate run "$WORK/gen.toml" --backend cpu --memory-limit "$LIMIT"
measure pipeline run "$WORK/run.toml" --backend cpu --memory-limit "$LIMIT" --report "$WORK/report.json"
python3 - "$WORK/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("  report: peak_host_bytes %.1f MiB; strips: %s" % (r["peak_host_bytes"] / 2**20,
      ", ".join("%s in %d of %d rows" % (" -> ".join(s["nodes"]), s["count"], s["rows"]) for s in r.get("strips", []))))
EOF
ls -l "$WORK/out.npy" | awk '{ printf "  output: %s bytes\n", $5 }'

echo "check 1: against the independent banded reference"
start=$(date +%s.%N)
"$WORK/ref" ref "$WORK/in.npy" "$WORK/ref.npy" 1.5
"$WORK/ref" cmp "$WORK/out.npy" "$WORK/ref.npy" $((SIZE / 2)) $((SIZE / 2)) 1 | sed 's/^/  /'
[ "${PIPESTATUS[0]}" = 0 ] || { echo "FAIL: the output differs from the reference by more than 1" >&2; exit 1; }
echo "  (reference computed in $(awk "BEGIN { printf \"%.0f\", $(date +%s.%N) - $start }") s)"
rm -f "$WORK/ref.npy"

echo "check 2: against the whole-image run on a ${CROP}x${CROP} crop"
"$WORK/ref" crop "$WORK/in.npy" "$WORK/crop.npy" "$CROP"
measure crop-whole run "$WORK/crop-whole.toml" --backend cpu
measure crop-strips run "$WORK/crop-strips.toml" --backend cpu --strip-rows 37
cmp "$WORK/crop-whole.npy" "$WORK/crop-strips.npy" && echo "  crop: strips of 37 rows == whole image, byte for byte"
"$WORK/ref" cmp "$WORK/out.npy" "$WORK/crop-whole.npy" $((CROP / 2 - 1)) $((CROP / 2 - 1)) 0 | sed 's/^/  full run vs crop run: /'
[ "${PIPESTATUS[0]}" = 0 ] || { echo "FAIL: the full run differs from the whole-image run on the crop" >&2; exit 1; }
echo "OK"
