// Fake operators for fusion tests: tp_add (+k) then tp_scale (*m), and tp_add_scale, their fused
// implementation ((v + k) * m). `wrap` must match on both nodes for the chain to fuse. tp_add
// and tp_scale claim CUDA implementations; the fused op has none, so a CUDA chain stays unfused.
#include <pixflow/operator.hpp>

using namespace pixflow;

namespace {
template <class F> void per_sample(Context& ctx, F f) {
    ImageView in = ctx.input(0), out = ctx.output(0);
    for (int y = 0; y < in.height; ++y)
        for (std::size_t x = 0; x < in.row_samples(); ++x)
            out.row<std::uint8_t>(y)[x] = std::uint8_t(f(in.row<std::uint8_t>(y)[x]));
}
int apply(int v, bool wrap) { return wrap ? v & 255 : std::min(v, 255); }
} // namespace

struct TpAdd {
    static Schema schema() {
        return Schema("tp_add", "test op: v + k")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_int("k", 1, 0, 255, "addend")
            .param_bool("wrap", false, "wrap instead of saturating");
    }
    static void run_cpu(Context& ctx) {
        int k = int(ctx.params().i("k"));
        bool w = ctx.params().b("wrap");
        per_sample(ctx, [&](int v) { return apply(v + k, w); });
    }
    static void run_cuda(Context&) { throw Error("tp_add has no real CUDA implementation"); }
};

struct TpScale {
    static Schema schema() {
        return Schema("tp_scale", "test op: v * m")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_int("m", 2, 0, 255, "factor")
            .param_bool("wrap", false, "wrap instead of saturating");
    }
    static void run_cpu(Context& ctx) {
        int m = int(ctx.params().i("m"));
        bool w = ctx.params().b("wrap");
        per_sample(ctx, [&](int v) { return apply(v * m, w); });
    }
    static void run_cuda(Context&) { throw Error("tp_scale has no real CUDA implementation"); }
};

struct TpAddScale {
    static Schema schema() {
        return Schema("tp_add_scale", "test op: (v + k) * m in one pass")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_int("k", 1, 0, 255, "addend")
            .param_int("m", 2, 0, 255, "factor")
            .param_bool("wrap", false, "wrap instead of saturating");
    }
    static Fusion fusion() {
        return Fusion({"tp_add", "tp_scale"}).bind("k", 0).bind("m", 1).bind("wrap", 0).same("wrap", 0, 1);
    }
    static void run_cpu(Context& ctx) {
        int k = int(ctx.params().i("k")), m = int(ctx.params().i("m"));
        bool w = ctx.params().b("wrap");
        per_sample(ctx, [&](int v) { return apply(apply(v + k, w) * m, w); });
        ctx.metric("fused", 1);
    }
};

PIXFLOW_PLUGIN("fusion_ops", "0.0.1", TpAdd, TpScale, TpAddScale)
