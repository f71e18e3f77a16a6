// maxpool2x2.cpp: CPU kernel of maxpool2x2; TBB over output rows, SIMD along a row.
#include "maxpool2x2.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>
#include <string>

namespace pixflow::maxpool2x2 {
namespace {

// C is a template parameter so that the window's sample offsets are constants and the loop over
// output pixels vectorises (interleaved loads of a fixed group size).
template <class T, int C> void pool_rows(const ImageView& in, const ImageView& out) {
    const int ow = out.width;
    tbb::parallel_for(tbb::blocked_range<int>(0, out.height), [&](const tbb::blocked_range<int>& r) {
        for (int oy = r.begin(); oy < r.end(); ++oy) {
            const T* top = in.row<T>(2 * oy);
            const T* bottom = in.row<T>(2 * oy + 1);
            T* dst = out.row<T>(oy);
#pragma omp simd
            for (int ox = 0; ox < ow; ++ox)
                for (int c = 0; c < C; ++c) {
                    const std::size_t i = std::size_t(2 * ox) * C + c;
                    dst[std::size_t(ox) * C + c] =
                        pool_window(top[i], top[i + C], bottom[i], bottom[i + C]);
                }
        }
    });
}

} // namespace

void check_size(const ImageView& in) {
    PIXFLOW_USER_CHECK(in.width >= 2 && in.height >= 2,
                       "maxpool2x2 needs at least 2x2 pixels; got " + std::to_string(in.width) + "x" +
                           std::to_string(in.height));
}

void maxpool2x2_cpu(const ImageView& in, const ImageView& out) {
    check_size(in);
    visit_dtype(in.dtype, [&](auto tag) {
        visit_channels("maxpool2x2", in.channels,
                       [&](auto c) { pool_rows<decltype(tag), decltype(c)::value>(in, out); });
    });
}

} // namespace pixflow::maxpool2x2
