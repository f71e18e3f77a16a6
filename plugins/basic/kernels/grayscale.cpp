// grayscale.cpp: CPU kernel of grayscale; TBB over rows, SIMD within a row.
#include "grayscale.hpp"

#include "grayscale_pixel.hpp"

#include <pixflow/error.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstring>

namespace pixflow::basic {
namespace {

template <class T> void grayscale_rows(const ImageView& in, const ImageView& out) {
    const int w = in.width;
    const int c = in.channels;
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& r) {
        for (int y = r.begin(); y < r.end(); ++y) {
            const T* src = in.row<T>(y);
            T* dst = out.row<T>(y);
            if (c == 1) {
                std::memcpy(dst, src, std::size_t(w) * sizeof(T));
                continue;
            }
#pragma omp simd
            for (int x = 0; x < w; ++x) {
                const T* p = src + std::size_t(x) * c;
                dst[x] = luma<T>(p[0], p[1], p[2]);
            }
        }
    });
}

} // namespace

void grayscale_cpu(const ImageView& in, const ImageView& out) {
    switch (in.dtype) {
    case DType::u8: return grayscale_rows<std::uint8_t>(in, out);
    case DType::u16: return grayscale_rows<std::uint16_t>(in, out);
    case DType::f32: return grayscale_rows<float>(in, out);
    default:
        throw Error(std::string("grayscale: dtype ") + dtype_name(in.dtype) +
                    " is not u8, u16 or f32");
    }
}

} // namespace pixflow::basic
