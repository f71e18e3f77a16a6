// grayscale.cpp: CPU kernel of grayscale; TBB over rows, SIMD within a row.
//
// u8 RGB and RGBA, the common case, have an AVX2 row kernel (picked at run time when the CPU has
// AVX2; the portable loop below otherwise, and for u16, f32 and the last pixels of a row). It
// computes the same integer formula as luma<u8>, exactly, 32 pixels at a time:
//   x = 299 R + 587 G + 114 B + 500      vpmaddwd on (R, G) and (B, 1) word pairs: exact, < 2^18
//   y = x / 1000 = (x >> 3) / 125        (x >> 3) < 2^15, so it packs into 16-bit lanes
//   (x >> 3) / 125 = ((x >> 3) * 33555) >> 22   vpmulhuw then >> 6: exact for every x >> 3 below
//                                        2^15 (33555 = ceil(2^22 / 125); the error term
//                                        (x >> 3) * 0.568 / 2^22 < 1 / 125); the test
//                                        Grayscale.Avx2RowKernelMatchesTheFormulaOnEveryRgbTriple
//                                        checks all 2^24 inputs.
// RGB pixels are 3 bytes: each 128-bit half of a register takes 4 pixels (12 of the 16 bytes
// loaded) and vpshufb spreads them into (R, G) and (B, 1) word pairs.
//
// Measured (`pixflow bench pipelines/bench/grayscale-8k.toml --backend cpu`, 8192 x 8192 RGB u8,
// this project's 2-core AMD EPYC): the portable loop, which GCC leaves scalar for 3 channels
// (the stride-3 loads and the division defeat its vectoriser), 30-32 ms on a quiet machine;
// see docs/performance.md for the AVX2 kernel's figure against the memory floor.
#include "grayscale.hpp"

#include "grayscale_pixel.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define GRAYSCALE_X86 1
#include <immintrin.h>
#endif

namespace pixflow::basic {
namespace {

// The portable row: luma<T> per pixel. The channel count is a template parameter so that the
// interleaved loads have a fixed stride.
template <class T, int C> void luma_row(const T* __restrict src, T* __restrict dst, int x0, int w) {
#pragma omp simd
    for (int x = x0; x < w; ++x) dst[x] = luma<T>(src[C * x], src[C * x + 1], src[C * x + 2]);
}

#ifdef GRAYSCALE_X86
/// 8 sums 299 R + 587 G + 114 B + 500 from (R, G) and (B, 1) word pairs.
__attribute__((target("avx2"))) inline __m256i weigh(__m256i rg, __m256i b1) {
    return _mm256_add_epi32(_mm256_madd_epi16(rg, _mm256_set1_epi32(587 << 16 | 299)),
                            _mm256_madd_epi16(b1, _mm256_set1_epi32(500 << 16 | 114)));
}

/// 32 bytes of luma from four vectors of 8 sums x (pixels 0-3|4-7, 8-11|12-15, 16-19|20-23,
/// 24-27|28-31, a | being the 128-bit halves).
__attribute__((target("avx2"))) inline void store_luma(std::uint8_t* dst, __m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i m = _mm256_set1_epi16(33555);
    // (x >> 3) in 16-bit lanes, then / 125; halves: [0-3 8-11 | 4-7 12-15], [16-19 24-27 | 20-23 28-31]
    const __m256i lo = _mm256_srli_epi16(
        _mm256_mulhi_epu16(_mm256_packus_epi32(_mm256_srli_epi32(a, 3), _mm256_srli_epi32(b, 3)), m), 6);
    const __m256i hi = _mm256_srli_epi16(
        _mm256_mulhi_epu16(_mm256_packus_epi32(_mm256_srli_epi32(c, 3), _mm256_srli_epi32(d, 3)), m), 6);
    // bytes, in groups of 4 pixels: [0 2 4 6 | 1 3 5 7]; put them in order
    const __m256i y =
        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(lo, hi), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), y);
}

/// The sums of the 8 RGB pixels at p (reads p[0..27]).
__attribute__((target("avx2"))) inline __m256i rgb_sums(const std::uint8_t* p, __m256i rg, __m256i bb, __m256i one) {
    const __m256i v =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12)), 1);
    return weigh(_mm256_shuffle_epi8(v, rg), _mm256_or_si256(_mm256_shuffle_epi8(v, bb), one));
}

/// Pixels 0..n-1 of an RGB row, n a multiple of 32; reads 4 bytes past pixel n - 1 (the caller
/// leaves at least 2 pixels after).
__attribute__((target("avx2"))) void luma_rgb_avx2(const std::uint8_t* src, std::uint8_t* dst, int n) {
    // each 128-bit half holds 4 pixels in its bytes 0..11: (R, G) word pairs, and (B, 1) where
    // the 1 is ORed in after the shuffle (0x80 selects zero)
    const __m256i rg = _mm256_setr_epi8(0, -128, 1, -128, 3, -128, 4, -128, 6, -128, 7, -128, 9, -128, 10, -128, 0,
                                        -128, 1, -128, 3, -128, 4, -128, 6, -128, 7, -128, 9, -128, 10, -128);
    const __m256i bb =
        _mm256_setr_epi8(2, -128, -128, -128, 5, -128, -128, -128, 8, -128, -128, -128, 11, -128, -128, -128, 2, -128,
                         -128, -128, 5, -128, -128, -128, 8, -128, -128, -128, 11, -128, -128, -128);
    const __m256i one = _mm256_set1_epi32(1 << 16);
    for (int x = 0; x < n; x += 32) {
        const std::uint8_t* p = src + 3 * x;
        store_luma(dst + x, rgb_sums(p, rg, bb, one), rgb_sums(p + 24, rg, bb, one), rgb_sums(p + 48, rg, bb, one),
                   rgb_sums(p + 72, rg, bb, one));
    }
}

/// The sums of the 8 RGBA pixels at p: words (R, B) and (G, A) -> (G, 1).
__attribute__((target("avx2"))) inline __m256i rgba_sums(const std::uint8_t* p) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i rb = _mm256_and_si256(v, _mm256_set1_epi32(0x00ff00ff));
    const __m256i g1 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(v, 8), _mm256_set1_epi32(0xff)), _mm256_set1_epi32(1 << 16));
    return _mm256_add_epi32(_mm256_madd_epi16(rb, _mm256_set1_epi32(114 << 16 | 299)),
                            _mm256_madd_epi16(g1, _mm256_set1_epi32(500 << 16 | 587)));
}

/// Pixels 0..n-1 of an RGBA row, n a multiple of 32.
__attribute__((target("avx2"))) void luma_rgba_avx2(const std::uint8_t* src, std::uint8_t* dst, int n) {
    for (int x = 0; x < n; x += 32) {
        const std::uint8_t* p = src + 4 * x;
        store_luma(dst + x, rgba_sums(p), rgba_sums(p + 32), rgba_sums(p + 64), rgba_sums(p + 96));
    }
}

bool has_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2");
    return yes;
}
#endif

template <class T, int C> void grayscale_rows(const ImageView& in, const ImageView& out, bool portable) {
    const int w = in.width;
    int vec = 0; // pixels of each row the AVX2 kernel does
#ifdef GRAYSCALE_X86
    if constexpr (std::is_same_v<T, std::uint8_t>)
        if (!portable && has_avx2()) vec = C == 3 ? std::max(0, (w - 2) / 32 * 32) : w / 32 * 32;
#else
    (void)portable;
#endif
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& r) {
        for (int y = r.begin(); y < r.end(); ++y) {
            const T* src = in.row<T>(y);
            T* dst = out.row<T>(y);
#ifdef GRAYSCALE_X86
            if constexpr (std::is_same_v<T, std::uint8_t>)
                if (vec > 0) {
                    if constexpr (C == 3)
                        luma_rgb_avx2(src, dst, vec);
                    else
                        luma_rgba_avx2(src, dst, vec);
                }
#endif
            luma_row<T, C>(src, dst, vec, w);
        }
    });
}

} // namespace

void grayscale_cpu(const ImageView& in, const ImageView& out, bool portable) {
    visit_dtype<DType::u8, DType::u16, DType::f32>("grayscale", in.dtype, [&](auto tag) {
        using T = decltype(tag);
        visit_channels<1, 3, 4>("grayscale", in.channels, [&](auto c) {
            if constexpr (decltype(c)::value == 1)
                tbb::parallel_for(0, in.height, [&](int y) {
                    std::memcpy(out.row<T>(y), in.row<T>(y), std::size_t(in.width) * sizeof(T));
                });
            else
                grayscale_rows<T, decltype(c)::value>(in, out, portable);
        });
    });
}

} // namespace pixflow::basic
