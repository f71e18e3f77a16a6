// jpeg_cpu.cpp: the CPU kernels of the JPEG transform chain (see jpeg.hpp).
//
// Design: TBB splits the image into bands of block rows (8 pixel rows); a thread takes one 8x8
// block at a time, all channels, into float[C][8][8] on its stack, and transforms it with the
// "lane form" of the 8-point transform: every output line is computed for 8 lanes at once
// (`#pragma omp simd`, one AVX2 register), lane l being the l-th line of the block, so each
// lane runs exactly the scalar chain of jpeg_math.hpp that a CUDA thread runs. The transform
// runs along the first index, so a pass along rows needs the block transposed (an AVX 8x8
// transpose, 24 shuffles):
//
//   dct8x8:     load rows -> transpose -> row pass -> transpose -> column pass -> store rows
//   idct8x8:    load rows -> column pass -> transpose -> row pass -> transpose -> store rows
//   roundtrip:  the dct8x8 steps, quantize + dequantize on the block, the idct8x8 steps
//
// quantize and dequantize are element-wise over rows, the table row expanded to 8 C samples.
//
// The hot functions are compiled twice, for x86-64-v3 (AVX2 + FMA) and for the baseline, picked
// at load time (GCC target_clones): the arithmetic is std::fma to match CUDA bit for bit, and only
// the v3 clone has FMA in hardware (the baseline one is correct, through libm's fmaf, but slow).
//
// Measured with `pixflow bench --backend cpu --repeat 5` on 8192 x 8192 u8 gray, 2 shared cores
// of an AMD EPYC (x86-64-v3 clone; the machine was busy, so +-30%): dct8x8 ~70 ms, quantize
// ~75 ms, dequantize ~13 ms, idct8x8 ~57 ms, fused jpeg_roundtrip8x8 ~168 ms. Compute-bound
// (5-8x the memory floor): fusing saves the memory traffic but not the arithmetic, so the fused
// node is only ~1.3x faster than the four on the CPU.
#include "jpeg.hpp"
#include "jpeg_math.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define JPEG_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define JPEG_CLONES
#endif
#if defined(__GNUC__) || defined(__clang__)
#define JPEG_INLINE inline __attribute__((always_inline))
#else
#define JPEG_INLINE inline
#endif
#if defined(__clang__)
#define JPEG_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define JPEG_UNROLL _Pragma("GCC unroll 8")
#else
#define JPEG_UNROLL
#endif

namespace pixflow::jpeg {

namespace {

using Block = float[8][8];

// ---- block transforms: the transform runs along the first index, lanes along the second -----

/// out[u][l] = sum_k K[u][k] in[k][l], in the order of fdct8 (jpeg_math.hpp).
JPEG_INLINE void fdct_lanes(const Block& in, Block& out) {
    float s[4][8], d[4][8];
    JPEG_UNROLL
    for (int i = 0; i < 4; ++i) {
#pragma omp simd
        for (int l = 0; l < 8; ++l) {
            s[i][l] = add_rn(in[i][l], in[7 - i][l]);
            d[i][l] = sub_rn(in[i][l], in[7 - i][l]);
        }
    }
    JPEG_UNROLL
    for (int u = 0; u < 8; ++u) {
        const float(&e)[4][8] = (u & 1) ? d : s;
#pragma omp simd
        for (int l = 0; l < 8; ++l) out[u][l] = fdct_out(u, e[0][l], e[1][l], e[2][l], e[3][l]);
    }
}

/// out[x][l] = sum_u K[u][x] in[u][l], in the order of idct8 (jpeg_math.hpp).
JPEG_INLINE void idct_lanes(const Block& in, Block& out) {
    JPEG_UNROLL
    for (int x = 0; x < 4; ++x) {
#pragma omp simd
        for (int l = 0; l < 8; ++l) {
            const float e = idct_even(x, in[0][l], in[2][l], in[4][l], in[6][l]);
            const float o = idct_odd(x, in[1][l], in[3][l], in[5][l], in[7][l]);
            out[x][l] = add_rn(e, o);
            out[7 - x][l] = sub_rn(e, o);
        }
    }
}

/// b = a^T. With GCC or clang: the classic AVX 8x8 transpose (unpack, shuffle, lane permute;
/// 24 shuffles), written with vector extensions so the baseline clone still compiles (to SSE).
JPEG_INLINE void transpose(const Block& a, Block& b) {
#if defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 12)
    typedef float V __attribute__((vector_size(32)));
    V r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) std::memcpy(&r[i], a[i], sizeof(V));
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; ++j) {
            u[i + 2 * j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + 2 * j + 1] = __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int i = 0; i < 4; ++i) {
        const V lo = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        const V hi = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
        std::memcpy(b[i], &lo, sizeof(V));
        std::memcpy(b[i + 4], &hi, sizeof(V));
    }
#else
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) b[j][i] = a[i][j];
#endif
}

// ---- one 8x8 block, all C channels -------------------------------------------------------

/// a[c][y][x] = the level-shifted sample (x0 + x, y0 + y) of channel c, the last column and row
/// repeated beyond the image.
template <class T, int C> JPEG_INLINE void load_block(const ImageView& in, int x0, int y0, Block (&a)[C]) {
    const bool inside = x0 + 8 <= in.width;
    for (int y = 0; y < 8; ++y) {
        const T* row = in.row<const T>(std::min(y0 + y, in.height - 1));
        if (inside) {
            const T* p = row + std::size_t(x0) * C;
            for (int x = 0; x < 8; ++x)
                for (int c = 0; c < C; ++c) a[c][y][x] = level_shift(p[x * C + c]);
        } else {
            for (int x = 0; x < 8; ++x) {
                const T* p = row + std::size_t(std::min(x0 + x, in.width - 1)) * C;
                for (int c = 0; c < C; ++c) a[c][y][x] = level_shift(p[c]);
            }
        }
    }
}

/// v[i] = from_transform<T>(s[i]) for the 64 samples of a block, 8 (u8: 32) at a time.
template <class T> JPEG_INLINE void convert_block(const float* __restrict s, T* __restrict v) {
#pragma omp simd
    for (int i = 0; i < 64; ++i) v[i] = from_transform<T>(s[i]);
}

/// The block's samples at (x0, y0) from b[c][y][x] (as T), cropped to the image.
template <class T, int C> JPEG_INLINE void store_block(const ImageView& out, int x0, int y0, const Block (&b)[C]) {
    const int nx = std::min(8, out.width - x0), ny = std::min(8, out.height - y0);
    alignas(32) T v[C][64];
    for (int c = 0; c < C; ++c) convert_block<T>(&b[c][0][0], v[c]);
    for (int y = 0; y < ny; ++y) {
        T* p = out.row<T>(y0 + y) + std::size_t(x0) * C;
        if (nx == 8) {
            for (int x = 0; x < 8; ++x)
                for (int c = 0; c < C; ++c) p[x * C + c] = v[c][y * 8 + x];
        } else {
            for (int x = 0; x < nx; ++x)
                for (int c = 0; c < C; ++c) p[x * C + c] = v[c][y * 8 + x];
        }
    }
}

/// f[c][v][u] = the coefficients of the block at (x0, y0) (whole blocks only).
template <int C> JPEG_INLINE void load_coeffs(const ImageView& in, int x0, int y0, Block (&f)[C]) {
    for (int y = 0; y < 8; ++y) {
        const float* p = in.row<const float>(y0 + y) + std::size_t(x0) * C;
        for (int x = 0; x < 8; ++x)
            for (int c = 0; c < C; ++c) f[c][y][x] = p[x * C + c];
    }
}

/// Forward transform of a[c][y][x] into f[c][v][u]: rows, then columns.
template <int C> JPEG_INLINE void forward(const Block (&a)[C], Block (&f)[C]) {
    for (int c = 0; c < C; ++c) {
        Block t, r;
        transpose(a[c], r);  // r[x][y]
        fdct_lanes(r, t);    // t[u][y]: the row transform of every row
        transpose(t, r);     // r[y][u]
        fdct_lanes(r, f[c]); // f[v][u]: the column transform
    }
}

/// Inverse transform of f[c][v][u] into a[c][y][x]: columns, then rows.
template <int C> JPEG_INLINE void inverse(const Block (&f)[C], Block (&a)[C]) {
    for (int c = 0; c < C; ++c) {
        Block t, r;
        idct_lanes(f[c], t); // t[y][u]: the column transform of every column
        transpose(t, r);     // r[u][y]
        idct_lanes(r, t);    // t[x][y]: the row transform
        transpose(t, a[c]);  // a[y][x]
    }
}

/// Zeros the marker samples of a coefficient image in rows y0..y1-1: columns beyond the whole
/// blocks, and whole rows beyond them.
template <class T> JPEG_INLINE void zero_markers(const ImageView& out, int y0, int y1) {
    const std::size_t C = std::size_t(out.channels);
    const std::size_t blocks = std::size_t(coeff_blocks(out.width)) * 8 * C;
    const std::size_t all = std::size_t(out.width) * C;
    const int rows = coeff_blocks(out.height) * 8;
    for (int y = y0; y < y1; ++y) {
        T* p = out.row<T>(y);
        const std::size_t from = y < rows ? blocks : 0;
        std::memset(static_cast<void*>(p + from), 0, (all - from) * sizeof(T));
    }
}

// ---- bands: block rows by0..by1-1 -------------------------------------------------------------

template <class T, int C> JPEG_INLINE void dct_band(const ImageView& in, const ImageView& out, int by0, int by1) {
    const int nbx = (in.width + 7) / 8, nby = (in.height + 7) / 8;
    for (int by = by0; by < by1; ++by) {
        for (int bx = 0; bx < nbx; ++bx) {
            Block a[C], f[C];
            load_block<T, C>(in, 8 * bx, 8 * by, a);
            forward<C>(a, f);
            store_block<float, C>(out, 8 * bx, 8 * by, f);
        }
        const int last = by + 1 == nby ? out.height : 8 * by + 8;
        zero_markers<float>(out, 8 * by, last);
    }
}

template <class T, int C> JPEG_INLINE void idct_band(const ImageView& in, const ImageView& out, int by0, int by1) {
    const int nbx = coeff_blocks(in.width);
    for (int by = by0; by < by1; ++by)
        for (int bx = 0; bx < nbx; ++bx) {
            Block f[C], a[C];
            load_coeffs<C>(in, 8 * bx, 8 * by, f);
            inverse<C>(f, a);
            store_block<T, C>(out, 8 * bx, 8 * by, a);
        }
}

template <class Ti, class To, int C>
JPEG_INLINE void roundtrip_band(const ImageView& in, const ImageView& out, const QuantTable& q, int by0, int by1) {
    const int nbx = (in.width + 7) / 8;
    for (int by = by0; by < by1; ++by)
        for (int bx = 0; bx < nbx; ++bx) {
            Block a[C], f[C];
            load_block<Ti, C>(in, 8 * bx, 8 * by, a);
            forward<C>(a, f);
            for (int c = 0; c < C; ++c)
                for (int v = 0; v < 8; ++v) {
#pragma omp simd
                    for (int u = 0; u < 8; ++u)
                        f[c][v][u] = quantize_dequantize(f[c][v][u], q.q[v * 8 + u], q.r[v * 8 + u]);
                }
            inverse<C>(f, a);
            store_block<To, C>(out, 8 * bx, 8 * by, a);
        }
}

/// quantize (f32 -> i16) or dequantize (i16 -> f32) of rows y0..y1-1; C channels.
template <int C, class Ti, class To>
JPEG_INLINE void quant_rows(const ImageView& in, const ImageView& out, const QuantTable& q, int y0, int y1) {
    const int nbx = coeff_blocks(in.width), rows = coeff_blocks(in.height) * 8;
    for (int y = y0; y < std::min(y1, rows); ++y) {
        float qv[8 * C], rv[8 * C]; // the table row, one entry per sample of a block row
        for (int j = 0; j < 8 * C; ++j) {
            qv[j] = q.q[(y % 8) * 8 + j / C];
            rv[j] = q.r[(y % 8) * 8 + j / C];
        }
        const Ti* src = in.row<const Ti>(y);
        To* dst = out.row<To>(y);
        for (int bx = 0; bx < nbx; ++bx) {
            const Ti* s = src + std::size_t(bx) * 8 * C;
            To* d = dst + std::size_t(bx) * 8 * C;
#pragma omp simd
            for (int j = 0; j < 8 * C; ++j) {
                if constexpr (std::is_same_v<To, std::int16_t>)
                    d[j] = quantize_sample(s[j], qv[j], rv[j]);
                else
                    d[j] = dequantize_sample(s[j], qv[j]);
            }
        }
    }
    zero_markers<To>(out, y0, y1);
}

// The clones: one function per dtype combination, picked at load time. The channel switch is
// written out inside each (a lambda would be a separate function, compiled without the clone's
// target: no FMA).
#define JPEG_BAND(NAME, CALL)                                                                                          \
    JPEG_CLONES void NAME(const ImageView& in, const ImageView& out, const QuantTable& q, int a, int b) {              \
        (void)q;                                                                                                       \
        switch (in.channels) {                                                                                         \
        case 1: CALL(1); break;                                                                                        \
        case 2: CALL(2); break;                                                                                        \
        case 3: CALL(3); break;                                                                                        \
        default: CALL(4); break;                                                                                       \
        }                                                                                                              \
    }
#define DCT_U8(C) dct_band<std::uint8_t, C>(in, out, a, b)
#define DCT_F32(C) dct_band<float, C>(in, out, a, b)
#define IDCT_U8(C) idct_band<std::uint8_t, C>(in, out, a, b)
#define IDCT_F32(C) idct_band<float, C>(in, out, a, b)
#define QUANT(C) quant_rows<C, float, std::int16_t>(in, out, q, a, b)
#define DEQUANT(C) quant_rows<C, std::int16_t, float>(in, out, q, a, b)
#define RT_U8_U8(C) roundtrip_band<std::uint8_t, std::uint8_t, C>(in, out, q, a, b)
#define RT_U8_F32(C) roundtrip_band<std::uint8_t, float, C>(in, out, q, a, b)
#define RT_F32_U8(C) roundtrip_band<float, std::uint8_t, C>(in, out, q, a, b)
#define RT_F32_F32(C) roundtrip_band<float, float, C>(in, out, q, a, b)
JPEG_BAND(dct_band_u8, DCT_U8)
JPEG_BAND(dct_band_f32, DCT_F32)
JPEG_BAND(idct_band_u8, IDCT_U8)
JPEG_BAND(idct_band_f32, IDCT_F32)
JPEG_BAND(quantize_band, QUANT)
JPEG_BAND(dequantize_band, DEQUANT)
JPEG_BAND(roundtrip_band_u8_u8, RT_U8_U8)
JPEG_BAND(roundtrip_band_u8_f32, RT_U8_F32)
JPEG_BAND(roundtrip_band_f32_u8, RT_F32_U8)
JPEG_BAND(roundtrip_band_f32_f32, RT_F32_F32)
#undef DCT_U8
#undef DCT_F32
#undef IDCT_U8
#undef IDCT_F32
#undef QUANT
#undef DEQUANT
#undef RT_U8_U8
#undef RT_U8_F32
#undef RT_F32_U8
#undef RT_F32_F32
#undef JPEG_BAND

/// Runs f(lo, hi) over [0, n) in parallel, in ranges of about `grain` (small work: one thread).
template <class F> void parallel(int n, int grain, F&& f) {
    grain = std::max(1, grain);
    if (n <= grain) {
        f(0, n);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int>(0, n, grain),
                      [&](const tbb::blocked_range<int>& r) { f(r.begin(), r.end()); });
}

/// Block rows per task: about 64k samples of work each.
int band_grain(const ImageView& im) {
    return int(std::max<std::int64_t>(1, (std::int64_t(1) << 16) / (std::int64_t(im.width) * im.channels * 8)));
}

} // namespace

void dct8x8_cpu(const ImageView& in, const ImageView& out) {
    check_dct(in, out, /*on_host=*/true);
    auto* band = in.dtype == DType::u8 ? &dct_band_u8 : &dct_band_f32;
    const QuantTable none{};
    parallel((in.height + 7) / 8, band_grain(in), [&](int a, int b) { band(in, out, none, a, b); });
}

void quantize_cpu(const ImageView& in, const ImageView& out, const QuantTable& q) {
    check_quantize(in, out, /*on_host=*/true);
    parallel(in.height, 8 * band_grain(in), [&](int a, int b) { quantize_band(in, out, q, a, b); });
}

void dequantize_cpu(const ImageView& in, const ImageView& out, const QuantTable& q) {
    check_dequantize(in, out, /*on_host=*/true);
    parallel(in.height, 8 * band_grain(in), [&](int a, int b) { dequantize_band(in, out, q, a, b); });
}

void idct8x8_cpu(const ImageView& in, const ImageView& out) {
    check_idct(in, out, /*on_host=*/true);
    auto* band = out.dtype == DType::u8 ? &idct_band_u8 : &idct_band_f32;
    const QuantTable none{};
    parallel(coeff_blocks(in.height), band_grain(in), [&](int a, int b) { band(in, out, none, a, b); });
}

void roundtrip8x8_cpu(const ImageView& in, const ImageView& out, const QuantTable& q) {
    check_roundtrip(in, out, /*on_host=*/true);
    const bool u8_in = in.dtype == DType::u8, u8_out = out.dtype == DType::u8;
    auto* band = u8_in ? (u8_out ? &roundtrip_band_u8_u8 : &roundtrip_band_u8_f32)
                       : (u8_out ? &roundtrip_band_f32_u8 : &roundtrip_band_f32_f32);
    parallel((in.height + 7) / 8, band_grain(in), [&](int a, int b) { band(in, out, q, a, b); });
}

} // namespace pixflow::jpeg
