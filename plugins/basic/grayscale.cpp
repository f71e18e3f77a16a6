// grayscale.cpp: the grayscale operator.
#include "kernels/grayscale.hpp"
#include "ops.hpp"

namespace pixflow::basic {

namespace {
constexpr std::uint32_t gray_dtypes = dtypes({DType::u8, DType::u16, DType::f32});
constexpr std::uint32_t gray_in_channels =
    PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4);
} // namespace

Schema Grayscale::schema() {
    Schema s("grayscale", "BT.601 luma 0.299 R + 0.587 G + 0.114 B, one channel out");
    s.input("in", gray_dtypes, gray_in_channels, "RGB, RGBA (alpha ignored) or gray (copied)")
        .output("out", gray_dtypes, channels(1, 1),
                "luma, same dtype; integers rounded to nearest");
    // Returned by name, not as the builder chain's Schema&: a copy would leave the param
    // descriptors pointing at the temporary's strings and choice lists.
    return s;
}

void Grayscale::infer(const Params&, const Shapes& in, Shapes& out) {
    out[0] = in[0];
    out[0].channels = 1;
}

void Grayscale::run_cpu(Context& ctx) { grayscale_cpu(ctx.input(0), ctx.output(0)); }

#ifdef PIXFLOW_WITH_CUDA
void Grayscale::run_cuda(Context& ctx) {
    grayscale_cuda(ctx.input(0), ctx.output(0), ctx.stream());
}
#endif

} // namespace pixflow::basic
