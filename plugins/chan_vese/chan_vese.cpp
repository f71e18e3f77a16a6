// chan_vese.cpp: the chan_vese operator: its schema, whose parameters are the fields of the
// kernels' Settings, and the thin adapters over kernels/.
#include "kernels/chan_vese.hpp"

#include <pixflow/operator.hpp>

#include <algorithm>

namespace pixflow::chan_vese {

struct ChanVese {
    using Params = Settings;

    static Schema schema() {
        return Schema("chan_vese",
                      "Chan-Vese level-set segmentation, the scheme of scikit-image's "
                      "segmentation.chan_vese; the run report records the iterations done and the "
                      "final RMS change of phi")
            .access(whole_image()) // every iteration reads the whole level set
            // ... but can run split over processes (mpirun), a band of rows each: per iteration
            // a halo row each way and one sum over the bands (kernels/chan_vese_split.cpp)
            .flags(PF_OP_SPLIT)
            .input("in", dtypes({DType::u8, DType::u16, DType::f32}), channels(1, 1),
                   "one channel (use grayscale first for colour), normalised to [0, 1]: minus the "
                   "minimum, divided by the maximum unless it is 0")
            .output("mask", dtypes({DType::u8}), channels(1, 1), "255 where phi > 0, else 0")
            .output("phi", dtypes({DType::f32}), channels(1, 1), "the final level set")
            .param(&Params::mu, "mu", range(0.0, 1e6), "edge length weight: higher gives rounder edges")
            .param(&Params::lambda1, "lambda1", range(0.0, 1e6), "weight of the difference from the mean inside")
            .param(&Params::lambda2, "lambda2", range(0.0, 1e6), "weight of the difference from the mean outside")
            .param(&Params::tol, "tol", range(0.0, 1e6),
                   "stop once the RMS change of phi in an iteration is <= tol (0: run max_iter "
                   "iterations unless phi stops changing)")
            .param(&Params::max_iter, "max_iter", range(1, 1000000), "most iterations (at least one runs)")
            .param(&Params::dt, "dt", range(0.0, 1e6), "time step")
            .param(&Params::init, "init",
                   "initial phi: sin(pi*x/5)*sin(pi*y/5); a disk as wide as the shorter side; one "
                   "half as wide (scikit-image's shapes)");
    }

    static void infer(const Params&, const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].dtype = DType::u8;
        out[1] = in[0];
        out[1].dtype = DType::f32;
    }

    /// Scratch of one call, for the planner's memory estimate (split over processes, a band's is
    /// at most the whole image's).
    static std::size_t cpu_scratch_bytes(const Shapes& in, const Shapes&) {
        return std::max(chan_vese::cpu_scratch_bytes(in[0].width, in[0].height),
                        split_scratch_bytes(in[0].width, in[0].height));
    }
#ifdef PIXFLOW_WITH_CUDA
    static std::size_t cuda_scratch_bytes(const Shapes& in, const Shapes&) {
        return chan_vese::cuda_scratch_bytes(in[0]);
    }
#endif

    static void run_cpu(Context& ctx, const Params& p) {
        const ImageView in = ctx.input();
        Outcome o;
        if (const Collective c = ctx.collective()) {
            Band band;
            band.row0 = c.row0(), band.row1 = c.row1();
            band.sum = [&](double* v, int n) { c.sum(v, n); };
            band.min = [&](double* v, int n) { c.min(v, n); };
            band.max = [&](double* v, int n) { c.max(v, n); };
            band.exchange_rows = [&](const void* first, const void* last, void* above, void* below, std::size_t bytes) {
                c.exchange_rows(first, last, above, below, bytes);
            };
            if (!chan_vese_split(in, ctx.output(0), ctx.output(1), p, band,
                                 ctx.alloc(split_scratch_bytes(in.width, band.row1 - band.row0)), o,
                                 [&] { return ctx.cancelled(); }))
                throw Error("chan_vese: cancelled", PF_ERR_CANCELLED);
            report(ctx, o);
            return;
        }
        if (!chan_vese_cpu(in, ctx.output(0), ctx.output(1), p,
                           ctx.alloc(chan_vese::cpu_scratch_bytes(in.width, in.height)), o,
                           [&] { return ctx.cancelled(); }))
            throw Error("chan_vese: cancelled", PF_ERR_CANCELLED);
        report(ctx, o);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params& p) {
        const ImageView in = ctx.input();
        Outcome o;
        chan_vese_cuda(in, ctx.output(0), ctx.output(1), p, ctx.alloc(chan_vese::cuda_scratch_bytes(in)), ctx.stream(),
                       o);
        report(ctx, o);
    }
#endif

  private:
    static void report(const Context& ctx, const Outcome& o) {
        ctx.metric("iterations", o.iterations);
        ctx.metric("rms_change", o.rms_change);
    }
};

} // namespace pixflow::chan_vese

PIXFLOW_PLUGIN("chan_vese", "1.0.0", pixflow::chan_vese::ChanVese)
