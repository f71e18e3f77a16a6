// module.cpp: `pixflow._pixflow`, the compiled half of the Python module: a thin pybind11 layer
// over the library API (<pixflow/pixflow.hpp>), plus what only C++ can do for Python:
//  - the errors: pixflow::UserError -> pixflow.UserError (its text is the CLI's diagnostics, and
//    .diagnostics lists them one by one), pixflow::InternalError -> pixflow.InternalError;
//  - Array: memory this module allocates for an output (64-byte aligned host memory, or device
//    memory with 256-byte aligned rows) so that the node writes its result there directly, and
//    hands it to Python without a copy through __array_interface__, __cuda_array_interface__
//    and __dlpack__;
//  - DLPack capsules taken from other libraries (Imported), and the stream ordering that goes
//    with them (device.hpp).
// The GIL is released while pixflow loads plugins, compiles and runs. Everything about which
// array goes where is decided in pixflow/__init__.py.
#include "device.hpp"
#include "dlpack.hpp"

#include <pixflow/pixflow.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <execinfo.h>
#include <unistd.h>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
namespace dl = pixflow::dlpack;

namespace {

// ---- errors -------------------------------------------------------------------------------------

PyObject* g_error = nullptr;          // pixflow.Error
PyObject* g_user_error = nullptr;     // pixflow.UserError(Error, ValueError)
PyObject* g_internal_error = nullptr; // pixflow.InternalError(Error, RuntimeError)

py::dict diagnostic_dict(const pixflow::Diagnostic& d) {
    py::dict o;
    o["file"] = d.loc.file;
    o["line"] = d.loc.line;
    o["col"] = d.loc.col;
    o["node"] = d.node;
    o["message"] = d.message;
    o["context"] = d.context;
    o["text"] = d.str();
    return o;
}

void raise_user_error(const pixflow::UserError& e) {
    py::list diags;
    for (const auto& d : e.diagnostics()) diags.append(diagnostic_dict(d));
    py::object exc = py::reinterpret_borrow<py::object>(g_user_error)(e.what());
    exc.attr("diagnostics") = diags;
    PyErr_SetObject(g_user_error, exc.ptr());
}

// ---- dtypes -------------------------------------------------------------------------------------

pixflow::DType dtype_from_name(const std::string& s) {
    static const std::pair<const char*, pixflow::DType> names[] = {
        {"u8", pixflow::DType::u8},   {"u16", pixflow::DType::u16}, {"i16", pixflow::DType::i16},
        {"i32", pixflow::DType::i32}, {"u32", pixflow::DType::u32}, {"u64", pixflow::DType::u64},
        {"f32", pixflow::DType::f32}, {"f64", pixflow::DType::f64}};
    for (const auto& [n, d] : names)
        if (s == n) return d;
    throw py::value_error("unknown pixflow dtype '" + s + "'; expected u8, u16, i16, i32, u32, u64, f32 or f64");
}

/// numpy's array-interface type string: "<u1", "<f4", ...
std::string typestr(pixflow::DType d) {
    char kind = d == pixflow::DType::i16 || d == pixflow::DType::i32 ? 'i' : pixflow::dtype_is_float(d) ? 'f' : 'u';
    return std::string("<") + kind + std::to_string(pixflow::dtype_size(d));
}

dl::DataType dl_dtype(pixflow::DType d) {
    std::uint8_t code = d == pixflow::DType::i16 || d == pixflow::DType::i32 ? dl::kDLInt
                        : pixflow::dtype_is_float(d)                         ? dl::kDLFloat
                                                                             : dl::kDLUInt;
    return dl::DataType{code, std::uint8_t(8 * pixflow::dtype_size(d)), 1};
}

/// The pixflow dtype of a DLPack dtype, or "" when pixflow has none.
std::string dtype_name_of(const dl::DataType& t) {
    if (t.lanes != 1) return "";
    for (int k = PF_U8; k <= PF_F64; ++k) {
        auto d = pixflow::DType(k);
        dl::DataType o = dl_dtype(d);
        if (o.code == t.code && o.bits == t.bits) return pixflow::dtype_name(d);
    }
    return "";
}

// ---- memory this module allocates, and the arrays over it ---------------------------------------

/// Host memory (64-byte aligned, zeroed) or device memory (cudaMalloc), freed when the last
/// array, numpy array or DLPack tensor over it goes.
class Memory {
  public:
    Memory(std::size_t bytes, int device) : m_device(device) {
        if (device == PF_HOST) {
            m_data = std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
            if (!m_data) throw std::bad_alloc();
            std::memset(m_data, 0, bytes);
        } else {
            m_data = pixflow::pydevice::allocate(bytes, device);
        }
    }
    ~Memory() {
        if (m_device == PF_HOST)
            std::free(m_data);
        else
            pixflow::pydevice::release(m_data, m_device);
    }
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;
    void* data() const { return m_data; }
    int device() const { return m_device; }

  private:
    void* m_data = nullptr;
    int m_device = PF_HOST;
};

/// An image in Memory: shape (H, W) for one channel, else (H, W, C); rows `pitch` bytes apart.
struct Array {
    std::shared_ptr<Memory> mem;
    int width = 0, height = 0, channels = 0;
    pixflow::DType dtype = pixflow::DType::u8;
    std::int64_t pitch = 0;
    /// The stream the data is ready on (a cudaStream_t as an integer), 0 when it is ready now.
    std::uintptr_t stream = 0;

    int device() const { return mem->device(); }
    std::vector<std::int64_t> shape() const {
        if (channels == 1) return {height, width};
        return {height, width, channels};
    }
    /// Strides in elements (DLPack) or bytes (the array interfaces).
    std::vector<std::int64_t> strides(bool bytes) const {
        std::int64_t isz = std::int64_t(pixflow::dtype_size(dtype)), unit = bytes ? isz : 1;
        std::int64_t row = bytes ? pitch : pitch / isz;
        if (channels == 1) return {row, unit};
        return {row, channels * unit, unit};
    }
    pixflow::ImageView view() const {
        pixflow::ImageView v;
        v.width = width;
        v.height = height;
        v.channels = channels;
        v.dtype = dtype;
        v.device = device();
        v.pitch = pitch;
        v.data = mem->data();
        return v;
    }
};

std::shared_ptr<Array> make_array(int width, int height, int channels, const std::string& dtype, int device) {
    auto a = std::make_shared<Array>();
    a->width = width;
    a->height = height;
    a->channels = channels;
    a->dtype = dtype_from_name(dtype);
    std::int64_t row = std::int64_t(width) * channels * std::int64_t(pixflow::dtype_size(a->dtype));
    // Where a node writes in place (Executor::can_write_into): packed rows at a 64-byte aligned
    // address on the host; rows that start 256-byte aligned on a device.
    a->pitch = device == PF_HOST ? row : (row + 255) / 256 * 256;
    a->mem = std::make_shared<Memory>(std::size_t(a->pitch) * std::size_t(height), device);
    return a;
}

py::tuple to_tuple(const std::vector<std::int64_t>& v) {
    py::tuple t(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) t[k] = v[k];
    return t;
}

// ---- DLPack: tensors this module exports ----------------------------------------------------------

/// What a DLPack tensor exported from an Array holds: the memory (shared with the Array) and
/// the shape and strides its DLTensor points at.
struct ExportContext {
    std::shared_ptr<Memory> mem;
    std::vector<std::int64_t> shape, strides;
    dl::ManagedTensor legacy{};
    dl::ManagedTensorVersioned versioned{};
};

void fill_tensor(dl::Tensor& t, ExportContext& c, const Array& a) {
    t.data = a.mem->data();
    t.device = a.device() == PF_HOST ? dl::Device{dl::kDLCPU, 0} : dl::Device{dl::kDLCUDA, a.device()};
    t.ndim = std::int32_t(c.shape.size());
    t.dtype = dl_dtype(a.dtype);
    t.shape = c.shape.data();
    t.strides = c.strides.data();
    t.byte_offset = 0;
}

/// A capsule not consumed still owns its tensor: free it (keeping any Python error pending).
void capsule_destructor(PyObject* cap) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyCapsule_IsValid(cap, "dltensor")) {
        auto* t = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
        if (t && t->deleter) t->deleter(t);
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        auto* t = static_cast<dl::ManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
        if (t && t->deleter) t->deleter(t);
    }
    PyErr_Restore(type, value, traceback);
}

/// Array.__dlpack__: a capsule over the array's memory (no copy). `stream` is the consumer's
/// stream (DLPack: None or 1 the legacy default stream, 2 the per-thread one, -1 none): work it
/// gets after this call sees the array's data.
py::object export_dlpack(const Array& a, py::object stream, py::object max_version, py::object dl_device,
                         py::object copy) {
    if (!copy.is_none() && copy.cast<bool>())
        throw py::buffer_error(
            "pixflow.Array.__dlpack__(copy=True): pixflow hands over its buffer and makes no copies");
    if (!dl_device.is_none()) {
        auto want = dl_device.cast<std::pair<int, int>>();
        bool same =
            a.device() == PF_HOST ? want.first == dl::kDLCPU : (want.first == dl::kDLCUDA && want.second == a.device());
        if (!same)
            throw py::buffer_error("pixflow.Array.__dlpack__: dl_device differs from the array's device and "
                                   "pixflow makes no copies");
    }
    if (a.device() != PF_HOST && a.stream != 0) {
        std::intptr_t consumer = stream.is_none() ? 1 : stream.cast<std::intptr_t>();
        if (consumer == 0)
            throw py::value_error(
                "__dlpack__(stream=0) is ambiguous for CUDA (DLPack); pass 1 for the legacy default stream");
        if (consumer != -1) pixflow::pydevice::order_after(std::uintptr_t(consumer), a.stream, a.device());
    }
    bool versioned = false;
    if (!max_version.is_none()) versioned = max_version.cast<std::pair<int, int>>().first >= int(dl::kMajorVersion);

    // The DLPack C ABI hands ownership across as a raw pointer; the deleter takes it back.
    auto ctx = std::make_unique<ExportContext>();
    ctx->mem = a.mem;
    ctx->shape = a.shape();
    ctx->strides = a.strides(false);
    PyObject* cap = nullptr;
    if (versioned) {
        dl::ManagedTensorVersioned& t = ctx->versioned;
        t.version = {dl::kMajorVersion, dl::kMinorVersion};
        t.flags = 0;
        fill_tensor(t.dl_tensor, *ctx, a);
        t.manager_ctx = ctx.get();
        t.deleter = [](dl::ManagedTensorVersioned* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
        cap = PyCapsule_New(&t, "dltensor_versioned", capsule_destructor);
    } else {
        dl::ManagedTensor& t = ctx->legacy;
        fill_tensor(t.dl_tensor, *ctx, a);
        t.manager_ctx = ctx.get();
        t.deleter = [](dl::ManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); };
        cap = PyCapsule_New(&t, "dltensor", capsule_destructor);
    }
    if (!cap) throw py::error_already_set();
    ctx.release(); // now the capsule's, or its consumer's
    return py::reinterpret_steal<py::object>(cap);
}

// ---- DLPack: tensors this module takes ---------------------------------------------------------------

/// A tensor taken from a DLPack capsule (renamed "used_..." so that nobody else takes it); the
/// producer's deleter runs when this goes (pixflow/__init__.py keeps it until the next run).
class Imported {
  public:
    explicit Imported(py::handle capsule) {
        PyObject* cap = capsule.ptr();
        if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
            m_versioned = static_cast<dl::ManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
            if (m_versioned->version.major > dl::kMajorVersion) {
                m_versioned = nullptr; // a newer ABI: not ours to read; the capsule keeps it
                throw py::buffer_error("a DLPack " + std::to_string(capsule_major(cap)) +
                                       ".x tensor; this module reads DLPack 1.x and older");
            }
            PyCapsule_SetName(cap, "used_dltensor_versioned");
        } else if (PyCapsule_IsValid(cap, "dltensor")) {
            m_legacy = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
            PyCapsule_SetName(cap, "used_dltensor");
        } else {
            throw py::type_error("not an unused DLPack capsule (named \"dltensor\" or \"dltensor_versioned\"); a "
                                 "capsule can be taken once");
        }
    }
    ~Imported() { release(); }
    Imported(const Imported&) = delete;
    Imported& operator=(const Imported&) = delete;

    void release() {
        if (m_legacy && m_legacy->deleter) m_legacy->deleter(m_legacy);
        if (m_versioned && m_versioned->deleter) m_versioned->deleter(m_versioned);
        m_legacy = nullptr;
        m_versioned = nullptr;
    }
    const dl::Tensor& tensor() const {
        if (m_legacy) return m_legacy->dl_tensor;
        if (m_versioned) return m_versioned->dl_tensor;
        throw py::value_error("this DLPack tensor was released");
    }
    bool read_only() const { return m_versioned && (m_versioned->flags & dl::kFlagReadOnly); }

  private:
    static unsigned capsule_major(PyObject* cap) {
        return static_cast<dl::ManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"))->version.major;
    }
    dl::ManagedTensor* m_legacy = nullptr;
    dl::ManagedTensorVersioned* m_versioned = nullptr;
};

// ---- the report -----------------------------------------------------------------------------------

/// The report as the JSON of `pixflow run --report` (parsed by pixflow/__init__.py).
std::string report_json(const pixflow::RunReport& r) { return r.to_json(); }

py::dict operator_dict(const pixflow::OperatorInfo& o) {
    auto ports = [](const std::vector<pixflow::OperatorInfo::Port>& ps) {
        py::list l;
        for (const auto& p : ps) {
            py::dict d;
            d["name"] = p.name;
            d["accepts"] = p.accepts;
            d["doc"] = p.doc;
            l.append(d);
        }
        return l;
    };
    py::dict d;
    d["name"] = o.name;
    d["doc"] = o.doc;
    d["plugin"] = o.plugin;
    d["path"] = o.path;
    d["backends"] = o.backends;
    d["fuses"] = o.fuses.empty() ? py::object(py::none()) : py::object(py::str(o.fuses));
    d["inputs"] = ports(o.inputs);
    d["outputs"] = ports(o.outputs);
    py::list params;
    for (const auto& p : o.params) {
        py::dict q;
        q["name"] = p.name;
        q["type"] = p.type;
        q["required"] = p.required;
        q["default"] = p.required ? py::object(py::none()) : py::object(py::str(p.default_value));
        q["accepted"] = p.accepted;
        q["doc"] = p.doc;
        params.append(q);
    }
    d["params"] = params;
    return d;
}

pixflow::ImageView make_view(int width, int height, int channels, const std::string& dtype, int device,
                             std::int64_t pitch, std::uintptr_t data) {
    pixflow::ImageView v;
    v.width = width;
    v.height = height;
    v.channels = channels;
    v.dtype = dtype_from_name(dtype);
    v.device = device;
    v.pitch = pitch;
    v.data = reinterpret_cast<void*>(data);
    return v;
}

} // namespace

namespace {
/// PIXFLOW_PY_BACKTRACE=1: a crash inside the module prints its native stack to stderr (Python's
/// faulthandler shows only the Python frames). A diagnostic for machines without gdb.
void print_native_backtrace(int sig) {
    void* frames[64];
    int n = backtrace(frames, 64);
    const char head[] = "pixflow: native backtrace:\n";
    (void)!write(2, head, sizeof head - 1);
    backtrace_symbols_fd(frames, n, 2);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}
} // namespace

PYBIND11_MODULE(_pixflow, m) {
    if (const char* bt = std::getenv("PIXFLOW_PY_BACKTRACE"); bt && *bt && std::strcmp(bt, "0") != 0) {
        std::signal(SIGSEGV, print_native_backtrace);
        std::signal(SIGABRT, print_native_backtrace);
    }
    m.doc() = "pixflow's compiled core; use the pixflow package, which wraps it";
#ifdef PIXFLOW_VERSION
    m.attr("__version__") = PIXFLOW_VERSION; // the library's (a compile definition of pixflow::pixflow)
#else
    m.attr("__version__") = "unknown";
#endif

    g_error = PyErr_NewExceptionWithDoc("pixflow.Error", "Any error pixflow raises.", PyExc_Exception, nullptr);
    py::tuple user_bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError));
    g_user_error = PyErr_NewExceptionWithDoc(
        "pixflow.UserError",
        "A mistake in the pipeline, a parameter, a set() or an input or output: str() holds the lines `pixflow` "
        "prints (file:line:col: node 'x': ...), .diagnostics the same one by one as dicts.",
        user_bases.ptr(), nullptr);
    py::tuple internal_bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_RuntimeError));
    g_internal_error = PyErr_NewExceptionWithDoc(
        "pixflow.InternalError", "Not the caller's doing: a bug, or a failing device, file system or plugin.",
        internal_bases.ptr(), nullptr);
    m.add_object("Error", py::handle(g_error));
    m.add_object("UserError", py::handle(g_user_error));
    m.add_object("InternalError", py::handle(g_internal_error));
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const pixflow::UserError& e) { raise_user_error(e); } catch (const pixflow::InternalError& e) {
            PyErr_SetString(g_internal_error, e.what());
        }
    });

    m.def("cuda_built", &pixflow::pydevice::available, "Whether this module was built with the CUDA runtime.");
    m.def("device_of", [](std::uintptr_t p) { return pixflow::pydevice::device_of(reinterpret_cast<void*>(p)); });
    m.def("order_after", [](std::uintptr_t consumer, std::uintptr_t producer, int device) {
        pixflow::pydevice::order_after(consumer, producer, device);
    });
    m.def("synchronize", [](std::uintptr_t stream, int device) {
        py::gil_scoped_release nogil;
        pixflow::pydevice::synchronize(stream, device);
    });

    py::class_<pixflow::ImageView>(m, "View")
        .def(py::init(&make_view), py::arg("width"), py::arg("height"), py::arg("channels"), py::arg("dtype"),
             py::arg("device"), py::arg("pitch"), py::arg("data"))
        .def_readonly("width", &pixflow::ImageView::width)
        .def_readonly("height", &pixflow::ImageView::height)
        .def_readonly("channels", &pixflow::ImageView::channels)
        .def_property_readonly("dtype",
                               [](const pixflow::ImageView& v) { return std::string(pixflow::dtype_name(v.dtype)); })
        .def_readonly("device", &pixflow::ImageView::device)
        .def_readonly("pitch", &pixflow::ImageView::pitch)
        .def_property_readonly("data",
                               [](const pixflow::ImageView& v) { return reinterpret_cast<std::uintptr_t>(v.data); });

    py::class_<Array, std::shared_ptr<Array>>(
        m, "Array", R"(An image in memory pixflow allocated for an output: host memory (64-byte
aligned, packed rows) or device memory (rows 256-byte aligned). It is shared without a copy through
__array_interface__ (host), __cuda_array_interface__ (device) and __dlpack__ (both), so that
numpy.asarray, torch.from_dlpack and cupy.from_dlpack take it as it is; the memory lives as long
as any of them uses it. Shape (H, W) for one channel, else (H, W, C).)")
        .def(py::init(&make_array), py::arg("width"), py::arg("height"), py::arg("channels"), py::arg("dtype"),
             py::arg("device") = PF_HOST)
        .def_property_readonly("shape", [](const Array& a) { return to_tuple(a.shape()); })
        .def_property_readonly(
            "strides", [](const Array& a) { return to_tuple(a.strides(true)); }, "in bytes")
        .def_property_readonly("dtype", [](const Array& a) { return std::string(pixflow::dtype_name(a.dtype)); })
        .def_property_readonly("typestr", [](const Array& a) { return typestr(a.dtype); })
        .def_property_readonly("device", &Array::device, "-1 (PF_HOST) for host memory, else the CUDA device ordinal")
        .def_property_readonly("pitch", [](const Array& a) { return a.pitch; })
        .def_property_readonly("data_ptr",
                               [](const Array& a) { return reinterpret_cast<std::uintptr_t>(a.mem->data()); })
        .def_property_readonly(
            "stream", [](const Array& a) { return a.stream; }, "the CUDA stream the data is ready on (0: ready now)")
        .def("_set_stream", [](Array& a, std::uintptr_t s) { a.stream = s; })
        .def("_view", &Array::view)
        .def_property_readonly("__array_interface__",
                               [](const Array& a) {
                                   if (a.device() != PF_HOST)
                                       throw py::attribute_error(
                                           "device memory has no __array_interface__; use __dlpack__ or "
                                           "__cuda_array_interface__, or .numpy() for a host copy");
                                   py::dict d;
                                   d["shape"] = to_tuple(a.shape());
                                   d["typestr"] = typestr(a.dtype);
                                   d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(a.mem->data()), false);
                                   d["strides"] = to_tuple(a.strides(true));
                                   d["version"] = 3;
                                   return d;
                               })
        .def_property_readonly("__cuda_array_interface__",
                               [](const Array& a) {
                                   if (a.device() == PF_HOST)
                                       throw py::attribute_error("host memory has no __cuda_array_interface__");
                                   py::dict d;
                                   d["shape"] = to_tuple(a.shape());
                                   d["typestr"] = typestr(a.dtype);
                                   d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(a.mem->data()), false);
                                   d["strides"] = to_tuple(a.strides(true));
                                   d["version"] = 3;
                                   d["stream"] = a.stream ? py::object(py::int_(a.stream)) : py::object(py::none());
                                   return d;
                               })
        .def("__dlpack__", &export_dlpack, py::kw_only(), py::arg("stream") = py::none(),
             py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
        .def("__dlpack_device__",
             [](const Array& a) {
                 return a.device() == PF_HOST ? py::make_tuple(int(dl::kDLCPU), 0)
                                              : py::make_tuple(int(dl::kDLCUDA), a.device());
             })
        .def("_copy_to_host", [](const Array& a, std::uintptr_t dst, std::int64_t dst_pitch) {
            py::gil_scoped_release nogil;
            std::size_t rb = a.view().row_bytes();
            pixflow::pydevice::copy_to_host(reinterpret_cast<void*>(dst), dst_pitch, a.mem->data(), a.pitch, rb,
                                            a.height, a.stream, a.device());
        });

    py::class_<Imported, std::shared_ptr<Imported>>(m, "Imported", "A tensor taken from a DLPack capsule.")
        .def(py::init([](py::handle capsule) { return std::make_shared<Imported>(capsule); }))
        .def_property_readonly("data",
                               [](const Imported& t) {
                                   return reinterpret_cast<std::uintptr_t>(t.tensor().data) + t.tensor().byte_offset;
                               })
        .def_property_readonly("device_type", [](const Imported& t) { return t.tensor().device.device_type; })
        .def_property_readonly("device_id", [](const Imported& t) { return t.tensor().device.device_id; })
        .def_property_readonly("shape",
                               [](const Imported& t) {
                                   const dl::Tensor& x = t.tensor();
                                   return to_tuple(std::vector<std::int64_t>(x.shape, x.shape + x.ndim));
                               })
        .def_property_readonly(
            "strides",
            [](const Imported& t) -> py::object {
                const dl::Tensor& x = t.tensor();
                if (!x.strides) return py::none(); // compact row-major
                return to_tuple(std::vector<std::int64_t>(x.strides, x.strides + x.ndim));
            },
            "in elements; None when compact row-major")
        .def_property_readonly(
            "dtype", [](const Imported& t) { return dtype_name_of(t.tensor().dtype); },
            "the pixflow dtype, or '' when pixflow has none")
        .def_property_readonly("dtype_text",
                               [](const Imported& t) {
                                   const dl::DataType& d = t.tensor().dtype;
                                   const char* code = d.code == dl::kDLInt     ? "int"
                                                      : d.code == dl::kDLUInt  ? "uint"
                                                      : d.code == dl::kDLFloat ? "float"
                                                                               : "code ";
                                   return std::string(code) +
                                          (d.code > dl::kDLFloat ? std::to_string(d.code) + "/" : "") +
                                          std::to_string(d.bits) + (d.lanes != 1 ? "x" + std::to_string(d.lanes) : "");
                               })
        .def_property_readonly("itemsize", [](const Imported& t) { return t.tensor().dtype.bits / 8; })
        .def_property_readonly("read_only", &Imported::read_only)
        .def("release", &Imported::release);

    py::class_<pixflow::Pipeline>(m, "Pipeline")
        .def("set", [](pixflow::Pipeline& p, const std::string& a) { p.set(a); })
        .def("set_value",
             [](pixflow::Pipeline& p, const std::string& key, py::object v) {
                 if (py::isinstance<py::bool_>(v))
                     p.set(key, v.cast<bool>());
                 else if (py::isinstance<py::int_>(v))
                     p.set(key, v.cast<long long>());
                 else if (py::isinstance<py::float_>(v))
                     p.set(key, v.cast<double>());
                 else if (py::isinstance<py::str>(v))
                     p.set(key, v.cast<std::string>());
                 else
                     throw py::type_error("set(\"" + key +
                                          "\", value): value is a bool, an int, a float or a str, not " +
                                          std::string(py::str(py::type::handle_of(v).attr("__name__"))));
             })
        .def("backend", [](pixflow::Pipeline& p, const std::string& b) { p.backend(b); })
        .def("fuse", [](pixflow::Pipeline& p, bool on) { p.fuse(on); })
        .def("input",
             [](pixflow::Pipeline& p, const std::string& node, const pixflow::ImageView& v) { p.input(node, v); })
        .def("output", [](pixflow::Pipeline& p, const std::string& name) { p.output(name); })
        .def("output_into",
             [](pixflow::Pipeline& p, const std::string& name, const pixflow::ImageView& v) { p.output(name, v); })
        .def("stream", [](pixflow::Pipeline& p, std::uintptr_t s) { p.stream(reinterpret_cast<CUstream_st*>(s)); })
        .def("compile", &pixflow::Pipeline::compile, py::call_guard<py::gil_scoped_release>())
        .def("run",
             [](pixflow::Pipeline& p) {
                 py::gil_scoped_release nogil; // other Python threads run while pixflow does
                 p.run();                      // the report is made into JSON only when asked for (report())
             })
        .def("report",
             [](pixflow::Pipeline& p) {
                 pixflow::RunReport r;
                 {
                     py::gil_scoped_release nogil; // it may wait for the device
                     r = p.report();
                 }
                 return report_json(r);
             })
        .def("results", &pixflow::Pipeline::results, py::call_guard<py::gil_scoped_release>())
        .def("shape",
             [](const pixflow::Pipeline& p, const std::string& name) {
                 py::gil_scoped_release nogil; // it may compile
                 return p.shape(name);
             })
        .def("view", [](const pixflow::Pipeline& p, const std::string& name) { return p.view(name); })
        .def("notes", &pixflow::Pipeline::notes, py::call_guard<py::gil_scoped_release>())
        .def("warnings",
             [](const pixflow::Pipeline& p) {
                 std::vector<pixflow::Diagnostic> w;
                 {
                     py::gil_scoped_release nogil; // it may compile
                     w = p.warnings();
                 }
                 py::list out;
                 for (const auto& d : w) out.append(diagnostic_dict(d));
                 return out;
             })
        .def("graphviz", &pixflow::Pipeline::graphviz, py::call_guard<py::gil_scoped_release>());

    py::class_<pixflow::Engine>(m, "Engine")
        .def(py::init([](const std::vector<std::string>& paths) {
                 std::vector<std::filesystem::path> ps(paths.begin(), paths.end());
                 py::gil_scoped_release nogil;
                 return pixflow::Engine(ps);
             }),
             py::arg("plugin_paths") = std::vector<std::string>{})
        .def("load_file",
             [](const pixflow::Engine& e, const std::string& path) {
                 py::gil_scoped_release nogil;
                 return e.load_file(path);
             })
        .def("load_string",
             [](const pixflow::Engine& e, const std::string& toml, const std::string& name) {
                 py::gil_scoped_release nogil;
                 return e.load_string(toml, name);
             })
        .def("operators", &pixflow::Engine::operators)
        .def("describe", [](const pixflow::Engine& e, const std::string& op) { return operator_dict(e.describe(op)); })
        .def("rejected_plugins", &pixflow::Engine::rejected_plugins)
        .def("cuda_available", &pixflow::Engine::cuda_available);
}
