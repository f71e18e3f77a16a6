// pixflow/operator.hpp: the C++ layer for operator authors, header-only, compiled into each plugin.
//
// An operator is one class with its schema declared once and a run function per backend:
//
//   struct Invert {
//       static pixflow::Schema schema() {
//           using namespace pixflow;
//           return Schema("invert", "255 - v for every u8 sample")
//               .input("in", dtypes({DType::u8}), channels(1, 4))
//               .output("out", dtypes({DType::u8}), channels(1, 4))
//               .param_float("gain", 1.0, 0.0, 4.0, "multiplier applied first");
//       }
//       static void run_cpu(pixflow::Context& ctx);   // required
//       static void run_cuda(pixflow::Context& ctx);  // optional; define it in a .cu-backed file
//       // optional: static void infer(const pixflow::Params&, const pixflow::Shapes& in,
//       //                             pixflow::Shapes& out);
//   };
//   PIXFLOW_PLUGIN("invert", "1.0.0", Invert)
//
// A fused implementation of a chain of operators is an operator like any other, plus a static
// `fusion()` naming the chain it replaces and where its parameters come from:
//
//   struct BlurThenPool {                      // inputs of gauss5x5, outputs of maxpool2x2
//       static pixflow::Schema schema();       // params: sigma, border
//       static pixflow::Fusion fusion() {
//           return pixflow::Fusion({"gauss5x5", "maxpool2x2"}).bind("sigma", 0).bind("border", 0);
//       }
//       static void run_cpu(pixflow::Context&);
//   };
//
// The planner uses it when the intermediate outputs have no other consumer and all nodes share a
// backend the fused operator has; `--no-fuse` turns it off. Its result must equal the chain's.
//
// Rules for run functions:
//  - Report user errors by throwing pixflow::Error (or any std::exception): the thunk turns it
//    into a status and message; nothing unwinds across the C ABI.
//  - Allocate scratch only through ctx.alloc(); outputs are already allocated.
//  - CUDA: launch on ctx.stream() only and never synchronize the device or the stream.
//  - Check ctx.cancelled() in long loops.
// Without `infer`, every output takes the first input's size and channels, and its dtype is the
// output port's single declared dtype, else the first input's dtype.
#pragma once

#include <pixflow/abi.h>
#include <pixflow/error.hpp>
#include <pixflow/image.hpp>

#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pixflow {

/// Mask of dtypes for a port: dtypes({DType::u8, DType::f32}).
constexpr std::uint32_t dtypes(std::initializer_list<DType> list) {
    std::uint32_t m = 0;
    for (DType d : list) m |= PF_DTYPE_BIT(int(d));
    return m;
}
constexpr std::uint32_t all_dtypes() { return PF_ALL_DTYPES; }
/// Mask of channel counts lo..hi for a port.
constexpr std::uint32_t channels(int lo, int hi) {
    std::uint32_t m = 0;
    for (int c = lo; c <= hi; ++c) m |= PF_CHANNELS_BIT(c);
    return m;
}

/// The declaration of an operator: ports, parameters and documentation. Build it once; the host
/// derives validation, `pixflow describe` and docs/operators.md from it.
class Schema {
  public:
    Schema(const char* name, const char* doc) : m_name(name), m_doc(doc) {}

    Schema& input(const char* name, std::uint32_t dtype_mask, std::uint32_t channel_mask,
                  const char* doc = "") {
        m_inputs.push_back({sizeof(pf_port_desc), name, doc, dtype_mask, channel_mask});
        return *this;
    }
    Schema& output(const char* name, std::uint32_t dtype_mask, std::uint32_t channel_mask,
                   const char* doc = "") {
        m_outputs.push_back({sizeof(pf_port_desc), name, doc, dtype_mask, channel_mask});
        return *this;
    }
    Schema& param_bool(const char* name, bool def, const char* doc) {
        pf_param_desc p = base(name, doc, PF_PARAM_BOOL);
        p.default_value.b = def ? 1 : 0;
        m_params.push_back(p);
        return *this;
    }
    Schema& param_int(const char* name, std::int64_t def, std::int64_t lo, std::int64_t hi,
                      const char* doc) {
        pf_param_desc p = base(name, doc, PF_PARAM_INT);
        p.default_value.i = def;
        p.has_range = 1;
        p.min = double(lo);
        p.max = double(hi);
        m_params.push_back(p);
        return *this;
    }
    Schema& param_float(const char* name, double def, double lo, double hi, const char* doc) {
        pf_param_desc p = base(name, doc, PF_PARAM_FLOAT);
        p.default_value.f = def;
        p.has_range = 1;
        p.min = lo;
        p.max = hi;
        m_params.push_back(p);
        return *this;
    }
    /// A string; flags may add PF_PARAM_REQUIRED, PF_PARAM_INPUT_PATH or PF_PARAM_OUTPUT_PATH.
    Schema& param_string(const char* name, const char* def, const char* doc,
                         std::uint32_t flags = 0) {
        pf_param_desc p = base(name, doc, PF_PARAM_STRING);
        p.flags = flags;
        p.default_value.s = keep(def ? def : "");
        m_params.push_back(p);
        return *this;
    }
    /// One string out of `choices`; the default must be one of them.
    Schema& param_choice(const char* name, std::initializer_list<const char*> choices,
                         const char* def, const char* doc) {
        pf_param_desc p = base(name, doc, PF_PARAM_CHOICE);
        m_store->choice_lists.emplace_back(choices);
        p.choices = m_store->choice_lists.back().data();
        p.n_choices = int32_t(m_store->choice_lists.back().size());
        p.default_value.s = keep(def);
        m_params.push_back(p);
        return *this;
    }
    Schema& flags(std::uint32_t f) {
        m_flags |= f;
        return *this;
    }

    const char* name() const { return m_name; }
    const char* doc() const { return m_doc; }
    std::uint32_t op_flags() const { return m_flags; }
    const std::vector<pf_port_desc>& inputs() const { return m_inputs; }
    const std::vector<pf_port_desc>& outputs() const { return m_outputs; }
    const std::vector<pf_param_desc>& params() const { return m_params; }

  private:
    pf_param_desc base(const char* name, const char* doc, pf_param_type t) {
        pf_param_desc p{};
        p.struct_size = sizeof(pf_param_desc);
        p.name = name;
        p.doc = doc;
        p.type = t;
        p.default_value.type = t;
        return p;
    }
    const char* keep(const char* s) { return m_store->strings.emplace_back(s).c_str(); }

    const char* m_name;
    const char* m_doc;
    std::uint32_t m_flags = 0;
    std::vector<pf_port_desc> m_inputs, m_outputs;
    std::vector<pf_param_desc> m_params;
    // The strings and choice lists the descriptors point into. Shared, so that a copy of the
    // schema (`return Schema(...).input(...)` copies from the temporary) keeps them alive;
    // deques, so that their addresses stay put as they grow.
    struct Store {
        std::deque<std::vector<const char*>> choice_lists;
        std::deque<std::string> strings;
    };
    std::shared_ptr<Store> m_store = std::make_shared<Store>();
};

/// The chain a fused operator replaces (see the top of this file and pf_fusion_desc).
class Fusion {
  public:
    Fusion(std::initializer_list<const char*> chain) : m_chain(chain) {}

    /// The fused operator's parameter `fused_param` takes chain[node]'s parameter `param`.
    Fusion& bind(const char* fused_param, int node, const char* param) {
        m_binds.push_back({fused_param, int32_t(node), param});
        return *this;
    }
    /// Same, when the parameter has the same name on both.
    Fusion& bind(const char* param, int node) { return bind(param, node, param); }
    /// Fuse only when chain[a]'s `param_a` equals chain[b]'s `param_b`.
    Fusion& same(int a, const char* param_a, int b, const char* param_b) {
        m_same.push_back({int32_t(a), param_a, int32_t(b), param_b});
        return *this;
    }
    Fusion& same(const char* param, int a, int b) { return same(a, param, b, param); }

    pf_fusion_desc to_c(const char* fused_op) const {
        return {sizeof(pf_fusion_desc), fused_op,          m_chain.data(),        int32_t(m_chain.size()),
                m_binds.data(),         int32_t(m_binds.size()), m_same.data(), int32_t(m_same.size())};
    }

  private:
    std::vector<const char*> m_chain;
    std::vector<pf_fusion_bind> m_binds;
    std::vector<pf_fusion_same> m_same;
};

/// Parameter values by name, as the host resolved them (defaults filled in, ranges checked).
class Params {
  public:
    Params(const pf_value* values, const std::vector<pf_param_desc>& descs)
        : m_values(values), m_descs(&descs) {}

    double f(std::string_view name) const {
        const pf_value& v = find(name);
        return v.type == PF_PARAM_INT ? double(v.i) : v.f;
    }
    std::int64_t i(std::string_view name) const { return find(name).i; }
    bool b(std::string_view name) const { return find(name).b != 0; }
    std::string_view s(std::string_view name) const {
        const char* s = find(name).s;
        return s ? std::string_view(s) : std::string_view();
    }

  private:
    const pf_value& find(std::string_view name) const {
        for (std::size_t k = 0; k < m_descs->size(); ++k)
            if (name == (*m_descs)[k].name) return m_values[k];
        throw Error("internal: no parameter named '" + std::string(name) + "'", PF_ERR_RUNTIME);
    }
    const pf_value* m_values;
    const std::vector<pf_param_desc>* m_descs;
};

/// Shapes for `infer`: views whose data is null.
using Shapes = std::vector<ImageView>;

/// What a run function receives: parameters, images, the stream, scratch memory, logging.
class Context {
  public:
    Context(const pf_run_args* args, const std::vector<pf_param_desc>& descs)
        : m_args(args), m_params(args->params, descs) {}

    const Params& params() const { return m_params; }
    int n_inputs() const { return m_args->n_inputs; }
    int n_outputs() const { return m_args->n_outputs; }
    ImageView input(int k = 0) const { return ImageView(m_args->inputs[k]); }
    ImageView output(int k = 0) const { return ImageView(m_args->outputs[k]); }
    /// The cudaStream_t to launch on (cast it in the .cu file); null on the CPU.
    void* stream() const { return m_args->stream; }

    /// Scratch memory next to the outputs (host or device), freed by the host after the run.
    void* alloc(std::size_t bytes) const {
        int device = m_args->n_outputs > 0 ? m_args->outputs[0].device
                     : m_args->n_inputs > 0 ? m_args->inputs[0].device
                                            : PF_HOST;
        void* p = m_args->host->alloc(m_args->host->self, device, bytes);
        if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes of scratch",
                            PF_ERR_RUNTIME);
        return p;
    }
    template <class T> T* alloc(std::size_t count) const {
        return static_cast<T*>(alloc(count * sizeof(T)));
    }
    void log(int level, const std::string& msg) const {
        m_args->host->log(m_args->host->self, level, msg.c_str());
    }
    void info(const std::string& msg) const { log(1, msg); }
    void warn(const std::string& msg) const { log(2, msg); }
    bool cancelled() const { return m_args->host->cancelled(m_args->host->self) != 0; }
    /// Records a named number in the run report.
    void metric(const std::string& key, double value) const {
        m_args->host->metric(m_args->host->self, key.c_str(), value);
    }

  private:
    const pf_run_args* m_args;
    Params m_params;
};

namespace detail {

inline void write_error(char* buf, std::size_t n, const char* msg) {
    if (!buf || n == 0) return;
    std::snprintf(buf, n, "%s", msg);
}

template <class F> int32_t guarded(char* err, std::size_t n, F&& f) noexcept {
    try {
        f();
        return PF_OK;
    } catch (const Error& e) {
        write_error(err, n, e.what());
        return e.status();
    } catch (const std::exception& e) {
        write_error(err, n, e.what());
        return PF_ERR_RUNTIME;
    } catch (...) {
        write_error(err, n, "unknown exception");
        return PF_ERR_RUNTIME;
    }
}

template <class T> const Schema& schema_of() {
    static const Schema s = T::schema();
    return s;
}

template <class T> void default_infer(const Params&, const Shapes& in, Shapes& out) {
    const Schema& s = schema_of<T>();
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (in.empty()) throw Error("internal: op without inputs must define infer", PF_ERR_RUNTIME);
        out[k] = in[0];
        std::uint32_t mask = s.outputs()[k].dtypes;
        if (mask && (mask & (mask - 1)) == 0) // exactly one dtype declared
            for (int d = PF_U8; d <= PF_F64; ++d)
                if (mask == PF_DTYPE_BIT(d)) out[k].dtype = DType(d);
    }
}

template <class T>
int32_t infer_thunk(const pf_value* params, int32_t, const pf_image* inputs, int32_t n_inputs,
                    pf_image* outputs, int32_t n_outputs, char* err, std::size_t n) {
    return guarded(err, n, [&] {
        const Schema& s = schema_of<T>();
        Params p(params, s.params());
        Shapes in;
        Shapes out(static_cast<std::size_t>(n_outputs));
        for (int k = 0; k < n_inputs; ++k) in.emplace_back(inputs[k]);
        if constexpr (requires(const Params& pp, const Shapes& i, Shapes& o) { T::infer(pp, i, o); })
            T::infer(p, in, out);
        else
            default_infer<T>(p, in, out);
        for (int k = 0; k < n_outputs; ++k) {
            out[std::size_t(k)].data = nullptr;
            outputs[k] = out[std::size_t(k)].to_c();
        }
    });
}

template <class T> int32_t run_cpu_thunk(const pf_run_args* a) {
    return guarded(a->error, a->error_size, [&] {
        Context ctx(a, schema_of<T>().params());
        T::run_cpu(ctx);
    });
}

template <class T> int32_t run_cuda_thunk(const pf_run_args* a) {
    return guarded(a->error, a->error_size, [&] {
        Context ctx(a, schema_of<T>().params());
        T::run_cuda(ctx);
    });
}

template <class T> pf_op_desc make_op() {
    const Schema& s = schema_of<T>();
    pf_op_desc d{};
    d.struct_size = sizeof(pf_op_desc);
    d.name = s.name();
    d.doc = s.doc();
    d.flags = s.op_flags();
    if constexpr (requires { T::fusion(); }) d.flags |= PF_OP_FUSED;
    d.inputs = s.inputs().data();
    d.n_inputs = int32_t(s.inputs().size());
    d.outputs = s.outputs().data();
    d.n_outputs = int32_t(s.outputs().size());
    d.params = s.params().data();
    d.n_params = int32_t(s.params().size());
    d.infer = &infer_thunk<T>;
    d.run_cpu = &run_cpu_thunk<T>;
    if constexpr (requires(Context& c) { T::run_cuda(c); })
        d.run_cuda = &run_cuda_thunk<T>;
    else
        d.run_cuda = nullptr;
    return d;
}

template <class... Ts> std::array<pf_op_desc, sizeof...(Ts)> make_ops() { return {make_op<Ts>()...}; }

template <class T> void add_fusion(std::vector<pf_fusion_desc>& out) {
    if constexpr (requires { T::fusion(); }) {
        static const Fusion f = T::fusion();
        out.push_back(f.to_c(schema_of<T>().name()));
    }
}

template <class... Ts> std::vector<pf_fusion_desc> make_fusions() {
    std::vector<pf_fusion_desc> out;
    (add_fusion<Ts>(out), ...);
    return out;
}

} // namespace detail
} // namespace pixflow

/// Defines the plugin's entry point: PIXFLOW_PLUGIN("name", "1.2.0", OpA, OpB, ...).
/// The ABI version recorded is the one of the SDK headers the plugin was compiled against.
#define PIXFLOW_PLUGIN(NAME, VERSION, ...)                                                         \
    extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {                   \
        static const auto ops = ::pixflow::detail::make_ops<__VA_ARGS__>();                        \
        static const auto fusions = ::pixflow::detail::make_fusions<__VA_ARGS__>();                \
        static const pf_plugin_desc desc{sizeof(pf_plugin_desc), PIXFLOW_ABI_MAJOR,                \
                                         PIXFLOW_ABI_MINOR,     NAME,                              \
                                         VERSION,               ops.data(),                        \
                                         int32_t(ops.size()),   nullptr,                           \
                                         fusions.data(),        int32_t(fusions.size())};          \
        return &desc;                                                                              \
    }
