// gauss5x5.hpp: the pure kernels of the gauss5x5 operator (separable 5x5 Gaussian blur), free of
// framework types beyond pixflow::ImageView, so they can be called and tested on their own.
//
// Conventions, common to every function below:
//  - `in` and `out` have the same width, height, channels (1..4, interleaved) and dtype (u8, u16 or
//    f32); their pitches may differ and may exceed width*channels*sizeof(sample). They must not
//    overlap (no in-place filtering).
//  - Arithmetic is float32 and identical, bit for bit, on the CPU and on CUDA:
//        v = fma(w0, a[y-2] + a[y+2], fma(w1, a[y-1] + a[y+1], w2 * a[y]))   vertical pass first,
//        o = fma(w0, v[x-2] + v[x+2], fma(w1, v[x-1] + v[x+1], w2 * v[x]))   then horizontal,
//    with fma a single-rounding fused multiply-add (std::fma / __fmaf_rn) and every other operation
//    rounded separately (no contraction). Integer outputs are clamped to the dtype's range and
//    rounded to nearest, ties to even; f32 outputs are stored as computed.
//  - The taps are symmetric (w[0] == w[4], w[1] == w[3]; w[2] is the centre), non-negative and
//    sum to 1 within 1e-6, as gauss5x5_taps makes them: then integer outputs never leave the
//    dtype's range by more than rounding, which the CUDA kernel relies on (it does not clamp).
//  - Borders, for a pixel index i outside 0..n-1 (rows and columns alike):
//
//        reflect101   ... d c b | a b c d | c b a ...   (OpenCV's BORDER_REFLECT_101), folded
//                     repeatedly until inside, so any i is defined when n is 1 or 2; n == 1 reads
//                     pixel 0 (reflect101 degenerates to replicate)
//        replicate    ... a a a | a b c d | d d d ...
//        zero         ... 0 0 0 | a b c d | 0 0 0 ...   (taps are not renormalised at the edge)
#pragma once

#include <pixflow/image.hpp>

#include <array>

namespace pixflow::gauss5x5 {

enum class Border : int { reflect101 = 0, replicate = 1, zero = 2 };
/// The borders' names, in the enum's order: the choices of the operator's `border` parameter.
constexpr std::array<const char*, 3> pixflow_choices(Border) { return {"reflect101", "replicate", "zero"}; }

/// The pixel read for index i in 0..n-1 (n >= 1), or -1 for a pixel of a zero border.
PIXFLOW_HD inline int border_index(int i, int n, Border border) {
    if (i >= 0 && i < n) return i;
    if (border == Border::zero) return -1;
    if (border == Border::replicate || n == 1) return i < 0 ? 0 : n - 1;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i; // reflect101, fold until inside
    return i;
}

/// The 5 taps exp(-x^2 / (2 sigma^2)) for x = -2..2, normalised to sum 1 (in double, then
/// rounded to float). sigma must be a finite number > 0 (else UserError).
std::array<float, 5> gauss5x5_taps(double sigma);

/// Throws unless `in` and `out` satisfy the conventions above and live where the kernel runs
/// (`on_host`: host memory, else one CUDA device), and `taps` are as above: UserError
/// (PF_ERR_UNSUPPORTED) for a dtype or channel count the kernel lacks, InternalError for the rest,
/// which the operator's schema and the host rule out.
void gauss5x5_check(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps, bool on_host);

/// The most the CPU kernel may use (the bytes are the same at every level; tests compare them on
/// one machine): the best the CPU has (for u8 on x86-64: AVX-512, else AVX2 with FMA), AVX2 at
/// most, or the portable loops alone (compiled for x86-64-v4/v3/baseline, picked at load time).
enum class CpuLevel { best, avx2, portable };

/// CPU kernel: TBB threads over bands of rows, SIMD over samples. Throws as gauss5x5_check when
/// the views do not satisfy the conventions above.
void gauss5x5_cpu(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps, Border border,
                  CpuLevel level = CpuLevel::best);

#ifdef PIXFLOW_WITH_CUDA
/// CUDA kernel: launches on `stream` (a cudaStream_t) and returns without synchronising; `in` and
/// `out` live on the current device. Throws as gauss5x5_check, or on a failed launch.
void gauss5x5_cuda(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps, Border border,
                   void* stream);
#endif

} // namespace pixflow::gauss5x5
