#!/usr/bin/env python3
"""pixflow's CPU operators against OpenCV's equivalents, measured interleaved in one run.

Run through scripts/bench-opencv.sh (which installs python3-opencv when it is missing). For each
operator, ROUNDS rounds alternate: `pixflow bench pipelines/bench/<op>-8k.toml --backend cpu
--repeat REPEAT` for each pixflow build given (its node's median), then the OpenCV call REPEAT
times after 2 warm-up calls into a preallocated output (its median). A figure is the median of
the rounds' medians, so both sides see the same share of whatever else the machine runs; the
load average before and after is printed. Both use 2 threads (TBB's default here: 2 cores;
cv2.setNumThreads(2)).

OpenCV's first call into a fresh output pays the page faults of that output (about 5x its
steady time on 8192 x 8192 RGB here); the table shows that first call apart and never mixes it
into the median. pixflow bench's outputs are allocated once and warmed up the same way.

The calls (same size, dtype and channels as the pixflow pipeline, 8192 x 8192 RGB u8 noise):
  gauss5x5   cv2.GaussianBlur(src, (5, 5), 1.5, dst, 1.5, cv2.BORDER_REFLECT_101): gauss5x5's
             defaults (sigma 1.5, reflect101); OpenCV rounds its u8 weights to 8 fractional
             bits, so its output differs from pixflow's exact one by at most 1 here and there
  grayscale  cv2.cvtColor(src, cv2.COLOR_RGB2GRAY, dst): both BT.601; OpenCV's u8 weights have
             14 fractional bits, pixflow's rule is exact (299 R + 587 G + 114 B) / 1000
  integral   cv2.integral(src, dst, cv2.CV_32S): pixflow's output is H x W u32 (inclusive);
             OpenCV's is (H+1) x (W+1) with a zero first row and column (exclusive), the same sums
Operators with no OpenCV equivalent (maxpool2x2; floyd_steinberg: OpenCV has no error diffusion;
chan_vese: scikit-image, not OpenCV) are timed on the pixflow side only, with --ops.

--per-core (used by scripts/bench-opencv.sh --per-core) instead times each OpenCV call with one
thread by its CPU time, on 8192 x 2048 (the rows of scripts/bench/kernel_cpu_time.cpp), best of 5.

--check also runs each pair once on a 1024 x 1024 image through the pixflow Python module
(PYTHONPATH=<build>/python) and prints how far the outputs are apart.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

PIPELINES = {
    "gauss5x5": "pipelines/bench/gauss5x5-8k.toml",
    "grayscale": "pipelines/bench/grayscale-8k.toml",
    "integral": "pipelines/bench/integral-8k.toml",
    "maxpool2x2": "pipelines/bench/maxpool2x2-8k.toml",
    "floyd_steinberg": "pipelines/bench/floyd_steinberg-8k.toml",
    "chan_vese-1k": "pipelines/bench/chan_vese-1k.toml",
}


def opencv_call(cv2, op, size):
    """(description, a function timing one call into a preallocated output, first-call ms) or None."""
    rng = np.random.default_rng(1)
    src = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
    if op == "gauss5x5":
        mk = lambda: np.empty_like(src)
        call = lambda d: cv2.GaussianBlur(src, (5, 5), 1.5, dst=d, sigmaY=1.5, borderType=cv2.BORDER_REFLECT_101)
        what = "cv2.GaussianBlur 5x5, sigma 1.5, reflect101"
    elif op == "grayscale":
        mk = lambda: np.empty((size, size), np.uint8)
        call = lambda d: cv2.cvtColor(src, cv2.COLOR_RGB2GRAY, dst=d)
        what = "cv2.cvtColor RGB2GRAY"
    elif op == "integral":
        mk = lambda: np.empty((size + 1, size + 1, 3), np.int32)
        call = lambda d: cv2.integral(src, sum=d, sdepth=cv2.CV_32S)
        what = "cv2.integral CV_32S"
    else:
        return None
    fresh = mk()
    t = time.perf_counter()
    call(fresh)
    first_ms = (time.perf_counter() - t) * 1e3
    del fresh
    dst = mk()

    def timed():
        t0 = time.perf_counter()
        out = call(dst)
        ms = (time.perf_counter() - t0) * 1e3
        assert out is dst or np.shares_memory(out, dst), "OpenCV did not write into the preallocated output"
        return ms

    return what, timed, first_ms


def pixflow_median(exe, pipeline, repeat):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([exe, "bench", pipeline, "--backend", "cpu", "--repeat", str(repeat), "--report", f.name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = json.load(open(f.name))
    node = r["nodes"][-1]
    return node["median_ms"], node["floor_ms"], r["host_copy_gbps"]


def check(cv2):
    import pixflow
    eng = pixflow.Engine()
    rng = np.random.default_rng(2)
    src = rng.integers(0, 256, (1024, 1024, 3), dtype=np.uint8)
    toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "%s"\ninput = "src"\n'
    for op in ("gauss5x5", "grayscale", "integral"):
        p = eng.load_string(toml % op + ('dtype = "u32"\n' if op == "integral" else ""), "check.toml")
        p.backend("cpu")
        ours = p.run(inputs={"src": src}, outputs=["n"])["n"]
        if op == "gauss5x5":
            theirs = cv2.GaussianBlur(src, (5, 5), 1.5, sigmaY=1.5, borderType=cv2.BORDER_REFLECT_101)
        elif op == "grayscale":
            theirs = cv2.cvtColor(src, cv2.COLOR_RGB2GRAY)
        else:
            theirs = cv2.integral(src, sdepth=cv2.CV_32S)[1:, 1:].astype(np.uint32)
        d = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
        print(f"check {op:10} 1024x1024 RGB: max |pixflow - OpenCV| = {d.max()}, "
              f"{100.0 * np.count_nonzero(d) / d.size:.2f}% of samples differ")


def per_core(cv2):
    cv2.setNumThreads(1)
    h, w = 2048, 8192
    src = np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8)
    calls = [("cv2.GaussianBlur RGB u8", np.empty_like(src),
              lambda d: cv2.GaussianBlur(src, (5, 5), 1.5, dst=d, sigmaY=1.5, borderType=cv2.BORDER_REFLECT_101)),
             ("cv2.cvtColor RGB2GRAY", np.empty((h, w), np.uint8), lambda d: cv2.cvtColor(src, cv2.COLOR_RGB2GRAY, dst=d)),
             ("cv2.integral RGB u8 -> s32", np.empty((h + 1, w + 1, 3), np.int32),
              lambda d: cv2.integral(src, sum=d, sdepth=cv2.CV_32S))]
    for name, dst, call in calls:
        call(dst)
        best = float("inf")
        for _ in range(5):
            t = time.thread_time()
            call(dst)
            best = min(best, time.thread_time() - t)
        print(f"{name:34} {best * 1e3:9.2f} ms {best * 1e9 / src.size:7.3f} ns/sample")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pixflow", action="append", default=[],
                    help="LABEL=PATH of a pixflow executable (repeatable; default now=build/bin/pixflow)")
    ap.add_argument("--ops", default="gauss5x5,grayscale,integral")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--per-core", action="store_true")
    a = ap.parse_args()
    import cv2
    if a.per_core:
        per_core(cv2)
        return 0
    cv2.setNumThreads(2)
    builds = [tuple(s.split("=", 1)) for s in (a.pixflow or ["now=build/bin/pixflow"])]
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads; {os.cpu_count()} CPUs; "
          f"load average before: {os.getloadavg()}")
    if a.check:
        check(cv2)
    rows = []
    for op in a.ops.split(","):
        cv = opencv_call(cv2, op, a.size)
        ours = {label: [] for label, _ in builds}
        floors, theirs = [], []
        for _ in range(a.rounds):
            for label, exe in builds:
                ms, floor, _ = pixflow_median(exe, PIPELINES[op], a.repeat)
                ours[label].append(ms)
                floors.append(floor)
            if cv:
                what, timed, first_ms = cv
                timed(), timed()  # warm-up
                theirs.append(statistics.median(timed() for _ in range(a.repeat)))
        row = {"op": op, "floor": statistics.median(floors)}
        row.update({label: statistics.median(v) for label, v in ours.items()})
        if cv:
            row.update(cv=statistics.median(theirs), what=cv[0], first=cv[2])
        rows.append(row)
        line = f"{op:16}" + "".join(f" {label} {row[label]:8.2f} ms" for label, _ in builds)
        line += f"  floor {row['floor']:.2f} ms"
        if cv:
            line += f"  | {row['what']}: {row['cv']:.2f} ms (first call {row['first']:.1f} ms)"
        print(line, flush=True)
    print(f"load average after: {os.getloadavg()}")
    labels = [label for label, _ in builds]
    print("\n| operator | " + " | ".join(f"pixflow {l} ms" for l in labels) + " | x floor | OpenCV | OpenCV ms | "
          "OpenCV first call ms | " + " / ".join(labels[-1:]) + " vs OpenCV |")
    print("|---|" + "---:|" * len(labels) + "---:|---|---:|---:|---:|")
    for r in rows:
        last = r[labels[-1]]
        cells = " | ".join(f"{r[l]:.1f}" for l in labels)
        if "cv" in r:
            print(f"| {r['op']} | {cells} | {last / r['floor']:.2f} | {r['what']} | {r['cv']:.1f} | "
                  f"{r['first']:.1f} | {last / r['cv']:.2f}x |")
        else:
            print(f"| {r['op']} | {cells} | {last / r['floor']:.2f} | no OpenCV equivalent | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
