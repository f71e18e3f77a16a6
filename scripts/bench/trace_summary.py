#!/usr/bin/env python3
"""Where a batch's time goes, from its `pixflow run ... --trace T.json`: per span kind (the
trace's category and operator: decode, compute, transfer, encode...) the count, total and
median duration; the images' own spans (first start to last end, in flight at once); and the
share of the images' wall time each kind covers on its lanes.
    python3 scripts/bench/trace_summary.py T.json
"""
import collections
import json
import statistics
import sys

ev = json.load(open(sys.argv[1]))["traceEvents"]
spans = [e for e in ev if e.get("ph") == "X"]
images = [e for e in spans if e.get("cat") == "image" or e["name"].endswith((".ppm", ".png", ".jpg", ".npy", ".pgm"))]
work = [e for e in spans if e not in images]
if not spans:
    sys.exit("no spans")
t0 = min(e["ts"] for e in spans)
t1 = max(e["ts"] + e["dur"] for e in spans)
print(f"spans {len(spans)}, images {len(images)}, wall of the spans {(t1 - t0) / 1000:.2f} ms")
kinds = collections.defaultdict(list)
for e in work:
    a = e.get("args", {})
    kinds[(e.get("cat", ""), a.get("op", e["name"]), a.get("backend", ""))].append(e["dur"])
print(f"{'category':10s} {'op':22s} {'backend':8s} {'count':>6s} {'total ms':>10s} {'median us':>10s} {'max us':>10s}")
for (cat, op, be), d in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
    print(f"{cat:10s} {op:22s} {be:8s} {len(d):6d} {sum(d) / 1000:10.2f} {statistics.median(d):10.1f} {max(d):10.1f}")
if images:
    d = [e["dur"] for e in images]
    print(f"image spans: median {statistics.median(d) / 1000:.2f} ms, max {max(d) / 1000:.2f} ms, sum {sum(d) / 1000:.1f} ms "
          f"= {sum(d) / (t1 - t0):.1f} images in flight on average")
lanes = collections.defaultdict(float)
for e in work:
    lanes[(e.get("pid"), e.get("tid"))] += e["dur"]
busy = sorted(lanes.values(), reverse=True)
print(f"lanes {len(lanes)}: busy {', '.join(f'{b / (t1 - t0):.0%}' for b in busy[:20])}")
# Each GPU's busy share: the union of the spans on its streams (they overlap when an image's
# transfers overlap another's kernels), against the wall of all spans; and which op fills it.
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
for pid in sorted({e["pid"] for e in work if str(names.get(e["pid"], "")).startswith("cuda:")}):
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in work if e["pid"] == pid)
    union, end = 0.0, None
    for a, b in iv:
        if end is None or a > end:
            union += b - a
            end = b
        elif b > end:
            union += b - end
            end = b
    ops = collections.Counter()
    for e in work:
        if e["pid"] == pid:
            ops[e.get("args", {}).get("op", e["name"])] += e["dur"]
    top = ", ".join(f"{op} {d / 1000:.1f} ms" for op, d in ops.most_common(3))
    print(f"{names[pid]}: busy {union / (t1 - t0):.0%} of the wall ({union / 1000:.1f} ms; {top})")
