"""A PyTorch CUDA tensor through a pixflow pipeline and back, on PyTorch's stream, with no copy
and no host round trip; docs/python.md shows this file, and the GPU tests run it."""
import torch

import pixflow

engine = pixflow.Engine()
pipeline = engine.load_string("""
[nodes.src]
op = "memory"
[nodes.blur]
op = "gauss5x5"
input = "src"
""", "torch.toml")

stream = torch.cuda.Stream()  # pixflow works on PyTorch's stream
with torch.cuda.stream(stream):
    frame = torch.randint(0, 256, (512, 512, 3), dtype=torch.uint8, device="cuda")
    out = pipeline.run(inputs={"src": frame}, stream=stream)["blur"]  # enqueued; returns at once
    blurred = torch.from_dlpack(out)  # pixflow's buffer: no copy; later work on `stream` sees it
    print(blurred.shape, blurred.dtype, blurred.device, float(blurred.float().mean()))

transfers = pipeline.report()["transfers"]
assert transfers["h2d"]["count"] == 0 and transfers["d2h"]["count"] == 0  # no host copy
print("ok: no upload, no download")
