// gauss5x5_cpu.cpp: the tap computation, the view checks and the CPU kernel of gauss5x5.
//
// Design: TBB splits the image into bands of output rows; for each output row a thread
//  1. runs the vertical pass over the 5 input rows y-2..y+2 (border-mapped; a zero row for the
//     zero border) into one float row of its own, converting samples to float on the fly,
//  2. writes the 2 border pixels on each side of that float row (border-mapped columns),
//  3. runs the horizontal pass from the float row into the output row, rounding and saturating.
// The only temporary is one float row per thread, so the working set of a row stays in L2.
//
// u8, the common case, has SIMD kernels (gauss5x5_u8_planes.inc, compiled for AVX-512 and for
// AVX2 + FMA, picked at run time; described below). Other dtypes and CPUs use the portable
// passes: `#pragma omp simd` loops over samples (channel interleaving is just an offset of
// `channels` samples), compiled for x86-64-v4, x86-64-v3 and the baseline and picked at load
// time (GCC target_clones). Every path performs the same float operations, std::fma where the
// formula has one, so all give the same bytes, and the CUDA kernel's too.
//
// Fixed-point arithmetic (OpenCV's u8 path) is not used: the bytes must stay those of the float
// formula, whose roundings decide which way a result within about 2^-14 of a half goes. The
// float taps have 24-bit mantissas, so exact integer sums need about 35 bits after the vertical
// pass and 59 after the horizontal one, and an integer estimate in 16- or 32-bit lanes would be
// off by more than 2^-14: it would need a float fallback near every half and a proof that the
// fallback catches every case, over 25 inputs per pixel (no exhaustive check is possible). The
// float kernels below do the same operations with fewer instructions and memory accesses.
//
// Measured per core (CPU time of one thread, scripts/bench-opencv.sh --per-core; 8192 x 2048
// RGB u8, this project's 2-core AMD EPYC, Zen 5): portable loops, x86-64-v3 clone 0.41 ns per
// sample (this kernel before issue 18), x86-64-v4 clone 0.30; AVX-512 plane kernel 0.12;
// OpenCV's cv2.GaussianBlur 0.35. Two threads and the wall time: docs/performance.md.
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
    for (int x = -2; x <= 2; ++x) sum += w[x + 2] = std::exp(-double(x * x) / (2.0 * sigma * sigma));
    return {float(w[0] / sum), float(w[1] / sum), float(w[2] / sum), float(w[3] / sum), float(w[4] / sum)};
}

void gauss5x5_check(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps, bool on_host) {
    if (in.dtype != DType::u8 && in.dtype != DType::u16 && in.dtype != DType::f32)
        throw UserError(std::string("gauss5x5: dtype ") + dtype_name(in.dtype) + " is not supported (u8, u16, f32)",
                        PF_ERR_UNSUPPORTED);
    if (in.channels < 1 || in.channels > 4)
        throw UserError("gauss5x5: " + std::to_string(in.channels) + " channels (1 to 4 supported)",
                        PF_ERR_UNSUPPORTED);
    PIXFLOW_INTERNAL_CHECK(out.width == in.width && out.height == in.height && out.channels == in.channels &&
                               out.dtype == in.dtype,
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
GAUSS5X5_INLINE void vertical_pass(const T* __restrict r0, const T* __restrict r1, const T* __restrict r2,
                                   const T* __restrict r3, const T* __restrict r4, float* __restrict v, std::size_t n,
                                   Weights w) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
        v[i] = std::fma(w.w0, float(r0[i]) + float(r4[i]),
                        std::fma(w.w1, float(r1[i]) + float(r3[i]), w.w2 * float(r2[i])));
}

// o[i] = fma(w0, v[i-2c] + v[i+2c], fma(w1, v[i-c] + v[i+c], w2 * v[i])) for i < n; v is valid
// from -2c to n+2c-1.
template <class T>
GAUSS5X5_INLINE void horizontal_pass(const float* __restrict v, T* __restrict o, std::size_t n, std::ptrdiff_t c,
                                     Weights w) {
    const float* __restrict m2 = v - 2 * c;
    const float* __restrict m1 = v - c;
    const float* __restrict p1 = v + c;
    const float* __restrict p2 = v + 2 * c;
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
        o[i] = from_float<T>(std::fma(w.w0, m2[i] + p2[i], std::fma(w.w1, m1[i] + p1[i], w.w2 * v[i])));
}

struct Job {
    ImageView in, out;
    Weights w;
    Border border;
    const void* zero_row; // width*channels zero samples, for rows of a zero border
    bool stream = false;  // SIMD u8 kernels: write the output with streaming stores
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
// The SIMD kernels for u8 (kernels/gauss5x5_u8_planes.inc, compiled for AVX2 and for AVX-512)
// keep the row of vertical results in 4 planes: plane k holds the samples 4j + k, j = 0, 1, ...
// So splitting loaded bytes into four vectors of samples is masks and shifts (x >> 8k & 0xff per
// dword) rather than shuffles, which Zen has fewer units for, and the horizontal pass reads its
// neighbours i +- c, i +- 2c as plain unaligned loads from the plane of sample i + d. Its four
// planes of outputs are merged back into bytes with shifts and ors. A row is done a block (4
// vectors of samples) at a time, the horizontal pass a few blocks behind the vertical, both in
// L1. The arithmetic is the generic passes', operation for operation, so the bytes are the same.

/// The vertical results of one row in planes, with a margin at both ends for the border columns
/// (samples -2c..-1 and n..n+2c-1, c <= 4). `base` is 64-byte aligned.
struct Planes {
    static constexpr std::ptrdiff_t margin = 16; // a cache line: every plane's entry 0 is aligned
    float* base;
    std::size_t stride; // floats per plane
    float* plane(int k) const { return base + std::size_t(k) * stride + margin; }
    float& at(std::ptrdiff_t i) const { return plane(int(i & 3))[i >> 2]; } // i >= -16
    /// Floats per plane: enough for n / 4 samples and the margins, and 1088 bytes modulo 4 KiB,
    /// so that the planes' entries of one sample never share their address modulo 4 KiB, which
    /// the store-to-load check compares. A precaution: with the horizontal pass 4 blocks behind,
    /// no difference was measured (8192 x 3000 RGB, per core: 0.12 ns per sample either way).
    static std::size_t stride_for(std::size_t n) {
        const std::size_t need = (n + 3) / 4 + 2 * margin;
        return (need + 1023 - 272) / 1024 * 1024 + 272;
    }
    static std::size_t floats(std::size_t n) { return 4 * stride_for(n); }
};

using RowsFn = void (*)(const Job&, int, int, float*);

namespace avx2 {
#define GAUSS5X5_TARGET __attribute__((target("avx2,fma")))
using F = __m256;
using I = __m256i;
constexpr int L = 8;
GAUSS5X5_TARGET inline F loadu_ps(const float* p) { return _mm256_loadu_ps(p); }
GAUSS5X5_TARGET inline void storeu_ps(float* p, F x) { _mm256_storeu_ps(p, x); }
GAUSS5X5_TARGET inline I loadu_si(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
GAUSS5X5_TARGET inline void storeu_si(void* p, I x) { _mm256_storeu_si256(static_cast<__m256i*>(p), x); }
GAUSS5X5_TARGET inline void stream_si(void* p, I x) { _mm256_stream_si256(static_cast<__m256i*>(p), x); }
GAUSS5X5_TARGET inline F set1_ps(float x) { return _mm256_set1_ps(x); }
GAUSS5X5_TARGET inline I set1_epi32(int x) { return _mm256_set1_epi32(x); }
GAUSS5X5_TARGET inline F add_ps(F a, F b) { return _mm256_add_ps(a, b); }
GAUSS5X5_TARGET inline F mul_ps(F a, F b) { return _mm256_mul_ps(a, b); }
GAUSS5X5_TARGET inline F fmadd_ps(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
GAUSS5X5_TARGET inline I and_si(I a, I b) { return _mm256_and_si256(a, b); }
GAUSS5X5_TARGET inline I or_si(I a, I b) { return _mm256_or_si256(a, b); }
GAUSS5X5_TARGET inline I add_epi32(I a, I b) { return _mm256_add_epi32(a, b); }
template <int N> GAUSS5X5_TARGET inline I srli_epi32(I a) { return _mm256_srli_epi32(a, N); }
template <int N> GAUSS5X5_TARGET inline I slli_epi32(I a) { return _mm256_slli_epi32(a, N); }
GAUSS5X5_TARGET inline F cvtepi32_ps(I a) { return _mm256_cvtepi32_ps(a); }
GAUSS5X5_TARGET inline I castps_si(F a) { return _mm256_castps_si256(a); }
// a plane's vectors around a block: not needed, AVX2 loads the shifted vectors (cross-lane
// dword shifts would cost more)
struct Around {};
GAUSS5X5_TARGET GAUSS5X5_INLINE Around around(const float*) { return {}; }
template <int off> GAUSS5X5_TARGET GAUSS5X5_INLINE F shifted(const float* p, const Around&) {
    return loadu_ps(p + off);
}
#include "gauss5x5_u8_planes.inc"
#undef GAUSS5X5_TARGET
} // namespace avx2

namespace avx512 {
#define GAUSS5X5_TARGET __attribute__((target("avx512f,avx2,fma")))
using F = __m512;
using I = __m512i;
constexpr int L = 16;
GAUSS5X5_TARGET inline F loadu_ps(const float* p) { return _mm512_loadu_ps(p); }
GAUSS5X5_TARGET inline void storeu_ps(float* p, F x) { _mm512_storeu_ps(p, x); }
GAUSS5X5_TARGET inline I loadu_si(const void* p) { return _mm512_loadu_si512(p); }
GAUSS5X5_TARGET inline void storeu_si(void* p, I x) { _mm512_storeu_si512(p, x); }
GAUSS5X5_TARGET inline void stream_si(void* p, I x) { _mm512_stream_si512(static_cast<__m512i*>(p), x); }
GAUSS5X5_TARGET inline F set1_ps(float x) { return _mm512_set1_ps(x); }
GAUSS5X5_TARGET inline I set1_epi32(int x) { return _mm512_set1_epi32(x); }
GAUSS5X5_TARGET inline F add_ps(F a, F b) { return _mm512_add_ps(a, b); }
GAUSS5X5_TARGET inline F mul_ps(F a, F b) { return _mm512_mul_ps(a, b); }
GAUSS5X5_TARGET inline F fmadd_ps(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
GAUSS5X5_TARGET inline I and_si(I a, I b) { return _mm512_and_si512(a, b); }
GAUSS5X5_TARGET inline I or_si(I a, I b) { return _mm512_or_si512(a, b); }
GAUSS5X5_TARGET inline I add_epi32(I a, I b) { return _mm512_add_epi32(a, b); }
template <int N> GAUSS5X5_TARGET inline I srli_epi32(I a) { return _mm512_srli_epi32(a, N); }
template <int N> GAUSS5X5_TARGET inline I slli_epi32(I a) { return _mm512_slli_epi32(a, N); }
GAUSS5X5_TARGET inline F cvtepi32_ps(I a) { return _mm512_cvtepi32_ps(a); }
GAUSS5X5_TARGET inline I castps_si(F a) { return _mm512_castps_si512(a); }
// A plane's aligned vectors before, at and after a block; the vectors one or two entries off are
// taken from them with valignd instead of loaded: a 64-byte load off a 64-byte boundary reads
// two cache lines, and the horizontal pass was bound by those loads (per core, in cache: 0.08 ns
// per sample for the pass with unaligned loads; with valignd the whole kernel, both passes,
// takes 0.12 ns per sample, 0.165 before)
struct Around {
    F before, at, after;
};
GAUSS5X5_TARGET GAUSS5X5_INLINE Around around(const float* p) {
    return {_mm512_load_ps(p - 16), _mm512_load_ps(p), _mm512_load_ps(p + 16)};
}
template <int off> GAUSS5X5_TARGET GAUSS5X5_INLINE F shifted(const float*, const Around& a) {
    static_assert(off >= -2 && off <= 2);
    if constexpr (off == 0)
        return a.at;
    else if constexpr (off > 0)
        return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(a.after), _mm512_castps_si512(a.at), off));
    else
        return _mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(a.at), _mm512_castps_si512(a.before), 16 + off));
}
#include "gauss5x5_u8_planes.inc"
#undef GAUSS5X5_TARGET
} // namespace avx512

/// The u8 kernel for this CPU and c channels, at most `most`: AVX-512, else AVX2 (with FMA),
/// else none.
RowsFn simd_rows_u8(int c, CpuLevel most) {
    static const int cpu = __builtin_cpu_supports("avx512f")                                 ? 2
                           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
                                                                                             : 0;
    const int level = std::min(cpu, most == CpuLevel::best ? 2 : most == CpuLevel::avx2 ? 1 : 0);
    if (c < 1 || c > 4 || level == 0) return nullptr;
    return level == 2 ? avx512::rows_for(c) : avx2::rows_for(c);
}
#endif

GAUSS5X5_CLONES void blur_rows_u8(const Job& job, int y0, int y1, float* tmp) {
    blur_rows<std::uint8_t>(job, y0, y1, tmp);
}
GAUSS5X5_CLONES void blur_rows_u16(const Job& job, int y0, int y1, float* tmp) {
    blur_rows<std::uint16_t>(job, y0, y1, tmp);
}
GAUSS5X5_CLONES void blur_rows_f32(const Job& job, int y0, int y1, float* tmp) { blur_rows<float>(job, y0, y1, tmp); }

} // namespace

void gauss5x5_cpu(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps, Border border,
                  CpuLevel level) {
    gauss5x5_check(in, out, taps, /*on_host=*/true);
    if (in.width == 0 || in.height == 0) return;
    const std::size_t n = in.row_samples();
    std::vector<char> zeros(border == Border::zero ? in.row_bytes() : 0);
    Job job{in, out, Weights{taps[0], taps[1], taps[2]}, border, zeros.data()};
    auto* rows = in.dtype == DType::u8 ? &blur_rows_u8 : in.dtype == DType::u16 ? &blur_rows_u16 : &blur_rows_f32;
    [[maybe_unused]] bool planes = false;
#ifdef GAUSS5X5_X86
    if (in.dtype == DType::u8)
        if (RowsFn simd = simd_rows_u8(in.channels, level)) {
            planes = true;
            rows = simd;
            // an output larger than this machine's L3 cannot stay in the cache for the next node:
            // streaming stores spare reading each line before writing it
            job.stream = std::size_t(in.height) * in.row_bytes() >= (std::size_t(64) << 20);
        }
    std::size_t tmp_size = planes ? Planes::floats(n) : n + 4 * std::size_t(in.channels);
#else
    (void)level;
    std::size_t tmp_size = n + 4 * std::size_t(in.channels);
#endif
    tmp_size += 16; // room to start at a 64-byte boundary
    // the temporary row, from a 64-byte boundary
    auto aligned = [](std::vector<float>& t) {
        auto p = reinterpret_cast<std::uintptr_t>(t.data());
        return t.data() + ((64 - p % 64) % 64) / sizeof(float);
    };
    // Bands of at least ~64k samples, so that small images stay on one thread.
    const int grain = int(std::max<std::size_t>(1, (std::size_t(1) << 16) / n));
    if (std::size_t(in.height) <= std::size_t(grain)) {
        std::vector<float> tmp(tmp_size);
        rows(job, 0, in.height, aligned(tmp));
        return;
    }
    tbb::enumerable_thread_specific<std::vector<float>> tmps([&] { return std::vector<float>(tmp_size); });
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height, grain),
                      [&](const tbb::blocked_range<int>& r) { rows(job, r.begin(), r.end(), aligned(tmps.local())); });
}

} // namespace pixflow::gauss5x5
