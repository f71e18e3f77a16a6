// floyd_steinberg_pixel.hpp: the per-pixel rule of floyd_steinberg, shared by the CPU kernels (the
// CUDA kernel restates it with the same arithmetic in its own register form).
#pragma once

#include <pixflow/image.hpp>

namespace pixflow::floyd_steinberg {

/// One pixel of the scan. `sum` is 7 e(y,x-1) + e(y-1,x-1) + 5 e(y-1,x) + 3 e(y-1,x+1), in units
/// of 1/16. Returns the error e(y,x) = v - out with v = clamp(in + sum / 16, 0, 255) (C division,
/// toward zero) and sets `out` to 255 when v > 128, else 0. |sum| <= 16 * 128, so ints suffice,
/// and e lies in [-126, 128].
///
/// Written without branches: the threshold is a coin toss on noisy images, and a mispredicted
/// branch on the scan's dependency chain costs more than the whole pixel.
PIXFLOW_HD inline int diffuse(int in, int sum, int& out) {
    const int q = (sum + ((sum >> 31) & 15)) >> 4; // sum / 16, rounded toward zero
    int v = in + q;
    v = v < 0 ? 0 : v;
    v = v > 255 ? 255 : v;
    out = ((128 - v) >> 31) & 255; // 255 when v > 128 (>> of a negative int is arithmetic in C++20)
    return v - out;
}

} // namespace pixflow::floyd_steinberg
