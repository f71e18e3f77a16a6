// grayscale.hpp: ITU-R BT.601 luma, Y = 0.299 R + 0.587 G + 0.114 B.
//
// Input 3 or 4 channels (alpha ignored) or 1 (copied); dtypes u8, u16, f32; output 1 channel of
// the same dtype. Integers are computed exactly, Y = (299 R + 587 G + 114 B + 500) / 1000 in
// integer arithmetic: the formula rounded to nearest, ties up (never saturates: the weights sum
// to 1). f32: ((0.299f R + 0.587f G) + 0.114f B) in float, unfused. CPU and CUDA give identical
// bits.
#pragma once

#include <pixflow/image.hpp>

namespace pixflow::basic {

/// in: 1, 3 or 4 channels of u8, u16 or f32; out: same size and dtype, 1 channel; host memory.
/// `portable`: the portable loop only, never the AVX2 kernel (the same bytes; for the tests).
void grayscale_cpu(const ImageView& in, const ImageView& out, bool portable = false);

/// Same on device memory, launched on `stream` (a cudaStream_t); does not synchronise.
void grayscale_cuda(const ImageView& in, const ImageView& out, void* stream);

} // namespace pixflow::basic
