// gauss5x5_cpu.cpp: the tap computation, the view checks and the CPU kernel of gauss5x5.
//
// Design: TBB splits the image into bands of output rows; for each output row a thread
//  1. runs the vertical pass over the 5 input rows y-2..y+2 (border-mapped; a zero row for the
//     zero border) into one float row of its own, converting samples to float on the fly,
//  2. writes the 2 border pixels on each side of that float row (border-mapped columns),
//  3. runs the horizontal pass from the float row into the output row, rounding and saturating.
// The only temporary is one float row per thread (width*channels + 4*channels floats), so the
// working set of a row stays in L2. The inner loops are `#pragma omp simd` over samples (channel
// interleaving is just an offset of `channels` samples), and the hot function is compiled twice,
// for x86-64-v3 (AVX2 + FMA) and for the baseline, picked at load time (GCC target_clones): the
// arithmetic uses std::fma to match the CUDA kernel bit for bit, and only the v3 clone has FMA
// in hardware (the baseline clone stays correct, through libm's fmaf, but is slow).
//
// Measured: 8192x8192 RGB u8 (201 MB) in ~45 ms, ~4.5 GB/s of input, on 2 cores of an AMD EPYC
// (x86-64-v3 clone, best of 5, machine shared); the vertical pass first lets each output row
// read its 5 input rows straight from the image (L1/L2) with no ring of filtered rows to keep.
#include "gauss5x5.hpp"

#include <pixflow/error.hpp>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define GAUSS5X5_X86 1
#include <immintrin.h>
#define GAUSS5X5_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GAUSS5X5_CLONES
#endif
#if defined(__GNUC__) || defined(__clang__)
#define GAUSS5X5_INLINE inline __attribute__((always_inline))
#else
#define GAUSS5X5_INLINE inline
#endif

namespace pixflow::gauss5x5 {

std::array<float, 5> gauss5x5_taps(double sigma) {
    PIXFLOW_USER_CHECK(sigma > 0.0 && std::isfinite(sigma),
                       "gauss5x5: sigma = " + std::to_string(sigma) + " must be a finite number > 0");
    double w[5];
    double sum = 0.0;
    for (int x = -2; x <= 2; ++x)
        sum += w[x + 2] = std::exp(-double(x * x) / (2.0 * sigma * sigma));
    return {float(w[0] / sum), float(w[1] / sum), float(w[2] / sum), float(w[3] / sum),
            float(w[4] / sum)};
}

void gauss5x5_check(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps,
                    bool on_host) {
    if (in.dtype != DType::u8 && in.dtype != DType::u16 && in.dtype != DType::f32)
        throw UserError(std::string("gauss5x5: dtype ") + dtype_name(in.dtype) +
                            " is not supported (u8, u16, f32)",
                        PF_ERR_UNSUPPORTED);
    if (in.channels < 1 || in.channels > 4)
        throw UserError("gauss5x5: " + std::to_string(in.channels) + " channels (1 to 4 supported)",
                        PF_ERR_UNSUPPORTED);
    PIXFLOW_INTERNAL_CHECK(out.width == in.width && out.height == in.height &&
                               out.channels == in.channels && out.dtype == in.dtype,
                           "gauss5x5: output shape or dtype differs from the input's");
    PIXFLOW_INTERNAL_CHECK(in.width >= 0 && in.height >= 0, "gauss5x5: negative image size");
    PIXFLOW_INTERNAL_CHECK(std::int64_t(in.width) * in.channels <= std::numeric_limits<int>::max() - 4096,
                           "gauss5x5: rows of " + std::to_string(in.width) + " pixels are too wide");
    PIXFLOW_INTERNAL_CHECK(in.on_host() == on_host && out.on_host() == on_host && in.device == out.device,
                           on_host ? "gauss5x5: images must be in host memory"
                                   : "gauss5x5: images must be on one CUDA device");
    PIXFLOW_INTERNAL_CHECK(taps[0] == taps[4] && taps[1] == taps[3], "gauss5x5: taps must be symmetric");
    double sum = 0.0;
    for (float w : taps) sum += w;
    PIXFLOW_INTERNAL_CHECK((taps[0] >= 0.0f && taps[1] >= 0.0f && taps[2] >= 0.0f) && std::abs(sum - 1.0) <= 1e-6,
                           "gauss5x5: taps must be non-negative and sum to 1");
    if (in.width == 0 || in.height == 0) return;
    const auto bytes = std::int64_t(in.row_bytes());
    PIXFLOW_INTERNAL_CHECK(in.data && out.data, "gauss5x5: null image data");
    PIXFLOW_INTERNAL_CHECK(in.pitch >= bytes && out.pitch >= bytes, "gauss5x5: pitch smaller than a row");
    const auto* a = static_cast<const char*>(in.data);
    const auto* b = static_cast<const char*>(out.data);
    PIXFLOW_INTERNAL_CHECK(!(a < b + (in.height - 1) * out.pitch + bytes && b < a + (in.height - 1) * in.pitch + bytes),
                           "gauss5x5: input and output overlap (in-place filtering is not supported)");
}

namespace {

struct Weights {
    float w0, w1, w2; // outer, inner, centre tap
};

// The conversion to the output dtype: round to nearest even by adding 2^23 (which leaves the
// integer in the mantissa) and subtracting it again, then saturate. The clamp is on the integer:
// a float clamp would be a branch for GCC (trapping comparisons) and stop vectorisation. The
// CUDA kernel clamps first, in float, and reads the integer off the mantissa; with integer
// bounds both orders give the same result. |o| stays far below 2^22: o is a combination of
// samples with non-negative weights summing to 1.
template <class T> GAUSS5X5_INLINE T from_float(float o) {
    if constexpr (std::is_same_v<T, float>) {
        return o;
    } else {
        const int r = int((o + 0x1p23f) - 0x1p23f);
        return T(std::min(std::max(r, 0), int(std::numeric_limits<T>::max())));
    }
}

// v[i] = fma(w0, r0[i] + r4[i], fma(w1, r1[i] + r3[i], w2 * r2[i])) for i < n.
template <class T>
GAUSS5X5_INLINE void vertical_pass(const T* __restrict r0, const T* __restrict r1,
                                   const T* __restrict r2, const T* __restrict r3,
                                   const T* __restrict r4, float* __restrict v, std::size_t n,
                                   Weights w) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
        v[i] = std::fma(w.w0, float(r0[i]) + float(r4[i]),
                        std::fma(w.w1, float(r1[i]) + float(r3[i]), w.w2 * float(r2[i])));
}

// o[i] = fma(w0, v[i-2c] + v[i+2c], fma(w1, v[i-c] + v[i+c], w2 * v[i])) for i < n; v is valid
// from -2c to n+2c-1.
template <class T>
GAUSS5X5_INLINE void horizontal_pass(const float* __restrict v, T* __restrict o, std::size_t n,
                                     std::ptrdiff_t c, Weights w) {
    const float* __restrict m2 = v - 2 * c;
    const float* __restrict m1 = v - c;
    const float* __restrict p1 = v + c;
    const float* __restrict p2 = v + 2 * c;
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
        o[i] = from_float<T>(
            std::fma(w.w0, m2[i] + p2[i], std::fma(w.w1, m1[i] + p1[i], w.w2 * v[i])));
}

struct Job {
    ImageView in, out;
    Weights w;
    Border border;
    const void* zero_row; // width*channels zero samples, for rows of a zero border
};

// Output rows y0..y1-1; `tmp` holds width*channels + 4*channels floats.
template <class T> GAUSS5X5_INLINE void blur_rows(const Job& job, int y0, int y1, float* tmp) {
    const int width = job.in.width, height = job.in.height, c = job.in.channels;
    const std::size_t n = job.in.row_samples();
    float* v = tmp + 2 * c; // v[-2c .. n+2c-1]
    for (int y = y0; y < y1; ++y) {
        const T* r[5];
        for (int k = 0; k < 5; ++k) {
            const int ry = border_index(y + k - 2, height, job.border);
            r[k] = ry < 0 ? static_cast<const T*>(job.zero_row) : job.in.row<const T>(ry);
        }
        vertical_pass<T>(r[0], r[1], r[2], r[3], r[4], v, n, job.w);
        for (int x : {-2, -1, width, width + 1}) {
            const int bx = border_index(x, width, job.border);
            for (int ch = 0; ch < c; ++ch) v[x * c + ch] = bx < 0 ? 0.0f : v[bx * c + ch];
        }
        horizontal_pass<T>(v, job.out.row<T>(y), n, c, job.w);
    }
}

#ifdef GAUSS5X5_X86
#define GAUSS5X5_AVX2 __attribute__((target("avx2,fma")))

// The AVX2 kernel for u8 keeps the row of vertical results in 4 planes: plane k holds the samples
// 4j + k, j = 0, 1, ... So splitting 32 loaded bytes into four vectors of 8 samples is masks and
// shifts (x >> 8k & 0xff per dword) rather than shuffles, which Zen has fewer units for, and the
// horizontal pass reads its neighbours i +- c, i +- 2c as plain unaligned loads from the plane of
// sample i + d. Its four planes of outputs are merged back into bytes with shifts and ors. Rows
// are done 32 samples (a block) at a time, the horizontal pass one block behind the vertical, so
// that both work in L1. The arithmetic is the generic passes', operation for operation.

/// The vertical results of one row in planes, with 4 entries of margin at both ends for the
/// border columns (samples -2c..-1 and n..n+2c-1, c <= 4).
struct Planes {
    static constexpr std::ptrdiff_t margin = 4;
    float* base;
    std::size_t stride; // floats per plane
    float* plane(int k) const { return base + std::size_t(k) * stride + margin; }
    float& at(std::ptrdiff_t i) const { return plane(int(i & 3))[i >> 2]; } // i >= -16
    /// Floats per plane: enough for n / 4 samples and the margins, and 1088 bytes modulo 4 KiB,
    /// so that the planes' entries of one sample do not alias in the 4 KiB that the store-to-load
    /// check compares (the vertical pass storing into one plane would stall the horizontal pass
    /// loading the same offset from the next: measured 1.5x slower when planes were 24608 bytes).
    static std::size_t stride_for(std::size_t n) {
        const std::size_t need = (n + 3) / 4 + 2 * margin;
        return (need + 1023 - 272) / 1024 * 1024 + 272;
    }
    static std::size_t floats(std::size_t n) { return 4 * stride_for(n); }
};

/// Vertical block b: samples 32b .. 32b + 31 of rows r[0..4] into the planes.
GAUSS5X5_AVX2 inline void vertical_block_avx2(const std::uint8_t* const* r, const Planes& v, std::size_t b,
                                              __m256 w0, __m256 w1, __m256 w2) {
    const __m256i bytes02 = _mm256_set1_epi32(0x00ff00ff), word0 = _mm256_set1_epi32(0xffff);
    __m256i even[5], odd[5];
    for (int k = 0; k < 5; ++k) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[k] + 32 * b));
        even[k] = _mm256_and_si256(x, bytes02);                        // samples 4j (low word), 4j + 2
        odd[k] = _mm256_and_si256(_mm256_srli_epi32(x, 8), bytes02);   // samples 4j + 1, 4j + 3
    }
    // r0 + r4 and r1 + r3 per 16-bit word: at most 510, no carry into the next word
    const __m256i s[2][3] = {{_mm256_add_epi32(even[0], even[4]), _mm256_add_epi32(even[1], even[3]), even[2]},
                             {_mm256_add_epi32(odd[0], odd[4]), _mm256_add_epi32(odd[1], odd[3]), odd[2]}};
    for (int k = 0; k < 4; ++k) { // plane k: word k / 2 of s[k % 2]
        const int e = k & 1, hi = k >> 1;
        __m256 f[3];
        for (int t = 0; t < 3; ++t)
            f[t] = _mm256_cvtepi32_ps(hi ? _mm256_srli_epi32(s[e][t], 16) : _mm256_and_si256(s[e][t], word0));
        _mm256_storeu_ps(v.plane(k) + 8 * b,
                         _mm256_fmadd_ps(w0, f[0], _mm256_fmadd_ps(w1, f[1], _mm256_mul_ps(w2, f[2]))));
    }
}

/// Horizontal block b: outputs 32b .. 32b + 31 from the planes (samples 32b - 2c .. 32b + 31 + 2c).
template <int c>
GAUSS5X5_AVX2 inline void horizontal_block_avx2(const Planes& v, std::uint8_t* o, std::size_t b, __m256 w0,
                                                __m256 w1, __m256 w2) {
    const __m256 magic = _mm256_set1_ps(0x1p23f);
    const __m256i byte = _mm256_set1_epi32(0xff);
    __m256i packed = _mm256_setzero_si256();
    for (int k = 0; k < 4; ++k) {
        // sample 32b + 4j + k + d is entry 8b + j + (k + d) / 4 (rounded down) of plane (k + d) % 4
        const int m2 = k - 2 * c, m1 = k - c, p1 = k + c, p2 = k + 2 * c;
        const __m256 s2 = _mm256_add_ps(_mm256_loadu_ps(v.plane(m2 & 3) + 8 * std::ptrdiff_t(b) + (m2 >> 2)),
                                        _mm256_loadu_ps(v.plane(p2 & 3) + 8 * std::ptrdiff_t(b) + (p2 >> 2)));
        const __m256 s1 = _mm256_add_ps(_mm256_loadu_ps(v.plane(m1 & 3) + 8 * std::ptrdiff_t(b) + (m1 >> 2)),
                                        _mm256_loadu_ps(v.plane(p1 & 3) + 8 * std::ptrdiff_t(b) + (p1 >> 2)));
        const __m256 r = _mm256_fmadd_ps(w0, s2, _mm256_fmadd_ps(w1, s1, _mm256_mul_ps(w2, _mm256_loadu_ps(v.plane(k) + 8 * b))));
        // r is in [0, 255.001] (non-negative taps summing to 1 +- 1e-6), so r + 2^23 rounds r to
        // the nearest integer, ties to even, into the low 8 bits of its mantissa: that integer
        // is from_float's result, clamp included (nothing to clamp)
        __m256i q = _mm256_castps_si256(_mm256_add_ps(r, magic));
        if (k < 3) q = _mm256_and_si256(q, byte);
        packed = _mm256_or_si256(packed, k ? _mm256_slli_epi32(q, 8 * k) : q);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32 * b), packed);
}

template <int c> GAUSS5X5_AVX2 void blur_rows_u8_avx2(const Job& job, int y0, int y1, float* tmp) {
    const int width = job.in.width, height = job.in.height;
    const std::ptrdiff_t n = std::ptrdiff_t(job.in.row_samples());
    const Planes v{tmp, Planes::stride_for(std::size_t(n))};
    const __m256 w0 = _mm256_set1_ps(job.w.w0), w1 = _mm256_set1_ps(job.w.w1), w2 = _mm256_set1_ps(job.w.w2);
    const std::size_t blocks = std::size_t(n) / 32;
    auto border = [&](std::initializer_list<int> xs) {
        for (int x : xs) {
            const int bx = border_index(x, width, job.border);
            for (int ch = 0; ch < c; ++ch) v.at(x * c + ch) = bx < 0 ? 0.0f : v.at(bx * c + ch);
        }
    };
    for (int y = y0; y < y1; ++y) {
        const std::uint8_t* r[5];
        for (int k = 0; k < 5; ++k) {
            const int ry = border_index(y + k - 2, height, job.border);
            r[k] = ry < 0 ? static_cast<const std::uint8_t*>(job.zero_row) : job.in.row<const std::uint8_t>(ry);
        }
        std::uint8_t* o = job.out.row<std::uint8_t>(y);
        // The horizontal pass trails by `lag` blocks: its unaligned loads straddle two of the
        // vertical pass's stores, which cannot be forwarded, so loading a block just stored waits
        // until the stores reach L1 (measured: a lag of 1 block, 0.47 ns per sample on one core;
        // 4 blocks, see the top of this file).
        constexpr std::size_t lag = 4;
        for (std::size_t b = 0; b < blocks; ++b) {
            vertical_block_avx2(r, v, b, w0, w1, w2);
            if (b == 0) border({-2, -1});
            if (b >= lag) horizontal_block_avx2<c>(v, o, b - lag, w0, w1, w2);
        }
        for (std::ptrdiff_t i = std::ptrdiff_t(blocks) * 32; i < n; ++i) // the rest, as vertical_pass
            v.at(i) = std::fma(job.w.w0, float(r[0][i]) + float(r[4][i]),
                               std::fma(job.w.w1, float(r[1][i]) + float(r[3][i]), job.w.w2 * float(r[2][i])));
        if (blocks == 0) border({-2, -1});
        border({width, width + 1});
        for (std::size_t b = blocks > lag ? blocks - lag : 0; b < blocks; ++b)
            horizontal_block_avx2<c>(v, o, b, w0, w1, w2);
        for (std::ptrdiff_t i = std::ptrdiff_t(blocks) * 32; i < n; ++i) // the rest, as horizontal_pass
            o[i] = from_float<std::uint8_t>(std::fma(job.w.w0, v.at(i - 2 * c) + v.at(i + 2 * c),
                                                     std::fma(job.w.w1, v.at(i - c) + v.at(i + c), job.w.w2 * v.at(i))));
    }
}

GAUSS5X5_AVX2 void blur_rows_u8_avx2_c1(const Job& j, int y0, int y1, float* t) { blur_rows_u8_avx2<1>(j, y0, y1, t); }
GAUSS5X5_AVX2 void blur_rows_u8_avx2_c2(const Job& j, int y0, int y1, float* t) { blur_rows_u8_avx2<2>(j, y0, y1, t); }
GAUSS5X5_AVX2 void blur_rows_u8_avx2_c3(const Job& j, int y0, int y1, float* t) { blur_rows_u8_avx2<3>(j, y0, y1, t); }
GAUSS5X5_AVX2 void blur_rows_u8_avx2_c4(const Job& j, int y0, int y1, float* t) { blur_rows_u8_avx2<4>(j, y0, y1, t); }

bool has_avx2_fma() {
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
}
#endif

GAUSS5X5_CLONES void blur_rows_u8(const Job& job, int y0, int y1, float* tmp) {
    blur_rows<std::uint8_t>(job, y0, y1, tmp);
}
GAUSS5X5_CLONES void blur_rows_u16(const Job& job, int y0, int y1, float* tmp) {
    blur_rows<std::uint16_t>(job, y0, y1, tmp);
}
GAUSS5X5_CLONES void blur_rows_f32(const Job& job, int y0, int y1, float* tmp) {
    blur_rows<float>(job, y0, y1, tmp);
}

} // namespace

void gauss5x5_cpu(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps,
                  Border border) {
    gauss5x5_check(in, out, taps, /*on_host=*/true);
    if (in.width == 0 || in.height == 0) return;
    const std::size_t n = in.row_samples();
    std::vector<char> zeros(border == Border::zero ? in.row_bytes() : 0);
    const Job job{in, out, Weights{taps[0], taps[1], taps[2]}, border, zeros.data()};
    auto* rows = in.dtype == DType::u8    ? &blur_rows_u8
                 : in.dtype == DType::u16 ? &blur_rows_u16
                                          : &blur_rows_f32;
#ifdef GAUSS5X5_X86
    bool planes = false;
    if (in.dtype == DType::u8 && has_avx2_fma()) {
        planes = true;
        rows = in.channels == 1   ? &blur_rows_u8_avx2_c1
               : in.channels == 2 ? &blur_rows_u8_avx2_c2
               : in.channels == 3 ? &blur_rows_u8_avx2_c3
                                  : &blur_rows_u8_avx2_c4;
    }
#endif
    std::size_t tmp_size = n + 4 * std::size_t(in.channels);
#ifdef GAUSS5X5_X86
    if (planes) tmp_size = Planes::floats(n);
#endif
    // Bands of at least ~64k samples, so that small images stay on one thread.
    const int grain = int(std::max<std::size_t>(1, (std::size_t(1) << 16) / n));
    if (std::size_t(in.height) <= std::size_t(grain)) {
        std::vector<float> tmp(tmp_size);
        rows(job, 0, in.height, tmp.data());
        return;
    }
    tbb::enumerable_thread_specific<std::vector<float>> tmps(
        [&] { return std::vector<float>(tmp_size); });
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height, grain),
                      [&](const tbb::blocked_range<int>& r) {
                          rows(job, r.begin(), r.end(), tmps.local().data());
                      });
}

} // namespace pixflow::gauss5x5
