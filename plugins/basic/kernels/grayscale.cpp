// grayscale.cpp: CPU kernel of grayscale; TBB over rows, SIMD within a row.
#include "grayscale.hpp"

#include "grayscale_pixel.hpp"

#include <pixflow/error.hpp>

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

template <class T> void grayscale_rows(const ImageView& in, const ImageView& out) {
    switch (in.channels) {
    case 1:
        tbb::parallel_for(0, in.height, [&](int y) {
            std::memcpy(out.row<T>(y), in.row<T>(y), std::size_t(in.width) * sizeof(T));
        });
        return;
    case 3: return grayscale_rows<T, 3>(in, out);
    case 4: return grayscale_rows<T, 4>(in, out);
    default: throw Error("grayscale: " + std::to_string(in.channels) + " channels; expected 1, 3 or 4");
    }
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
