// jpeg.cpp: the jpeg plugin's operators: schemas, shape inference and the adapters from a
// pixflow::Context to the kernels of kernels/jpeg.hpp (CPU in kernels/jpeg_cpu.cpp, CUDA in
// kernels/*.cu). The fused operator jpeg_roundtrip8x8 declares the chain it replaces.
#include "kernels/jpeg.hpp"
#include "kernels/jpeg_math.hpp"
#include "kernels/tables.hpp"

#include <pixflow/operator.hpp>

#include <string>

namespace {

using namespace pixflow;
using jpeg::QuantTable;

constexpr std::uint32_t kImageDtypes = dtypes({DType::u8, DType::f32});

// The parameters of quantize and dequantize (and of the fused operator), declared once.
Schema& table_params(Schema& s) {
    return s
        .param_int("quality", 75, 1, 100,
                   "JPEG quality; scales the table as libjpeg's jpeg_set_quality does "
                   "(5000/quality below 50, else 200 - 2*quality, percent)")
        .param_choice("table", {"luma", "chroma"}, "luma",
                      "ITU-T T.81 Annex K base table: K.1 luminance or K.2 chrominance")
        .param_bool("baseline", true, "cap the table's entries at 255, as baseline JPEG requires");
}

QuantTable table_of(const Params& p) {
    return jpeg::quant_table(int(p.i("quality")), jpeg::parse_table(p.s("table")), p.b("baseline"));
}

std::string size_text(const ImageView& v) {
    return std::to_string(v.width) + "x" + std::to_string(v.height);
}

} // namespace

class Dct8x8 {
  public:
    static Schema schema() {
        Schema s("dct8x8",
                 "orthonormal 2D DCT-II of every 8x8 block, each channel on its own; u8 is "
                 "level-shifted by -128 first");
        s.input("in", kImageDtypes, channels(1, 4),
                   "image; u8 samples are shifted by -128, f32 taken as they are")
            .output("out", dtypes({DType::f32}), channels(1, 4),
                    "coefficients: F[v][u] of each block at (8bx + u, 8by + v). A width W that is "
                    "not a multiple of 8 is padded to 8*ceil(W/8) by repeating the last column, "
                    "and the output has (8*ceil(W/8) - W) more columns of zeros that record it "
                    "(likewise rows), so idct8x8 gives back W x H on its own");
        return s;
    }
    static void infer(const Params&, const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].width = jpeg::coeff_extent(in[0].width);
        out[0].height = jpeg::coeff_extent(in[0].height);
        out[0].dtype = DType::f32;
    }
    static void run_cpu(Context& ctx) { jpeg::dct8x8_cpu(ctx.input(), ctx.output()); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) { jpeg::dct8x8_cuda(ctx.input(), ctx.output(), ctx.stream()); }
#endif
};

class Quantize {
  public:
    static Schema schema() {
        Schema s("quantize",
                 "DCT coefficients to i16: q = round(F / Q), halves away from zero, saturated; Q "
                 "the JPEG table for quality/table/baseline");
        s.input("in", dtypes({DType::f32}), channels(1, 4), "coefficients from dct8x8")
            .output("out", dtypes({DType::i16}), channels(1, 4),
                    "quantised coefficients, same size; the marker columns/rows of a padded "
                    "image (see dct8x8) are 0");
        table_params(s);
        return s;
    }
    static void run_cpu(Context& ctx) {
        jpeg::quantize_cpu(ctx.input(), ctx.output(), table_of(ctx.params()));
    }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) {
        jpeg::quantize_cuda(ctx.input(), ctx.output(), table_of(ctx.params()), ctx.stream());
    }
#endif
};

class Dequantize {
  public:
    static Schema schema() {
        Schema s("dequantize",
                 "quantised i16 coefficients back to f32: F = q * Q, Q the JPEG table for "
                 "quality/table/baseline (set them as on quantize)");
        s.input("in", dtypes({DType::i16}), channels(1, 4), "quantised coefficients")
            .output("out", dtypes({DType::f32}), channels(1, 4),
                    "coefficients, same size; marker columns/rows are 0");
        table_params(s);
        return s;
    }
    static void run_cpu(Context& ctx) {
        jpeg::dequantize_cpu(ctx.input(), ctx.output(), table_of(ctx.params()));
    }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) {
        jpeg::dequantize_cuda(ctx.input(), ctx.output(), table_of(ctx.params()), ctx.stream());
    }
#endif
};

namespace {
Schema& dtype_param(Schema& s) {
    return s.param_choice("dtype", {"u8", "f32"}, "u8",
                          "u8: +128, rounded to nearest (ties to even) and saturated; "
                          "f32: the inverse transform as it is (no shift)");
}
} // namespace

class Idct8x8 {
  public:
    static Schema schema() {
        Schema s("idct8x8",
                 "inverse of dct8x8: every 8x8 block back to pixels, at the size of the image "
                 "the coefficients came from");
        s.input("in", dtypes({DType::f32}), channels(1, 4),
                "coefficients as dct8x8 makes them: w x h holds floor(w/8) x floor(h/8) blocks "
                "of an image of 8*floor(w/8) - (w mod 8) x 8*floor(h/8) - (h mod 8) pixels")
            .output("out", kImageDtypes, channels(1, 4), "image, cropped to its original size");
        dtype_param(s);
        return s;
    }
    static void infer(const Params& p, const Shapes& in, Shapes& out) {
        if (in[0].width < 8 || in[0].height < 8)
            throw Error("idct8x8: the input (" + size_text(in[0]) +
                        ") holds no whole 8x8 block; it takes the coefficients dct8x8 makes, at "
                        "least 8x8");
        out[0] = in[0];
        out[0].width = jpeg::image_extent(in[0].width);
        out[0].height = jpeg::image_extent(in[0].height);
        out[0].dtype = p.s("dtype") == "u8" ? DType::u8 : DType::f32;
    }
    static void run_cpu(Context& ctx) { jpeg::idct8x8_cpu(ctx.input(), ctx.output()); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) { jpeg::idct8x8_cuda(ctx.input(), ctx.output(), ctx.stream()); }
#endif
};

/// dct8x8 -> quantize -> dequantize -> idct8x8 in one pass: what the planner runs instead of the
/// four nodes when nothing else reads their intermediate images. Bit for bit the same result.
class JpegRoundtrip8x8 {
  public:
    static Schema schema() {
        Schema s("jpeg_roundtrip8x8",
                 "dct8x8, quantize, dequantize and idct8x8 in one pass (the JPEG loss without "
                 "entropy coding), bit for bit equal to the four nodes");
        s.input("in", kImageDtypes, channels(1, 4), "image, as dct8x8 takes it")
            .output("out", kImageDtypes, channels(1, 4), "image, same size, as idct8x8 gives it");
        table_params(s);
        dtype_param(s);
        return s;
    }
    static Fusion fusion() {
        return Fusion({"dct8x8", "quantize", "dequantize", "idct8x8"})
            .bind("quality", 1)
            .bind("table", 1)
            .bind("baseline", 1)
            .bind("dtype", 3)
            .same("quality", 1, 2)
            .same("table", 1, 2)
            .same("baseline", 1, 2);
    }
    static void infer(const Params& p, const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].dtype = p.s("dtype") == "u8" ? DType::u8 : DType::f32;
    }
    static void run_cpu(Context& ctx) {
        jpeg::roundtrip8x8_cpu(ctx.input(), ctx.output(), table_of(ctx.params()));
    }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) {
        jpeg::roundtrip8x8_cuda(ctx.input(), ctx.output(), table_of(ctx.params()), ctx.stream());
    }
#endif
};

PIXFLOW_PLUGIN("jpeg", "1.0.0", Dct8x8, Quantize, Dequantize, Idct8x8, JpegRoundtrip8x8)
