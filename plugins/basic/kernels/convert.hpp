// convert.hpp: change the sample type of an image, out = saturate(round(in * scale + offset)).
//
// Integer to integer with integer scale and offset (the identity included) is exact: computed in
// 128-bit integers and saturated to the output range, so u64 values above 2^53 survive. Any
// other case is computed in double: integer outputs rounded to nearest with ties away from zero,
// saturated, NaN -> 0 (sample_math.hpp); float outputs take the double value (NaN and infinities
// pass through), and with scale 1 and offset 0 the input converted once (u64 -> f32 is not
// rounded twice). The paths and why: convert_sample.hpp. CPU and CUDA give identical bits.
#pragma once

#include <pixflow/image.hpp>

namespace pixflow::basic {

/// in and out: same width, height and channels, host memory; any dtypes.
void convert_cpu(const ImageView& in, const ImageView& out, double scale, double offset);

/// Same on device memory, launched on `stream` (a cudaStream_t); does not synchronise.
void convert_cuda(const ImageView& in, const ImageView& out, double scale, double offset, void* stream);

} // namespace pixflow::basic
