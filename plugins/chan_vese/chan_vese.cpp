// chan_vese.cpp: the chan_vese operator: schema and the thin adapters over kernels/.
#include "kernels/chan_vese.hpp"

#include <pixflow/operator.hpp>

#include <string_view>

namespace pixflow::chan_vese {
namespace {

Settings settings_of(const Params& p) {
    Settings s;
    s.mu = p.f("mu");
    s.lambda1 = p.f("lambda1");
    s.lambda2 = p.f("lambda2");
    s.tol = p.f("tol");
    s.dt = p.f("dt");
    s.max_iter = int(p.i("max_iter"));
    const std::string_view init = p.s("init");
    s.init = init == "disk" ? Init::disk : init == "small_disk" ? Init::small_disk : Init::checkerboard;
    return s;
}

void report(const Context& ctx, const Outcome& o) {
    ctx.metric("iterations", o.iterations);
    ctx.metric("rms_change", o.rms_change);
}

} // namespace

struct ChanVese {
    static Schema schema() {
        Schema s("chan_vese",
                 "Chan-Vese level-set segmentation, the scheme of scikit-image's "
                 "segmentation.chan_vese; the run report records the iterations done and the "
                 "final RMS change of phi");
        s.input("in", dtypes({DType::u8, DType::u16, DType::f32}), channels(1, 1),
                "one channel (use grayscale first for colour), normalised to [0, 1]: minus the "
                "minimum, divided by the maximum unless it is 0")
            .output("mask", dtypes({DType::u8}), channels(1, 1), "255 where phi > 0, else 0")
            .output("phi", dtypes({DType::f32}), channels(1, 1), "the final level set")
            .param_float("mu", 0.25, 0.0, 1e6, "edge length weight: higher gives rounder edges")
            .param_float("lambda1", 1.0, 0.0, 1e6, "weight of the difference from the mean inside")
            .param_float("lambda2", 1.0, 0.0, 1e6, "weight of the difference from the mean outside")
            .param_float("tol", 1e-3, 0.0, 1e6,
                         "stop once the RMS change of phi in an iteration is <= tol (0: run "
                         "max_iter iterations unless phi stops changing)")
            .param_int("max_iter", 500, 1, 1000000, "most iterations (at least one runs)")
            .param_float("dt", 0.5, 0.0, 1e6, "time step")
            .param_choice("init", {"checkerboard", "disk", "small_disk"}, "checkerboard",
                          "initial phi: sin(pi*x/5)*sin(pi*y/5); a disk as wide as the shorter "
                          "side; one half as wide (scikit-image's shapes)");
        // Returned by name, not as the builder chain's Schema&: a copy would leave the param
        // descriptors pointing at the temporary's strings and choice lists.
        return s;
    }

    static void infer(const Params&, const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].dtype = DType::u8;
        out[1] = in[0];
        out[1].dtype = DType::f32;
    }

    static void run_cpu(Context& ctx) {
        const ImageView in = ctx.input(0);
        Outcome o;
        if (!chan_vese_cpu(in, ctx.output(0), ctx.output(1), settings_of(ctx.params()),
                           ctx.alloc(cpu_scratch_bytes(in.width, in.height)), o,
                           [&] { return ctx.cancelled(); }))
            throw Error("chan_vese: cancelled", PF_ERR_CANCELLED);
        report(ctx, o);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) {
        const ImageView in = ctx.input(0);
        Outcome o;
        chan_vese_cuda(in, ctx.output(0), ctx.output(1), settings_of(ctx.params()),
                       ctx.alloc(cuda_scratch_bytes(in)), ctx.stream(), o);
        report(ctx, o);
    }
#endif
};

} // namespace pixflow::chan_vese

PIXFLOW_PLUGIN("chan_vese", "1.0.0", pixflow::chan_vese::ChanVese)
