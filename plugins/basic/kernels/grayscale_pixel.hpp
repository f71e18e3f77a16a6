// grayscale_pixel.hpp: the per-pixel rule of grayscale, shared by grayscale.cpp and grayscale.cu.
#pragma once

#include <pixflow/image.hpp>

#include <cstdint>
#include <type_traits>

namespace pixflow::basic {

/// BT.601 luma of one pixel. Integers: exact, half up; f32: unfused float.
template <class T> PIXFLOW_HD inline T luma(T r, T g, T b) {
    if constexpr (std::is_floating_point_v<T>) {
#if defined(__CUDA_ARCH__)
        return __fadd_rn(__fadd_rn(__fmul_rn(0.299f, r), __fmul_rn(0.587f, g)), __fmul_rn(0.114f, b));
#else
        return (0.299f * r + 0.587f * g) + 0.114f * b;
#endif
    } else {
        // At most 1000 * 65535 < 2^32.
        const std::uint32_t sum = 299u * r + 587u * g + 114u * b + 500u;
        return T(sum / 1000u);
    }
}

} // namespace pixflow::basic
