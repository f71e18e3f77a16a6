"""DLPack on the host, where it can be checked without a GPU: capsules pixflow makes and takes
(legacy "dltensor" and versioned "dltensor_versioned"), numpy taking pixflow's arrays and pixflow
taking numpy's, without copies. The GPU path is the same code with another device type
(test_gpu.py)."""
import ctypes
import gc

import numpy as np
import pytest

import pixflow
from conftest import MEMORY, copies, noise

BLUR = MEMORY + '[nodes.b]\nop = "gauss5x5"\ninput = "src"\n'

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype = ctypes.c_char_p
_name.argtypes = [ctypes.py_object]


def capsule_name(cap):
    return _name(cap).decode()


class Producer:
    """Only the DLPack protocol of an array (as a library other than numpy would offer it)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**{k: v for k, v in kwargs.items() if k == "stream"})

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class CapsuleHolder:
    """A capsule behind the protocol, for numpy.from_dlpack (which takes objects, not capsules)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


@pytest.fixture
def blurred(engine):
    p = engine.load_string(BLUR, "dl.toml").backend("cpu")
    image = noise((31, 45, 3), seed=9)
    arr = p.run(inputs={"src": image}, numpy=False)["b"]
    return p, arr


def test_pixflow_takes_the_capsules_it_makes(engine, blurred):
    _, arr = blurred
    q = engine.load_string(BLUR, "dl2.toml").backend("cpu")
    want = q.run(inputs={"src": np.asarray(arr)})["b"]
    assert arr.__dlpack_device__() == (1, 0)
    for kwargs, name in [({}, "dltensor"), ({"max_version": (1, 0)}, "dltensor_versioned")]:
        cap = arr.__dlpack__(**kwargs)
        assert capsule_name(cap) == name
        got = q.run(inputs={"src": cap})["b"]
        assert capsule_name(cap) == "used_" + name
        assert np.array_equal(got, want)
        assert copies(q.report()) == []  # 64-byte aligned packed rows: read in place
        with pytest.raises(TypeError, match="a capsule can be taken once"):
            q.run(inputs={"src": cap})


def test_numpy_takes_pixflow_arrays_without_a_copy(blurred):
    _, arr = blurred
    a = np.from_dlpack(arr)
    assert a.ctypes.data == arr.data_ptr
    assert a.shape == (31, 45, 3) and a.dtype == np.uint8
    assert np.array_equal(a, np.asarray(arr))


def test_pixflow_takes_numpy_arrays_through_dlpack_without_a_copy(engine):
    image = pixflow.empty((31, 45, 3), np.uint8)
    image[...] = noise((31, 45, 3), seed=10)
    p = engine.load_string(BLUR, "dl.toml").backend("cpu")
    want = p.run(inputs={"src": image})["b"]
    for source in (Producer(image), image.__dlpack__()):
        got = p.run(inputs={"src": source})["b"]
        assert np.array_equal(got, want)
        assert copies(p.report()) == []


def test_a_capsule_keeps_its_memory_after_the_array_is_gone(engine):
    p = engine.load_string(BLUR, "dl.toml").backend("cpu")
    image = noise((20, 30), np.float32, seed=11)
    out = p.run(inputs={"src": image}, numpy=False)["b"]
    want = np.asarray(out).copy()
    cap = out.__dlpack__()
    del out
    p.run(inputs={"src": noise((20, 30), np.float32, seed=12)})  # the pipeline moves on
    gc.collect()
    assert np.array_equal(np.from_dlpack(CapsuleHolder(cap)), want)
    unused = p.run(numpy=False)["b"].__dlpack__()
    del unused  # a capsule nobody took frees its tensor
    gc.collect()


def test_dlpack_tensor_not_contiguous_within_a_row_is_copied(engine):
    image = noise((20, 60, 3), seed=13)
    p = engine.load_string(BLUR, "dl.toml").backend("cpu")
    want = p.run(inputs={"src": np.ascontiguousarray(image[:, ::2])})["b"]
    got = p.run(inputs={"src": Producer(image[:, ::2])})["b"]
    assert np.array_equal(got, want)
    assert any("copied by the Python module: the array is not contiguous within a row" in n for n in copies(p.report()))


def test_dlpack_requests_pixflow_cannot_meet(blurred):
    _, arr = blurred
    with pytest.raises(BufferError, match="makes no copies"):
        arr.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="dl_device differs"):
        arr.__dlpack__(dl_device=(2, 0))
    assert arr.__dlpack__(dl_device=(1, 0), copy=False) is not None


def test_compact_strides_of_the_array_interfaces():
    # A __cuda_array_interface__ without strides is compact row-major; the strides pixflow derives
    # must be numpy's for a non-empty array of that shape (they were zero past the first axis).
    for shape, dtype in (((256, 256, 3), np.uint8), ((5, 7), np.float32), ((2, 3, 4), np.uint16)):
        assert pixflow._compact_strides(shape, np.dtype(dtype).itemsize) == np.empty(shape, dtype).strides
