#!/usr/bin/env python3
"""Dumps the CPU outputs of the operators issue 18 speeds up, and compares a later build with a dump.

A before/after check that a faster kernel gives the same bytes as the one it replaces:

    PYTHONPATH=build/python python3 scripts/bench/outputs.py dump /tmp/before.json    # unchanged build
    PYTHONPATH=build/python python3 scripts/bench/outputs.py compare /tmp/before.json  # after the change

Every case runs one node on the CPU backend over deterministic inputs (noise, full-range extremes,
flat and two-level images that make exact rounding ties, odd and tiny sizes, rows with padding)
for every dtype, channel count and parameter the kernel has a code path for. `compare` exits 1
and names each case whose output differs in any byte (f32/f64 compared as bits, so -0.0 and NaN
payloads count too). The dump keeps each output's shape, dtype and SHA-256, not the bytes (the
noise outputs would take over a gigabyte); to see where two builds differ, run both on the case.
`--only OP` restricts either command to one operator.
"""
import argparse
import hashlib
import json
import zlib
import sys

import numpy as np

import pixflow

DT = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "i16": np.int16, "i32": np.int32,
      "u64": np.uint64, "f32": np.float32, "f64": np.float64}


def image(kind, h, w, c, dtype, seed, pad=0):
    """An (h, w[, c]) image of `kind`; with pad > 0 its rows are a view into wider rows. The seed
    is the case's name, so that a case's input does not depend on which others run."""
    rng = np.random.default_rng(seed)
    shape = (h, w + pad, c)
    t = DT[dtype]
    if kind == "noise":
        if t in (np.float32, np.float64):
            a = rng.uniform(-0.25, 1.25, shape).astype(t)
        else:
            info = np.iinfo(t)
            hi = min(int(info.max), 65535) if t in (np.uint32, np.uint64, np.int32) else int(info.max)
            a = rng.integers(int(info.min) if t in (np.int16,) else 0, hi, shape, endpoint=True).astype(t)
    elif kind == "extremes":  # only the smallest and largest values: saturation and overflow
        if t in (np.float32, np.float64):
            lo, hi = 0.0, 1.0
        else:
            lo, hi = 0, min(int(np.iinfo(t).max), 65535 if t in (np.uint32, np.uint64) else int(np.iinfo(t).max))
        a = np.where(rng.integers(0, 2, shape) == 1, hi, lo).astype(t)
    elif kind == "twolevel":  # two nearby values in blocks: exact .5 ties after a blur
        base = rng.integers(0, 200, 1)[0]
        yy, xx = np.meshgrid(np.arange(h), np.arange(w + pad), indexing="ij")
        a = np.repeat((base + ((yy // 3 + xx // 2) % 2))[:, :, None], c, axis=2).astype(t)
    elif kind == "flat":
        a = np.full(shape, 77, t)
    else:
        raise ValueError(kind)
    a = a[:, :w, :]
    return a[:, :, 0] if c == 1 else a


def cases(only):
    """Yields (name, toml, input array)."""
    sizes = [(1, 1), (1, 9), (9, 1), (2, 2), (3, 5), (5, 3), (7, 13), (37, 29), (64, 64), (131, 257), (600, 901)]
    if only in (None, "gauss5x5"):
        for dtype in ("u8", "u16", "f32"):
            for c in (1, 2, 3, 4):
                for border in ("reflect101", "replicate", "zero"):
                    for sigma in (1.5, 0.5, 3.0):
                        for (h, w) in sizes:
                            for kind in ("noise", "extremes", "twolevel"):
                                if kind != "noise" and (h * w > 5000 or sigma != 1.5):
                                    continue
                                if sigma != 1.5 and border != "reflect101" and h * w > 5000:
                                    continue
                                toml = f'[nodes.src]\nop = "memory"\n[nodes.n]\nop = "gauss5x5"\ninput = "src"\nsigma = {sigma}\nborder = "{border}"\n'
                                yield (f"gauss5x5 {dtype} c{c} {border} s{sigma} {h}x{w} {kind}", toml,
                                       lambda s: image(kind, h, w, c, dtype, s))
                # rows with padding (pitch > width)
                toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "gauss5x5"\ninput = "src"\n'
                yield (f"gauss5x5 {dtype} c{c} pitched 45x77", toml, lambda s: image("noise", 45, 77, c, dtype, s, pad=5))
        # the u8 path over many sigmas, on images large enough for rare rounding ties to show
        for sigma in (0.1, 0.3, 0.7, 1.0, 1.2, 1.5, 2.0, 2.5, 5.0, 20.0, 100.0):
            for c in (1, 3, 4):
                toml = f'[nodes.src]\nop = "memory"\n[nodes.n]\nop = "gauss5x5"\ninput = "src"\nsigma = {sigma}\n'
                yield (f"gauss5x5 u8 c{c} sweep s{sigma} 512x700", toml, lambda s: image("noise", 512, 700, c, "u8", s))
                yield (f"gauss5x5 u8 c{c} sweep s{sigma} 300x200 twolevel", toml,
                       lambda s: image("twolevel", 300, 200, c, "u8", s))
    if only in (None, "grayscale"):
        for dtype in ("u8", "u16", "f32"):
            for c in (1, 3, 4):
                for (h, w) in sizes + [(3, 1000), (2, 8192 + 7)]:
                    for kind in ("noise", "extremes", "twolevel"):
                        toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "grayscale"\ninput = "src"\n'
                        yield (f"grayscale {dtype} c{c} {h}x{w} {kind}", toml, lambda s: image(kind, h, w, c, dtype, s))
                toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "grayscale"\ninput = "src"\n'
                yield (f"grayscale {dtype} c{c} pitched 45x77", toml, lambda s: image("noise", 45, 77, c, dtype, s, pad=3))
    if only in (None, "integral"):
        for dtype in ("u8", "u16", "u32", "f32"):
            outs = ("f64",) if dtype == "f32" else ("u32", "u64", "f64")
            for out in outs:
                for c in (1, 2, 3, 4):
                    for (h, w) in sizes + [(1000, 40), (300, 3000)]:
                        for kind in ("noise", "extremes"):
                            toml = f'[nodes.src]\nop = "memory"\n[nodes.n]\nop = "integral"\ninput = "src"\ndtype = "{out}"\n'
                            yield (f"integral {dtype}->{out} c{c} {h}x{w} {kind}", toml, lambda s: image(kind, h, w, c, dtype, s))
                    toml = f'[nodes.src]\nop = "memory"\n[nodes.n]\nop = "integral"\ninput = "src"\ndtype = "{out}"\n'
                    yield (f"integral {dtype}->{out} c{c} pitched 45x77", toml, lambda s: image("noise", 45, 77, c, dtype, s, pad=3))
    if only in (None, "maxpool2x2"):
        for dtype in ("u8", "u16", "i16", "i32", "u32", "u64", "f32", "f64"):
            for c in (1, 2, 3, 4):
                for (h, w) in [(2, 2), (3, 5), (5, 3), (7, 13), (37, 29), (64, 64), (131, 257), (600, 901), (4, 8199)]:
                    toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "maxpool2x2"\ninput = "src"\n'
                    yield (f"maxpool2x2 {dtype} c{c} {h}x{w}", toml, lambda s: image("noise", h, w, c, dtype, s))
                toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "maxpool2x2"\ninput = "src"\n'
                yield (f"maxpool2x2 {dtype} c{c} pitched 45x77", toml, lambda s: image("noise", 45, 77, c, dtype, s, pad=3))
    if only in (None, "floyd_steinberg"):
        for c in (1, 2, 3, 4):
            for (h, w) in [(1, 1), (1, 9), (9, 1), (2, 2), (3, 5), (7, 13), (37, 29), (6, 300), (13, 2), (131, 257), (700, 1001)]:
                for sched in ("wavefront", "sequential"):
                    for kind in ("noise", "extremes", "flat"):
                        toml = f'[nodes.src]\nop = "memory"\n[nodes.n]\nop = "floyd_steinberg"\ninput = "src"\ncpu_schedule = "{sched}"\n'
                        yield (f"floyd_steinberg c{c} {h}x{w} {sched} {kind}", toml, lambda s: image(kind, h, w, c, "u8", s))
            toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "floyd_steinberg"\ninput = "src"\n'
            yield (f"floyd_steinberg c{c} pitched 45x77", toml, lambda s: image("noise", 45, 77, c, "u8", s, pad=3))
    if only in (None, "chan_vese"):
        for dtype in ("u8", "u16", "f32"):
            for init in ("checkerboard", "disk", "small_disk"):
                for (h, w) in [(1, 1), (1, 9), (9, 1), (2, 2), (3, 5), (37, 29), (64, 64), (131, 257), (300, 401)]:
                    toml = (f'[nodes.src]\nop = "memory"\n[nodes.n]\nop = "chan_vese"\ninput = "src"\ninit = "{init}"\n'
                            f'max_iter = 40\ntol = 0.0\n')
                    yield (f"chan_vese {dtype} {init} {h}x{w}", toml, lambda s: image("noise", h, w, 1, dtype, s))
            toml = '[nodes.src]\nop = "memory"\n[nodes.n]\nop = "chan_vese"\ninput = "src"\nmax_iter = 25\n'
            yield (f"chan_vese {dtype} pitched 45x77", toml, lambda s: image("noise", 45, 77, 1, dtype, s, pad=3))
            toml = ('[nodes.src]\nop = "memory"\n[nodes.n]\nop = "chan_vese"\ninput = "src"\nmu = 0.7\ndt = 0.3\n'
                    'lambda1 = 2.0\nmax_iter = 200\n')
            yield (f"chan_vese {dtype} params 200x180", toml, lambda s: image("noise", 200, 180, 1, dtype, s))


def run_all(only):
    engine = pixflow.Engine()
    out = {}
    for name, toml, make in cases(only):
        arr = make(zlib.crc32(name.encode()))
        p = engine.load_string(toml, "case.toml")
        p.backend("cpu")
        outputs = ["n.mask", "n.phi"] if "chan_vese" in name else ["n"]
        res = p.run(inputs={"src": arr}, outputs=outputs)
        for key, v in res.items():
            v = np.ascontiguousarray(v)
            out[f"{name} [{key}]"] = f"{v.shape} {v.dtype} {hashlib.sha256(v.tobytes()).hexdigest()}"
        if "chan_vese" in name:  # the iteration count and RMS change come from the report
            rep = p.report()
            node = next(n for n in rep["nodes"] if n["id"] == "n")
            out[f"{name} [metrics]"] = repr(node.get("metrics"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["dump", "compare"])
    ap.add_argument("file")
    ap.add_argument("--only")
    a = ap.parse_args()
    got = run_all(a.only)
    if a.command == "dump":
        with open(a.file, "w") as f:
            json.dump(got, f, indent=0)
        print(f"{len(got)} outputs written to {a.file}")
        return 0
    with open(a.file) as f:
        ref = json.load(f)
    bad = [k for k, v in got.items() if k in ref and ref[k] != v]
    for k in bad:
        print(f"DIFFERS {k}")
    missing = [k for k in ref if (a.only is None or k.startswith(a.only)) and k not in got]
    for k in missing:
        print(f"MISSING {k}")
    checked = sum(1 for k in got if k in ref)
    print(f"{checked} outputs compared, {len(bad)} differ, {len(missing)} missing")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
