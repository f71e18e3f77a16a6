"""Runs a pixflow pipeline on numpy images held in memory: blur, then halve by 2x2 max pooling.
Checks its own results and prints the run report's table; docs/python.md shows this file."""
import numpy as np

import pixflow

PIPELINE = """
[nodes.src]
op = "memory"             # the image run() binds with inputs={"src": ...}

[nodes.blur]
op = "gauss5x5"
input = "src"
border = "replicate"

[nodes.small]
op = "maxpool2x2"
input = "blur"
"""

engine = pixflow.Engine()  # the installed plugins; $PIXFLOW_PLUGIN_PATH is searched first
pipeline = engine.load_string(PIPELINE, "blur.toml")
pipeline.set("blur.sigma", 2.0)  # as `pixflow run --set blur.sigma=2`

frame = pixflow.empty((480, 640, 3), np.uint8)  # 64-byte aligned rows: pixflow reads it in place
for level in (200, 37):
    frame[...] = level  # a flat image stays flat under a blur and a max pool
    small = pipeline.run(inputs={"src": frame})["small"]  # compiles on the first run only
    assert small.shape == (240, 320, 3) and small.dtype == np.uint8
    assert (small == level).all(), f"expected {level} everywhere"

report = pipeline.report()  # the JSON of `pixflow run --report`, as a dict
for node in report["nodes"]:
    print(f"{node['id']:8} {node['op']:12} {node['backend']:5} {node['ms']:8.3f} ms")
print("copies:", [n for n in report["notes"] if "copied" in n] or "none")

try:
    pipeline.set("blur.border", "mirror").run()
except pixflow.UserError as e:  # the diagnostics `pixflow` prints, one per line
    print("error:", e)

print("ok: 640x480 -> 320x240, twice")
