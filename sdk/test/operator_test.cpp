// Tests of the SDK's C++ layer on its own, without the host: parameters bound to struct fields
// (descriptors, filled structs, the mistakes that reject a plugin at load), the deprecated string
// accessors, the two kinds of error and the dispatch helpers. The operators here are called
// through the C descriptors PIXFLOW_PLUGIN builds, with hand-made pf_run_args.
#include <pixflow/dispatch.hpp>
#include <pixflow/operator.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace pixflow;

namespace demo {
enum class Mode { clamp, wrap, mirror };
constexpr std::array<const char*, 3> pixflow_choices(Mode) { return {"clamp", "wrap", "mirror"}; }
} // namespace demo

struct Seen {
    double gain = 0;
    demo::Mode mode = demo::Mode::clamp;
    std::string path;
    int count = 0;
    bool invert = false;
    DType dtype = DType::u8;
};
Seen g_seen; // what the last run received (the tests run one at a time)

struct Typed {
    struct Params {
        double gain = 1.5;
        demo::Mode mode = demo::Mode::wrap;
        std::string path = "in.pgm";
        int count = 3;
        bool invert = true;
        DType dtype = DType::f32;
    };
    static Schema schema() {
        return Schema("typed", "test op")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param(&Params::gain, "gain", range(0.0, 4.0), "g")
            .param(&Params::mode, "mode", "m")
            .param(&Params::path, "path", "p", PF_PARAM_INPUT_PATH)
            .param(&Params::count, "count", range(1, 10), "c")
            .param(&Params::invert, "invert", "i")
            .param(&Params::dtype, "dtype", "d");
    }
    static void run_cpu(Context&, const Params& p) { g_seen = {p.gain, p.mode, p.path, p.count, p.invert, p.dtype}; }
};

/// A parameter struct shared through a base, bound with param<Params>.
struct Shared {
    int quality = 75;
};
struct Derived {
    struct Params : Shared {
        bool baseline = true;
    };
    static Schema schema() {
        return Schema("derived", "test op")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param<Params>(&Params::quality, "quality", range(1, 100), "q")
            .param(&Params::baseline, "baseline", "b");
    }
    static void run_cpu(Context&, const Params& p) { g_seen.count = p.quality; }
};

/// Old-style: by name.
struct Named {
    static Schema schema() {
        return Schema("named", "test op")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_bool("invert", false, "i");
    }
    static void run_cpu(Context& ctx) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        (void)ctx.params().i("invert"); // a bool read as an int: must throw
#pragma GCC diagnostic pop
    }
};

// Mistakes the compiler cannot see; each rejects its plugin when loaded.
struct Unbound {
    struct Params {
        int a = 1;
        int b = 2;
    };
    static Schema schema() {
        return Schema("unbound", "x").input("in", 2, 2).output("out", 2, 2).param(&Params::a, "a", range(0, 5), "a");
    }
    static void run_cpu(Context&, const Params&) {}
};
struct Twice {
    struct Params {
        int a = 1;
        int b = 2;
    };
    static Schema schema() {
        return Schema("twice", "x")
            .input("in", 2, 2)
            .output("out", 2, 2)
            .param(&Params::a, "a", range(0, 5), "a")
            .param(&Params::a, "b", range(0, 5), "b");
    }
    static void run_cpu(Context&, const Params&) {}
};
struct OutOfRange {
    struct Params {
        double sigma = 200.0;
    };
    static Schema schema() {
        return Schema("out_of_range", "x")
            .input("in", 2, 2)
            .output("out", 2, 2)
            .param(&Params::sigma, "sigma", range(0.1, 100.0), "s");
    }
    static void run_cpu(Context&, const Params&) {}
};
struct BadFusion {
    static Schema schema() {
        return Schema("bad_fusion", "x").input("in", 2, 2).output("out", 2, 2).param_int("k", 1, 0, 9, "k");
    }
    static Fusion fusion() { return Fusion({"typed", "typed"}).bind("k", 0, "no_such_param"); }
    static void run_cpu(Context&) {}
};

// Access patterns (strips): a stencil, a carried operator with its state's size, and the
// mistakes that reject a plugin.
struct Blur3 {
    static Schema schema() { return Schema("blur3", "x").access(stencil(1)).input("in", 2, 2).output("out", 2, 2); }
    static void run_cpu(Context&) {}
};
Strip g_strip; // what the last run of Summing saw
struct Summing {
    static Schema schema() { return Schema("summing", "x").access(carried()).input("in", 2, 2).output("out", 2, 2); }
    static std::size_t carry_bytes(const Shapes&, const Shapes& out) { return out[0].row_samples() * 8; }
    static void run_cpu(Context& ctx) { g_strip = ctx.strip(); }
};
/// Counts its calls in 8 bytes it keeps between them (ctx.persistent, ABI 1.6).
struct Keeping {
    static Schema schema() { return Schema("keeping", "x").input("in", 2, 2).output("out", 2, 2); }
    static void run_cpu(Context& ctx) {
        const PersistentBlock b = ctx.persistent(8);
        ++*static_cast<std::uint64_t*>(b.data);
        ++*b.state;
    }
};
struct CarriedWithoutState {
    static Schema schema() { return Schema("stateless", "x").access(carried()).input("in", 2, 2).output("out", 2, 2); }
    static void run_cpu(Context&) {}
};
struct StateWithoutCarried {
    static Schema schema() { return Schema("stray_state", "x").input("in", 2, 2).output("out", 2, 2); }
    static std::size_t carry_bytes(const Shapes&, const Shapes&) { return 1; }
    static void run_cpu(Context&) {}
};
struct NoHalo {
    static Schema schema() { return Schema("no_halo", "x").access(stencil(0)).input("in", 2, 2).output("out", 2, 2); }
    static void run_cpu(Context&) {}
};

// The entry point of this test file's "plugin"; the rejected ones are built below one by one.
PIXFLOW_PLUGIN("sdk_test", "0.0.1", Typed, Derived, Named)

const pf_op_desc& op(const char* name) {
    const pf_plugin_desc* d = pixflow_plugin_entry();
    for (int k = 0; k < d->n_ops; ++k)
        if (std::string(d->ops[k].name) == name) return d->ops[k];
    throw std::runtime_error(std::string("no op ") + name);
}

/// Runs op's run_cpu with its defaults (values as the host would pass them), changed by `edit`.
template <class Edit> int32_t run_with_defaults(const pf_op_desc& o, Edit&& edit, std::string* error = nullptr) {
    std::vector<pf_value> values(std::size_t(o.n_params));
    for (int k = 0; k < o.n_params; ++k) {
        values[std::size_t(k)] = o.params[k].default_value;
        values[std::size_t(k)].type = o.params[k].type;
    }
    edit(values);
    pf_host host{};
    char err[512] = {0};
    pf_run_args a{};
    a.struct_size = sizeof a;
    a.params = values.data();
    a.n_params = o.n_params;
    a.host = &host;
    a.error = err;
    a.error_size = sizeof err;
    const int32_t s = o.run_cpu(&a);
    if (error) *error = err;
    return s;
}

/// The arguments of a call with `im` as its one input and one output, `host`'s callbacks and the
/// error buffer `err`.
pf_run_args one_image_args(pf_image& im, const pf_host& host, char* err, std::size_t err_size) {
    pf_run_args a{};
    a.struct_size = sizeof a;
    a.inputs = &im;
    a.n_inputs = 1;
    a.outputs = &im;
    a.n_outputs = 1;
    a.host = &host;
    a.error = err;
    a.error_size = err_size;
    return a;
}

template <class... Ts> std::string load_error() {
    detail::Plugin<Ts...> p("p", "1");
    if (!p.desc.init) return "";
    EXPECT_EQ(p.desc.n_ops, 0);
    char err[512] = {0};
    EXPECT_NE(p.desc.init(err, sizeof err), PF_OK);
    return err;
}

} // namespace

TEST(TypedParams, DescriptorsComeFromTheFieldsAndTheirInitializers) {
    const pf_op_desc& o = op("typed");
    ASSERT_EQ(o.n_params, 6);
    EXPECT_EQ(o.params[0].type, PF_PARAM_FLOAT);
    EXPECT_EQ(o.params[0].default_value.f, 1.5);
    EXPECT_EQ(o.params[0].min, 0.0);
    EXPECT_EQ(o.params[0].max, 4.0);
    EXPECT_EQ(o.params[1].type, PF_PARAM_CHOICE);
    ASSERT_EQ(o.params[1].n_choices, 3);
    EXPECT_STREQ(o.params[1].choices[2], "mirror");
    EXPECT_STREQ(o.params[1].default_value.s, "wrap");
    EXPECT_EQ(o.params[2].type, PF_PARAM_STRING);
    EXPECT_EQ(o.params[2].flags, PF_PARAM_INPUT_PATH);
    EXPECT_STREQ(o.params[2].default_value.s, "in.pgm");
    EXPECT_EQ(o.params[3].type, PF_PARAM_INT);
    EXPECT_EQ(o.params[3].default_value.i, 3);
    EXPECT_EQ(o.params[4].type, PF_PARAM_BOOL);
    EXPECT_EQ(o.params[4].default_value.b, 1);
    EXPECT_EQ(o.params[5].type, PF_PARAM_CHOICE);
    ASSERT_EQ(o.params[5].n_choices, 8);
    EXPECT_STREQ(o.params[5].default_value.s, "f32");
}

TEST(TypedParams, TheRunFunctionReceivesTheFilledStruct) {
    ASSERT_EQ(run_with_defaults(op("typed"),
                                [](std::vector<pf_value>& v) {
                                    v[0].f = 2.25;
                                    v[1].s = "mirror";
                                    v[2].s = "x.npy";
                                    v[3].i = 7;
                                    v[4].b = 0;
                                    v[5].s = "u16";
                                }),
              PF_OK);
    EXPECT_EQ(g_seen.gain, 2.25);
    EXPECT_EQ(g_seen.mode, demo::Mode::mirror);
    EXPECT_EQ(g_seen.path, "x.npy");
    EXPECT_EQ(g_seen.count, 7);
    EXPECT_FALSE(g_seen.invert);
    EXPECT_EQ(g_seen.dtype, DType::u16);
}

TEST(TypedParams, AFieldOfABaseIsBoundThroughTheDerivedStruct) {
    const pf_op_desc& o = op("derived");
    ASSERT_EQ(o.n_params, 2);
    EXPECT_EQ(o.params[0].default_value.i, 75);
    ASSERT_EQ(run_with_defaults(o, [](std::vector<pf_value>& v) { v[0].i = 42; }), PF_OK);
    EXPECT_EQ(g_seen.count, 42);
}

TEST(TypedParams, AChoiceTheHostDidNotCheckIsAUserError) {
    std::string error;
    EXPECT_EQ(run_with_defaults(
                  op("typed"), [](std::vector<pf_value>& v) { v[1].s = "bounce"; }, &error),
              PF_ERR_INVALID);
    EXPECT_EQ(error, "typed: mode = \"bounce\" is not one of clamp, wrap, mirror");
}

TEST(TypedParams, MistakesInTheDeclarationRejectThePluginWhenLoaded) {
    EXPECT_EQ((load_error<Typed, Derived, Named>()), "");
    EXPECT_EQ(load_error<Unbound>(),
              "operator 'unbound': its Params has 2 fields and the schema binds 1; bind every field exactly once");
    EXPECT_EQ(load_error<Twice>(), "operator 'twice': parameter 'b' binds the same field as 'a'");
    EXPECT_EQ(load_error<OutOfRange>(),
              "operator 'out_of_range': parameter 'sigma': its default lies outside its range");
    EXPECT_EQ((load_error<Typed, BadFusion>()),
              "fusion 'bad_fusion': operator 'typed' has no parameter 'no_such_param'");
}

TEST(Access, OneSchemaLineDeclaresHowAnOperatorReadsRows) {
    detail::Plugin<Blur3, Summing> p("p", "1");
    ASSERT_EQ(p.desc.init, nullptr);
    ASSERT_EQ(p.desc.n_access, 2);
    EXPECT_STREQ(p.desc.access[0].op, "blur3");
    EXPECT_EQ(p.desc.access[0].kind, PF_ACCESS_STENCIL);
    EXPECT_EQ(p.desc.access[0].halo, 1);
    EXPECT_EQ(p.desc.access[0].carry_bytes, nullptr);
    EXPECT_EQ(p.desc.access[1].kind, PF_ACCESS_CARRIED);
    ASSERT_NE(p.desc.access[1].carry_bytes, nullptr);
    pf_image shape{sizeof(pf_image), 10, 4, 3, PF_U8, PF_HOST, 0, nullptr};
    EXPECT_EQ(p.desc.access[1].carry_bytes(nullptr, 0, &shape, 1, &shape, 1), 10u * 3 * 8);
}

TEST(Access, ContextStripIsTheWholeImageUnlessTheHostGivesAStrip) {
    detail::Plugin<Summing> p("p", "1");
    pf_image im{sizeof(pf_image), 5, 7, 1, PF_U8, PF_HOST, 5, nullptr};
    pf_host host{};
    char err[64] = {0};
    pf_run_args a = one_image_args(im, host, err, sizeof err);
    ASSERT_EQ(p.desc.ops[0].run_cpu(&a), PF_OK);
    EXPECT_EQ(g_strip.count, 1);
    EXPECT_EQ(g_strip.out_height, 7);
    EXPECT_EQ(g_strip.carry, nullptr);
    unsigned char state[8] = {};
    pf_strip strip{sizeof(pf_strip), 2, 5, 14, 40, 14, 40, state, sizeof state};
    a.strip = &strip;
    ASSERT_EQ(p.desc.ops[0].run_cpu(&a), PF_OK);
    EXPECT_EQ(g_strip.index, 2);
    EXPECT_FALSE(g_strip.first());
    EXPECT_EQ(g_strip.out_row0, 14);
    EXPECT_EQ(g_strip.in_height, 40);
    EXPECT_EQ(g_strip.carry_as<unsigned char>(), state);
    a.struct_size = offsetof(pf_run_args, strip); // a host of ABI 1.1 has no strip field
    ASSERT_EQ(p.desc.ops[0].run_cpu(&a), PF_OK);
    EXPECT_EQ(g_strip.count, 1);
}

namespace {
struct FakeKeeper {
    std::uint64_t data = 0, state = 0;
    int32_t status = PF_OK;
    std::size_t asked = 0;
    static int32_t persistent(void* self, int32_t device, size_t bytes, void** data, uint64_t** state) {
        auto* k = static_cast<FakeKeeper*>(self);
        k->asked = bytes;
        if (k->status != PF_OK) return k->status;
        if (device != PF_HOST) return PF_ERR_INVALID;
        *data = &k->data;
        *state = &k->state;
        return PF_OK;
    }
};
} // namespace

TEST(Persistent, ContextPersistentUsesTheHostsBlockAndSaysWhenItHasNone) {
    detail::Plugin<Keeping> p("p", "1");
    pf_image im{sizeof(pf_image), 5, 7, 1, PF_U8, PF_HOST, 5, nullptr};
    FakeKeeper keeper;
    pf_host host{};
    host.struct_size = sizeof host;
    host.self = &keeper;
    host.persistent = &FakeKeeper::persistent;
    char err[256] = {0};
    pf_run_args a = one_image_args(im, host, err, sizeof err);
    ASSERT_EQ(p.desc.ops[0].run_cpu(&a), PF_OK) << err;
    ASSERT_EQ(p.desc.ops[0].run_cpu(&a), PF_OK) << err;
    EXPECT_EQ(keeper.asked, 8u);
    EXPECT_EQ(keeper.data, 2u);
    EXPECT_EQ(keeper.state, 2u);
    keeper.status = PF_ERR_RUNTIME; // out of memory
    EXPECT_EQ(p.desc.ops[0].run_cpu(&a), PF_ERR_RUNTIME);
    EXPECT_EQ(std::string(err), "no memory kept between calls: 8 bytes (out of memory)");
    host.struct_size = offsetof(pf_host, persistent); // a host of ABI 1.5 has no persistent
    EXPECT_EQ(p.desc.ops[0].run_cpu(&a), PF_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(err), "this host keeps no memory between calls (pf_host.persistent needs ABI 1.6)");
    EXPECT_EQ(keeper.data, 2u);
}

TEST(Access, MistakesInTheDeclarationRejectThePluginWhenLoaded) {
    EXPECT_EQ(load_error<CarriedWithoutState>(),
              "operator 'stateless': its access is carried() but it defines no static carry_bytes(const Params&, "
              "const Shapes& in, const Shapes& out) giving the size of its state");
    EXPECT_EQ(load_error<StateWithoutCarried>(),
              "operator 'stray_state': it defines carry_bytes but its access is not carried(); declare "
              ".access(pixflow::carried())");
    EXPECT_EQ(
        load_error<NoHalo>(),
        "operator 'no_halo': its access pattern is out of range (a stencil's halo and a block's rows are 1 to 4096)");
}

TEST(DeprecatedAccessors, ThrowAnInternalErrorOnATypeMismatch) {
    std::string error;
    EXPECT_EQ(run_with_defaults(
                  op("named"), [](std::vector<pf_value>&) {}, &error),
              PF_ERR_RUNTIME);
    EXPECT_NE(error.find("parameter 'invert' is declared bool; Params::i does not read a bool (internal error at "),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("operator_test.cpp:"), std::string::npos) << error; // the caller's line
}

TEST(Errors, UserAndInternalErrorsCarryTheirStatuses) {
    EXPECT_EQ(UserError("x").status(), PF_ERR_INVALID);
    EXPECT_EQ(UserError("x", PF_ERR_UNSUPPORTED).status(), PF_ERR_UNSUPPORTED);
    EXPECT_EQ(UserError("x", PF_ERR_RUNTIME).status(), PF_ERR_INVALID); // a user error blames the user
    EXPECT_TRUE(UserError("x").is_user_error());
    const InternalError e("broken", "/home/me/src/pixflow/plugins/io/kernels/codecs.cpp", 12);
    EXPECT_EQ(e.status(), PF_ERR_RUNTIME);
    EXPECT_FALSE(e.is_user_error());
    EXPECT_STREQ(e.what(), "broken (internal error at plugins/io/kernels/codecs.cpp:12)");
    try {
        PIXFLOW_INTERNAL_CHECK(1 + 1 == 3, "arithmetic");
        ADD_FAILURE();
    } catch (const InternalError& x) {
        EXPECT_NE(std::string(x.what()).find("arithmetic (internal error at "), std::string::npos);
    }
    EXPECT_THROW(PIXFLOW_USER_CHECK(false, "no"), UserError);
}

TEST(Dispatch, VisitsTheListedDtypesAndChannelCountsAndRefusesOthers) {
    int size = 0;
    visit_dtype<DType::u8, DType::f32>("op", DType::f32, [&](auto tag) { size = int(sizeof(tag)); });
    EXPECT_EQ(size, 4);
    const int thirty = visit_channels<1, 3, 4>("op", 3, [](auto c) { return decltype(c)::value * 10; });
    EXPECT_EQ(thirty, 30);
    try {
        visit_dtype<DType::u8, DType::f32>("op", DType::i16, [](auto) {});
        ADD_FAILURE();
    } catch (const UserError& e) {
        EXPECT_EQ(e.status(), PF_ERR_UNSUPPORTED);
        EXPECT_STREQ(e.what(), "op: dtype i16 is not supported; accepted: u8, f32");
    }
    EXPECT_THROW(visit_channels("op", 5, [](auto) {}), UserError);
}
