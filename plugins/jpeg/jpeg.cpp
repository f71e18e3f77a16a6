// jpeg.cpp: the jpeg plugin's operators: their parameters, schemas, shape inference and the
// adapters to the kernels of kernels/jpeg.hpp (CPU in kernels/jpeg_cpu.cpp, CUDA in
// kernels/*.cu). The fused operator jpeg_roundtrip8x8 declares the chain it replaces.
#include "kernels/jpeg.hpp"
#include "kernels/jpeg_math.hpp"
#include "kernels/tables.hpp"

#include <pixflow/operator.hpp>

#include <array>
#include <string>

namespace pixflow::jpeg {
namespace {

constexpr std::uint32_t kImageDtypes = dtypes({DType::u8, DType::f32});

/// The parameters of quantize and dequantize (and of the fused operator): which table.
struct TableParams {
    int quality = 75;
    Table table = Table::luma;
    bool baseline = true;
};

/// The sample type of the inverse transform's output (idct8x8 and the fused operator).
enum class PixelType { u8, f32 };
constexpr std::array<std::pair<const char*, PixelType>, 2> pixflow_choices(PixelType) {
    return {{{"u8", PixelType::u8}, {"f32", PixelType::f32}}};
}
struct PixelParams {
    PixelType dtype = PixelType::u8;
};
constexpr DType dtype_of(PixelType t) { return t == PixelType::u8 ? DType::u8 : DType::f32; }

/// Binds TableParams' fields, declared once for the three operators that have them; P is the
/// operator's parameter struct (TableParams or one derived from it).
template <class P> Schema& table_params(Schema& s) {
    return s
        .param<P>(&P::quality, "quality", range(1, 100),
                  "JPEG quality; scales the table as libjpeg's jpeg_set_quality does (5000/quality "
                  "below 50, else 200 - 2*quality, percent)")
        .template param<P>(&P::table, "table", "ITU-T T.81 Annex K base table: K.1 luminance or K.2 chrominance")
        .template param<P>(&P::baseline, "baseline", "cap the table's entries at 255, as baseline JPEG requires");
}

/// Binds PixelParams' field (idct8x8 and the fused operator).
template <class P> Schema& pixel_params(Schema& s) {
    return s.param<P>(&P::dtype, "dtype",
                      "u8: +128, rounded to nearest (ties to even) and saturated; f32: the inverse "
                      "transform as it is (no shift)");
}

QuantTable table_of(const TableParams& p) { return quant_table(p.quality, p.table, p.baseline); }

/// The shape check of the operators that take a coefficient image as it is (quantize,
/// dequantize; idct8x8 has its own): dct8x8 makes at least one whole 8x8 block, so anything
/// smaller did not come from it. Padding it as dct8x8 pads an image would invent coefficients;
/// the kernels would see only marker samples and write zeros, so it is refused here, at validation.
void require_whole_block(const char* op, const ImageView& in) {
    PIXFLOW_USER_CHECK(in.width >= 8 && in.height >= 8,
                       std::string(op) + ": the input (" + std::to_string(in.width) + "x" + std::to_string(in.height) +
                           ") holds no whole 8x8 block; it takes the coefficients dct8x8 makes, at least 8x8 "
                           "(run dct8x8 first on an image)");
}

} // namespace

class Dct8x8 {
  public:
    static Schema schema() {
        return Schema("dct8x8", "orthonormal 2D DCT-II of every 8x8 block, each channel on its own; u8 is "
                                "level-shifted by -128 first")
            .access(blocks(8, 8))
            .input("in", kImageDtypes, channels(1, 4), "image; u8 samples are shifted by -128, f32 taken as they are")
            .output("out", dtypes({DType::f32}), channels(1, 4),
                    "coefficients: F[v][u] of each block at (8bx + u, 8by + v). A width W that is "
                    "not a multiple of 8 is padded to 8*ceil(W/8) by repeating the last column, "
                    "and the output has (8*ceil(W/8) - W) more columns of zeros that record it "
                    "(likewise rows), so idct8x8 gives back W x H on its own");
    }
    static void infer(const Shapes& in, Shapes& out) {
        out[0] = in[0];
        out[0].width = coeff_extent(in[0].width);
        out[0].height = coeff_extent(in[0].height);
        out[0].dtype = DType::f32;
    }
    static void run_cpu(Context& ctx) { dct8x8_cpu(ctx.input(), ctx.output()); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx) { dct8x8_cuda(ctx.input(), ctx.output(), ctx.stream()); }
#endif
};

class Quantize {
  public:
    using Params = TableParams;
    static Schema schema() {
        Schema s("quantize", "DCT coefficients to i16: q = round(F / Q), halves away from zero, saturated; Q "
                             "the JPEG table for quality/table/baseline");
        s.access(blocks(8, 8))
            .input("in", dtypes({DType::f32}), channels(1, 4),
                   "coefficients from dct8x8 (at least 8x8: one whole block)")
            .output("out", dtypes({DType::i16}), channels(1, 4),
                    "quantised coefficients, same size; the marker columns/rows of a padded "
                    "image (see dct8x8) are 0");
        return table_params<Params>(s);
    }
    static void infer(const Params&, const Shapes& in, Shapes& out) {
        require_whole_block("quantize", in[0]);
        out[0] = in[0];
        out[0].dtype = DType::i16;
    }
    static void run_cpu(Context& ctx, const Params& p) { quantize_cpu(ctx.input(), ctx.output(), table_of(p)); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params& p) {
        quantize_cuda(ctx.input(), ctx.output(), table_of(p), ctx.stream());
    }
#endif
};

class Dequantize {
  public:
    using Params = TableParams;
    static Schema schema() {
        Schema s("dequantize", "quantised i16 coefficients back to f32: F = q * Q, Q the JPEG table for "
                               "quality/table/baseline (set them as on quantize)");
        s.access(blocks(8, 8))
            .input("in", dtypes({DType::i16}), channels(1, 4), "quantised coefficients, from quantize (at least 8x8)")
            .output("out", dtypes({DType::f32}), channels(1, 4), "coefficients, same size; marker columns/rows are 0");
        return table_params<Params>(s);
    }
    static void infer(const Params&, const Shapes& in, Shapes& out) {
        require_whole_block("dequantize", in[0]);
        out[0] = in[0];
        out[0].dtype = DType::f32;
    }
    static void run_cpu(Context& ctx, const Params& p) { dequantize_cpu(ctx.input(), ctx.output(), table_of(p)); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params& p) {
        dequantize_cuda(ctx.input(), ctx.output(), table_of(p), ctx.stream());
    }
#endif
};

class Idct8x8 {
  public:
    using Params = PixelParams;
    static Schema schema() {
        Schema s("idct8x8", "inverse of dct8x8: every 8x8 block back to pixels, at the size of the image "
                            "the coefficients came from");
        s.access(blocks(8, 8))
            .input("in", dtypes({DType::f32}), channels(1, 4),
                   "coefficients as dct8x8 makes them: w x h holds floor(w/8) x floor(h/8) blocks "
                   "of an image of 8*floor(w/8) - (w mod 8) x 8*floor(h/8) - (h mod 8) pixels")
            .output("out", kImageDtypes, channels(1, 4), "image, cropped to its original size");
        return pixel_params<Params>(s);
    }
    static void infer(const Params& p, const Shapes& in, Shapes& out) {
        PIXFLOW_USER_CHECK(in[0].width >= 8 && in[0].height >= 8,
                           "idct8x8: the input (" + std::to_string(in[0].width) + "x" + std::to_string(in[0].height) +
                               ") holds no whole 8x8 block; it takes the coefficients dct8x8 makes, at least 8x8");
        out[0] = in[0];
        out[0].width = image_extent(in[0].width);
        out[0].height = image_extent(in[0].height);
        out[0].dtype = dtype_of(p.dtype);
    }
    static void run_cpu(Context& ctx, const Params&) { idct8x8_cpu(ctx.input(), ctx.output()); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params&) { idct8x8_cuda(ctx.input(), ctx.output(), ctx.stream()); }
#endif
};

/// dct8x8 -> quantize -> dequantize -> idct8x8 in one pass: what the planner runs instead of the
/// four nodes when nothing else reads their intermediate images. Bit for bit the same result.
class JpegRoundtrip8x8 {
  public:
    struct Params : TableParams, PixelParams {};
    static Schema schema() {
        Schema s("jpeg_roundtrip8x8", "dct8x8, quantize, dequantize and idct8x8 in one pass (the JPEG loss without "
                                      "entropy coding), bit for bit equal to the four nodes");
        s.access(blocks(8, 8))
            .input("in", kImageDtypes, channels(1, 4), "image, as dct8x8 takes it")
            .output("out", kImageDtypes, channels(1, 4), "image, same size, as idct8x8 gives it");
        table_params<Params>(s);
        return pixel_params<Params>(s);
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
        out[0].dtype = dtype_of(p.dtype);
    }
    static void run_cpu(Context& ctx, const Params& p) { roundtrip8x8_cpu(ctx.input(), ctx.output(), table_of(p)); }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params& p) {
        roundtrip8x8_cuda(ctx.input(), ctx.output(), table_of(p), ctx.stream());
    }
#endif
};

} // namespace pixflow::jpeg

PIXFLOW_PLUGIN("jpeg", "1.0.0", pixflow::jpeg::Dct8x8, pixflow::jpeg::Quantize, pixflow::jpeg::Dequantize,
               pixflow::jpeg::Idct8x8, pixflow::jpeg::JpegRoundtrip8x8)
