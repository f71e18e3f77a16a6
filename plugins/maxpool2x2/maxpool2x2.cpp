// maxpool2x2.cpp: the maxpool2x2 operator: schema, shape inference, and adapters from the
// context to the kernels in kernels/maxpool2x2.hpp. No parameters.
#include "kernels/maxpool2x2.hpp"

#include <pixflow/operator.hpp>

#include <string>

namespace pixflow::maxpool2x2 {

struct Maxpool2x2 {
    static Schema schema() {
        return Schema("maxpool2x2", "2x2 max pooling, stride 2, per channel; output floor(W/2) x floor(H/2) (an odd "
                                    "last row or column is dropped); a NaN in a window gives NaN")
            .access(blocks(2, 1))
            .input("in", all_dtypes(), channels(1, 4), "at least 2x2 pixels")
            .output("out", all_dtypes(), channels(1, 4),
                    "half the size, same dtype and channels; each sample is one of its window's, "
                    "bit for bit");
    }

    static void infer(const Shapes& in, Shapes& out) {
        check_size(in[0]);
        out[0] = in[0];
        out[0].width = in[0].width / 2;
        out[0].height = in[0].height / 2;
    }

    static void run_cpu(Context& ctx) { maxpool2x2_cpu(ctx.input(), ctx.output()); }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) { maxpool2x2_cuda(ctx.input(), ctx.output(), ctx.stream()); }
#endif
};

} // namespace pixflow::maxpool2x2

PIXFLOW_PLUGIN("maxpool2x2", "1.0.0", pixflow::maxpool2x2::Maxpool2x2)
