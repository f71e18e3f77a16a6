// jpeg_math.hpp: the arithmetic of the JPEG transform chain, shared by the CPU (.cpp) and CUDA
// (.cu) kernels, so that both backends, and the fused and the unfused chain, compute the same
// bits. Everything here is a scalar function of one lane: the CPU kernels call it inside
// `#pragma omp simd` loops (8 columns at once), the CUDA kernels once per thread.
//
// The transform: orthonormal 8-point DCT-II, K[u][x] = c(u)/2 cos((2x+1) u pi/16), c(0) = 1/sqrt2,
// c(u > 0) = 1; K is orthogonal, so the inverse is K^T.
//
//   forward (one line a[0..7] -> F[0..7]):   s_i = a_i + a_(7-i),  d_i = a_i - a_(7-i)  (i < 4)
//       F[u] = fma(K[u][3], e_3, fma(K[u][2], e_2, fma(K[u][1], e_1, K[u][0] * e_0)))
//       with e = s for even u, e = d for odd u (K[u][7-i] = +-K[u][i]).
//   inverse (F[0..7] -> a[0..7]), for x < 4:
//       E_x = fma(K[6][x], F6, fma(K[4][x], F4, fma(K[2][x], F2, K[0][x] * F0)))
//       O_x = fma(K[7][x], F7, fma(K[5][x], F5, fma(K[3][x], F3, K[1][x] * F1)))
//       a_x = E_x + O_x,  a_(7-x) = E_x - O_x.
//   2D forward: every row of the block first, then every column. 2D inverse: every column first,
//   then every row. (The fused chain does exactly this; the order is part of the definition.)
//
// Every operation is rounded on its own: fma is a single-rounding fused multiply-add (std::fma /
// __fmaf_rn), the rest use the _rn intrinsics on the device (which nvcc never contracts) and plain
// operators on the host, compiled with FLOAT exact (-ffp-contract=off; plugins/jpeg/CMakeLists.txt).
//
// The K values are float(c(u)/2 cos(...)) computed in double (test/jpeg_test.cpp checks them);
// they are compile-time constants, so they end up as instruction immediates on both sides.
#pragma once

#include <pixflow/image.hpp>

#include <math.h>

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <bit>
#include <cmath>
#endif

namespace pixflow::jpeg {

// ---- rounding-explicit float operations ----------------------------------------------------

PIXFLOW_HD inline float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}
PIXFLOW_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
PIXFLOW_HD inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
PIXFLOW_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
PIXFLOW_HD inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// ---- the DCT matrix ------------------------------------------------------------------------

/// K[u][x] for x < 4 (the other half follows by symmetry). Constant arguments fold to a literal.
PIXFLOW_HD constexpr float dct_k(int u, int x) {
    constexpr float c1 = 0x1.f6297cp-2f, c2 = 0x1.d906bcp-2f, c3 = 0x1.a9b662p-2f, c4 = 0x1.6a09e6p-2f,
                    c5 = 0x1.1c73b4p-2f, c6 = 0x1.87de2ap-3f, c7 = 0x1.8f8b84p-4f;
    switch (u * 4 + x) {
    case 0:
    case 1:
    case 2:
    case 3: return c4;
    case 4: return c1;
    case 5: return c3;
    case 6: return c5;
    case 7: return c7;
    case 8: return c2;
    case 9: return c6;
    case 10: return -c6;
    case 11: return -c2;
    case 12: return c3;
    case 13: return -c7;
    case 14: return -c1;
    case 15: return -c5;
    case 16: return c4;
    case 17: return -c4;
    case 18: return -c4;
    case 19: return c4;
    case 20: return c5;
    case 21: return -c1;
    case 22: return c7;
    case 23: return c3;
    case 24: return c6;
    case 25: return -c2;
    case 26: return c2;
    case 27: return -c6;
    case 28: return c7;
    case 29: return -c5;
    case 30: return c3;
    case 31: return -c1;
    default: return 0.0f;
    }
}

/// fma(k3, e3, fma(k2, e2, fma(k1, e1, k0 * e0))): every transform output is one such chain.
PIXFLOW_HD inline float chain4(float k0, float e0, float k1, float e1, float k2, float e2, float k3, float e3) {
    return fma_rn(k3, e3, fma_rn(k2, e2, fma_rn(k1, e1, mul_rn(k0, e0))));
}
/// One output of the forward transform: F[u] from e_0..e_3 (the sums s for even u, the
/// differences d for odd u).
PIXFLOW_HD inline float fdct_out(int u, float e0, float e1, float e2, float e3) {
    return chain4(dct_k(u, 0), e0, dct_k(u, 1), e1, dct_k(u, 2), e2, dct_k(u, 3), e3);
}
/// E_x of the inverse transform (even coefficients).
PIXFLOW_HD inline float idct_even(int x, float f0, float f2, float f4, float f6) {
    return chain4(dct_k(0, x), f0, dct_k(2, x), f2, dct_k(4, x), f4, dct_k(6, x), f6);
}
/// O_x of the inverse transform (odd coefficients).
PIXFLOW_HD inline float idct_odd(int x, float f1, float f3, float f5, float f7) {
    return chain4(dct_k(1, x), f1, dct_k(3, x), f3, dct_k(5, x), f5, dct_k(7, x), f7);
}

/// The forward transform of one line a[0..7] into f[0..7] (arrays or anything indexable).
template <class A, class F> PIXFLOW_HD inline void fdct8(const A& a, F& f) {
    const float s0 = add_rn(a[0], a[7]), d0 = sub_rn(a[0], a[7]);
    const float s1 = add_rn(a[1], a[6]), d1 = sub_rn(a[1], a[6]);
    const float s2 = add_rn(a[2], a[5]), d2 = sub_rn(a[2], a[5]);
    const float s3 = add_rn(a[3], a[4]), d3 = sub_rn(a[3], a[4]);
    f[0] = fdct_out(0, s0, s1, s2, s3);
    f[1] = fdct_out(1, d0, d1, d2, d3);
    f[2] = fdct_out(2, s0, s1, s2, s3);
    f[3] = fdct_out(3, d0, d1, d2, d3);
    f[4] = fdct_out(4, s0, s1, s2, s3);
    f[5] = fdct_out(5, d0, d1, d2, d3);
    f[6] = fdct_out(6, s0, s1, s2, s3);
    f[7] = fdct_out(7, d0, d1, d2, d3);
}

/// The inverse transform of one line.
template <class F, class A> PIXFLOW_HD inline void idct8(const F& f, A& a) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int x = 0; x < 4; ++x) {
        const float e = idct_even(x, f[0], f[2], f[4], f[6]);
        const float o = idct_odd(x, f[1], f[3], f[5], f[7]);
        a[x] = add_rn(e, o);
        a[7 - x] = sub_rn(e, o);
    }
}

// ---- samples ---------------------------------------------------------------------------------
//
// Few float<->int conversion instructions, and few instructions at all: the fused CUDA kernel is
// bound by instruction issue, not by memory. Integers in [0, 2^22] are read off the mantissa of
// v + 2^23 instead of converted; every formula below is exact, so the CPU computes the same
// values. min_f/max_f are fminf/fmaxf on the device and the equivalent comparisons on the host
// (equal for every argument they get here: no -0, and NaN only as the first one).

PIXFLOW_HD inline int float_bits(float v) {
#if defined(__CUDA_ARCH__)
    return __float_as_int(v);
#else
    return std::bit_cast<int>(v);
#endif
}
/// max(a, b) for a not -0; NaN a gives b.
PIXFLOW_HD inline float max_f(float a, float b) {
#if defined(__CUDA_ARCH__)
    return fmaxf(a, b);
#else
    return a > b ? a : b;
#endif
}
/// min(a, b) for a not -0; NaN a gives b.
PIXFLOW_HD inline float min_f(float a, float b) {
#if defined(__CUDA_ARCH__)
    return fminf(a, b);
#else
    return a < b ? a : b;
#endif
}

/// The value the transform sees: u8 samples are level-shifted by -128 (as JPEG does), f32 are
/// taken as they are.
PIXFLOW_HD inline float level_shift(std::uint8_t v) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(__int_as_float(0x4B000000 | int(v)), 8388736.0f); // (2^23 + v) - (2^23 + 128)
#else
    return float(int(v) - 128);
#endif
}
PIXFLOW_HD inline float level_shift(float v) { return v; }

/// round(v) with halves away from zero, for 0 <= v <= 2^22, exactly: (v + 2^23) - 2^23 rounds
/// to the nearest integer with ties to even; a tie that went down goes up instead.
PIXFLOW_HD inline float round_half_away(float v) {
    const float n = sub_rn(add_rn(v, 0x1p23f), 0x1p23f);
    return add_rn(n, sub_rn(v, n) == 0.5f ? 1.0f : 0.0f); // v - n is exact: |v - n| <= 0.5
}

/// a / b, correctly rounded, from y = RN(1 / b) (QuantTable::r): Markstein's correction step,
/// q = RN(a y), r = a - q b (exact, one fma), RN(q + r y). Equal to the IEEE quotient a / b for
/// every a (Markstein 1990; also checked for every b = 1..32767 on 675 million a), without the
/// GPU division's reciprocal unit and slow path.
PIXFLOW_HD inline float div_by(float a, float b, float y) {
    const float q = mul_rn(a, y);
    const float r = fma_rn(-q, b, a);
    return fma_rn(r, y, q);
}

/// The quantised value round(F / Q), halves away from zero, saturated to the i16 range, as a
/// float (an integer; NaN gives 0, and zero is +0 as the integer 0 is); rq = RN(1 / Q).
PIXFLOW_HD inline float quantize_value(float f, float q, float rq) {
    const float r = div_by(f, q, rq);
    const float n = round_half_away(min_f(max_f(fabsf(r), 0.0f), 32768.0f)); // NaN -> 0
    return r < 0.0f ? sub_rn(0.0f, n) : min_f(n, 32767.0f);                  // 0 - 0 = +0
}

/// q = round(F / Q), halves away from zero, saturated to i16; NaN gives 0.
PIXFLOW_HD inline std::int16_t quantize_sample(float f, float q, float rq) {
    return std::int16_t(int(quantize_value(f, q, rq)));
}

/// F' = q * Q.
PIXFLOW_HD inline float dequantize_sample(std::int16_t v, float q) { return mul_rn(float(v), q); }

/// dequantize_sample(quantize_sample(f, q, rq), q), bit for bit, without the detour through an
/// integer (the fused chain).
PIXFLOW_HD inline float quantize_dequantize(float f, float q, float rq) { return mul_rn(quantize_value(f, q, rq), q); }

/// An inverse-transformed value as u8: v + 128 rounded to the nearest integer (ties to even)
/// and saturated; NaN gives 0. One addition does both the shift and the rounding: v + (2^23 +
/// 128) lands on an integer, 2^23 + round(v + 128), whose low byte is the result once clamped to
/// [2^23, 2^23 + 255] (the sum is rounded once, so this is round(v + 128) of the exact sum).
PIXFLOW_HD inline std::uint8_t to_u8(float v) {
    const float m = min_f(max_f(add_rn(v, 8388736.0f), 8388608.0f), 8388863.0f);
    return std::uint8_t(float_bits(m) & 0xFF);
}
/// The output dtype of the inverse transform: u8 as to_u8, f32 as it is.
template <class T> PIXFLOW_HD inline T from_transform(float v);
template <> PIXFLOW_HD inline std::uint8_t from_transform<std::uint8_t>(float v) { return to_u8(v); }
template <> PIXFLOW_HD inline float from_transform<float>(float v) { return v; }

// ---- shapes ----------------------------------------------------------------------------------
//
// A coefficient image records the size of the image it came from, so that idct8x8 restores it
// without being told. Along each axis, an image of n pixels has b = ceil(n / 8) blocks and is
// padded by p = 8b - n (0..7) replicated pixels; its coefficient image is 8b + p wide: the 8b
// coefficients of the padded image, then p "marker" columns of zeros. Back: a coefficient image
// of m pixels holds b = floor(m / 8) blocks and came from n = 8b - (m - 8b) pixels.
//
//   n:  1  7  8  9  16 17 33 67      multiples of 8 are left as they are
//   m: 15  9  8 23  16 31 47 77

/// Width (or height) of the coefficient image of an n-pixel axis (n >= 1).
PIXFLOW_HD constexpr int coeff_extent(int n) {
    const int b = (n + 7) / 8;
    return 8 * b + (8 * b - n);
}
/// Whole 8x8 blocks along an axis of a coefficient image of m samples.
PIXFLOW_HD constexpr int coeff_blocks(int m) { return m / 8; }
/// Size of the image a coefficient axis of m samples came from (m >= 8), the inverse of
/// coeff_extent.
PIXFLOW_HD constexpr int image_extent(int m) { return 8 * (m / 8) - (m % 8); }

} // namespace pixflow::jpeg
