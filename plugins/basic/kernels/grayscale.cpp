// grayscale.cpp: CPU kernel of grayscale; TBB over rows, SIMD within a row.
#include "grayscale.hpp"

#include "grayscale_pixel.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstring>

namespace pixflow::basic {
namespace {

// The channel count is a template parameter so that the interleaved loads have a fixed stride
// the compiler can vectorise (a runtime stride turns them into gathers).
template <class T, int C> void grayscale_rows(const ImageView& in, const ImageView& out) {
    const int w = in.width;
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& r) {
        for (int y = r.begin(); y < r.end(); ++y) {
            const T* src = in.row<T>(y);
            T* dst = out.row<T>(y);
#pragma omp simd
            for (int x = 0; x < w; ++x)
                dst[x] = luma<T>(src[C * x], src[C * x + 1], src[C * x + 2]);
        }
    });
}

} // namespace

void grayscale_cpu(const ImageView& in, const ImageView& out) {
    visit_dtype<DType::u8, DType::u16, DType::f32>("grayscale", in.dtype, [&](auto tag) {
        using T = decltype(tag);
        visit_channels<1, 3, 4>("grayscale", in.channels, [&](auto c) {
            if constexpr (decltype(c)::value == 1)
                tbb::parallel_for(0, in.height, [&](int y) {
                    std::memcpy(out.row<T>(y), in.row<T>(y), std::size_t(in.width) * sizeof(T));
                });
            else
                grayscale_rows<T, decltype(c)::value>(in, out);
        });
    });
}

} // namespace pixflow::basic
