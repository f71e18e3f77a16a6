// The Sobel kernels, free of pixflow's framework: functions over image views, which the tests
// call directly too.
// Gradient magnitude |Gx| + |Gy| of the 3x3 Sobel operator per channel, borders replicated,
// scaled by `scale` and saturated to u8. u8 in, u8 out, 1 to 4 channels.
#pragma once

#include <pixflow/image.hpp>

namespace sobel {

void sobel_cpu(const pixflow::ImageView& in, const pixflow::ImageView& out, float scale);
#ifdef PIXFLOW_WITH_CUDA
void sobel_cuda(const pixflow::ImageView& in, const pixflow::ImageView& out, float scale, void* stream);
#endif

/// One output sample from its 3x3 neighbourhood p (row-major), exactly as both backends compute it.
inline PIXFLOW_HD unsigned char sobel_sample(const int p[9], float scale) {
    int gx = (p[2] + 2 * p[5] + p[8]) - (p[0] + 2 * p[3] + p[6]);
    int gy = (p[6] + 2 * p[7] + p[8]) - (p[0] + 2 * p[1] + p[2]);
    float m = float((gx < 0 ? -gx : gx) + (gy < 0 ? -gy : gy)) * scale;
    return m >= 255.0f ? 255 : (unsigned char)(m + 0.5f);
}

} // namespace sobel
