// gauss5x5.cpp: the gauss5x5 operator: its parameters, its schema and the adapters from them to
// the kernels of kernels/gauss5x5.hpp (CPU in kernels/gauss5x5_cpu.cpp, CUDA in
// kernels/gauss5x5.cu).
#include "kernels/gauss5x5.hpp"

#include <pixflow/operator.hpp>

namespace pixflow::gauss5x5 {

struct Gauss5x5 {
    struct Params {
        double sigma = 1.5;
        Border border = Border::reflect101;
    };

    static Schema schema() {
        constexpr std::uint32_t kDtypes = dtypes({DType::u8, DType::u16, DType::f32});
        return Schema("gauss5x5", "separable 5x5 Gaussian blur; output has the input's size, channels and dtype")
            .access(stencil(2))
            .input("in", kDtypes, channels(1, 4), "image to blur")
            .output("out", kDtypes, channels(1, 4),
                    "blurred image; integers rounded to nearest (ties to even) and saturated")
            .param(&Params::sigma, "sigma", range(0.1, 100.0),
                   "Gaussian standard deviation in pixels; taps exp(-x^2/(2 sigma^2)), x = -2..2, "
                   "normalised to sum 1")
            .param(&Params::border, "border",
                   "pixels beyond the edge: reflect101 (dcb|abcd|cba, as OpenCV), replicate "
                   "(aaa|abcd|ddd) or zero");
    }

    static void run_cpu(Context& ctx, const Params& p) {
        gauss5x5_cpu(ctx.input(), ctx.output(), gauss5x5_taps(p.sigma), p.border);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params& p) {
        gauss5x5_cuda(ctx.input(), ctx.output(), gauss5x5_taps(p.sigma), p.border, ctx.stream());
    }
#endif
};

} // namespace pixflow::gauss5x5

PIXFLOW_PLUGIN("gauss5x5", "1.0.0", pixflow::gauss5x5::Gauss5x5)
