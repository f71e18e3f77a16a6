// gauss5x5.cpp: the gauss5x5 operator: schema and the adapters from a pixflow::Context to the
// kernels of gauss5x5.hpp (CPU in gauss5x5_cpu.cpp, CUDA in gauss5x5.cu).
#include "gauss5x5.hpp"

#include <pixflow/operator.hpp>

#include <string>
#include <string_view>

namespace {

using pixflow::gauss5x5::Border;

// The values of the `border` choice, in the order of the Border enum.
constexpr const char* kBorders[] = {"reflect101", "replicate", "zero"};

Border parse_border(std::string_view s) {
    for (int k = 0; k < 3; ++k)
        if (s == kBorders[k]) return Border(k);
    // The host validates choices against the schema; this guards against a host that does not.
    throw pixflow::Error("gauss5x5: border = \"" + std::string(s) +
                         "\" is not one of reflect101, replicate, zero");
}

} // namespace

class Gauss5x5 {
  public:
    static pixflow::Schema schema() {
        using namespace pixflow;
        constexpr std::uint32_t kDtypes = dtypes({DType::u8, DType::u16, DType::f32});
        Schema s("gauss5x5",
                 "separable 5x5 Gaussian blur; output has the input's size, channels and dtype");
        s.input("in", kDtypes, channels(1, 4), "image to blur")
            .output("out", kDtypes, channels(1, 4),
                    "blurred image; integers rounded to nearest (ties to even) and saturated")
            .param_float("sigma", 1.5, 0.1, 100.0,
                         "Gaussian standard deviation in pixels; taps exp(-x^2/(2 sigma^2)), "
                         "x = -2..2, normalised to sum 1")
            .param_choice("border", {kBorders[0], kBorders[1], kBorders[2]}, "reflect101",
                          "pixels beyond the edge: reflect101 (dcb|abcd|cba, as OpenCV), "
                          "replicate (aaa|abcd|ddd) or zero");
        return s;
    }

    static void run_cpu(pixflow::Context& ctx) {
        const Setup s = setup(ctx);
        pixflow::gauss5x5::gauss5x5_cpu(ctx.input(0), ctx.output(0), s.taps, s.border);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(pixflow::Context& ctx) {
        const Setup s = setup(ctx);
        pixflow::gauss5x5::gauss5x5_cuda(ctx.input(0), ctx.output(0), s.taps, s.border,
                                         ctx.stream());
    }
#endif

  private:
    struct Setup {
        std::array<float, 5> taps;
        Border border;
    };
    static Setup setup(const pixflow::Context& ctx) {
        return {pixflow::gauss5x5::gauss5x5_taps(ctx.params().f("sigma")),
                parse_border(ctx.params().s("border"))};
    }
};

PIXFLOW_PLUGIN("gauss5x5", "1.0.0", Gauss5x5)
