// pixflow/operator.hpp: the C++ layer for operator authors, header-only, compiled into each plugin.
//
// An operator is one class: its parameters as a struct, its schema declared once, and a run
// function per backend that receives the filled struct:
//
//   enum class Mode { clamp, wrap };
//   constexpr std::array<const char*, 2> pixflow_choices(Mode) { return {"clamp", "wrap"}; }
//
//   struct Invert {
//       struct Params {                      // one field per parameter; the default is its
//           double gain = 1.0;               // initializer
//           Mode mode = Mode::clamp;
//       };
//       static pixflow::Schema schema() {
//           using namespace pixflow;
//           return Schema("invert", "255 - v * gain for every u8 sample")
//               .input("in", dtypes({DType::u8}), channels(1, 4))
//               .output("out", dtypes({DType::u8}), channels(1, 4))
//               .param(&Params::gain, "gain", range(0.0, 4.0), "multiplier applied first")
//               .param(&Params::mode, "mode", "clamp or wrap values beyond 255");
//       }
//       static void run_cpu(pixflow::Context& ctx, const Params& p);   // required
//       static void run_cuda(pixflow::Context& ctx, const Params& p);  // optional
//       // optional: static void infer(const Params& p, const pixflow::Shapes& in,
//       //                             pixflow::Shapes& out);
//   };
//   PIXFLOW_PLUGIN("invert", "1.0.0", Invert)
//
// A field's type gives its parameter's type: bool; an integer (a range is the accepted values);
// float or double (a range is optional); std::string (flags may add PF_PARAM_REQUIRED and the
// path flags); an enum whose names `pixflow_choices(E)` returns (found by argument-dependent
// lookup: declare it next to the enum), which becomes a choice whose k-th name is E(k), or the
// value paired with it when the array holds std::pair<const char*, E>. The choice list is
// written once, there; DType has one built in ("u8" ... "f64"). An operator without parameters
// has no Params, and its functions take no Params argument (infer: (in, out)).
//
// What is checked when the plugin is loaded (the host rejects it with the message): every field
// of Params is bound exactly once and no other struct is; names are unique; defaults lie in
// their ranges and choices; an operator without inputs defines infer; a fusion binds parameters
// that exist, with the same types, on the chain's operators of this plugin. A parameter's type
// cannot be wrong: it is the field's. So a typo fails the build or the load, never a run.
//
// A fused implementation of a chain of operators is an operator like any other, plus a static
// `fusion()` naming the chain it replaces and where its parameters come from:
//
//   struct BlurThenPool {                      // inputs of gauss5x5, outputs of maxpool2x2
//       struct Params { double sigma = 1.5; Border border = Border::reflect101; };
//       static pixflow::Schema schema();       // binds sigma, border
//       static pixflow::Fusion fusion() {
//           return pixflow::Fusion({"gauss5x5", "maxpool2x2"}).bind("sigma", 0).bind("border", 0);
//       }
//       static void run_cpu(pixflow::Context&, const Params&);
//   };
//
// The planner uses it when the intermediate outputs have no other consumer and all nodes share a
// backend the fused operator has; `--no-fuse` turns it off. Its result must equal the chain's.
//
// Rules for run functions (abi.h states them for every callback):
//  - Report errors by throwing (error.hpp): UserError for the user's input or parameters,
//    PIXFLOW_INTERNAL_CHECK for invariants only a bug breaks. Nothing unwinds across the C ABI.
//  - Allocate scratch only through ctx.alloc(); outputs are already allocated.
//  - CUDA: enqueue work on ctx.stream() only and never synchronize the device or the stream.
//  - Check ctx.cancelled() in long loops.
// Without `infer`, every output takes the first input's size and channels, and its dtype is the
// output port's single declared dtype, else the first input's dtype.
//
// How the operator reads its input rows is one more line of the schema (abi.h, pf_access_kind);
// it lets the host run the operator on horizontal strips of an image too large for memory:
//
//   .access(pixflow::pointwise())     // row y from row y (convert, grayscale; a source: synth)
//   .access(pixflow::stencil(2))      // row y from rows y-2 .. y+2 (gauss5x5)
//   .access(pixflow::blocks(2, 1))    // 2 input rows give 1 output row (maxpool2x2)
//   .access(pixflow::carried())       // rows in order, with a state between strips (integral)
//
// Without it the operator is whole-image: it always sees the whole image. Pointwise, stencil and
// blocks operators need no code for strips: their views look like whole images. A source that
// is pointwise reads ctx.strip().out_row0 to know which rows it makes. A carried operator also
// defines the size of its state and reads it through ctx.strip():
//
//   static std::size_t carry_bytes(const Params& p, const pixflow::Shapes& in,
//                                  const pixflow::Shapes& out);   // whole images' shapes
//   static void run_cpu(pixflow::Context& ctx, const Params& p) {
//       const pixflow::Strip s = ctx.strip();  // s.carry: null when run on the whole image
//       ...                                    // zero-filled before the first strip
//   }
//
// An operator whose access depends on its parameters (load streams .npy files, not .png ones)
// also says when a node of it is whole-image after all (ABI 1.3), "" when its access holds:
//
//   static std::string whole_reason(const Params& p, const pixflow::Shapes& in,
//                                   const pixflow::Shapes& out);   // "it reads .png files whole"
//
// An operator that takes scratch memory (ctx.alloc) says how much one call takes at most, for a
// strip's or a whole image's shapes (ABI 1.5), so that the memory budget that decides whole
// images or strips counts it; each is optional, and one without is taken to take none:
//
//   static std::size_t cpu_scratch_bytes(const Params& p, const pixflow::Shapes& in,
//                                        const pixflow::Shapes& out);   // host, one run_cpu
//   static std::size_t cuda_scratch_bytes(const Params& p, const pixflow::Shapes& in,
//                                         const pixflow::Shapes& out);  // device, one run_cuda
//
// Deprecated: the string accessors ctx.params().f("sigma"), .i, .b, .s and Schema::param_bool,
// param_int, param_float, param_string, param_choice, kept for existing third-party plugins.
// The accessors throw InternalError when the name is unknown or the type is not theirs.
#pragma once

#include <pixflow/abi.h>
#include <pixflow/error.hpp>
#include <pixflow/image.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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

/// The accepted values of a number parameter, both ends included: range(0.1, 100.0).
struct Range {
    double lo, hi;
};
constexpr Range range(double lo, double hi) { return {lo, hi}; }

/// How an operator reads its input rows (abi.h, pf_access_kind); Schema::access.
struct Access {
    pf_access_kind kind = PF_ACCESS_WHOLE;
    int halo = 0;     ///< stencil: rows above and below
    int in_rows = 0;  ///< blocks: input rows per block
    int out_rows = 0; ///< blocks: output rows per block
};
/// Needs the whole image at once (the default).
constexpr Access whole_image() { return {}; }
/// Output row y from input row y only; a source: any band of rows on its own.
constexpr Access pointwise() { return {PF_ACCESS_POINTWISE, 0, 0, 0}; }
/// Output row y from input rows y - halo .. y + halo (and as many columns).
constexpr Access stencil(int halo) { return {PF_ACCESS_STENCIL, halo, 0, 0}; }
/// Blocks of in_rows input rows, each giving out_rows output rows.
constexpr Access blocks(int in_rows, int out_rows) { return {PF_ACCESS_BLOCKS, 0, in_rows, out_rows}; }
/// Rows in order, with a state carried from strip to strip (the class defines carry_bytes).
constexpr Access carried() { return {PF_ACCESS_CARRIED, 0, 0, 0}; }

/// The choices of a DType parameter: every dtype, by its name.
constexpr std::array<std::pair<const char*, DType>, 8> pixflow_choices(DType) {
    return {{{"u8", DType::u8},
             {"u16", DType::u16},
             {"i16", DType::i16},
             {"i32", DType::i32},
             {"u32", DType::u32},
             {"u64", DType::u64},
             {"f32", DType::f32},
             {"f64", DType::f64}}};
}

namespace detail {

/// An enum with a choice list: pixflow_choices(E) is found by argument-dependent lookup.
template <class E>
concept ChoiceEnum = std::is_enum_v<E> && requires {
    pixflow_choices(E{});
};

template <ChoiceEnum E> constexpr std::size_t choice_count() { return pixflow_choices(E{}).size(); }
template <ChoiceEnum E> constexpr const char* choice_name(std::size_t k) {
    const auto list = pixflow_choices(E{});
    if constexpr (std::is_convertible_v<decltype(list[0]), const char*>)
        return list[k];
    else
        return list[k].first;
}
template <ChoiceEnum E> constexpr E choice_value(std::size_t k) {
    const auto list = pixflow_choices(E{});
    if constexpr (std::is_convertible_v<decltype(list[0]), const char*>)
        return E(k);
    else
        return list[k].second;
}

/// A tag per parameter struct, to tell bindings of different structs apart.
template <class P> inline constexpr char struct_tag = 0;

/// Converts to any non-aggregate type; only for counting fields in unevaluated contexts.
struct AnyField {
    template <class T>
    requires(!std::is_aggregate_v<T>) operator T() const;
};
template <class P, std::size_t... I> constexpr bool initializable_with(std::index_sequence<I...>) {
    return requires { P{(void(I), AnyField{})...}; };
}
/// The number of fields of the aggregate P, bases' fields included (brace elision), or 0 when
/// it has more than 64.
template <class P, std::size_t N = 0> constexpr std::size_t field_count() {
    if constexpr (N > 64)
        return 0;
    else if constexpr (initializable_with<P>(std::make_index_sequence<N + 1>{}))
        return field_count<P, N + 1>();
    else
        return N;
}

} // namespace detail

/// The declaration of an operator: ports, parameters and documentation. Build it once; the host
/// derives validation, `pixflow describe` and docs/operators.md from it.
class Schema {
  public:
    Schema(const char* name, const char* doc) : m_name(name), m_doc(doc) {}

    Schema& input(const char* name, std::uint32_t dtype_mask, std::uint32_t channel_mask, const char* doc = "") {
        m_inputs.push_back({sizeof(pf_port_desc), name, doc, dtype_mask, channel_mask});
        return *this;
    }
    Schema& output(const char* name, std::uint32_t dtype_mask, std::uint32_t channel_mask, const char* doc = "") {
        m_outputs.push_back({sizeof(pf_port_desc), name, doc, dtype_mask, channel_mask});
        return *this;
    }

    /// Binds `field` of the operator's parameter struct as parameter `name` (see the top of
    /// this file for the types). The default is the field's initializer. P names the struct
    /// when the field belongs to a base of it: param<Params>(&Params::quality, ...).
    template <class P = void, class B, class F>
    Schema& param(F B::*field, const char* name, const char* doc, std::uint32_t flags = 0) {
        return bind<P>(field, name, nullptr, doc, flags);
    }
    /// The same for a number, accepted within `r` (ends included).
    template <class P = void, class B, class F> Schema& param(F B::*field, const char* name, Range r, const char* doc) {
        static_assert(std::is_arithmetic_v<F> && !std::is_same_v<F, bool>,
                      "a range is for an integer or floating-point field");
        return bind<P>(field, name, &r, doc, 0);
    }

    /// Deprecated: an untyped parameter, read back by name (Params). Bind a field instead.
    Schema& param_bool(const char* name, bool def, const char* doc) {
        pf_param_desc p = base(name, doc, PF_PARAM_BOOL);
        p.default_value.b = def ? 1 : 0;
        m_params.push_back(p);
        return *this;
    }
    Schema& param_int(const char* name, std::int64_t def, std::int64_t lo, std::int64_t hi, const char* doc) {
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
    Schema& param_string(const char* name, const char* def, const char* doc, std::uint32_t flags = 0) {
        pf_param_desc p = base(name, doc, PF_PARAM_STRING);
        p.flags = flags;
        p.default_value.s = keep(def ? def : "");
        m_params.push_back(p);
        return *this;
    }
    /// One string out of `choices`; the default must be one of them.
    Schema& param_choice(const char* name, std::initializer_list<const char*> choices, const char* def,
                         const char* doc) {
        pf_param_desc p = base(name, doc, PF_PARAM_CHOICE);
        set_choices(p, std::vector<const char*>(choices));
        p.default_value.s = keep(def);
        m_params.push_back(p);
        return *this;
    }
    Schema& flags(std::uint32_t f) {
        m_flags |= f;
        return *this;
    }
    /// How the operator reads its input rows (see the top of this file); whole image if unsaid.
    Schema& access(Access a) {
        const bool ok = a.kind == PF_ACCESS_WHOLE || a.kind == PF_ACCESS_POINTWISE || a.kind == PF_ACCESS_CARRIED ||
                        (a.kind == PF_ACCESS_STENCIL && a.halo >= 1 && a.halo <= 4096) ||
                        (a.kind == PF_ACCESS_BLOCKS && a.in_rows >= 1 && a.in_rows <= 4096 && a.out_rows >= 1 &&
                         a.out_rows <= 4096);
        if (!ok) note("its access pattern is out of range (a stencil's halo and a block's rows are 1 to 4096)");
        m_access = a;
        return *this;
    }

    const char* name() const { return m_name; }
    const char* doc() const { return m_doc; }
    std::uint32_t op_flags() const { return m_flags; }
    const Access& access_pattern() const { return m_access; }
    const std::vector<pf_port_desc>& inputs() const { return m_inputs; }
    const std::vector<pf_port_desc>& outputs() const { return m_outputs; }
    const std::vector<pf_param_desc>& params() const { return m_params; }

    /// True when the parameters are bound to struct fields (param), not declared by name.
    bool typed() const { return !m_bindings.empty(); }
    /// The first mistake in the declaration, or "" (see the top of this file).
    std::string problem() const {
        if (!m_problem.empty()) return m_problem;
        if (typed() && m_bindings.size() != m_params.size())
            return "mixes bound fields (param) with parameters declared by name (param_*); bind "
                   "every parameter";
        for (std::size_t a = 0; a < m_params.size(); ++a)
            for (std::size_t b = 0; b < a; ++b)
                if (std::string_view(m_params[a].name) == m_params[b].name)
                    return "declares parameter '" + std::string(m_params[a].name) + "' twice";
        return {};
    }
    /// Whether the bound fields are those of P, every one once: "" when so, else the problem.
    template <class P> std::string binds_every_field_of() const {
        constexpr std::size_t fields = detail::field_count<P>();
        if (!typed())
            return fields == 0 ? std::string()
                               : "its Params has " + std::to_string(fields) +
                                     " fields and the schema binds none; bind each with "
                                     ".param(&Params::field, \"name\", ...)";
        for (const Binding& b : m_bindings)
            if (b.owner != &detail::struct_tag<P>)
                return "parameter '" + std::string(b.name) +
                       "' is a field of another struct than the operator's Params (for a field of "
                       "a base, write param<Params>(&Params::field, ...))";
        if (fields != 0 && fields != m_bindings.size())
            return "its Params has " + std::to_string(fields) + " fields and the schema binds " +
                   std::to_string(m_bindings.size()) + "; bind every field exactly once";
        return {};
    }
    /// The parameter struct filled from the values the host resolved (one per parameter, in
    /// declaration order). P is the struct the fields were bound on (checked at load).
    template <class P> P read(const pf_value* values, int n) const {
        PIXFLOW_INTERNAL_CHECK(n == int(m_bindings.size()), std::string(m_name) + ": the host passed " +
                                                                std::to_string(n) + " parameter values for " +
                                                                std::to_string(m_bindings.size()) + " parameters");
        P p{};
        for (std::size_t k = 0; k < m_bindings.size(); ++k) m_bindings[k].assign(&p, values[k]);
        return p;
    }

  private:
    struct Binding {
        const char* name;
        const void* owner;     // detail::struct_tag of the struct the field is read into
        std::ptrdiff_t offset; // of the field in that struct: no field is bound twice
        std::function<void(void* params, const pf_value& v)> assign;
    };

    template <class P, class B, class F>
    Schema& bind(F B::*field, const char* name, const Range* r, const char* doc, std::uint32_t flags) {
        using S = std::conditional_t<std::is_void_v<P>, B, P>;
        static_assert(std::is_same_v<S, B> || std::is_base_of_v<B, S>,
                      "the field must belong to the parameter struct or a base of it");
        static_assert(std::is_aggregate_v<S> && std::is_default_constructible_v<S>,
                      "a parameter struct is a plain aggregate: fields with default initializers");
        constexpr bool is_bool = std::is_same_v<F, bool>;
        constexpr bool is_int = std::is_integral_v<F> && !is_bool;
        constexpr bool is_float = std::is_floating_point_v<F>;
        constexpr bool is_string = std::is_same_v<F, std::string>;
        constexpr bool is_choice = detail::ChoiceEnum<F>;
        static_assert(is_bool || is_int || is_float || is_string || is_choice,
                      "a parameter field is bool, an integer, float, double, std::string or an "
                      "enum with pixflow_choices(E) (see pixflow/operator.hpp)");
        const S probe{};
        const F& def = probe.*field;
        pf_param_desc p = base(name, doc,
                               is_bool     ? PF_PARAM_BOOL
                               : is_int    ? PF_PARAM_INT
                               : is_float  ? PF_PARAM_FLOAT
                               : is_string ? PF_PARAM_STRING
                                           : PF_PARAM_CHOICE);
        p.flags = flags;
        const std::string where = "parameter '" + std::string(name) + "'";
        if ((flags & (PF_PARAM_INPUT_PATH | PF_PARAM_OUTPUT_PATH)) && !is_string)
            note(where + " has a path flag but is not a std::string");
        if constexpr (is_bool) {
            p.default_value.b = def ? 1 : 0;
        } else if constexpr (is_int) {
            p.default_value.i = std::int64_t(def);
            p.has_range = 1;
            p.min = r ? r->lo : double(std::numeric_limits<F>::lowest());
            p.max = r ? r->hi : double(std::numeric_limits<F>::max());
            if (r &&
                (r->lo < double(std::numeric_limits<F>::lowest()) || r->hi > double(std::numeric_limits<F>::max())))
                note(where + ": its range does not fit the field's integer type");
        } else if constexpr (is_float) {
            p.default_value.f = double(def);
            p.has_range = r ? 1 : 0;
            p.min = r ? r->lo : 0.0;
            p.max = r ? r->hi : 0.0;
        } else if constexpr (is_string) {
            p.default_value.s = keep(def.c_str());
        } else {
            std::vector<const char*> names;
            for (std::size_t k = 0; k < detail::choice_count<F>(); ++k) names.push_back(detail::choice_name<F>(k));
            set_choices(p, names);
            for (std::size_t k = 0; k < names.size() && !p.default_value.s; ++k)
                if (detail::choice_value<F>(k) == def) p.default_value.s = names[k];
            if (!p.default_value.s) note(where + ": its default is not one of its choices");
        }
        if constexpr (is_int || is_float)
            if (r && !(double(def) >= r->lo && double(def) <= r->hi))
                note(where + ": its default lies outside its range");
        const std::ptrdiff_t offset = reinterpret_cast<const char*>(&def) - reinterpret_cast<const char*>(&probe);
        for (const Binding& b : m_bindings)
            if (b.owner == &detail::struct_tag<S> && b.offset == offset)
                note(where + " binds the same field as '" + b.name + "'");
        const char* op = m_name;
        m_bindings.push_back({name, &detail::struct_tag<S>, offset, [field, op, name](void* params, const pf_value& v) {
                                  (void)op, (void)name; // used by the choice branch only
                                  F& f = static_cast<S*>(params)->*field;
                                  if constexpr (is_bool)
                                      f = v.b != 0;
                                  else if constexpr (is_int)
                                      f = F(v.i);
                                  else if constexpr (is_float)
                                      f = F(v.type == PF_PARAM_INT ? double(v.i) : v.f);
                                  else if constexpr (is_string)
                                      f = v.s ? v.s : "";
                                  else
                                      f = choice_of<F>(op, name, v.s);
                              }});
        m_params.push_back(p);
        return *this;
    }

    /// The enum value named `s`; the host checked the choice already, this guards against one
    /// that did not.
    template <class E> static E choice_of(const char* op, const char* name, const char* s) {
        const std::string_view v = s ? s : "";
        std::string list;
        for (std::size_t k = 0; k < detail::choice_count<E>(); ++k) {
            if (v == detail::choice_name<E>(k)) return detail::choice_value<E>(k);
            list += std::string(k ? ", " : "") + detail::choice_name<E>(k);
        }
        throw UserError(std::string(op) + ": " + name + " = \"" + std::string(v) + "\" is not one of " + list);
    }

    pf_param_desc base(const char* name, const char* doc, pf_param_type t) {
        pf_param_desc p{};
        p.struct_size = sizeof(pf_param_desc);
        p.name = name;
        p.doc = doc;
        p.type = t;
        p.default_value.type = t;
        return p;
    }
    void set_choices(pf_param_desc& p, std::vector<const char*> names) {
        m_store->choice_lists.push_back(std::move(names));
        p.choices = m_store->choice_lists.back().data();
        p.n_choices = int32_t(m_store->choice_lists.back().size());
    }
    const char* keep(const char* s) { return m_store->strings.emplace_back(s).c_str(); }
    void note(const std::string& problem) {
        if (m_problem.empty()) m_problem = problem;
    }

    const char* m_name;
    const char* m_doc;
    std::uint32_t m_flags = 0;
    Access m_access;
    std::vector<pf_port_desc> m_inputs, m_outputs;
    std::vector<pf_param_desc> m_params;
    std::vector<Binding> m_bindings; // one per parameter when typed
    std::string m_problem;
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
        return {sizeof(pf_fusion_desc),  fused_op,      m_chain.data(),        int32_t(m_chain.size()), m_binds.data(),
                int32_t(m_binds.size()), m_same.data(), int32_t(m_same.size())};
    }

  private:
    std::vector<const char*> m_chain;
    std::vector<pf_fusion_bind> m_binds;
    std::vector<pf_fusion_same> m_same;
};

/// Deprecated: parameter values by name, as the host resolved them (defaults filled in, ranges
/// checked). Bind the parameters to a struct instead (Schema::param): the run function then
/// receives them filled in, and a misspelt name fails the build, not a run.
class Params {
  public:
    Params(const pf_value* values, const std::vector<pf_param_desc>& descs) : m_values(values), m_descs(&descs) {}

    /// A float parameter (an int one is converted).
    [[deprecated("bind the parameter to a struct field: Schema::param")]] double
    f(std::string_view name, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
        const pf_value& v = find(name, PF_PARAM_FLOAT, PF_PARAM_INT, "f", file, line);
        return v.type == PF_PARAM_INT ? double(v.i) : v.f;
    }
    /// An int parameter.
    [[deprecated("bind the parameter to a struct field: Schema::param")]] std::int64_t
    i(std::string_view name, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
        return find(name, PF_PARAM_INT, PF_PARAM_INT, "i", file, line).i;
    }
    /// A bool parameter.
    [[deprecated("bind the parameter to a struct field: Schema::param")]] bool
    b(std::string_view name, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
        return find(name, PF_PARAM_BOOL, PF_PARAM_BOOL, "b", file, line).b != 0;
    }
    /// A string or choice parameter; valid during the call.
    [[deprecated("bind the parameter to a struct field: Schema::param")]] std::string_view
    s(std::string_view name, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
        const char* s = find(name, PF_PARAM_STRING, PF_PARAM_CHOICE, "s", file, line).s;
        return s ? std::string_view(s) : std::string_view();
    }

  private:
    const pf_value& find(std::string_view name, int type_a, int type_b, const char* accessor, const char* file,
                         int line) const {
        for (std::size_t k = 0; k < m_descs->size(); ++k) {
            const pf_param_desc& d = (*m_descs)[k];
            if (name != d.name) continue;
            if (d.type != type_a && d.type != type_b) {
                static const char* const types[] = {"?", "bool", "int", "float", "string", "choice"};
                const char* declared = d.type >= 1 && d.type <= 5 ? types[d.type] : "?";
                throw InternalError("parameter '" + std::string(name) + "' is declared " + declared +
                                        "; Params::" + accessor + " does not read a " + declared,
                                    file, line);
            }
            return m_values[k];
        }
        throw InternalError("no parameter named '" + std::string(name) + "'", file, line);
    }
    const pf_value* m_values;
    const std::vector<pf_param_desc>* m_descs;
};

/// Shapes for `infer`: views whose data is null.
using Shapes = std::vector<ImageView>;

/// The band of rows a run call computes (abi.h, pf_strip), in rows of the whole images; when the
/// operator runs on the whole image: strip 0 of 1, the views' own heights, no carry.
struct Strip {
    int index = 0, count = 1;
    int in_row0 = 0, in_height = 0;   ///< the input view's first row in the whole input, its height
    int out_row0 = 0, out_height = 0; ///< the output view's first row in the whole output, its height
    void* carry = nullptr;            ///< carried operators, run by strips: the state (see abi.h)
    std::size_t carry_bytes = 0;
    bool first() const { return index == 0; }
    bool last() const { return index + 1 == count; }
    /// The state as an array of T (null when there is none).
    template <class T> T* carry_as() const { return static_cast<T*>(carry); }
};

/// ABI 1.4: the processes an operator that declared PF_OP_SPLIT (`.flags(PF_OP_SPLIT)`) runs
/// split over (abi.h, pf_collective): this process computes rows [row0, row1) of its outputs.
/// Every call is collective (every process makes the same calls in the same order) and throws
/// Error(PF_ERR_RUNTIME) when the exchange failed. False when the op runs whole.
class Collective {
  public:
    explicit Collective(const pf_collective* c = nullptr) : m_c(c) {}
    explicit operator bool() const { return m_c != nullptr; }
    int rank() const { return m_c->rank; }
    int size() const { return m_c->size; }
    int row0() const { return m_c->row0; }
    int row1() const { return m_c->row1; }
    /// values[0 .. n) summed over the processes, in rank order: the same bits everywhere.
    void sum(double* values, int n) const { reduce(PF_REDUCE_SUM, values, n); }
    void min(double* values, int n) const { reduce(PF_REDUCE_MIN, values, n); }
    void max(double* values, int n) const { reduce(PF_REDUCE_MAX, values, n); }
    /// `first` to rank - 1 and `last` to rank + 1; `above` from rank - 1, `below` from rank + 1
    /// (left as they are where there is no such rank).
    void exchange_rows(const void* first, const void* last, void* above, void* below, std::size_t bytes) const {
        if (m_c->exchange_rows(m_c->self, first, last, above, below, bytes) != PF_OK)
            throw Error("exchanging rows with the neighbouring processes failed", PF_ERR_RUNTIME);
    }

  private:
    void reduce(int op, double* values, int n) const {
        if (m_c->allreduce_f64(m_c->self, op, values, n) != PF_OK)
            throw Error("reducing over the processes failed", PF_ERR_RUNTIME);
    }
    const pf_collective* m_c;
};

/// Memory a node keeps between calls (Context::persistent): `data` on the device of the node's
/// images (the host on the CPU), `state` a host word the operator may use to remember what data
/// holds (0 when data is new and zero).
struct PersistentBlock {
    void* data = nullptr;
    std::uint64_t* state = nullptr;
};

/// What a run function receives besides its parameters: images, the stream, scratch memory,
/// logging, cancellation and metrics.
class Context {
  public:
    Context(const pf_run_args* args, const std::vector<pf_param_desc>& descs)
        : m_args(args), m_params(args->params, descs) {}

    /// Deprecated: the parameters by name (see Params).
    const Params& params() const { return m_params; }
    int n_inputs() const { return m_args->n_inputs; }
    int n_outputs() const { return m_args->n_outputs; }
    ImageView input(int k = 0) const { return ImageView(m_args->inputs[k]); }
    ImageView output(int k = 0) const { return ImageView(m_args->outputs[k]); }
    /// The cudaStream_t to launch on (cast it in the .cu file); null on the CPU.
    void* stream() const { return m_args->stream; }
    /// Which rows of the whole images this call computes (see Strip).
    Strip strip() const {
        Strip s;
        const pf_strip* c =
            m_args->struct_size >= offsetof(pf_run_args, strip) + sizeof(pf_strip*) ? m_args->strip : nullptr;
        if (!c) {
            s.in_height = m_args->n_inputs > 0 ? m_args->inputs[0].height : 0;
            s.out_height = m_args->n_outputs > 0 ? m_args->outputs[0].height : 0;
            return s;
        }
        s.index = c->index;
        s.count = c->count;
        s.in_row0 = c->in_row0;
        s.in_height = c->in_height;
        s.out_row0 = c->out_row0;
        s.out_height = c->out_height;
        s.carry = c->carry;
        s.carry_bytes = c->carry_bytes;
        return s;
    }

    /// ABI 1.4: the processes this call runs split over (an op that declared PF_OP_SPLIT), or
    /// none (false): the op computes its whole outputs.
    Collective collective() const {
        return Collective(m_args->struct_size >= offsetof(pf_run_args, collective) + sizeof(pf_collective*)
                              ? m_args->collective
                              : nullptr);
    }

    /// Scratch memory next to the outputs (host or device), freed by the host after the run.
    void* alloc(std::size_t bytes) const {
        void* p = m_args->host->alloc(m_args->host->self, device_of_images(), bytes);
        if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes of scratch", PF_ERR_RUNTIME);
        return p;
    }
    template <class T> T* alloc(std::size_t count) const { return static_cast<T*>(alloc(count * sizeof(T))); }
    /// ABI 1.6: memory this node keeps from one call to the next (pf_host.persistent): `bytes`
    /// bytes where alloc's would be, and a host word beside it, as this node's last call with
    /// the same bytes left them (all zero when new, or after a call that failed). Throws Error:
    /// PF_ERR_RUNTIME when out of memory or refused (other bytes than before in this call), and
    /// PF_ERR_UNSUPPORTED on a host without it (ABI 1.5 or older).
    PersistentBlock persistent(std::size_t bytes) const {
        const pf_host* h = m_args->host;
        if (h->struct_size < offsetof(pf_host, persistent) + sizeof(h->persistent) || !h->persistent)
            throw Error("this host keeps no memory between calls (pf_host.persistent needs ABI 1.6)",
                        PF_ERR_UNSUPPORTED);
        PersistentBlock b;
        const int32_t status = h->persistent(h->self, device_of_images(), bytes, &b.data, &b.state);
        if (status != PF_OK) // refused or out of memory: not the user's fault either way
            throw Error("no memory kept between calls: " + std::to_string(bytes) + " bytes " +
                            (status == PF_ERR_INVALID ? "refused by the host (other bytes than before in this call?)"
                                                      : "(out of memory)"),
                        PF_ERR_RUNTIME);
        return b;
    }
    void log(int level, const std::string& msg) const { m_args->host->log(m_args->host->self, level, msg.c_str()); }
    void info(const std::string& msg) const { log(1, msg); }
    void warn(const std::string& msg) const { log(2, msg); }
    bool cancelled() const { return m_args->host->cancelled(m_args->host->self) != 0; }
    /// Records a named number in the run report.
    void metric(const std::string& key, double value) const {
        m_args->host->metric(m_args->host->self, key.c_str(), value);
    }
    /// Throws Error(PF_ERR_CANCELLED) once the run has been cancelled.
    void throw_if_cancelled(const char* op) const {
        if (cancelled()) throw Error(std::string(op) + ": cancelled", PF_ERR_CANCELLED);
    }

  private:
    /// Where alloc and persistent take memory: the outputs' device, else the inputs'.
    int32_t device_of_images() const {
        return m_args->n_outputs > 0  ? m_args->outputs[0].device
               : m_args->n_inputs > 0 ? m_args->inputs[0].device
                                      : PF_HOST;
    }
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

// What an operator class declares.
template <class T>
concept HasParams = requires {
    typename T::Params;
};
template <class T>
concept TypedRunCpu = requires(Context& c, const typename T::Params& p) {
    T::run_cpu(c, p);
};
template <class T>
concept PlainRunCpu = requires(Context& c) {
    T::run_cpu(c);
};
template <class T>
concept TypedRunCuda = requires(Context& c, const typename T::Params& p) {
    T::run_cuda(c, p);
};
template <class T>
concept PlainRunCuda = requires(Context& c) {
    T::run_cuda(c);
};
template <class T>
concept TypedInfer = requires(const typename T::Params& p, const Shapes& i, Shapes& o) {
    T::infer(p, i, o);
};
template <class T>
concept NamedInfer = requires(const pixflow::Params& p, const Shapes& i, Shapes& o) {
    T::infer(p, i, o);
};
template <class T>
concept ShapeInfer = requires(const Shapes& i, Shapes& o) {
    T::infer(i, o);
};
template <class T>
concept TypedCarry = requires(const typename T::Params& p, const Shapes& i, const Shapes& o) {
    { T::carry_bytes(p, i, o) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept ShapeCarry = requires(const Shapes& i, const Shapes& o) {
    { T::carry_bytes(i, o) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept TypedWholeReason = requires(const typename T::Params& p, const Shapes& i, const Shapes& o) {
    { T::whole_reason(p, i, o) } -> std::convertible_to<std::string>;
};

template <class T>
concept TypedCpuScratch = requires(const typename T::Params& p, const Shapes& i, const Shapes& o) {
    { T::cpu_scratch_bytes(p, i, o) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept ShapeCpuScratch = requires(const Shapes& i, const Shapes& o) {
    { T::cpu_scratch_bytes(i, o) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept TypedCudaScratch = requires(const typename T::Params& p, const Shapes& i, const Shapes& o) {
    { T::cuda_scratch_bytes(p, i, o) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept ShapeCudaScratch = requires(const Shapes& i, const Shapes& o) {
    { T::cuda_scratch_bytes(i, o) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept DeclaresScratch = TypedCpuScratch<T> || ShapeCpuScratch<T> || TypedCudaScratch<T> || ShapeCudaScratch<T>;

/// The operator's parameter struct, filled from the host's values.
template <class T> typename T::Params params_of(const pf_value* values, int n) {
    return schema_of<T>().template read<typename T::Params>(values, n);
}

template <class T> void default_infer(const Shapes& in, Shapes& out) {
    const Schema& s = schema_of<T>();
    for (std::size_t k = 0; k < out.size(); ++k) {
        out[k] = in[0]; // operators without inputs define infer (checked at load)
        std::uint32_t mask = s.outputs()[k].dtypes;
        if (mask && (mask & (mask - 1)) == 0) // exactly one dtype declared
            for (int d = PF_U8; d <= PF_F64; ++d)
                if (mask == PF_DTYPE_BIT(d)) out[k].dtype = DType(d);
    }
}

template <class T>
int32_t infer_thunk(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                    pf_image* outputs, int32_t n_outputs, char* err, std::size_t n) {
    return guarded(err, n, [&] {
        const Schema& s = schema_of<T>();
        Shapes in;
        Shapes out(static_cast<std::size_t>(n_outputs));
        for (int k = 0; k < n_inputs; ++k) in.emplace_back(inputs[k]);
        if constexpr (TypedInfer<T>)
            T::infer(params_of<T>(params, n_params), in, out);
        else if constexpr (NamedInfer<T>)
            T::infer(Params(params, s.params()), in, out);
        else if constexpr (ShapeInfer<T>)
            T::infer(in, out);
        else
            default_infer<T>(in, out);
        for (int k = 0; k < n_outputs; ++k) {
            out[std::size_t(k)].data = nullptr;
            outputs[k] = out[std::size_t(k)].to_c();
        }
    });
}

/// carry_bytes of a carried operator T; 0 when it throws (the host then refuses the strips).
template <class T>
std::size_t carry_thunk(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                        const pf_image* outputs, int32_t n_outputs) noexcept {
    try {
        Shapes in, out;
        for (int k = 0; k < n_inputs; ++k) in.emplace_back(inputs[k]);
        for (int k = 0; k < n_outputs; ++k) out.emplace_back(outputs[k]);
        if constexpr (TypedCarry<T>)
            return std::size_t(T::carry_bytes(params_of<T>(params, n_params), in, out));
        else if constexpr (ShapeCarry<T>)
            return std::size_t(T::carry_bytes(in, out));
        else
            return 0;
    } catch (...) { return 0; }
}

/// The scratch estimate of operator T (abi.h, pf_scratch_bytes_fn): cpu_scratch_bytes on the host
/// for run_cpu, cuda_scratch_bytes on the device for run_cuda (ctx.alloc takes memory where the
/// images are); 0 for the one it does not define, and both 0 when it throws.
template <class T>
void scratch_thunk(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                   const pf_image* outputs, int32_t n_outputs, int32_t cuda, size_t* host_bytes,
                   size_t* device_bytes) noexcept {
    std::size_t host = 0, device = 0;
    try {
        Shapes in, out;
        for (int k = 0; k < n_inputs; ++k) in.emplace_back(inputs[k]);
        for (int k = 0; k < n_outputs; ++k) out.emplace_back(outputs[k]);
        if (cuda) {
            if constexpr (TypedCudaScratch<T>)
                device = std::size_t(T::cuda_scratch_bytes(params_of<T>(params, n_params), in, out));
            else if constexpr (ShapeCudaScratch<T>)
                device = std::size_t(T::cuda_scratch_bytes(in, out));
        } else {
            if constexpr (TypedCpuScratch<T>)
                host = std::size_t(T::cpu_scratch_bytes(params_of<T>(params, n_params), in, out));
            else if constexpr (ShapeCpuScratch<T>)
                host = std::size_t(T::cpu_scratch_bytes(in, out));
        }
    } catch (...) { host = device = 0; }
    if (host_bytes) *host_bytes = host;
    if (device_bytes) *device_bytes = device;
}

/// whole_reason of operator T: 0 when the node may run by strips, else 1 and why.
template <class T>
int32_t whole_reason_thunk(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                           const pf_image* outputs, int32_t n_outputs, char* why, std::size_t why_size) noexcept {
    std::string reason;
    try {
        Shapes in, out;
        for (int k = 0; k < n_inputs; ++k) in.emplace_back(inputs[k]);
        for (int k = 0; k < n_outputs; ++k) out.emplace_back(outputs[k]);
        reason = std::string(T::whole_reason(params_of<T>(params, n_params), in, out));
    } catch (const std::exception& e) { reason = std::string("its whole_reason failed: ") + e.what(); } catch (...) {
        reason = "its whole_reason failed";
    }
    if (reason.empty()) return 0;
    write_error(why, why_size, reason.c_str());
    return 1;
}

/// run_cpu (Cuda false) or run_cuda of operator T, with the parameter struct when it takes one.
template <class T, bool Cuda> int32_t run_thunk(const pf_run_args* a) {
    return guarded(a->error, a->error_size, [&] {
        Context ctx(a, schema_of<T>().params());
        if constexpr (Cuda ? TypedRunCuda<T> : TypedRunCpu<T>) {
            const auto p = params_of<T>(a->params, a->n_params);
            if constexpr (Cuda)
                T::run_cuda(ctx, p);
            else
                T::run_cpu(ctx, p);
        } else {
            if constexpr (Cuda)
                T::run_cuda(ctx);
            else
                T::run_cpu(ctx);
        }
    });
}

/// The first mistake in operator T's declaration that the compiler cannot see, or "".
template <class T> std::string problem_of() {
    const Schema& s = schema_of<T>();
    std::string p = s.problem();
    if (p.empty()) {
        if constexpr (HasParams<T>)
            p = s.template binds_every_field_of<typename T::Params>();
        else if (s.typed())
            p = "its schema binds struct fields but the class has no Params type; add "
                "`using Params = <the struct>;`";
    }
    if (p.empty() && s.inputs().empty() && !(TypedInfer<T> || NamedInfer<T> || ShapeInfer<T>))
        p = "it has no inputs, so it must define infer to give its outputs' shapes";
    const bool carries = s.access_pattern().kind == PF_ACCESS_CARRIED;
    if (p.empty() && carries != (TypedCarry<T> || ShapeCarry<T>))
        p = carries ? "its access is carried() but it defines no static carry_bytes(const Params&, const "
                      "Shapes& in, const Shapes& out) giving the size of its state"
                    : "it defines carry_bytes but its access is not carried(); declare .access(pixflow::carried())";
    if (p.empty() && TypedWholeReason<T> && s.access_pattern().kind == PF_ACCESS_WHOLE)
        p = "it defines whole_reason but declares no strip access; declare .access(...)";
    if (p.empty() && s.inputs().empty() &&
        (s.access_pattern().kind == PF_ACCESS_STENCIL || s.access_pattern().kind == PF_ACCESS_BLOCKS))
        p = "a source's access is pointwise() (any band of rows on its own), carried() (its rows in order, "
            "as a file read from the start) or whole_image()";
    return p.empty() ? p : "operator '" + std::string(s.name()) + "': " + p;
}

template <class T> pf_op_desc make_op() {
    static_assert(TypedRunCpu<T> || PlainRunCpu<T>,
                  "an operator needs static void run_cpu(pixflow::Context&, const Params&) (or "
                  "run_cpu(pixflow::Context&) when it has no parameters)");
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
    d.run_cpu = &run_thunk<T, false>;
    if constexpr (TypedRunCuda<T> || PlainRunCuda<T>)
        d.run_cuda = &run_thunk<T, true>;
    else
        d.run_cuda = nullptr;
    return d;
}

template <class T> void add_access(std::vector<pf_access_desc>& out) {
    const Schema& s = schema_of<T>();
    const Access& a = s.access_pattern();
    if (a.kind == PF_ACCESS_WHOLE) return;
    pf_carry_bytes_fn carry = nullptr;
    if constexpr (TypedCarry<T> || ShapeCarry<T>) carry = &carry_thunk<T>;
    pf_whole_reason_fn whole = nullptr;
    if constexpr (TypedWholeReason<T>) whole = &whole_reason_thunk<T>;
    out.push_back({sizeof(pf_access_desc), s.name(), int32_t(a.kind), int32_t(a.halo), int32_t(a.in_rows),
                   int32_t(a.out_rows), carry, whole});
}

template <class T> void add_scratch(std::vector<pf_scratch_desc>& out) {
    if constexpr (DeclaresScratch<T>)
        out.push_back({sizeof(pf_scratch_desc), schema_of<T>().name(), &scratch_thunk<T>});
}

template <class T> void add_fusion(std::vector<pf_fusion_desc>& out) {
    if constexpr (requires { T::fusion(); }) {
        static const Fusion f = T::fusion();
        out.push_back(f.to_c(schema_of<T>().name()));
    }
}

/// The parameter `name` of operator `op` among `ops`, or null (also when op is not among them).
inline const pf_param_desc* find_param(const pf_op_desc* ops, std::size_t n, const char* op, const char* name,
                                       bool* op_found) {
    *op_found = false;
    for (std::size_t k = 0; k < n; ++k) {
        if (!op || std::string_view(ops[k].name) != op) continue;
        *op_found = true;
        for (int j = 0; j < ops[k].n_params; ++j)
            if (name && std::string_view(ops[k].params[j].name) == name) return &ops[k].params[j];
    }
    return nullptr;
}

/// The first fusion whose binds or constraints name a parameter that the chain's operators of
/// this plugin lack, or bind one of another type, or "".
inline std::string fusion_problem(const pf_op_desc* ops, std::size_t n_ops, const pf_fusion_desc& f) {
    bool found = false;
    const std::string where = "fusion '" + std::string(f.fused_op) + "'";
    auto chain_param = [&](int node, const char* name, std::string& problem) -> const pf_param_desc* {
        if (node < 0 || node >= f.n_chain) {
            problem = where + " names chain node " + std::to_string(node) + " of " + std::to_string(f.n_chain);
            return nullptr;
        }
        const pf_param_desc* p = find_param(ops, n_ops, f.chain[node], name, &found);
        if (found && !p)
            problem = where + ": operator '" + f.chain[node] + "' has no parameter '" + (name ? name : "") + "'";
        return p;
    };
    std::string problem;
    for (int k = 0; k < f.n_binds && problem.empty(); ++k) {
        const pf_fusion_bind& b = f.binds[k];
        const pf_param_desc* mine = find_param(ops, n_ops, f.fused_op, b.fused_param, &found);
        if (!mine) return where + " binds '" + (b.fused_param ? b.fused_param : "") + "', which it does not declare";
        const pf_param_desc* theirs = chain_param(b.node, b.param, problem);
        if (theirs && theirs->type != mine->type)
            problem = where + ": '" + b.fused_param + "' and '" + f.chain[b.node] + "." + b.param + "' differ in type";
    }
    for (int k = 0; k < f.n_same && problem.empty(); ++k) {
        const pf_param_desc* a = chain_param(f.same[k].node_a, f.same[k].param_a, problem);
        const pf_param_desc* b = problem.empty() ? chain_param(f.same[k].node_b, f.same[k].param_b, problem) : nullptr;
        if (a && b && a->type != b->type)
            problem = where + ": its `same` constraint compares parameters of different types";
    }
    return problem;
}

/// The error that made the plugin unusable, for its init function.
template <class... Ts> std::string& load_error() {
    static std::string e;
    return e;
}
template <class... Ts> int32_t report_load_error(char* err, std::size_t n) {
    write_error(err, n, load_error<Ts...>().c_str());
    return PF_ERR_RUNTIME;
}

/// The plugin's descriptor, built once. A mistake in a declaration (problem_of, fusion_problem)
/// or an exception from a schema() leaves no operators and an init that reports it, so the
/// host rejects the plugin with that message when it loads it.
template <class... Ts> struct Plugin {
    std::array<pf_op_desc, sizeof...(Ts)> ops{};
    std::vector<pf_fusion_desc> fusions;
    std::vector<pf_access_desc> access;
    std::vector<pf_scratch_desc> scratch;
    pf_plugin_desc desc{};

    Plugin(const char* name, const char* version) noexcept {
        desc.struct_size = sizeof(pf_plugin_desc);
        desc.abi_major = PIXFLOW_ABI_MAJOR;
        desc.abi_minor = PIXFLOW_ABI_MINOR;
        desc.name = name;
        desc.version = version;
        try {
            std::string problem;
            ((problem.empty() ? void(problem = problem_of<Ts>()) : void()), ...);
            if (problem.empty()) {
                ops = {make_op<Ts>()...};
                (add_fusion<Ts>(fusions), ...);
                (add_access<Ts>(access), ...);
                (add_scratch<Ts>(scratch), ...);
                for (const pf_fusion_desc& f : fusions)
                    if (problem.empty()) problem = fusion_problem(ops.data(), ops.size(), f);
            }
            if (problem.empty()) {
                desc.ops = ops.data();
                desc.n_ops = int32_t(ops.size());
                desc.fusions = fusions.data();
                desc.n_fusions = int32_t(fusions.size());
                desc.access = access.data();
                desc.n_access = int32_t(access.size());
                desc.scratch = scratch.data();
                desc.n_scratch = int32_t(scratch.size());
                return;
            }
            load_error<Ts...>() = std::move(problem);
        } catch (const std::exception& e) { load_error<Ts...>() = e.what(); } catch (...) {
            load_error<Ts...>() = "unknown exception while declaring the operators";
        }
        fusions.clear();
        access.clear();
        scratch.clear();
        desc.ops = nullptr;
        desc.n_ops = 0;
        desc.init = &report_load_error<Ts...>;
    }
};

} // namespace detail
} // namespace pixflow

/// Defines the plugin's entry point: PIXFLOW_PLUGIN("name", "1.2.0", OpA, OpB, ...).
/// The ABI version recorded is the one of the SDK headers the plugin was compiled against.
#define PIXFLOW_PLUGIN(NAME, VERSION, ...)                                                                             \
    extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {                                       \
        static const ::pixflow::detail::Plugin<__VA_ARGS__> plugin(NAME, VERSION);                                     \
        return &plugin.desc;                                                                                           \
    }
