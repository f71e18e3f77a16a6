// integral.cpp: CPU kernel of integral.
//
// Integer outputs (u32, u64; any order of additions gives the same bits). Images wide enough for
// a band of columns per worker go by bands (see integral_bands below), which read the input once
// and write the output once. Others go in strips of rows, with the input read twice:
//   1. TBB over strips: each strip's column sums (vectorised), into the scratch rows;
//   2. an exclusive scan of those down the strips (TBB over blocks of columns, vectorised),
//      then a prefix sum along each scratch row: row k is now the integral of everything above
//      strip k, that is the output row just above the strip;
//   3. TBB over strips: each row's running sum per channel plus the output row above it; the
//      row above is kept in the strip's scratch row (updated in place, in L2), so that the output
//      is only ever written.
// The rows are the work: a running sum along a row is a chain of dependent additions. For u32
// outputs it has AVX-512 and AVX2 kernels (picked at run time; the portable loop otherwise and for
// row tails), the AVX2 one being: 8 samples per vector, their per-channel prefix sums in log2(8 / C) shift-and-add steps
// (lane j adds lane j - C, then j - 2C, ...), then the running totals of the vectors before
// (carried in registers, one vector per position in a group of G = C / gcd(C, 8) vectors, so that
// each vector's lanes always hold the same channels and the loop-carried chain is one addition).
// Large outputs are written with streaming stores: nothing reads them back here, and it spares
// reading each output line into the cache before writing it (up to half the memory traffic).
// Measured per core (CPU time, so that other work on the machine does not count), 8192 x 2048
// RGB u8 -> u32 with huge-page buffers, on this project's 2-core AMD EPYC, two bands: AVX2 0.27
// ns per sample (0.35 with plain stores; 0.16 when it all fits in L2), AVX-512 0.24 (0.10 in L2),
// and with the input prefetched (prefetch_ahead) 0.15; OpenCV's cv2.integral 0.21 (0.14 in L2).
// f64 outputs, in the order integral.hpp defines, with the output written, then read and
// written again:
//   1. TBB over rows: each row's inclusive prefix sum per channel, left to right;
//   2. TBB over blocks of columns: each task walks down the rows of its block, adding the row
//      above into the row (vectorised; the row above is still in cache).
// A band of rows of a larger image (strips: `above` given) starts from the output row above the
// band: added to every strip's top (integers: any order of additions), the bands' running column
// sums start from it (integers), or the column pass does (f64: the whole image's additions).
#include "integral.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define INTEGRAL_X86 1
#include <immintrin.h>
#endif

namespace pixflow::integral {
namespace {

/// Columns (samples) per task of the column passes: 16 KiB of u64 per row.
constexpr std::size_t column_block = 2048;

/// Rows per strip of the integer path: at least 64, at most 256 strips (bounds the scratch).
int strip_rows(int height) { return std::max(64, (height + 255) / 256); }
int strip_count(int height) { return (height + strip_rows(height) - 1) / strip_rows(height); }

// ---- the AVX2 row kernel (u32 outputs) ---------------------------------------------------------

#ifdef INTEGRAL_X86
#define INTEGRAL_AVX2 __attribute__((target("avx2")))

bool has_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2");
    return yes;
}

/// Vectors of L samples per group: whole pixels, so every group starts at channel 0 (L = 8, 16).
constexpr int group_vectors(int c) { return c == 3 ? 3 : 1; }

/// Lane permutations of the scan for C channels and vectors of L lanes.
template <int C, int L = 8> struct ScanTables {
    static constexpr int G = group_vectors(C);
    // shift[s][j]: lane j takes lane j - C 2^s, (index 0 and mask 0 when there is none)
    std::array<std::array<std::int32_t, L>, 4> shift_index{}, shift_mask{};
    int shifts = 0;
    // carry[a][b][j]: the lane among the last C of vector a with the channel of lane j of vector b
    std::array<std::array<std::array<std::int32_t, L>, 3>, 3> carry{};
    constexpr ScanTables() {
        for (int d = C; d < L; d *= 2, ++shifts)
            for (int j = 0; j < L; ++j) {
                shift_index[std::size_t(shifts)][std::size_t(j)] = j >= d ? j - d : 0;
                shift_mask[std::size_t(shifts)][std::size_t(j)] = j >= d ? -1 : 0;
            }
        for (int a = 0; a < G; ++a)
            for (int b = 0; b < G; ++b)
                for (int j = 0; j < L; ++j)
                    for (int l = L - C; l < L; ++l)
                        if ((L * a + l) % C == (L * b + j) % C)
                            carry[std::size_t(a)][std::size_t(b)][std::size_t(j)] = l;
    }
};

template <int C, int L = 8> constexpr ScanTables<C, L> scan_tables{};

/// Asks for the input 2 KiB ahead. The hardware prefetcher follows a band's stretch of each row
/// late (a new stretch every row, one row pitch further on): per core, 8192 x 2048 RGB u8 -> u32
/// with AVX-512, 0.23 ns per sample without, 0.15 with (1 KiB ahead 0.155, 4 KiB 0.165, 8 KiB 0.20).
/// A prefetch past the end of the row is harmless (prefetches do not fault).
inline void prefetch_ahead(const void* p) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) + 2048), _MM_HINT_T0);
}

INTEGRAL_AVX2 inline __m256i load_table(const std::array<std::int32_t, 8>& t) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.data()));
}

/// 8 samples from p, widened to u32.
template <class T> INTEGRAL_AVX2 inline __m256i load8(const T* p) {
    if constexpr (sizeof(T) == 1)
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    else if constexpr (sizeof(T) == 2)
        return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    else
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

/// Samples 0..n-1 of one row (n a multiple of 8 G): dst[i] = above[i] + (running sum of src along
/// the row, per channel, starting from acc[c]); above[i] = dst[i]. acc[c] gets each channel's
/// running sum for the tail.
template <class T, int C>
INTEGRAL_AVX2 void row_u32_avx2(const T* __restrict src, std::uint32_t* __restrict above, std::uint32_t* __restrict dst,
                                std::size_t n, bool stream, std::uint32_t (&acc)[C]) {
    constexpr auto& tab = scan_tables<C, 8>;
    constexpr int G = ScanTables<C, 8>::G;
    __m256i sh_idx[3], sh_mask[3], carry[3][3], k[3];
    for (int s = 0; s < tab.shifts; ++s) {
        sh_idx[s] = load_table(tab.shift_index[std::size_t(s)]);
        sh_mask[s] = load_table(tab.shift_mask[std::size_t(s)]);
    }
    for (int a = 0; a < G; ++a)
        for (int b = 0; b < G; ++b) carry[a][b] = load_table(tab.carry[std::size_t(a)][std::size_t(b)]);
    for (int g = 0; g < G; ++g) { // lane j of position g holds channel (8g + j) % C
        alignas(32) std::uint32_t start[8];
        for (int j = 0; j < 8; ++j) start[j] = acc[(8 * g + j) % C];
        k[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(start));
    }
    // streaming stores need 32-byte alignment, which holds for the whole row or for none of it
    stream = stream && reinterpret_cast<std::uintptr_t>(dst) % 32 == 0;
    for (std::size_t i0 = 0; i0 < n; i0 += 8 * G) {
        prefetch_ahead(src + i0);
        __m256i v[3];
        for (int g = 0; g < G; ++g) {
            v[g] = load8(src + i0 + 8 * g);
            for (int s = 0; s < tab.shifts; ++s) // prefix sums per channel inside the vector
                v[g] =
                    _mm256_add_epi32(v[g], _mm256_and_si256(_mm256_permutevar8x32_epi32(v[g], sh_idx[s]), sh_mask[s]));
        }
        for (int g = 1; g < G; ++g) // then inside the group
            v[g] = _mm256_add_epi32(v[g], _mm256_permutevar8x32_epi32(v[g - 1], carry[g - 1][g]));
        for (int g = 0; g < G; ++g) {
            std::uint32_t* a = above + i0 + 8 * g;
            const __m256i o =
                _mm256_add_epi32(_mm256_add_epi32(k[g], v[g]), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(a), o);
            if (stream)
                _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i0 + 8 * g), o);
            else
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i0 + 8 * g), o);
        }
        for (int g = 0; g < G; ++g) // the group's totals, into every position's running sums
            k[g] = _mm256_add_epi32(k[g], _mm256_permutevar8x32_epi32(v[G - 1], carry[G - 1][g]));
    }
    alignas(32) std::uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), k[0]); // lane c holds channel c
    for (int c = 0; c < C; ++c) acc[c] = lanes[c];
}

void stream_fence() { _mm_sfence(); }

// The same with 16 lanes (AVX-512F): half the permutes per sample (the scan's limit when the data
// are in cache), zero-masking permutes instead of permute-and-mask, and streaming stores of whole
// cache lines.
#define INTEGRAL_AVX512 __attribute__((target("avx512f,avx2")))

bool has_avx512() {
    static const bool yes = __builtin_cpu_supports("avx512f");
    return yes;
}

template <class T> INTEGRAL_AVX512 inline __m512i load16(const T* p) {
    if constexpr (sizeof(T) == 1)
        return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    else if constexpr (sizeof(T) == 2)
        return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    else
        return _mm512_loadu_si512(p);
}

/// row_u32_avx2 with 16 lanes; n a multiple of 16 G.
template <class T, int C>
INTEGRAL_AVX512 void row_u32_avx512(const T* __restrict src, std::uint32_t* __restrict above,
                                    std::uint32_t* __restrict dst, std::size_t n, bool stream,
                                    std::uint32_t (&acc)[C]) {
    constexpr auto& tab = scan_tables<C, 16>;
    constexpr int G = ScanTables<C, 16>::G;
    __m512i sh_idx[4], carry[3][3], k[3];
    __mmask16 sh_mask[4];
    for (int s = 0; s < tab.shifts; ++s) {
        sh_idx[s] = _mm512_loadu_si512(tab.shift_index[std::size_t(s)].data());
        sh_mask[s] =
            _mm512_cmpneq_epi32_mask(_mm512_loadu_si512(tab.shift_mask[std::size_t(s)].data()), _mm512_setzero_si512());
    }
    for (int a = 0; a < G; ++a)
        for (int b = 0; b < G; ++b) carry[a][b] = _mm512_loadu_si512(tab.carry[std::size_t(a)][std::size_t(b)].data());
    for (int g = 0; g < G; ++g) { // lane j of position g holds channel (16g + j) % C
        alignas(64) std::uint32_t start[16];
        for (int j = 0; j < 16; ++j) start[j] = acc[(16 * g + j) % C];
        k[g] = _mm512_load_si512(start);
    }
    stream = stream && reinterpret_cast<std::uintptr_t>(dst) % 64 == 0;
    for (std::size_t i0 = 0; i0 < n; i0 += 16 * G) {
        prefetch_ahead(src + i0);
        __m512i v[3];
        for (int g = 0; g < G; ++g) {
            v[g] = load16(src + i0 + 16 * g);
            for (int s = 0; s < tab.shifts; ++s)
                v[g] = _mm512_add_epi32(v[g], _mm512_maskz_permutexvar_epi32(sh_mask[s], sh_idx[s], v[g]));
        }
        for (int g = 1; g < G; ++g) v[g] = _mm512_add_epi32(v[g], _mm512_permutexvar_epi32(carry[g - 1][g], v[g - 1]));
        for (int g = 0; g < G; ++g) {
            std::uint32_t* a = above + i0 + 16 * g;
            const __m512i o = _mm512_add_epi32(_mm512_add_epi32(k[g], v[g]), _mm512_loadu_si512(a));
            _mm512_storeu_si512(a, o);
            if (stream)
                _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i0 + 16 * g), o);
            else
                _mm512_storeu_si512(dst + i0 + 16 * g, o);
        }
        for (int g = 0; g < G; ++g) k[g] = _mm512_add_epi32(k[g], _mm512_permutexvar_epi32(carry[G - 1][g], v[G - 1]));
    }
    alignas(64) std::uint32_t lanes[16];
    _mm512_store_si512(lanes, k[0]);
    for (int c = 0; c < C; ++c) acc[c] = lanes[c];
}

/// Whether this CPU has a SIMD row kernel.
bool has_simd_rows() { return has_avx2(); }

/// The samples of a row that the widest row kernel allowed does (whole groups), and runs it:
/// AVX-512, else AVX2, else none (0).
template <class T, int C>
std::size_t row_u32_simd(const T* src, std::uint32_t* above, std::uint32_t* dst, std::size_t n, bool stream,
                         std::uint32_t (&acc)[C], CpuLevel level) {
    if (level == CpuLevel::portable) return 0;
    if (level == CpuLevel::best && has_avx512()) {
        const std::size_t vec = n / (16 * group_vectors(C)) * (16 * group_vectors(C));
        if (vec > 0) row_u32_avx512<T, C>(src, above, dst, vec, stream, acc);
        return vec;
    }
    if (has_avx2()) {
        const std::size_t vec = n / (8 * group_vectors(C)) * (8 * group_vectors(C));
        if (vec > 0) row_u32_avx2<T, C>(src, above, dst, vec, stream, acc);
        return vec;
    }
    return 0;
}
#endif
#ifndef INTEGRAL_X86
bool has_simd_rows() { return false; }
#endif

/// Outputs at least this large are written with streaming stores (larger than this machine's L3,
/// so the output could not stay in the cache for the next node anyway).
constexpr std::size_t stream_bytes = std::size_t(64) << 20;

// ---- integer outputs ---------------------------------------------------------------------------

template <class T, class U, int C>
void integral_strips(const ImageView& in, const ImageView& out, U* tops, const U* band_above, CpuLevel level) {
    (void)level; // used on x86-64 only
    const std::size_t n = in.row_samples();
    const int rows = strip_rows(in.height), strips = strip_count(in.height);
    auto top = [&](int k) { return tops + std::size_t(k) * n; }; // scratch row k
    // 1. column sums of each strip but the last (no strip lies below it); u8 samples are summed
    //    in u16 first, up to 257 rows at a time (257 * 255 < 2^16): twice the samples per vector
    //    and half the bytes of the running sums to read and write back
    tbb::parallel_for(0, strips - 1, [&](int k) {
        U* col = top(k);
        std::fill(col, col + n, U(0));
        if constexpr (std::is_same_v<T, std::uint8_t>) {
            std::vector<std::uint16_t> acc(n);
            for (int y0 = k * rows; y0 < (k + 1) * rows; y0 += 257) {
                std::fill(acc.begin(), acc.end(), std::uint16_t(0));
                for (int y = y0; y < std::min((k + 1) * rows, y0 + 257); ++y) {
                    const T* src = in.row<T>(y);
                    std::uint16_t* a = acc.data();
#pragma omp simd
                    for (std::size_t i = 0; i < n; ++i) a[i] = std::uint16_t(a[i] + src[i]);
                }
#pragma omp simd
                for (std::size_t i = 0; i < n; ++i) col[i] += U(acc[i]);
            }
        } else {
            for (int y = k * rows; y < (k + 1) * rows; ++y) {
                const T* src = in.row<T>(y);
#pragma omp simd
                for (std::size_t i = 0; i < n; ++i) col[i] += U(src[i]);
            }
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
    // 3. each strip, row by row: running sums along the row plus the row above. The SIMD kernel
    //    keeps the row above in the strip's scratch row (the output is only written, streamed
    //    when large); the portable loop reads it from the output row above, still in cache
    //    (the scratch row for the strip's first row).
    [[maybe_unused]] const bool stream = std::size_t(in.height) * n * sizeof(U) >= stream_bytes;
    const int height = in.height;
    tbb::parallel_for(0, strips, [&](int k) {
        U* above = top(k);
        for (int y = k * rows; y < std::min(height, (k + 1) * rows); ++y) {
            const T* __restrict src = in.row<T>(y);
            U* __restrict dst = out.row<U>(y);
            U acc[C] = {};
            std::size_t vec = 0; // samples the SIMD kernel did
#ifdef INTEGRAL_X86
            if constexpr (std::is_same_v<U, std::uint32_t>)
                vec = row_u32_simd<T, C>(src, above, dst, n, stream, acc, level);
#endif
            const U* __restrict prev = y == k * rows ? above : out.row<U>(y - 1);
            for (std::size_t i = vec; i < n; i += C)
                for (int c = 0; c < C; ++c) {
                    acc[c] += U(src[i + c]);
                    dst[i + c] = prev[i + c] + acc[c];
                }
        }
#ifdef INTEGRAL_X86
        if (stream) stream_fence(); // the streamed lines are visible before the task ends
#endif
    });
}

// ---- integer outputs of wide images: bands of columns ------------------------------------------
//
// Reading the input once: band b (columns x0(b)..x1(b)-1) walks down all rows; a row's running
// sums start from the totals of the same row in the bands to its left, which band b - 1
// publishes row by row (its own totals plus its carry). Band b's column sums (the output row
// above) stay in its slice of the scratch row. TBB runs one task per worker, each claiming the
// next band in order; a band waits only on the band before it, claimed earlier by a live task, so
// there is no deadlock with any number of workers (with one, the bands run one after the other).

/// Bands: as many as there are workers, but none narrower than 512 pixels (64 at most); with
/// two workers and 8192 pixels, two bands. Per core, 8192 x 2048 RGB u8 -> u32: one band (that
/// is, strips) 0.35 ns per sample, two bands of 4096 pixels 0.27, four of 2048 0.28: a band's row
/// is one stretch of memory, and narrower bands give the prefetcher more streams to follow.
int max_bands(int width) { return std::clamp(width / 512, 1, 64); }
int band_count(int width, int workers) { return std::min(max_bands(width), std::max(width / 4096, workers)); }
/// Bands when they give every worker one (at least two): else strips, which parallelise over rows.
bool use_bands(const ImageView& in, int workers) {
    const int b = band_count(in.width, workers);
    return b >= 2 && b >= workers;
}
int band_start(int width, int bands, int b) { return b == bands ? width : width / bands * b / 8 * 8; }

struct alignas(64) BandProgress {
    std::atomic<int> rows; // rows of the band whose totals are published
};

struct BandLayout {
    std::size_t progress, counter, above, totals, total;
};

template <class U> BandLayout band_layout(const ImageView& in, int bands) {
    BandLayout l;
    l.progress = 0;
    l.counter = l.progress + std::size_t(bands) * sizeof(BandProgress);
    l.above = l.counter + 64;
    l.totals = l.above + (in.row_samples() * sizeof(U) + 63) / 64 * 64;
    l.total = l.totals + std::size_t(bands) * std::size_t(in.height) * std::size_t(in.channels) * sizeof(U);
    return l;
}

inline void band_relax() {
#ifdef INTEGRAL_X86
    _mm_pause();
#endif
}

template <class T, class U, int C>
void integral_bands(const ImageView& in, const ImageView& out, void* scratch, int bands, const U* band_above,
                    CpuLevel level) {
    (void)level; // used on x86-64 only
    const int height = in.height, width = in.width;
    const BandLayout l = band_layout<U>(in, bands);
    auto* base = static_cast<unsigned char*>(scratch);
    auto* progress = reinterpret_cast<BandProgress*>(base + l.progress);
    for (int b = 0; b < bands; ++b) new (&progress[b]) BandProgress{{0}};
    auto* next = new (base + l.counter) std::atomic<int>(0);
    U* above_all = reinterpret_cast<U*>(base + l.above);
    U* totals = reinterpret_cast<U*>(base + l.totals); // [band][row][channel]
    // the running column sums: the output row above the image, or above the band of a larger one
    if (band_above)
        std::copy(band_above, band_above + in.row_samples(), above_all);
    else
        std::fill(above_all, above_all + in.row_samples(), U(0));
    [[maybe_unused]] const bool stream = std::size_t(height) * in.row_samples() * sizeof(U) >= stream_bytes;
    const int tasks = std::min(bands, tbb::this_task_arena::max_concurrency());
    tbb::parallel_for(
        0, tasks,
        [&](int) {
            for (;;) {
                const int b = next->fetch_add(1, std::memory_order_relaxed);
                if (b >= bands) return;
                const std::size_t i0 = std::size_t(band_start(width, bands, b)) * C;
                const std::size_t i1 = std::size_t(band_start(width, bands, b + 1)) * C;
                U* above = above_all + i0;
                int known = 0; // rows of band b - 1 known to be published
                for (int y = 0; y < height; ++y) {
                    U acc[C] = {};
                    if (b > 0) {
                        for (int spin = 0; known <= y; ++spin) {
                            known = progress[b - 1].rows.load(std::memory_order_acquire);
                            if (known > y) break;
                            if (spin < 64)
                                band_relax();
                            else
                                std::this_thread::yield();
                        }
                        for (int c = 0; c < C; ++c)
                            acc[c] = totals[(std::size_t(b - 1) * std::size_t(height) + std::size_t(y)) * C +
                                            std::size_t(c)];
                    }
                    const T* __restrict src = in.row<T>(y) + i0;
                    U* __restrict dst = out.row<U>(y) + i0;
                    std::size_t vec = 0; // samples the SIMD kernel did
#ifdef INTEGRAL_X86
                    if constexpr (std::is_same_v<U, std::uint32_t>)
                        vec = row_u32_simd<T, C>(src, above, dst, i1 - i0, stream, acc, level);
#endif
                    for (std::size_t i = vec; i < i1 - i0; i += C)
                        for (int c = 0; c < C; ++c) {
                            acc[c] += U(src[i + c]);
                            above[i + c] = dst[i + c] = above[i + c] + acc[c];
                        }
                    if (b + 1 < bands) {
                        for (int c = 0; c < C; ++c)
                            totals[(std::size_t(b) * std::size_t(height) + std::size_t(y)) * C + std::size_t(c)] =
                                acc[c];
                        progress[b].rows.store(y + 1, std::memory_order_release);
                    }
                }
#ifdef INTEGRAL_X86
                if (stream) stream_fence(); // the streamed lines are visible before the task ends
#endif
            }
        },
        tbb::simple_partitioner());
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
    // enough for strips and for the most bands (which of them runs depends on the workers)
    const std::size_t strips = std::size_t(strip_count(in.height)) * in.row_samples() * dtype_size(out.dtype);
    const int most = max_bands(in.width);
    const std::size_t bands = out.dtype == DType::u32 ? 64 + band_layout<std::uint32_t>(in, most).total : 0;
    return std::max(strips, bands);
}

void integral_cpu(const ImageView& in, const ImageView& out, void* scratch, const void* above, void* last,
                  CpuLevel level) {
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
                // bands need the SIMD row kernel (u32 outputs, x86-64 with AVX2): the portable loop
                // is faster by strips, reading the row above from the output (0.74 ns per sample
                // for u64 against 0.90 by bands, per core)
                const int workers = tbb::this_task_arena::max_concurrency();
                if (out.dtype == DType::u32 && level != CpuLevel::portable && has_simd_rows() &&
                    use_bands(in, workers)) {
                    // the band layout wants 64-byte alignment: the scratch has 64 spare bytes
                    void* aligned = static_cast<unsigned char*>(scratch) +
                                    (64 - reinterpret_cast<std::uintptr_t>(scratch) % 64) % 64;
                    const int bands = band_count(in.width, workers);
                    return integral_bands<T, std::uint32_t, C>(in, out, aligned, bands,
                                                               static_cast<const std::uint32_t*>(above), level);
                }
                if (out.dtype == DType::u32)
                    return integral_strips<T, std::uint32_t, C>(in, out, static_cast<std::uint32_t*>(scratch),
                                                                static_cast<const std::uint32_t*>(above), level);
                if (out.dtype == DType::u64)
                    return integral_strips<T, std::uint64_t, C>(in, out, static_cast<std::uint64_t*>(scratch),
                                                                static_cast<const std::uint64_t*>(above), level);
            }
            PIXFLOW_INTERNAL_ERROR(std::string("integral: output dtype ") + dtype_name(out.dtype) +
                                   " is not u32, u64 or f64");
        });
    });
    if (last) std::memcpy(last, out.row<char>(out.height - 1), out.row_samples() * dtype_size(out.dtype));
}

} // namespace pixflow::integral
