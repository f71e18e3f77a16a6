"""The GPU path: device arrays in and out with no host copy (the report's transfer counts are 0),
through pixflow's own device arrays, DLPack capsules, __cuda_array_interface__, and PyTorch and
CuPy where they are installed, on the caller's stream. Without a usable CUDA device every test here
is skipped with the reason (CTest then lists Python.gpu as skipped); scripts/gpu-check.sh run
runs them on the GPU machine."""
import numpy as np
import pytest

import pixflow
from conftest import MEMORY, copies, noise

# Three blurs: a chain of CUDA nodes that reads the caller's device memory and writes the
# caller's device memory, so no upload and no download.
CHAIN = MEMORY + "".join(f'[nodes.{n}]\nop = "gauss5x5"\ninput = "{i}"\n' for i, n in [("src", "a"), ("a", "b"), ("b", "c")])
NO_TRANSFERS = {"h2d": {"count": 0, "bytes": 0.0}, "d2h": {"count": 0, "bytes": 0.0}}


@pytest.fixture(scope="module")
def gpu(engine):
    if not pixflow._pixflow.cuda_built():
        pytest.skip("the pixflow module was built without CUDA")
    if not engine.cuda_available:
        pytest.skip("no usable CUDA device (pixflow.Engine().cuda_available is False)")
    return engine


@pytest.fixture(scope="module")
def image():
    a = pixflow.empty((256, 256, 3), np.uint8)  # 64-byte aligned: read in place on the host too
    a[...] = noise((256, 256, 3), seed=21)  # rows of 768 bytes: on a device, 256-byte aligned
    return a


@pytest.fixture(scope="module")
def reference(gpu, image):
    """The chain's result on the same image from numpy in and out: on CUDA, and on the CPU."""
    on_cuda = gpu.load_string(CHAIN, "ref.toml").backend("cuda").run(inputs={"src": image})["c"]
    on_cpu = gpu.load_string(CHAIN, "ref.toml").backend("cpu").run(inputs={"src": image})["c"]
    return on_cuda, on_cpu


def device_copy(engine, image):
    """`image` uploaded into a pixflow.Array on device 0 (by a one-node CUDA pipeline)."""
    p = engine.load_string(MEMORY + '[nodes.up]\nop = "convert"\ninput = "src"\ndtype = "u8"\nbackend = "cuda"\n', "up.toml")
    arr = p.run(inputs={"src": image}, to="device")["up"]
    assert isinstance(arr, pixflow.Array) and arr.device == 0
    assert np.array_equal(arr.numpy(), image)
    return arr


def test_numpy_in_gives_numpy_out_from_cuda_nodes(gpu, image, reference):
    p = gpu.load_string(CHAIN, "gpu.toml").backend("cuda")
    out = p.run(inputs={"src": image})["c"]
    assert isinstance(out, np.ndarray) and np.array_equal(out, reference[0])
    r = p.report()
    assert r["transfers"]["h2d"]["count"] == 1  # the upload where the CUDA chain starts
    assert [n for n in copies(r)] == ['output("c"): copied into the caller\'s buffer after the run; a buffer is '
                                      "written in place when it lies on CUDA device 0, with rows that start 256-byte "
                                      "aligned"]
    dev = p.run(to="device")["c"]  # or kept on the device, written in place
    assert isinstance(dev, pixflow.Array) and np.array_equal(dev.numpy(), reference[0])
    assert copies(p.report()) == []


def check(p, out, reference):
    on_cuda, on_cpu = reference
    assert isinstance(out, pixflow.Array) and out.device == 0, "the output stays on the device"
    got = out.numpy()
    assert np.array_equal(got, on_cuda)
    assert np.abs(got.astype(int) - on_cpu.astype(int)).max() <= 1  # CUDA and CPU blurs round alike to 1
    r = p.report()
    assert r["transfers"] == NO_TRANSFERS, r["transfers"]
    assert copies(r) == [], r["notes"]
    assert all(n["backend"] == "cuda" for n in r["nodes"] if n["op"] == "gauss5x5")


def test_pixflow_device_arrays_in_and_out(gpu, image, reference):
    src = device_copy(gpu, image)
    p = gpu.load_string(CHAIN, "gpu.toml")
    out = p.run(inputs={"src": src})["c"]
    check(p, out, reference)
    assert out.pitch % 256 == 0 and out.data_ptr % 256 == 0


def test_dlpack_capsules_on_the_device(gpu, image, reference):
    src = device_copy(gpu, image)
    assert src.__dlpack_device__() == (2, 0)
    p = gpu.load_string(CHAIN, "gpu.toml")
    out = p.run(inputs={"src": src.__dlpack__(stream=1, max_version=(1, 0))})["c"]
    check(p, out, reference)


class CudaInterface:
    """Only __cuda_array_interface__ (as Numba or an older CuPy offers it)."""

    def __init__(self, obj):
        self.__cuda_array_interface__ = obj.__cuda_array_interface__
        self.obj = obj


def test_cuda_array_interface_in(gpu, image, reference):
    src = device_copy(gpu, image)
    p = gpu.load_string(CHAIN, "gpu.toml")
    out = p.run(inputs={"src": CudaInterface(src)})["c"]
    check(p, out, reference)


def test_torch_round_trip_on_the_callers_stream(gpu, image, reference):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed for this Python")
    x = torch.from_numpy(image).cuda()
    p = gpu.load_string(CHAIN, "torch.toml")
    for stream in (None, torch.cuda.current_stream(), torch.cuda.Stream()):
        with torch.cuda.stream(stream if stream is not None else torch.cuda.current_stream()):
            y = x * 1  # made on that stream: pixflow's work must come after it
            out = p.run(inputs={"src": y}, stream=stream)["c"]
            z = torch.from_dlpack(out)  # ordered after pixflow's work on the stream
            assert z.device.type == "cuda" and z.data_ptr() == out.data_ptr, "torch took pixflow's buffer as it is"
            assert tuple(z.shape) == (256, 256, 3) and z.dtype == torch.uint8
            host = z.cpu().numpy()
        assert np.array_equal(host, reference[0])
        check(p, out, reference)


def test_torch_tensor_with_padded_rows(gpu, image, reference):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed for this Python")
    wide = torch.zeros((256, 400, 3), dtype=torch.uint8, device="cuda")
    wide[:, :256] = torch.from_numpy(image).cuda()
    p = gpu.load_string(CHAIN, "torch.toml")
    out = p.run(inputs={"src": wide[:, :256]})["c"]  # rows 1200 bytes apart: a pitch
    assert np.array_equal(torch.from_dlpack(out).cpu().numpy(), reference[0])
    r = p.report()
    assert r["transfers"] == NO_TRANSFERS  # staged on the device (rows not 256-byte aligned), never on the host
    assert [n for n in copies(r)] == ['input("src"): copied into a staging buffer; memory is read in place when it lies '
                                      "on CUDA device 0, with rows that start 256-byte aligned"]


def test_cupy_round_trip(gpu, image, reference):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed for this Python")
    p = gpu.load_string(CHAIN, "cupy.toml")
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = cupy.asarray(image)  # made on s, like the work pixflow is ordered after
        out = p.run(inputs={"src": x}, stream=s)["c"]
        y = cupy.from_dlpack(out)
        assert y.data.ptr == out.data_ptr
        assert np.array_equal(cupy.asnumpy(y), reference[0])
    check(p, out, reference)
    out2 = p.run(inputs={"src": CudaInterface(x)})["c"]  # CuPy through __cuda_array_interface__
    check(p, out2, reference)


def test_torch_example_of_the_docs(gpu):
    pytest.importorskip("torch", reason="PyTorch is not installed for this Python")
    import os
    import subprocess
    import sys

    from conftest import PLUGINS, SOURCE
    env = dict(os.environ, PIXFLOW_PLUGIN_PATH=str(PLUGINS))
    r = subprocess.run([sys.executable, str(SOURCE / "python" / "examples" / "torch_blur.py")], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "ok: no upload, no download"
