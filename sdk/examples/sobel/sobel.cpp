// The sobel operator: its parameters, its schema, declared once, and one run function per backend.
#include "kernels/sobel.hpp"

#include <pixflow/operator.hpp>

struct Sobel {
    struct Params {
        float scale = 0.25f;
    };

    static pixflow::Schema schema() {
        using namespace pixflow;
        return Schema("sobel", "Sobel edge magnitude |Gx| + |Gy| per channel, borders replicated")
            .access(stencil(1)) // output row y reads rows y-1 .. y+1: it can run in strips
            .input("in", dtypes({DType::u8}), channels(1, 4), "image to differentiate")
            .output("out", dtypes({DType::u8}), channels(1, 4), "edge magnitude, saturated")
            .param(&Params::scale, "scale", range(0.0, 16.0), "multiplier applied to |Gx| + |Gy| before saturation");
    }
    static void run_cpu(pixflow::Context& ctx, const Params& p) {
        sobel::sobel_cpu(ctx.input(), ctx.output(), p.scale);
    }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(pixflow::Context& ctx, const Params& p) {
        sobel::sobel_cuda(ctx.input(), ctx.output(), p.scale, ctx.stream());
    }
#endif
};

PIXFLOW_PLUGIN("sobel", "1.0.0", Sobel)
