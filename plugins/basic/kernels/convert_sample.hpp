// convert_sample.hpp: the per-sample rule of convert, shared by convert.cpp and convert.cu.
#pragma once

#include "sample_math.hpp"

#include <type_traits>

namespace pixflow::basic {

/// Exact: integer to integer with scale 1 and offset 0 (no rounding through double).
template <class To, class Ti, bool Exact>
PIXFLOW_HD inline To convert_sample(Ti v, double scale, double offset) {
    if constexpr (Exact && !is_float_sample<Ti> && !is_float_sample<To>)
        return saturate_int<To>(v);
    else
        return to_sample<To>(affine(double(v), scale, offset));
}

/// True when convert_sample<To, Ti, true> may be used: both integer, identity transform.
inline bool convert_is_exact(DType in, DType out, double scale, double offset) {
    return !dtype_is_float(in) && !dtype_is_float(out) && scale == 1.0 && offset == 0.0;
}

/// Calls f(Ti{}, To{}, std::bool_constant<Exact>{}) for the sample types of `in` and `out` and
/// whether the exact integer path applies (convert_is_exact): the one dispatch of both backends.
template <class F> void visit_conversion(DType in, DType out, double scale, double offset, F&& f) {
    const bool exact = convert_is_exact(in, out, scale, offset);
    visit_dtype(in, [&](auto ti) {
        visit_dtype(out, [&](auto to) {
            if constexpr (!is_float_sample<decltype(ti)> && !is_float_sample<decltype(to)>)
                if (exact) return f(ti, to, std::true_type{});
            f(ti, to, std::false_type{});
        });
    });
}

} // namespace pixflow::basic
