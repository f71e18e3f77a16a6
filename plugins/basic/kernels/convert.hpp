// convert.hpp: change the sample type of an image, out = saturate(round(in * scale + offset)).
//
// Integer outputs: computed in double, rounded to nearest with ties away from zero, saturated to
// the output range, NaN -> 0 (sample_math.hpp). Float outputs: the double value converted (so
// NaN and infinities pass through). Integer to integer with scale 1 and offset 0 skips double
// and clamps exactly (u64 values above 2^53 survive). CPU and CUDA give identical bits.
#pragma once

#include <pixflow/image.hpp>

namespace pixflow::basic {

/// in and out: same width, height and channels, host memory; any dtypes.
void convert_cpu(const ImageView& in, const ImageView& out, double scale, double offset);

/// Same on device memory, launched on `stream` (a cudaStream_t); does not synchronise.
void convert_cuda(const ImageView& in, const ImageView& out, double scale, double offset,
                  void* stream);

} // namespace pixflow::basic
