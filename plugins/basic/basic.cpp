// basic.cpp: the basic plugin's operators, synth, convert and grayscale: their parameters,
// schemas and the adapters to the kernels of kernels/ (synth.hpp, convert.hpp, grayscale.hpp).
#include "kernels/convert.hpp"
#include "kernels/grayscale.hpp"
#include "kernels/synth.hpp"

#include <pixflow/operator.hpp>

namespace pixflow::basic {

/// Deterministic test images (kernels/synth.hpp). A source; CPU only.
struct Synth {
    struct Params {
        Pattern pattern = Pattern::noise;
        int width = 512;
        int height = 512;
        int channels = 3;
        DType dtype = DType::u8;
        int seed = 1;
    };

    static Schema schema() {
        return Schema("synth", "deterministic test image: noise, gradient, checker or shapes")
            .flags(PF_OP_SOURCE)
            .access(pointwise())
            .output("out", all_dtypes(), pixflow::channels(1, 4))
            .param(&Params::pattern, "pattern",
                   "noise: hashed per sample; gradient: ramps per channel; checker: 32-pixel "
                   "squares; shapes: discs and rectangles on a dark background, mild noise")
            .param(&Params::width, "width", range(1, 65536), "width in pixels")
            .param(&Params::height, "height", range(1, 65536), "height in pixels")
            .param(&Params::channels, "channels", range(1, 4), "samples per pixel")
            .param(&Params::dtype, "dtype", "sample type; values span 0..max for integers, 0..1 for floats")
            .param(&Params::seed, "seed", range(0, 0x7FFFFFFF), "noise and shape placement; same seed, same image");
    }

    static void infer(const Params& p, const Shapes&, Shapes& out) {
        out[0].width = p.width;
        out[0].height = p.height;
        out[0].channels = p.channels;
        out[0].dtype = p.dtype;
    }

    static void run_cpu(Context& ctx, const Params& p) {
        const Strip s = ctx.strip(); // any band of rows: each sample depends on (x, y) and the size
        synth(ctx.output(), p.pattern, std::uint64_t(p.seed), s.out_row0, s.out_height);
    }
};

/// Change of dtype with scale, offset, rounding and saturation (kernels/convert.hpp).
struct Convert {
    struct Params {
        DType dtype = DType::f32;
        double scale = 1.0;
        double offset = 0.0;
    };

    static Schema schema() {
        return Schema("convert", "change dtype: out = saturate(round(in * scale + offset)) for integer outputs")
            .access(pointwise())
            .input("in", all_dtypes(), channels(1, 4))
            .output("out", all_dtypes(), channels(1, 4))
            .param(&Params::dtype, "dtype", "output sample type")
            .param(&Params::scale, "scale", range(-1e30, 1e30),
                   "multiplier applied first (1/255 takes u8 to 0..1, 255 takes 0..1 to u8)")
            .param(&Params::offset, "offset", range(-1e30, 1e30),
                   "added after scaling; integer outputs then round half away from zero, saturate, "
                   "and map NaN to 0. Integer to integer with integer scale and offset is exact (no "
                   "double: 2^53 + 1 stays 2^53 + 1); otherwise the arithmetic is in double");
    }

    static void infer(const Params& p, const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].dtype = p.dtype;
    }

    static void run_cpu(Context& ctx, const Params& p) { convert_cpu(ctx.input(), ctx.output(), p.scale, p.offset); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params& p) {
        convert_cuda(ctx.input(), ctx.output(), p.scale, p.offset, ctx.stream());
    }
#endif
};

/// BT.601 luma (kernels/grayscale.hpp). No parameters.
struct Grayscale {
    static Schema schema() {
        constexpr std::uint32_t kDtypes = dtypes({DType::u8, DType::u16, DType::f32});
        return Schema("grayscale", "BT.601 luma 0.299 R + 0.587 G + 0.114 B, one channel out")
            .access(pointwise())
            .input("in", kDtypes, PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4),
                   "RGB, RGBA (alpha ignored) or gray (copied)")
            .output("out", kDtypes, channels(1, 1), "luma, same dtype; integers rounded to nearest");
    }

    static void infer(const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].channels = 1;
    }

    static void run_cpu(Context& ctx) { grayscale_cpu(ctx.input(), ctx.output()); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) { grayscale_cuda(ctx.input(), ctx.output(), ctx.stream()); }
#endif
};

} // namespace pixflow::basic

PIXFLOW_PLUGIN("basic", "1.0.0", pixflow::basic::Synth, pixflow::basic::Convert, pixflow::basic::Grayscale)
