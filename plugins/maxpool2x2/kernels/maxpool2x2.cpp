// maxpool2x2.cpp: CPU kernel of maxpool2x2; TBB over output rows, SIMD along a row.
//
// u8 images, the common case, have AVX2 row kernels (picked at run time when the CPU has AVX2;
// the portable loop otherwise, for the other dtypes and for the last pixels of a row). For
// integers the maximum of a window does not depend on the order of the comparisons, so a row is
// done as: m = max(top, bottom) and max(m, m one pixel (C bytes) further on), vertically and
// horizontally in whole vectors, which leaves each window's maximum at the bytes of its left
// pixel; then those bytes are packed together: even bytes, words or dwords for 1, 2 or 4
// channels (pack instructions), and for 3 channels bytes 0-2 of every 6, gathered by vpshufb
// from the six 16-byte pieces of 96 input bytes into three of output.
//
// Measured (`pixflow bench pipelines/bench/maxpool2x2-8k.toml --backend cpu`, 8192 x 8192 RGB
// u8, this project's 2-core AMD EPYC): the portable loop, which GCC leaves scalar for 3 channels
// (a compare and a cmov per sample), 23.5 ms on a quiet machine, 3.0x the memory floor; see
// docs/performance.md for the AVX2 kernels' figures.
#include "maxpool2x2.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define MAXPOOL_X86 1
#include <immintrin.h>
#endif

namespace pixflow::maxpool2x2 {
namespace {

#ifdef MAXPOOL_X86
#define MAXPOOL_AVX2 __attribute__((target("avx2")))

/// Asks for the 128 bytes 2 KiB past p: the two input rows are two streams, and the hardware
/// prefetcher alone is late on them (per core, 8192 x 2048 RGB: 0.053-0.057 ns per input sample
/// without, 0.041 with).
inline void prefetch_ahead(const std::uint8_t* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p) + 2048;
    _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(a + 64), _MM_HINT_T0);
}

MAXPOOL_AVX2 inline __m256i load32(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
MAXPOOL_AVX2 inline __m128i load16(const std::uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

/// max(top, bottom) and that S bytes (one pixel) further on, for the 32 bytes at t and b.
template <int S> MAXPOOL_AVX2 inline __m256i pair_max32(const std::uint8_t* t, const std::uint8_t* b) {
    return _mm256_max_epu8(_mm256_max_epu8(load32(t), load32(b)), _mm256_max_epu8(load32(t + S), load32(b + S)));
}

/// Output pixels 0..n-1 of one output row, C = 1, 2 or 4 channels, n * C a multiple of 32: each
/// step reads 64 + C bytes of both input rows and writes 32. The window maxima sit at the bytes
/// of each even input pixel; pack keeps those and drops the odd pixels' bytes.
template <int C>
MAXPOOL_AVX2 void pool_u8_pow2(const std::uint8_t* t, const std::uint8_t* b, std::uint8_t* dst, int n) {
    for (int o = 0; o < n * C; o += 32) {
        if (o % 64 == 0) prefetch_ahead(t + 2 * o), prefetch_ahead(b + 2 * o);
        const __m256i u = pair_max32<C>(t + 2 * o, b + 2 * o), v = pair_max32<C>(t + 2 * o + 32, b + 2 * o + 32);
        __m256i packed;
        if constexpr (C == 4) // the low dword of each qword
            packed = _mm256_castps_si256(
                _mm256_shuffle_ps(_mm256_castsi256_ps(u), _mm256_castsi256_ps(v), _MM_SHUFFLE(2, 0, 2, 0)));
        else if constexpr (C == 2) // the low word of each dword
            packed = _mm256_packus_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0xffff)),
                                         _mm256_and_si256(v, _mm256_set1_epi32(0xffff)));
        else // the low byte of each word
            packed = _mm256_packus_epi16(_mm256_and_si256(u, _mm256_set1_epi16(0xff)),
                                         _mm256_and_si256(v, _mm256_set1_epi16(0xff)));
        // these work per 128-bit half, [u0 v0 | u1 v1] in qwords: put them in order
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + o), _mm256_permute4x64_epi64(packed, 0xD8));
    }
}

/// vpshufb masks for 3 channels: output piece k (16 bytes, k = 0..2) takes its byte i from
/// input piece h (16 bytes of the window maxima, h = 0..5) at mask[k][h][i], 0x80 (none) else.
/// Output byte o is channel o % 3 of window o / 3, whose maximum sits at input byte 6 (o / 3) + o % 3.
constexpr std::array<std::array<std::array<std::int8_t, 16>, 6>, 3> rgb_masks() {
    std::array<std::array<std::array<std::int8_t, 16>, 6>, 3> m{};
    for (int k = 0; k < 3; ++k)
        for (int h = 0; h < 6; ++h)
            for (int i = 0; i < 16; ++i) {
                const int o = 16 * k + i, p = 6 * (o / 3) + o % 3;
                m[k][h][i] = p / 16 == h ? std::int8_t(p % 16) : std::int8_t(-128);
            }
    return m;
}
constexpr auto rgb_mask = rgb_masks();

/// Output pixels 0..n-1 of one output row, 3 channels, n a multiple of 16: 96 input bytes per
/// row give 48 output bytes; reads up to 3 bytes past input byte 6n - 1.
MAXPOOL_AVX2 void pool_u8_rgb(const std::uint8_t* t, const std::uint8_t* b, std::uint8_t* dst, int n) {
    for (int x = 0; x < n; x += 16) {
        const std::uint8_t* tt = t + 6 * x;
        const std::uint8_t* bb = b + 6 * x;
        prefetch_ahead(tt), prefetch_ahead(bb);
        __m128i m[6];
        for (int h = 0; h < 6; ++h)
            m[h] = _mm_max_epu8(_mm_max_epu8(load16(tt + 16 * h), load16(bb + 16 * h)),
                                _mm_max_epu8(load16(tt + 16 * h + 3), load16(bb + 16 * h + 3)));
        // output piece k draws on input pieces 2k - (k > 0) .. 2k + 1 (see rgb_masks)
        for (int k = 0; k < 3; ++k) {
            __m128i o = _mm_setzero_si128();
            for (int h = k == 0 ? 0 : 2 * k - 1; h <= 2 * k + 1; ++h)
                o = _mm_or_si128(o, _mm_shuffle_epi8(m[h], load16(reinterpret_cast<const std::uint8_t*>(
                                                               rgb_mask[std::size_t(k)][std::size_t(h)].data()))));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 6 * x / 2 + 16 * k), o);
        }
    }
}

bool has_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2");
    return yes;
}

/// Output pixels of a row that the AVX2 kernel for C channels does (0: none, or no AVX2): whole
/// steps (16 pixels for C = 3, 32 / C else), and none whose loads, one pixel (C bytes) past the
/// last window, would leave the row of `width` input pixels: n <= (width - 1) / 2.
int avx2_pixels(int c, int width) {
    if (!has_avx2()) return 0;
    const int step = c == 3 ? 16 : 32 / c;
    return (width - 1) / 2 / step * step;
}
#endif

// C is a template parameter so that the window's sample offsets are constants and the loop over
// output pixels vectorises (interleaved loads of a fixed group size).
template <class T, int C> void pool_rows(const ImageView& in, const ImageView& out, bool portable) {
    const int ow = out.width;
    int vec = 0; // output pixels of each row the AVX2 kernel does
#ifdef MAXPOOL_X86
    if constexpr (std::is_same_v<T, std::uint8_t>) vec = portable ? 0 : avx2_pixels(C, in.width);
#else
    (void)portable;
#endif
    tbb::parallel_for(tbb::blocked_range<int>(0, out.height), [&](const tbb::blocked_range<int>& r) {
        for (int oy = r.begin(); oy < r.end(); ++oy) {
            const T* top = in.row<T>(2 * oy);
            const T* bottom = in.row<T>(2 * oy + 1);
            T* dst = out.row<T>(oy);
#ifdef MAXPOOL_X86
            if constexpr (std::is_same_v<T, std::uint8_t>)
                if (vec > 0) {
                    if constexpr (C == 3)
                        pool_u8_rgb(top, bottom, dst, vec);
                    else
                        pool_u8_pow2<C>(top, bottom, dst, vec);
                }
#endif
#pragma omp simd
            for (int ox = vec; ox < ow; ++ox)
                for (int c = 0; c < C; ++c) {
                    const std::size_t i = std::size_t(2 * ox) * C + c;
                    dst[std::size_t(ox) * C + c] = pool_window(top[i], top[i + C], bottom[i], bottom[i + C]);
                }
        }
    });
}

} // namespace

void check_size(const ImageView& in) {
    PIXFLOW_USER_CHECK(in.width >= 2 && in.height >= 2, "maxpool2x2 needs at least 2x2 pixels; got " +
                                                            std::to_string(in.width) + "x" + std::to_string(in.height));
}

void maxpool2x2_cpu(const ImageView& in, const ImageView& out, bool portable) {
    check_size(in);
    visit_dtype(in.dtype, [&](auto tag) {
        visit_channels("maxpool2x2", in.channels,
                       [&](auto c) { pool_rows<decltype(tag), decltype(c)::value>(in, out, portable); });
    });
}

} // namespace pixflow::maxpool2x2
