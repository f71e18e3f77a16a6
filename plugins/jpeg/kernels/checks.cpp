// checks.cpp: the view checks shared by the CPU and the CUDA kernels (see jpeg.hpp). These are
// internal errors (InternalError, with the place of the check): the host validates dtypes,
// channels and shapes (through infer) beforehand.
#include "jpeg.hpp"
#include "jpeg_math.hpp"

#include <pixflow/error.hpp>

#include <string>

namespace pixflow::jpeg {

namespace {

// Every check below guards an invariant the host keeps (it validates dtypes, channels and, through
// infer, shapes), so a failure is an internal error; the message names both views.
#define JPEG_CHECK(ok, op, what)                                                                                       \
    PIXFLOW_INTERNAL_CHECK(ok, std::string(op) + ": " + (what) + " (input " + shape_of(in) + ", output " +             \
                                   shape_of(out) + ")")

void check_common(const char* op, const ImageView& in, const ImageView& out, bool on_host) {
    JPEG_CHECK(in.channels >= 1 && in.channels <= 4 && out.channels == in.channels, op,
               "input and output need the same channel count, 1 to 4");
    JPEG_CHECK(in.width >= 1 && in.height >= 1 && out.width >= 1 && out.height >= 1, op, "empty image");
    JPEG_CHECK(in.on_host() == on_host && out.on_host() == on_host && in.device == out.device, op,
               on_host ? "images must be in host memory" : "images must be on one CUDA device");
    JPEG_CHECK(in.data && out.data, op, "null image data");
    JPEG_CHECK(in.pitch >= std::int64_t(in.row_bytes()) && out.pitch >= std::int64_t(out.row_bytes()), op,
               "pitch smaller than a row");
}

bool image_dtype(DType d) { return d == DType::u8 || d == DType::f32; }

} // namespace

void check_dct(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("dct8x8", in, out, on_host);
    JPEG_CHECK(image_dtype(in.dtype) && out.dtype == DType::f32, "dct8x8", "u8 or f32 in, f32 out");
    JPEG_CHECK(out.width == coeff_extent(in.width) && out.height == coeff_extent(in.height), "dct8x8",
               "output is not the coefficient size of the input");
}

void check_quantize(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("quantize", in, out, on_host);
    JPEG_CHECK(in.dtype == DType::f32 && out.dtype == DType::i16, "quantize", "f32 in, i16 out");
    JPEG_CHECK(in.width == out.width && in.height == out.height, "quantize", "sizes differ");
}

void check_dequantize(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("dequantize", in, out, on_host);
    JPEG_CHECK(in.dtype == DType::i16 && out.dtype == DType::f32, "dequantize", "i16 in, f32 out");
    JPEG_CHECK(in.width == out.width && in.height == out.height, "dequantize", "sizes differ");
}

void check_idct(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("idct8x8", in, out, on_host);
    JPEG_CHECK(in.dtype == DType::f32 && image_dtype(out.dtype), "idct8x8", "f32 in, u8 or f32 out");
    JPEG_CHECK(in.width >= 8 && in.height >= 8 && out.width == image_extent(in.width) &&
                   out.height == image_extent(in.height),
               "idct8x8", "output is not the image size of the coefficients");
}

void check_roundtrip(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("jpeg_roundtrip8x8", in, out, on_host);
    JPEG_CHECK(image_dtype(in.dtype) && image_dtype(out.dtype), "jpeg_roundtrip8x8", "u8 or f32 in and out");
    JPEG_CHECK(in.width == out.width && in.height == out.height, "jpeg_roundtrip8x8", "sizes differ");
}

} // namespace pixflow::jpeg
