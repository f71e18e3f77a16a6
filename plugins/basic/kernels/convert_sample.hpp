// convert_sample.hpp: the per-sample rule of convert, shared by convert.cpp and convert.cu.
//
// out = saturate(round(in * scale + offset)), computed along one of three paths, chosen once per
// run from the dtypes and the parameters (ConvertRule) so that both backends take the same one:
//
//   path       when                                        how
//   identity   scale 1, offset 0                           integer -> integer: exact, saturated;
//                                                          -> float: one rounding from the input
//                                                          (u64 -> f32 is not rounded twice);
//                                                          float -> integer: as `affine`
//   integral   integer -> integer, scale and offset        exact in 128-bit integers, saturated
//              integers (not both 1 and 0)                 (2^53 + 1 stays 2^53 + 1)
//   affine     any other case                              in double (sample_math.hpp): the input
//                                                          as double, in * scale + offset unfused,
//                                                          rounded half away from zero, saturated,
//                                                          NaN -> 0; float outputs take the double
//
// So integer -> integer is exact whenever the result is an integer function of the input; with a
// fractional scale or offset it is computed in double, which is exact for inputs below 2^53 (every
// type but u64) up to the rounding of the product. Float -> integer: round half away from zero,
// saturate (u64 too: 2^64 and above give 2^64 - 1, negatives 0), NaN -> 0.
#pragma once

#include "sample_math.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace pixflow::basic {

enum class ConvertPath { affine, identity, integral };

/// The parameters of one conversion, as every sample needs them; made on the host by
/// make_convert_rule and passed by value to the kernels.
struct ConvertRule {
    double scale = 1.0;
    double offset = 0.0;
    // The integral path only: scale and offset as integers (|.| <= 1e30 < 2^100, the parameters'
    // range), and the largest |in| whose product with scale is known to be below 2^125.
    __int128 int_scale = 1;
    __int128 int_offset = 0;
    std::uint64_t max_exact_in = ~std::uint64_t(0);
};

/// Integer -> integer through 128-bit integers: |in| < 2^64, |scale| < 2^100 and |offset| < 2^100,
/// so in * scale + offset fits unless |in| > max_exact_in; then |in * scale| > 2^125 outweighs any
/// offset and the result saturates to the side of in * scale's sign.
template <class To, class Ti> PIXFLOW_HD inline To integral_affine(Ti v, const ConvertRule& r) {
    bool negative = false;
    if constexpr (std::is_signed_v<Ti>) negative = v < 0;
    const std::uint64_t magnitude = negative ? std::uint64_t(0) - std::uint64_t(v) : std::uint64_t(v);
    __int128 x;
    if (magnitude > r.max_exact_in)
        x = (negative != (r.int_scale < 0)) ? -(__int128(1) << 126) : (__int128(1) << 126);
    else
        x = __int128(v) * r.int_scale + r.int_offset; // |product| <= 2^125, |sum| < 2^126
    if (x < __int128(SampleTraits<To>::lowest)) return SampleTraits<To>::lowest;
    if (x > __int128(SampleTraits<To>::highest)) return SampleTraits<To>::highest;
    return To(x);
}

template <class To, class Ti, ConvertPath P> PIXFLOW_HD inline To convert_sample(Ti v, const ConvertRule& r) {
    constexpr bool ints = !is_float_sample<Ti> && !is_float_sample<To>;
    if constexpr (P == ConvertPath::identity && ints)
        return saturate_int<To>(v);
    else if constexpr (P == ConvertPath::identity && is_float_sample<To>)
        return To(v); // one correctly rounded conversion (u64 -> f32 not through double)
    else if constexpr (P == ConvertPath::integral && ints)
        return integral_affine<To>(v, r);
    else
        return to_sample<To>(affine(double(v), r.scale, r.offset));
}

/// Whether scale and offset are integers that ConvertRule holds (the parameters' declared range,
/// [-1e30, 1e30], lies within 2^100).
inline bool integral_params(double scale, double offset) {
    return std::trunc(scale) == scale && std::trunc(offset) == offset && std::fabs(scale) < 0x1p100 &&
           std::fabs(offset) < 0x1p100;
}

/// The path for a conversion of `in` to `out` with these parameters.
inline ConvertPath convert_path(DType in, DType out, double scale, double offset) {
    if (scale == 1.0 && offset == 0.0) return ConvertPath::identity;
    if (!dtype_is_float(in) && !dtype_is_float(out) && integral_params(scale, offset)) return ConvertPath::integral;
    return ConvertPath::affine;
}

inline ConvertRule make_convert_rule(double scale, double offset) {
    ConvertRule r;
    r.scale = scale;
    r.offset = offset;
    if (integral_params(scale, offset)) {
        r.int_scale = __int128(scale);
        r.int_offset = __int128(offset);
        // |in| <= 2^125 / |scale| keeps |in * scale| near 2^125 at most (the double quotient may
        // round up a little: the sum still fits in 127 bits); up to |scale| = 2^61 every u64 does.
        const double a = std::fabs(scale);
        if (a > 0x1p61) {
            const double q = std::floor(0x1p125 / a);
            r.max_exact_in = q >= 0x1p64 ? ~std::uint64_t(0) : std::uint64_t(q);
        }
    }
    return r;
}

/// Calls f(Ti{}, To{}, std::integral_constant<ConvertPath, P>{}) for the sample types of `in`
/// and `out` and the path (convert_path): the one dispatch of both backends. Paths that do not
/// apply to a pair of types are not instantiated.
template <class F> void visit_conversion(DType in, DType out, double scale, double offset, F&& f) {
    const ConvertPath path = convert_path(in, out, scale, offset);
    visit_dtype(in, [&](auto ti) {
        visit_dtype(out, [&](auto to) {
            using Ti = decltype(ti);
            using To = decltype(to);
            if (path == ConvertPath::identity)
                return f(ti, to, std::integral_constant<ConvertPath, ConvertPath::identity>{});
            if constexpr (!is_float_sample<Ti> && !is_float_sample<To>)
                if (path == ConvertPath::integral)
                    return f(ti, to, std::integral_constant<ConvertPath, ConvertPath::integral>{});
            f(ti, to, std::integral_constant<ConvertPath, ConvertPath::affine>{});
        });
    });
}

} // namespace pixflow::basic
