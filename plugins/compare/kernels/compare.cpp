// compare.cpp: the compare kernel (see compare.hpp). TBB reduces bands of rows with a fixed
// split (parallel_deterministic_reduce), each band's rows in an `omp simd` loop.
#include "compare.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace pixflow::compare {

namespace {

/// Partial sums of a band. Integers: exact. Floats: double.
template <class Acc> struct Partial {
    Acc sum_abs = 0, sum_sq = 0;
    double max_abs = 0;
    bool nan = false;
};

template <class T> auto reduce(const ImageView& a, const ImageView& b) {
    constexpr bool is_int = std::is_integral_v<T>;
    using Acc = std::conditional_t<is_int, std::uint64_t, double>;
    using P = Partial<Acc>;
    const std::size_t n = a.row_samples();
    const int grain = int(std::max<std::size_t>(1, (std::size_t(1) << 16) / std::max<std::size_t>(n, 1)));
    return tbb::parallel_deterministic_reduce(
        tbb::blocked_range<int>(0, a.height, grain), P{},
        [&](const tbb::blocked_range<int>& r, P p) {
            for (int y = r.begin(); y < r.end(); ++y) {
                const T* pa = a.row<const T>(y);
                const T* pb = b.row<const T>(y);
                if constexpr (is_int) {
                    std::uint64_t s1 = 0, s2 = 0, mx = 0;
#pragma omp simd reduction(+ : s1, s2) reduction(max : mx)
                    for (std::size_t i = 0; i < n; ++i) {
                        const std::int64_t d = std::int64_t(pa[i]) - std::int64_t(pb[i]);
                        const std::uint64_t ad = std::uint64_t(d < 0 ? -d : d);
                        s1 += ad;
                        s2 += ad * ad;
                        mx = std::max(mx, ad);
                    }
                    p.sum_abs += s1;
                    p.sum_sq += s2;
                    p.max_abs = std::max(p.max_abs, double(mx));
                } else {
                    // Sequential within a row, so the sums are reproducible bit for bit.
                    for (std::size_t i = 0; i < n; ++i) {
                        const double d = double(pa[i]) - double(pb[i]);
                        const double ad = std::fabs(d);
                        if (std::isnan(d)) p.nan = true;
                        p.sum_abs += ad;
                        p.sum_sq += d * d;
                        p.max_abs = std::max(p.max_abs, ad);
                    }
                }
            }
            return p;
        },
        [](P x, const P& y) {
            x.sum_abs += y.sum_abs;
            x.sum_sq += y.sum_sq;
            x.max_abs = std::max(x.max_abs, y.max_abs);
            x.nan = x.nan || y.nan;
            return x;
        });
}

} // namespace

void check_same_shape(const ImageView& a, const ImageView& b) {
    PIXFLOW_USER_CHECK(a.width == b.width && a.height == b.height && a.channels == b.channels && a.dtype == b.dtype,
                       "compare: a is " + shape_of(a) + " and b is " + shape_of(b) +
                           "; they need the same size, channels and dtype");
}

double psnr_peak(DType d) {
    switch (d) {
    case DType::u8: return 255.0;
    case DType::u16: return 65535.0;
    case DType::f32:
    case DType::f64: return 1.0;
    default:
        throw UserError(std::string("compare: dtype ") + dtype_name(d) + " is not supported (u8, u16, f32, f64)",
                        PF_ERR_UNSUPPORTED);
    }
}

Stats compare_cpu(const ImageView& a, const ImageView& b) {
    check_same_shape(a, b);
    PIXFLOW_INTERNAL_CHECK(a.on_host() && b.on_host(), "compare: images must be in host memory");
    Stats s;
    s.peak = psnr_peak(a.dtype);
    const double count = double(a.row_samples()) * a.height;
    double sum_abs = 0, sum_sq = 0, max_abs = 0;
    bool nan = false;
    visit_dtype<DType::u8, DType::u16, DType::f32, DType::f64>("compare", a.dtype, [&](auto tag) {
        const auto p = reduce<decltype(tag)>(a, b);
        sum_abs = double(p.sum_abs);
        sum_sq = double(p.sum_sq);
        max_abs = p.max_abs;
        nan = p.nan;
    });
    if (nan) {
        const double q = std::numeric_limits<double>::quiet_NaN();
        s.max_abs_diff = s.mean_abs_diff = s.mse = s.psnr = q;
        return s;
    }
    s.max_abs_diff = max_abs;
    s.mean_abs_diff = count > 0 ? sum_abs / count : 0;
    s.mse = count > 0 ? sum_sq / count : 0;
    s.psnr = s.mse > 0 ? 10.0 * std::log10(s.peak * s.peak / s.mse) : std::numeric_limits<double>::infinity();
    return s;
}

} // namespace pixflow::compare
