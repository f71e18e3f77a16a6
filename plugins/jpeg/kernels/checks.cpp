// checks.cpp: the view checks shared by the CPU and the CUDA kernels (see jpeg.hpp). These are
// internal errors: the host validates dtypes, channels and shapes (through infer) beforehand.
#include "jpeg.hpp"
#include "jpeg_math.hpp"

#include <pixflow/error.hpp>

#include <string>

namespace pixflow::jpeg {

namespace {

std::string shape(const ImageView& v) {
    return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" +
           std::to_string(v.channels) + " " + dtype_name(v.dtype);
}

void check_common(const char* op, const ImageView& in, const ImageView& out, bool on_host) {
    auto fail = [&](const std::string& what) {
        throw Error(std::string(op) + ": " + what + " (input " + shape(in) + ", output " +
                        shape(out) + ")",
                    PF_ERR_RUNTIME);
    };
    if (in.channels < 1 || in.channels > 4 || out.channels != in.channels)
        fail("input and output need the same channel count, 1 to 4");
    if (in.width < 1 || in.height < 1 || out.width < 1 || out.height < 1) fail("empty image");
    if (in.on_host() != on_host || out.on_host() != on_host || in.device != out.device)
        fail(on_host ? "images must be in host memory" : "images must be on one CUDA device");
    if (!in.data || !out.data) fail("null image data");
    if (in.pitch < std::int64_t(in.row_bytes()) || out.pitch < std::int64_t(out.row_bytes()))
        fail("pitch smaller than a row");
}

void need(bool ok, const char* op, const std::string& what, const ImageView& in,
          const ImageView& out) {
    if (!ok)
        throw Error(std::string(op) + ": " + what + " (input " + shape(in) + ", output " +
                        shape(out) + ")",
                    PF_ERR_RUNTIME);
}

bool image_dtype(DType d) { return d == DType::u8 || d == DType::f32; }

} // namespace

void check_dct(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("dct8x8", in, out, on_host);
    need(image_dtype(in.dtype) && out.dtype == DType::f32, "dct8x8", "u8 or f32 in, f32 out", in,
         out);
    need(out.width == coeff_extent(in.width) && out.height == coeff_extent(in.height), "dct8x8",
         "output is not the coefficient size of the input", in, out);
}

void check_quantize(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("quantize", in, out, on_host);
    need(in.dtype == DType::f32 && out.dtype == DType::i16, "quantize", "f32 in, i16 out", in, out);
    need(in.width == out.width && in.height == out.height, "quantize", "sizes differ", in, out);
}

void check_dequantize(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("dequantize", in, out, on_host);
    need(in.dtype == DType::i16 && out.dtype == DType::f32, "dequantize", "i16 in, f32 out", in,
         out);
    need(in.width == out.width && in.height == out.height, "dequantize", "sizes differ", in, out);
}

void check_idct(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("idct8x8", in, out, on_host);
    need(in.dtype == DType::f32 && image_dtype(out.dtype), "idct8x8", "f32 in, u8 or f32 out", in,
         out);
    need(in.width >= 8 && in.height >= 8 && out.width == image_extent(in.width) &&
             out.height == image_extent(in.height),
         "idct8x8", "output is not the image size of the coefficients", in, out);
}

void check_roundtrip(const ImageView& in, const ImageView& out, bool on_host) {
    check_common("jpeg_roundtrip8x8", in, out, on_host);
    need(image_dtype(in.dtype) && image_dtype(out.dtype), "jpeg_roundtrip8x8",
         "u8 or f32 in and out", in, out);
    need(in.width == out.width && in.height == out.height, "jpeg_roundtrip8x8", "sizes differ", in,
         out);
}

} // namespace pixflow::jpeg
