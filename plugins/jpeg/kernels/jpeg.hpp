// jpeg.hpp: the pure kernels of the JPEG transform chain (dct8x8, quantize, dequantize, idct8x8
// and the fused round trip), over pixflow::ImageView only, so they can be called on their own.
//
// Conventions, common to every function below (the arithmetic is in jpeg_math.hpp):
//  - Images have 1 to 4 interleaved channels; each channel is transformed on its own. Pitches
//    may differ between images and exceed the row size.
//  - Shapes (jpeg_math.hpp, "shapes"): an image of W x H pixels has coefficient images of
//    coeff_extent(W) x coeff_extent(H) samples: the ceil(W/8) x ceil(H/8) blocks of the image
//    padded by repeating its last column and row, then zero "marker" columns and rows whose count
//    is the padding. idct8x8 turns a coefficient image of w x h back into image_extent(w) x
//    image_extent(h) pixels.
//
//        dct8x8      u8 | f32  W x H        ->  f32 coefficients  w x h
//        quantize    f32 w x h              ->  i16  w x h     q = round(F / Q), halves away from 0
//        dequantize  i16 w x h              ->  f32  w x h     F' = q * Q
//        idct8x8     f32 w x h              ->  u8 | f32  W x H
//        roundtrip   u8 | f32 W x H         ->  u8 | f32  W x H   (all four in one pass)
//
//    quantize and dequantize write 0 into the marker columns and rows.
//  - Every backend computes the same bits: the CPU and the CUDA kernels run the same float
//    operations in the same order, and the fused round trip those of the four separate kernels.
//  - CPU kernels take host views; CUDA kernels device views of one device, launch on `stream`
//    (a cudaStream_t) and return without synchronising. Both throw pixflow::Error for views that
//    break these conventions.
#pragma once

#include "tables.hpp"

#include <pixflow/image.hpp>

namespace pixflow::jpeg {

/// Throws unless in -> out is a valid dct8x8 (u8/f32 -> f32 coefficients, shapes above).
void check_dct(const ImageView& in, const ImageView& out, bool on_host);
/// Same for quantize (f32 -> i16, one shape) and dequantize (i16 -> f32, one shape).
void check_quantize(const ImageView& in, const ImageView& out, bool on_host);
void check_dequantize(const ImageView& in, const ImageView& out, bool on_host);
/// Same for idct8x8 (f32 coefficients -> u8/f32).
void check_idct(const ImageView& in, const ImageView& out, bool on_host);
/// Same for the fused round trip (u8/f32 -> u8/f32, one size).
void check_roundtrip(const ImageView& in, const ImageView& out, bool on_host);

void dct8x8_cpu(const ImageView& in, const ImageView& out);
void quantize_cpu(const ImageView& in, const ImageView& out, const QuantTable& q);
void dequantize_cpu(const ImageView& in, const ImageView& out, const QuantTable& q);
void idct8x8_cpu(const ImageView& in, const ImageView& out);
/// dct8x8 -> quantize -> dequantize -> idct8x8 in one pass, no intermediate image.
void roundtrip8x8_cpu(const ImageView& in, const ImageView& out, const QuantTable& q);

#ifdef PIXFLOW_WITH_CUDA
void dct8x8_cuda(const ImageView& in, const ImageView& out, void* stream);
void quantize_cuda(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream);
void dequantize_cuda(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream);
void idct8x8_cuda(const ImageView& in, const ImageView& out, void* stream);
void roundtrip8x8_cuda(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream);
#endif

} // namespace pixflow::jpeg
