// convert.cpp: CPU kernel of convert; TBB over rows, SIMD within a row.
#include "convert.hpp"

#include "convert_sample.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace pixflow::basic {
namespace {

template <class Ti, class To, ConvertPath P>
void convert_rows(const ImageView& in, const ImageView& out, const ConvertRule& rule) {
    const std::size_t n = in.row_samples();
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& r) {
        for (int y = r.begin(); y < r.end(); ++y) {
            const Ti* src = in.row<Ti>(y);
            To* dst = out.row<To>(y);
#pragma omp simd
            for (std::size_t i = 0; i < n; ++i) dst[i] = convert_sample<To, Ti, P>(src[i], rule);
        }
    });
}

} // namespace

void convert_cpu(const ImageView& in, const ImageView& out, double scale, double offset) {
    const ConvertRule rule = make_convert_rule(scale, offset);
    visit_conversion(in.dtype, out.dtype, scale, offset, [&](auto ti, auto to, auto path) {
        convert_rows<decltype(ti), decltype(to), decltype(path)::value>(in, out, rule);
    });
}

} // namespace pixflow::basic
