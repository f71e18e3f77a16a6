"""pixflow from Python: run pixflow pipelines on numpy arrays and on GPU arrays (PyTorch, CuPy,
anything with ``__dlpack__`` or ``__cuda_array_interface__``) without copies.

    import numpy as np, pixflow

    engine = pixflow.Engine()                       # the installed plugins, loaded once
    p = engine.load_string('''
    [nodes.src]
    op = "memory"                                   # the image run() binds with inputs={"src": ...}
    [nodes.blur]
    op = "gauss5x5"
    input = "src"
    ''')
    p.set("blur.sigma", 2.0)                        # as pixflow run --set blur.sigma=2
    out = p.run(inputs={"src": np.zeros((480, 640, 3), np.uint8)})
    out["blur"]                                     # a numpy array pixflow wrote in place
    p.report()                                      # the run report, as `pixflow run --report`

This is a thin layer over the C++ library API (include/pixflow/pixflow.hpp, docs/embedding.md);
docs/python.md describes it. Conventions, once:

- Images are arrays of shape (H, W) (one channel) or (H, W, C) with C from 1 to 4, of dtype
  uint8, uint16, int16, int32, uint32, uint64, float32 or float64 (pixflow's u8 ... f64).
- Inputs are read in place when each row's pixels are contiguous (rows may be any distance
  apart); an array that is not is copied first, and the report's notes say so. pixflow reads host
  memory in place when its rows are packed and start 64-byte aligned (pixflow.empty() makes such
  arrays), device memory when its rows start 256-byte aligned; otherwise the library copies it
  into a staging buffer, and the notes say that too.
- Outputs go to the host (numpy arrays) unless an input lies on a device (then pixflow.Array in
  device memory, which torch.from_dlpack and cupy.from_dlpack take as it is); run(to=...) says
  otherwise. Where that is where the node runs, the node writes its result straight into the
  returned array's memory: no copy. Outputs with one channel have shape (H, W).
- The GIL is released while pixflow compiles and runs: threads that each use their own Pipeline
  run at the same time. One Pipeline is used by one thread at a time.
"""

import json as _json
import os as _os

import numpy as _np

from ._pixflow import Array, Error, InternalError, UserError  # noqa: F401 (the public names)
from . import _pixflow

__version__ = _pixflow.__version__

__all__ = ["Engine", "Pipeline", "Array", "Error", "UserError", "InternalError", "empty", "zeros", "DTYPES"]

HOST = -1  # PF_HOST: the device of host memory

#: pixflow's dtypes and the numpy dtypes they are.
DTYPES = {
    "u8": _np.dtype(_np.uint8),
    "u16": _np.dtype(_np.uint16),
    "i16": _np.dtype(_np.int16),
    "i32": _np.dtype(_np.int32),
    "u32": _np.dtype(_np.uint32),
    "u64": _np.dtype(_np.uint64),
    "f32": _np.dtype(_np.float32),
    "f64": _np.dtype(_np.float64),
}
_NAME_OF = {d: n for n, d in DTYPES.items()}
_ACCEPTED = ", ".join(str(d) for d in DTYPES.values())

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3  # DLPack device types


def _user_error(where, message, node=""):
    """A pixflow.UserError of one diagnostic, worded as the library's: `where: node 'x': message`."""
    text = where + ": " + (f"node '{node}': " if node else "") + message
    e = UserError(text)
    e.diagnostics = [dict(file=where, line=0, col=0, node=node, message=message, context="", text=text)]
    return e


def empty(shape, dtype=_np.uint8):
    """An uninitialised numpy array whose rows are packed and start 64-byte aligned: pixflow reads
    it in place, and writes an output into it in place."""
    dtype = _np.dtype(dtype)
    nbytes = int(_np.prod(shape)) * dtype.itemsize
    raw = _np.empty(nbytes + 64, _np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def zeros(shape, dtype=_np.uint8):
    """As empty(), filled with zeros."""
    a = empty(shape, dtype)
    a[...] = 0
    return a


def _stream_handle(stream):
    """A CUDA stream as an integer: an int, a torch.cuda.Stream (.cuda_stream), a cupy Stream (.ptr)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream: an int (a cudaStream_t), a torch.cuda.Stream or a cupy Stream, not {type(stream).__name__}")


class _Layout:
    """An image's layout from its shape, its strides in bytes and its dtype: the view pixflow takes,
    or why it cannot take it without a copy."""

    def __init__(self, where, node, shape, strides, dtype_name, dtype_text, itemsize):
        self.where, self.node = where, node
        if len(shape) not in (2, 3):
            raise _user_error(where, f"the array has shape {tuple(shape)}; an image is (H, W) or (H, W, C)", node)
        if not dtype_name:
            raise _user_error(where, f"dtype {dtype_text} is not one of {_ACCEPTED}", node)
        self.height, self.width = int(shape[0]), int(shape[1])
        self.channels = int(shape[2]) if len(shape) == 3 else 1
        if not 1 <= self.channels <= 4 or self.width < 1 or self.height < 1:
            raise _user_error(where, f"the array has shape {tuple(shape)}; an image is at least 1x1 with 1 to 4 channels", node)
        self.dtype = dtype_name
        sy, sx = int(strides[0]), int(strides[1])
        sc = int(strides[2]) if len(shape) == 3 else itemsize
        row = self.width * self.channels * itemsize
        self.row_contiguous = (self.channels == 1 or sc == itemsize) and (self.width == 1 or sx == self.channels * itemsize)
        self.pitch = row if self.height == 1 else sy
        if self.pitch < row:  # overlapping or reversed rows
            self.row_contiguous = False
        self.shape, self.strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)

    def view(self, data, device):
        return _pixflow.View(self.width, self.height, self.channels, self.dtype, device, self.pitch, data)


def _host_array(where, node, obj):
    """A numpy array over a host object (buffer protocol, __array_interface__), without a copy."""
    try:
        a = _np.asarray(obj)
    except Exception as e:  # noqa: BLE001 (say what the object is)
        a, why = None, f" ({e})"
    else:
        why = ""
    if a is None or a.dtype.kind == "O":
        raise TypeError(f"{where}: a numpy array, an object with __dlpack__ or __cuda_array_interface__, "
                        f"or a DLPack capsule, not {type(obj).__name__}{why}")
    return a


def _numpy_layout(where, node, a):
    name = _NAME_OF.get(a.dtype.newbyteorder("=")) if a.dtype.isnative else None
    return _Layout(where, node, a.shape, a.strides, name, str(a.dtype), a.dtype.itemsize)


class _Bound:
    """One image bound for a run: the view pixflow gets, what must stay alive with it, and notes."""

    def __init__(self, view, keep, notes=(), array=None):
        self.view, self.keep, self.notes, self.array = view, keep, list(notes), array


def _bind_host(where, node, a, writable=False):
    lay = _numpy_layout(where, node, a)
    if writable and not a.flags.writeable:
        raise _user_error(where, "the array is read-only", node)
    if lay.row_contiguous:
        return _Bound(lay.view(a.ctypes.data, HOST), a, array=a)
    if writable:
        raise _user_error(where, f"the array is not contiguous within a row (shape {lay.shape}, strides {lay.strides} "
                          "bytes); pixflow writes rows of packed pixels", node)
    c = _np.ascontiguousarray(a)
    note = (f"{where}: copied by the Python module: the array is not contiguous within a row (shape {lay.shape}, "
            f"strides {lay.strides} bytes); pixflow reads rows of packed pixels")
    return _Bound(_numpy_layout(where, node, c).view(c.ctypes.data, HOST), c, [note], array=c)


def _bind_imported(where, node, t, stream, writable=False):
    """A tensor taken from a DLPack capsule: host or CUDA memory, in place when rows are contiguous."""
    if t.device_type not in (_DL_CPU, _DL_CUDA, _DL_CUDA_HOST):
        raise _user_error(where, f"DLPack device type {t.device_type}: pixflow takes CPU (1), CUDA (2) and "
                          "CUDA host (3) memory", node)
    if writable and t.read_only:
        raise _user_error(where, "the DLPack tensor is read-only", node)
    shape, isz = t.shape, t.itemsize
    strides = t.strides
    if strides is None:  # compact row-major
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    lay = _Layout(where, node, shape, [s * isz for s in strides], t.dtype, t.dtype_text, isz)
    device = t.device_id if t.device_type == _DL_CUDA else HOST
    if lay.row_contiguous:
        return _Bound(lay.view(t.data, device), t)
    if device != HOST or writable:
        raise _user_error(where, f"the tensor is not contiguous within a row (shape {lay.shape}, strides {lay.strides} "
                          "bytes); pixflow copies no device memory itself: make it contiguous first "
                          "(tensor.contiguous())" if device != HOST else
                          f"the tensor is not contiguous within a row (shape {lay.shape}, strides {lay.strides} bytes); "
                          "pixflow writes rows of packed pixels", node)
    a = _np.asarray(_Interface(t.data, lay.shape, lay.strides, DTYPES[t.dtype].str, t))
    b = _bind_host(where, node, a)
    b.keep = (b.keep, t)
    return b


class _Interface:
    """An __array_interface__ over memory pixflow does not own, to let numpy read (and copy) it."""

    def __init__(self, data, shape, strides, typestr, owner):
        self.__array_interface__ = dict(shape=tuple(shape), strides=tuple(strides), typestr=typestr,
                                        data=(data, False), version=3)
        self.owner = owner


def _take_dlpack(obj, stream):
    """obj.__dlpack__ with the consumer's stream (DLPack: 1 is the legacy default stream)."""
    kwargs = {}
    dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (_DL_CPU, 0)
    if int(dev[0]) == _DL_CUDA:
        kwargs["stream"] = stream if stream else 1
    try:
        return _pixflow.Imported(obj.__dlpack__(max_version=(1, 0), **kwargs))
    except TypeError:  # a producer older than DLPack 1.0 (numpy < 2.1) takes no max_version
        return _pixflow.Imported(obj.__dlpack__(**kwargs))


def _compact_strides(shape, itemsize):
    """The byte strides of a compact row-major array of this shape (what a None means in the array
    interfaces). Computed, not asked of numpy: numpy 2 gives an empty array zero strides."""
    strides, acc = [], int(itemsize)
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= int(n)
    return tuple(strides)


def _bind_cuda_interface(where, node, cai, stream, writable=False):
    """An object with __cuda_array_interface__ (version 2 or 3)."""
    data, read_only = cai["data"]
    if writable and read_only:
        raise _user_error(where, "the device array is read-only", node)
    typestr = _np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if strides is None:
        strides = _compact_strides(shape, typestr.itemsize)
    name = _NAME_OF.get(typestr.newbyteorder("=")) if typestr.isnative else None
    lay = _Layout(where, node, shape, strides, name, str(typestr), typestr.itemsize)
    device = _pixflow.device_of(data)
    if device < 0:
        raise _user_error(where, "__cuda_array_interface__ names memory that is not CUDA device memory "
                          "(or this module was built without CUDA)", node)
    if not lay.row_contiguous:
        raise _user_error(where, f"the device array is not contiguous within a row (shape {lay.shape}, strides "
                          f"{lay.strides} bytes); make it contiguous first", node)
    theirs = cai.get("stream")
    if theirs:  # version 3: their work on that stream must come first
        if stream:
            _pixflow.order_after(stream, theirs, device)
        else:
            _pixflow.synchronize(theirs, device)
    return _Bound(lay.view(data, device), cai)


def _bind(where, node, obj, stream, writable=False):
    """Any array pixflow takes, bound without a copy where its layout allows."""
    if isinstance(obj, _np.ndarray):
        return _bind_host(where, node, obj, writable)
    if isinstance(obj, Array):
        b = _Bound(obj._view(), obj, array=obj)
        if obj.stream and obj.stream != stream:  # made on another stream: order after it
            if stream:
                _pixflow.order_after(stream, obj.stream, obj.device)
            else:
                _pixflow.synchronize(obj.stream, obj.device)
        return b
    if type(obj).__name__ == "PyCapsule":
        t = _pixflow.Imported(obj)
        b = _bind_imported(where, node, t, stream, writable)
        if t.device_type == _DL_CUDA and not stream:
            _pixflow.synchronize(1, t.device_id)  # a bare capsule: whatever made it is on the default stream
        return b
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev = obj.__dlpack_device__()
        if int(dev[0]) == _DL_CUDA:
            t = _take_dlpack(obj, stream)
            if not stream:  # pixflow's own streams: the producer's work, ordered on the legacy stream, must be done
                _pixflow.synchronize(1, t.device_id)
            return _bind_imported(where, node, t, stream, writable)
        if not hasattr(obj, "__array_interface__") and not hasattr(obj, "__array__"):
            return _bind_imported(where, node, _take_dlpack(obj, stream), stream, writable)
    if hasattr(obj, "__cuda_array_interface__"):
        return _bind_cuda_interface(where, node, obj.__cuda_array_interface__, stream, writable)
    return _bind_host(where, node, _host_array(where, node, obj), writable)


def _array_numpy(self):
    """The samples as a numpy array: a view of host memory (no copy), or a copy of device memory
    on the host, made after the work on the array's stream."""
    if self.device == HOST:
        return _np.asarray(self)
    out = empty(self.shape, DTYPES[self.dtype])
    self._copy_to_host(out.ctypes.data, out.strides[0])
    return out


Array.numpy = _array_numpy


class Pipeline:
    """One pipeline of an Engine: compiled on its first run (again after set(), backend(), fuse()
    or when an input changes its shape, dtype or device), then run any number of times."""

    def __init__(self, core):
        self._p = core
        self._alive = {}     # node or output -> what its bound view points into (kept until rebound)
        self._into = set()   # outputs bound to a buffer in an earlier run
        self._notes = []     # this module's notes of the last run
        self._input_notes = {}  # node -> this module's notes about the array bound to it
        self._input_devices = {}  # node -> where the array bound to it lies (HOST or a CUDA ordinal)
        self._stream = 0

    # ---- what is compiled ------------------------------------------------------------------------
    def set(self, key, value=None):
        """set("blur.sigma", 2.0) or set("blur.sigma=2") (as --set): a parameter of a node, or a
        pipeline key. Returns the pipeline."""
        if value is None:
            self._p.set(key)
        else:
            self._p.set_value(key, value)
        return self

    def backend(self, name):
        """The default backend of nodes that set none: "auto", "cpu" or "cuda" (as --backend)."""
        self._p.backend(name)
        return self

    def fuse(self, on=True):
        """False: run every node as written, no fused implementations (as --no-fuse)."""
        self._p.fuse(bool(on))
        return self

    def compile(self):
        """Parse, validate, plan and fuse now (run() does it when needed)."""
        self._p.compile()
        return self

    # ---- what compiling decided -------------------------------------------------------------------
    def results(self):
        """The outputs no node reads: what run() returns when no outputs are named."""
        return list(self._p.results())

    def shape(self, output):
        """The output ("node" or "node.port") as the next run makes it: a dict of width, height,
        channels, dtype and device (-1: the host, else the CUDA ordinal where its node runs)."""
        v = self._p.shape(output)
        return dict(width=v.width, height=v.height, channels=v.channels, dtype=v.dtype, device=v.device)

    def notes(self):
        """The planner's notes: an auto fallback to the CPU, a fusion."""
        return list(self._p.notes())

    def warnings(self):
        """What runs but is most likely not meant (operators that belong together disagreeing),
        as dicts like UserError.diagnostics (the text `pixflow` prints after "warning: ")."""
        return list(self._p.warnings())

    def graphviz(self):
        """The plan as Graphviz dot (as `pixflow graph`)."""
        return self._p.graphviz()

    # ---- running -----------------------------------------------------------------------------------
    def input(self, node, array, stream=None):
        """Binds `array` to the memory node `node` for the following runs (as run(inputs=...)
        does), so that shape() and results() know the input's shape before a run. `stream`: as
        run()'s, for a device array made on another stream."""
        stream = _stream_handle(stream) or self._stream
        b = _bind(f'input("{node}")', node, array, stream)
        self._p.input(node, b.view)
        self._alive[("in", node)] = b.keep
        self._input_notes[node] = b.notes
        self._input_devices[node] = b.view.device
        return self

    def run(self, inputs=None, outputs=None, stream=None, to=None, numpy=True):
        """Runs the pipeline once and returns its outputs as a dict.

        inputs   {memory node: array}: numpy arrays, objects with __dlpack__ (torch, cupy, jax) or
                 __cuda_array_interface__, DLPack capsules, pixflow.Array. Bound for this and the
                 following runs (pixflow keeps a reference until the array is rebound).
        outputs  None: every image no node reads (results()). A list of "node" / "node.port".
                 A dict {output: array or None}: an array to write the output into (same shape
                 and dtype; written in place when it lies where the node runs).
        stream   a CUDA stream (int, torch.cuda.Stream, cupy Stream): pixflow's device work is
                 ordered after the work already on it, run() returns without waiting when every
                 output stays on the device, and device outputs are ready on that stream (their
                 __dlpack__ orders the consumer's stream after it). None: pixflow's own streams,
                 and run() returns when everything is done.
        to       where outputs that run() allocates go: "host", "device", or None: "device" when
                 an input lies on a device, else "host" (so numpy in gives numpy out, also from
                 CUDA nodes, and GPU arrays in give GPU arrays out). An output produced elsewhere
                 is copied there after the run, and the report's notes say so.
        numpy    True: host outputs as numpy arrays (over pixflow.Array memory, no copy). False:
                 every output as a pixflow.Array.
        """
        stream = _stream_handle(stream)
        self._p.stream(stream)
        self._stream = stream
        for node, obj in (inputs or {}).items():
            self.input(node, obj)
        notes = [n for node_notes in self._input_notes.values() for n in node_notes]
        devices = [d for d in self._input_devices.values() if d != HOST]
        if to is None:
            to = "device" if devices else "host"
        if to not in ("host", "device"):
            raise ValueError(f'run(to={to!r}): "host", "device" or None')
        if outputs is None:
            wanted = {name: None for name in self._p.results()}
        elif isinstance(outputs, dict):
            wanted = dict(outputs)
        elif isinstance(outputs, str):
            wanted = {outputs: None}
        else:
            wanted = {name: None for name in outputs}
        made, returned = {}, {}
        for name, dest in wanted.items():
            if dest is None:
                v = self._p.shape(name)
                device = HOST if to == "host" else v.device if v.device != HOST else (devices or [0])[0]
                arr = Array(v.width, v.height, v.channels, v.dtype, device)
                self._p.output_into(name, arr._view())
                made[name] = arr
                self._alive[("out", name)] = arr
                returned[name] = arr
            else:
                b = _bind(f'output("{name}")', name, dest, stream, writable=True)
                self._p.output_into(name, b.view)
                self._alive[("out", name)] = b.keep
                returned[name] = dest
                notes += b.notes
        for name in self._into - set(wanted):  # a buffer bound by an earlier run may be gone now
            self._p.output(name)
            self._alive.pop(("out", name), None)
        self._into = set(wanted)
        self._notes = notes
        self._p.run()
        for name, arr in made.items():
            if arr.device != HOST and stream:
                arr._set_stream(stream)  # ready once the caller's stream gets there
            if numpy and arr.device == HOST:
                returned[name] = _np.asarray(arr)  # a view: its base is the Array, which owns the memory
        return returned

    def report(self):
        """The last run's report as a dict: the JSON of `pixflow run --report` (nodes with their
        times and metrics, transfers, peak device memory, notes, files written), with this module's
        notes added. Waits for the device to have the CUDA nodes' times."""
        r = _json.loads(self._p.report())
        r["notes"] = list(r.get("notes", [])) + self._notes
        return r


class Engine:
    """The plugins, loaded once; share it between threads and pipelines.

    plugin_paths: folders or plugin files searched first (as --plugin-path), then
    $PIXFLOW_PLUGIN_PATH, then the installation's plugin folder."""

    def __init__(self, plugin_paths=()):
        self._e = _pixflow.Engine([_os.fspath(p) for p in plugin_paths])

    def load_file(self, path):
        """A pipeline from a TOML file; raises UserError when it cannot be read or parsed."""
        return Pipeline(self._e.load_file(_os.fspath(path)))

    def load_string(self, toml, name="<string>"):
        """A pipeline from TOML text; `name` stands for the file in diagnostics."""
        return Pipeline(self._e.load_string(toml, name))

    def ops(self):
        """Every operator's name (as `pixflow ops`)."""
        return list(self._e.operators())

    def describe(self, op):
        """An operator as `pixflow describe` shows it, as a dict: name, doc, plugin, path,
        backends, fuses, inputs and outputs (name, accepts, doc), params (name, type, required,
        default, accepted, doc)."""
        return self._e.describe(op)

    def rejected_plugins(self):
        """One line per plugin file found but not loaded: "path: why"."""
        return list(self._e.rejected_plugins())

    @property
    def cuda_available(self):
        """Whether a CUDA device is usable (and pixflow was built with CUDA)."""
        return self._e.cuda_available()
