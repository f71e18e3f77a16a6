// maxpool2x2.hpp: 2x2 max pooling with stride 2, each channel on its own.
//
// Output pixel (x, y) is the maximum of the input window
//
//     (2x, 2y)   (2x+1, 2y)        tl  tr
//     (2x, 2y+1) (2x+1, 2y+1)      bl  br
//
// so the output is floor(W/2) x floor(H/2): an odd last column or row is dropped (as PyTorch's
// max_pool2d). Every dtype, 1 to 4 interleaved channels; input and output have the same dtype
// and channels.
//
// Floats: a NaN anywhere in the window makes the output NaN (as torch.max_pool2d). The result is
// always one of the four inputs, copied bit for bit, chosen by pick(pick(tl, tr), pick(bl, br))
// with pick(a, b) = a if a is NaN or a >= b, else b. So of several NaNs the first in the order
// tl, tr, bl, br is returned with its payload, and of equal values (+0 and -0) the first in that
// order. The CPU and the CUDA kernel share `pool_pick`, so they agree bit for bit.
#pragma once

#include <pixflow/image.hpp>

#include <type_traits>

namespace pixflow::maxpool2x2 {

/// The larger of a and b; a when they are equal or a is NaN; b when only b is NaN.
template <class T> PIXFLOW_HD inline T pool_pick(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
        return (a != a || a >= b) ? a : b; // a != a: a is NaN (no std::isnan in device code)
    else
        return a >= b ? a : b;
}

/// The pooled value of one window (see the top of this file for the order).
template <class T> PIXFLOW_HD inline T pool_window(T tl, T tr, T bl, T br) {
    return pool_pick(pool_pick(tl, tr), pool_pick(bl, br));
}

/// Throws UserError unless `in` has at least 2x2 pixels: "maxpool2x2 needs at least 2x2 pixels;
/// got WxH".
void check_size(const ImageView& in);

/// in: any dtype, 1 to 4 channels, at least 2x2; out: floor(W/2) x floor(H/2), same dtype and
/// channels; host memory. `portable`: the portable loop only, never the AVX2 kernels (the same
/// bytes; for the tests).
void maxpool2x2_cpu(const ImageView& in, const ImageView& out, bool portable = false);

#ifdef PIXFLOW_WITH_CUDA
/// Same on device memory, launched on `stream` (a cudaStream_t); does not synchronise.
void maxpool2x2_cuda(const ImageView& in, const ImageView& out, void* stream);
#endif

} // namespace pixflow::maxpool2x2
