// integral.cpp: CPU kernel of integral.
//
// Integer outputs (u32, u64; any order of additions gives the same bits), in strips of rows,
// with the input read twice and the output written once:
//   1. TBB over strips: each strip's column sums (vectorised), into the scratch rows;
//   2. an exclusive scan of those down the strips (TBB over blocks of columns, vectorised),
//      then a prefix sum along each scratch row: row k is now the integral of everything above
//      strip k, that is the output row just above the strip;
//   3. TBB over strips: each row's running sum per channel plus the output row above it.
// A band of a larger image (strips: `above` given) adds the output row above the band to every
// strip's top (integers), or starts the column pass from it (f64).
// f64 outputs, in the order integral.hpp defines, with the output written, then read and
// written again:
//   1. TBB over rows: each row's inclusive prefix sum per channel, left to right;
//   2. TBB over blocks of columns: each task walks down the rows of its block, adding the row
//      above into the row (vectorised; the row above is still in cache).
#include "integral.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <string>
#include <type_traits>

namespace pixflow::integral {
namespace {

/// Columns (samples) per task of the column passes: 16 KiB of u64 per row.
constexpr std::size_t column_block = 2048;

/// Rows per strip of the integer path: at least 64, at most 256 strips (bounds the scratch).
int strip_rows(int height) { return std::max(64, (height + 255) / 256); }
int strip_count(int height) { return (height + strip_rows(height) - 1) / strip_rows(height); }

// ---- integer outputs ---------------------------------------------------------------------------

template <class T, class U, int C>
void integral_strips(const ImageView& in, const ImageView& out, U* tops, const U* band_above) {
    const std::size_t n = in.row_samples();
    const int rows = strip_rows(in.height), strips = strip_count(in.height);
    auto top = [&](int k) { return tops + std::size_t(k) * n; }; // scratch row k
    // 1. column sums of each strip but the last (no strip lies below it)
    tbb::parallel_for(0, strips - 1, [&](int k) {
        U* col = top(k);
        std::fill(col, col + n, U(0));
        for (int y = k * rows; y < (k + 1) * rows; ++y) {
            const T* src = in.row<T>(y);
#pragma omp simd
            for (std::size_t i = 0; i < n; ++i) col[i] += U(src[i]);
        }
    });
    // 2. exclusive scan down the strips, then along each row per channel
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, column_block),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                          U run[column_block] = {};
                          for (int k = 0; k < strips; ++k) {
                              U* col = top(k) + r.begin();
#pragma omp simd
                              for (std::size_t i = 0; i < r.size(); ++i) {
                                  const U v = k + 1 < strips ? col[i] : U(0);
                                  col[i] = run[i];
                                  run[i] += v;
                              }
                          }
                      });
    tbb::parallel_for(1, strips, [&](int k) {
        U* row = top(k);
        U acc[C] = {};
        for (int x = 0; x < in.width; ++x)
            for (int c = 0; c < C; ++c) row[std::size_t(x) * C + c] = acc[c] += row[std::size_t(x) * C + c];
    });
    if (band_above) // a band of a larger image: everything above the band adds to every strip's top
        tbb::parallel_for(0, strips, [&](int k) {
            U* row = top(k);
#pragma omp simd
            for (std::size_t i = 0; i < n; ++i) row[i] += band_above[i];
        });
    // 3. each strip, row by row: running sums along the row plus the row above
    tbb::parallel_for(0, strips, [&](int k) {
        const U* above = top(k);
        for (int y = k * rows; y < std::min(in.height, (k + 1) * rows); ++y) {
            const T* src = in.row<T>(y);
            U* dst = out.row<U>(y);
            U acc[C] = {};
            for (int x = 0; x < in.width; ++x)
                for (int c = 0; c < C; ++c) {
                    const std::size_t i = std::size_t(x) * C + c;
                    acc[c] += U(src[i]);
                    dst[i] = above[i] + acc[c];
                }
            above = dst;
        }
    });
}

// ---- f64 outputs -------------------------------------------------------------------------------

template <class T, int C> void row_prefix(const ImageView& in, const ImageView& out) {
    const int w = in.width;
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& r) {
        for (int y = r.begin(); y < r.end(); ++y) {
            const T* src = in.row<T>(y);
            double* dst = out.row<double>(y);
            double acc[C] = {};
            for (int x = 0; x < w; ++x)
                for (int c = 0; c < C; ++c) {
                    acc[c] += double(src[std::size_t(x) * C + c]);
                    dst[std::size_t(x) * C + c] = acc[c];
                }
        }
    });
}

void column_accumulate(const ImageView& out, const double* band_above) {
    const std::size_t n = out.row_samples();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, column_block),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                          const std::size_t i0 = r.begin(), len = r.size();
                          for (int y = band_above ? 0 : 1; y < out.height; ++y) {
                              const double* above = (y > 0 ? out.row<double>(y - 1) : band_above) + i0;
                              double* cur = out.row<double>(y) + i0;
#pragma omp simd
                              for (std::size_t i = 0; i < len; ++i) cur[i] = above[i] + cur[i];
                          }
                      });
}

} // namespace

std::size_t integral_cpu_scratch_bytes(const ImageView& in, const ImageView& out) {
    if (out.dtype == DType::f64 || in.width <= 0 || in.height <= 0) return 0;
    return std::size_t(strip_count(in.height)) * in.row_samples() * dtype_size(out.dtype);
}

void integral_cpu(const ImageView& in, const ImageView& out, void* scratch, const void* above, void* last) {
    if (in.width <= 0 || in.height <= 0) return;
    if (dtype_is_float(in.dtype) && out.dtype != DType::f64)
        throw UserError(std::string("integral: no CPU kernel from ") + dtype_name(in.dtype) + " to " +
                            dtype_name(out.dtype),
                        PF_ERR_UNSUPPORTED);
    visit_dtype<DType::u8, DType::u16, DType::u32, DType::f32>("integral", in.dtype, [&](auto in_tag) {
        using T = decltype(in_tag);
        visit_channels("integral", in.channels, [&](auto channels) {
            constexpr int C = decltype(channels)::value;
            if (out.dtype == DType::f64) {
                row_prefix<T, C>(in, out);
                return column_accumulate(out, static_cast<const double*>(above));
            }
            if constexpr (std::is_integral_v<T>) { // float inputs have f64 outputs (checked above)
                if (out.dtype == DType::u32)
                    return integral_strips<T, std::uint32_t, C>(in, out, static_cast<std::uint32_t*>(scratch),
                                                                static_cast<const std::uint32_t*>(above));
                if (out.dtype == DType::u64)
                    return integral_strips<T, std::uint64_t, C>(in, out, static_cast<std::uint64_t*>(scratch),
                                                                static_cast<const std::uint64_t*>(above));
            }
            PIXFLOW_INTERNAL_ERROR(std::string("integral: output dtype ") + dtype_name(out.dtype) +
                                   " is not u32, u64 or f64");
        });
    });
    if (last) std::memcpy(last, out.row<char>(out.height - 1), out.row_samples() * dtype_size(out.dtype));
}

} // namespace pixflow::integral
