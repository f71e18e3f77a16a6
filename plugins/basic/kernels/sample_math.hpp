// sample_math.hpp: per-sample arithmetic shared by the CPU (.cpp) and CUDA (.cu) kernels, so both
// backends compute bit-identical integer results.
//
// Conventions:
//  - Integer results are rounded to nearest, ties away from zero (C's round()), then saturated
//    to the type's range; NaN becomes 0.
//  - a*x + b is never fused: device code uses the _rn intrinsics, which nvcc does not contract,
//    and the host code is compiled with FLOAT exact, -ffp-contract=off (plugins/basic/CMakeLists.txt).
#pragma once

#include <pixflow/image.hpp>

#include <math.h>

#include <cstdint>
#include <type_traits>

namespace pixflow::basic {

/// Range of a sample type, usable in device code (std::numeric_limits is not, without flags).
template <class T> struct SampleTraits;
template <> struct SampleTraits<std::uint8_t> { static constexpr std::uint8_t lowest = 0, highest = 0xFF; };
template <> struct SampleTraits<std::uint16_t> { static constexpr std::uint16_t lowest = 0, highest = 0xFFFF; };
template <> struct SampleTraits<std::int16_t> { static constexpr std::int16_t lowest = -0x8000, highest = 0x7FFF; };
template <> struct SampleTraits<std::int32_t> {
    static constexpr std::int32_t lowest = -0x7FFFFFFF - 1, highest = 0x7FFFFFFF;
};
template <> struct SampleTraits<std::uint32_t> { static constexpr std::uint32_t lowest = 0, highest = 0xFFFFFFFFu; };
template <> struct SampleTraits<std::uint64_t> {
    static constexpr std::uint64_t lowest = 0, highest = ~std::uint64_t(0);
};

template <class T> constexpr bool is_float_sample = std::is_floating_point_v<T>;

/// v * scale + offset in double, unfused on both backends.
PIXFLOW_HD inline double affine(double v, double scale, double offset) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(__dmul_rn(v, scale), offset);
#else
    return v * scale + offset;
#endif
}

/// A double as sample type T: floats convert (round to nearest), integers round half away from
/// zero and saturate, NaN gives 0.
template <class T> PIXFLOW_HD inline T to_sample(double v) {
    if constexpr (is_float_sample<T>) {
        return T(v);
    } else {
        if (!(v == v)) return T(0);
        const double r = ::round(v);
        // Compare in double: the bounds are exact for every type but u64, whose 2^64-1 rounds up
        // to 2^64, and r >= 2^64 is exactly the range that must saturate.
        if (r <= double(SampleTraits<T>::lowest)) return SampleTraits<T>::lowest;
        if (r >= double(SampleTraits<T>::highest)) return SampleTraits<T>::highest;
        return T(r);
    }
}

/// Integer to integer with saturation and no detour through double (exact for u64 too).
template <class To, class Ti> PIXFLOW_HD inline To saturate_int(Ti v) {
    if constexpr (std::is_signed_v<Ti>) {
        if (v < 0) {
            const std::int64_t s = v;
            if constexpr (std::is_signed_v<To>)
                return s < std::int64_t(SampleTraits<To>::lowest) ? SampleTraits<To>::lowest : To(s);
            else
                return To(0);
        }
    }
    const std::uint64_t u = std::uint64_t(v);
    return u > std::uint64_t(SampleTraits<To>::highest) ? SampleTraits<To>::highest : To(u);
}

} // namespace pixflow::basic
