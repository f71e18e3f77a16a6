// gauss5x5.cu: the CUDA kernel of gauss5x5 (see gauss5x5.hpp for the arithmetic and borders).
//
// A row is treated as width*channels samples, so channel interleaving is only an offset of C
// samples and u8/u16/f32 share one code path. Each block is one warp; it owns a tile of
// 240 samples x kRows rows and keeps everything in registers (no shared memory, no barriers):
//
//   lane:      0     1      2    ...    30       31        each lane holds kVec = 8 consecutive
//   samples: [-8,0) [0,8) [8,16) ... [232,240) [240,248)   samples of a row (relative to the
//            apron  <-------- outputs: lanes 1..30 ------->  apron          tile's first output)
//
//  1. Vertical pass: a lane walks down its 8-sample column, one row at a time: one 8-byte (u8),
//     16-byte (u16) or 2x16-byte (f32) load per row, so a warp reads 256, 512 or 1024 contiguous
//     bytes. Rows are loaded kAhead rows before use and enter a sliding window of 5 rows held as
//     floats; rows y0-2..y0+kRows+1 are read (the 2-row apron is border-mapped, warp-uniformly).
//  2. Horizontal pass: the 2*C <= 8 samples a lane needs on each side come from lanes -1 and +1
//     through shuffles. Lanes 0 and 31 only feed their neighbours, so a warp writes 240 of the
//     256 samples it reads; the overlap with the neighbouring tiles (and the 4 apron rows per
//     strip) hits in L2 (ncu, u8 RGB 8192x8192: 203 MB read from DRAM for a 201 MB input).
//  3. Output: round to the dtype, pack, one vector store per lane and row.
// Warps whose tile (with its apron) is inside the image take a path with no border logic. Edge
// warps map rows through border_index and, in lanes that touch a row end, gather their 8 samples
// from column indices computed once per strip (mapping every sample of every row instead made
// the edge warps several times slower and cost 15% of the whole kernel, H200).
//
// Why registers and not a shared-memory tile: the kernel is bound by instruction issue, not by
// bandwidth (25 taps ~ 12 float instructions per sample, and u8 RGB needs ~5 samples per SM
// clock to keep up with HBM), so the design minimises instructions per sample: every sample is
// loaded and converted once per row, and there is no shared-memory round trip or barrier.
// Conversions avoid the slow I2F/F2I units: a u8/u16 sample is put into the mantissa of 2^23 with
// one byte permute and 2^23 subtracted; an output is rounded by adding 2^23 and its integer read
// off the mantissa with byte permutes. Every float operation is an explicit
// __fmaf_rn/__fadd_rn/__fmul_rn, so nvcc cannot contract differently from the CPU kernel: the
// results are bit-identical to gauss5x5_cpu (checked on 1620 shapes/pitches/borders/dtypes).
//
// Measured, H100 80GB HBM3, 8192x8192, `pixflow bench pipelines/bench/gauss5x5-8k.toml --set
// src.channels=C --set src.dtype=T`, median of 20 (cudaEvent), x = against a device-to-device
// copy of the same bytes measured in the same run (2.9 TB/s read+write). 2026-11-28, two rounds
// of the kernel before and after in one session, alternating:
//                 before (10 rows a warp, 20 blocks/SM)    now (5 rows, 24 blocks/SM for u8)
//   u8  C=3       0.2077-0.2089 ms  1.51x                  0.1995-0.2024 ms  1.42-1.43x
//   u8  C=1       0.0913-0.0934 ms  1.92-1.99x             0.0830-0.0840 ms  1.76-1.81x
//   u8  C=4       0.2719-0.2737 ms  1.46-1.48x             0.2614-0.2616 ms  1.38-1.41x
//   u16 C=3       0.3006-0.3017 ms  1.09x                  0.2852-0.2898 ms  1.02-1.04x
//   f32 C=3       0.6377-0.6396 ms  1.15x                  0.5574-0.5590 ms  1.01x
// Latency, not only issue, held it: at 27% occupancy a warp's chain of rows hid too little of
// the load latency, so shorter strips (more warps; the 4 apron rows are then read for 5 outputs
// instead of 10, hits in L2) and, for u8, 24 resident blocks (80 registers; u8 C=3 and C=4 spill
// 16 and 24 bytes, still faster) win. Also timed: 20 and 30 rows (RGB 0.228, 0.240 ms), 16
// blocks (0.234-0.251), 28 blocks with 5 rows (RGB 0.197-0.198 but RGBA 0.272), 32 (0.24-0.25).
// 2026-11-30, H200 (test/bench/gauss_harness.cu, beside the kernel before, 722 cases byte for
// byte, medians of 15 alternating, 3 rounds): issue-bound there (151.9 M warp instructions at 80%
// issue, docs/performance.md). Interior rows addressed by a pointer stepping down by the pitch
// instead of a 64-bit multiply and add per row: u8 RGB 0.1913-0.1916 -> 0.1892-0.1901 ms, gray
// 0.0811-0.0816 -> 0.0787-0.0796, RGBA 0.2562-0.2583 -> 0.2449-0.2460, f32 RGB 0.4484-0.4500 ->
// 0.4328-0.4330, u16 level. Measured and left out: 10 rows a warp (RGB +4.6%, gray +7-9%), the
// writer lanes' stores as predicated PTX stores instead of the branch (level; f32 lost its gain).
#include "gauss5x5.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

#include <cstdint>
#include <type_traits>

namespace pixflow::gauss5x5 {
namespace {

constexpr int kVec = 8;             // samples per lane
constexpr int kWarpOut = 30 * kVec; // samples a warp writes per row (lanes 1..30)
constexpr int kWarps = 1;           // warps per block (one: no block waits on a slow edge warp)
constexpr int kRows = 5;            // output rows per warp (a multiple of 5)
/// Resident blocks per SM asked of ptxas: 24 (<= 80 registers) for u8, 20 (<= 96) for u16 and
/// f32, which spill at 80 (ptxas -v, sm_90).
template <class T> constexpr int min_blocks() { return sizeof(T) == 1 ? 24 : 20; }
constexpr unsigned kFull = 0xffffffffu;

struct Weights {
    float w0, w1, w2; // outer, inner, centre tap
};

struct Args {
    const char* in;
    char* out;
    long long in_pitch, out_pitch;
    int width, height, samples; // samples = width * channels
    Border border;
    Weights w;
    bool in_vec, out_vec; // rows aligned for vector loads / stores
};

// 8 samples of T, packed as in memory: 2, 4 or 8 32-bit words.
template <class T> struct Raw {
    static constexpr int kWords = kVec * int(sizeof(T)) / 4;
    unsigned w[kWords];
};

template <class T> __device__ __forceinline__ Raw<T> load_vec(const T* p) {
    Raw<T> r;
    if constexpr (Raw<T>::kWords == 2) {
        const uint2 a = *reinterpret_cast<const uint2*>(p);
        r.w[0] = a.x, r.w[1] = a.y;
    } else {
#pragma unroll
        for (int k = 0; k < Raw<T>::kWords / 4; ++k) {
            const uint4 a = reinterpret_cast<const uint4*>(p)[k];
            r.w[4 * k] = a.x, r.w[4 * k + 1] = a.y, r.w[4 * k + 2] = a.z, r.w[4 * k + 3] = a.w;
        }
    }
    return r;
}

template <class T> __device__ __forceinline__ void store_vec(T* p, const Raw<T>& r) {
    if constexpr (Raw<T>::kWords == 2) {
        *reinterpret_cast<uint2*>(p) = make_uint2(r.w[0], r.w[1]);
    } else {
#pragma unroll
        for (int k = 0; k < Raw<T>::kWords / 4; ++k)
            reinterpret_cast<uint4*>(p)[k] = make_uint4(r.w[4 * k], r.w[4 * k + 1], r.w[4 * k + 2], r.w[4 * k + 3]);
    }
}

// Sample i of a Raw as its bits (zero-extended).
template <class T> __device__ __forceinline__ unsigned raw_get(const Raw<T>& r, int i) {
    if constexpr (sizeof(T) == 1)
        return (r.w[i / 4] >> (8 * (i % 4))) & 0xffu;
    else if constexpr (sizeof(T) == 2)
        return (r.w[i / 2] >> (16 * (i % 2))) & 0xffffu;
    else
        return r.w[i];
}

// Sample i (a compile-time constant after unrolling) of a Raw into a float, exactly.
template <class T> __device__ __forceinline__ float to_float(const Raw<T>& r, int i) {
    if constexpr (std::is_same_v<T, float>) {
        return __uint_as_float(r.w[i]);
    } else {
        // Byte permute: the sample's bytes at the bottom, 0x4B (2^23's exponent) at the top.
        const unsigned sel = sizeof(T) == 1 ? 0x7440u | unsigned(i % 4) : (i % 2 == 0 ? 0x7410u : 0x7432u);
        const unsigned word = r.w[sizeof(T) == 1 ? i / 4 : i / 2];
        return __fsub_rn(__uint_as_float(__byte_perm(word, 0x4B000000u, sel)), 8388608.0f);
    }
}

// 8 floats to the output dtype: round to nearest even (2^23 + x leaves the integer in the low
// mantissa bits) and pack with byte permutes. No clamp: with the taps gauss5x5_check accepts
// (non-negative, summing to 1 within 1e-6) every output lies in [0, max + 0.2], which rounds
// into range; the CPU kernel's clamp therefore never changes a value either.
template <class T> __device__ __forceinline__ Raw<T> from_float(const float (&o)[kVec]) {
    Raw<T> r;
    if constexpr (std::is_same_v<T, float>) {
#pragma unroll
        for (int i = 0; i < kVec; ++i) r.w[i] = __float_as_uint(o[i]);
    } else {
        unsigned b[kVec];
#pragma unroll
        for (int i = 0; i < kVec; ++i) b[i] = __float_as_uint(__fadd_rn(o[i], 8388608.0f));
        if constexpr (sizeof(T) == 1) {
#pragma unroll
            for (int k = 0; k < 2; ++k)
                r.w[k] = __byte_perm(__byte_perm(b[4 * k], b[4 * k + 1], 0x0040u),
                                     __byte_perm(b[4 * k + 2], b[4 * k + 3], 0x0040u), 0x5410u);
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) r.w[k] = __byte_perm(b[2 * k], b[2 * k + 1], 0x5410u);
        }
    }
    return r;
}

// Floor division of a sample index that may be negative (down to -2C).
template <int C> __device__ __forceinline__ int pixel_of(int s) { return s >= 0 ? s / C : -((C - 1 - s) / C); }

// The slow paths below are __noinline__: the kernel's row loop is unrolled, and inlining them
// into every row would multiply its code size (instruction-cache misses cost more than the calls).

// The input row read for virtual row y outside 0..height-1, or -1 for the zero border.
__device__ __noinline__ int border_row(int y, int height, Border border) { return border_index(y, height, border); }

// Where the lane's 8 samples from s come from in a row, for lanes that cannot use one vector
// load (at a row end, or rows not aligned for it): border-mapped sample indices, -1 for a zero
// border or for samples more than 2 pixels beyond either row end (no output reads those).
struct Sources {
    int i[kVec];
};
template <int C> __device__ __noinline__ Sources column_sources(int s, int width, int samples, Border border) {
    Sources src;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
        const int si = s + k;
        src.i[k] = -1;
        if (si >= 0 && si < samples) {
            src.i[k] = si;
        } else if (si >= -2 * C && si < samples + 2 * C) {
            const int x = pixel_of<C>(si);
            const int bx = border_index(x, width, border);
            if (bx >= 0) src.i[k] = bx * C + (si - x * C);
        }
    }
    return src;
}

// The 8 samples of `row` at `src`, one by one (0 where src is -1).
template <class T> __device__ __forceinline__ Raw<T> gather_row(const T* row, const Sources& src) {
    Raw<T> r;
#pragma unroll
    for (int k = 0; k < Raw<T>::kWords; ++k) r.w[k] = 0;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
        unsigned bits = 0;
        if (src.i[k] >= 0) {
            if constexpr (sizeof(T) == 4)
                bits = reinterpret_cast<const unsigned*>(row)[src.i[k]];
            else
                bits = unsigned(row[src.i[k]]);
        }
        if constexpr (sizeof(T) == 1)
            r.w[k / 4] |= bits << (8 * (k % 4));
        else if constexpr (sizeof(T) == 2)
            r.w[k / 2] |= bits << (16 * (k % 2));
        else
            r.w[k] = bits;
    }
    return r;
}

// Stores, one by one, the samples of `packed` that lie before the row end.
template <class T> __device__ __noinline__ void scatter_row(T* row, int s, int samples, Raw<T> packed) {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
        if (s + j < samples) {
            const unsigned bits = raw_get(packed, j);
            if constexpr (sizeof(T) == 4)
                reinterpret_cast<unsigned*>(row)[s + j] = bits;
            else
                row[s + j] = T(bits);
        }
}

template <class T> __device__ __forceinline__ void to_floats(const Raw<T>& r, float (&f)[kVec]) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) f[i] = to_float(r, i);
}

// fma(w0, a + e, fma(w1, b + d, w2 * c)): the symmetric 5-tap filter, in the one order that the
// CPU kernel uses too.
__device__ __forceinline__ float tap5(Weights w, float a, float b, float c, float d, float e) {
    return __fmaf_rn(w.w0, __fadd_rn(a, e), __fmaf_rn(w.w1, __fadd_rn(b, d), __fmul_rn(w.w2, c)));
}

// The lane's 8 outputs of one row: vertical pass over the window (input rows y-2..y+2 in
// win[(I + k) % 5], k = 0..4), then the horizontal pass with the neighbours' samples, packed to
// the output dtype.
template <class T, int C, int I> __device__ __forceinline__ Raw<T> filter_row(Weights w, const float (&win)[5][kVec]) {
    float v[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j)
        v[j] =
            tap5(w, win[I % 5][j], win[(I + 1) % 5][j], win[(I + 2) % 5][j], win[(I + 3) % 5][j], win[(I + 4) % 5][j]);
    // e[2C + j] = v[j]; e[0 .. 2C) come from lane - 1, e[2C + kVec ..) from lane + 1 (garbage in
    // lanes 0 and 31, which write nothing).
    float e[kVec + 4 * C];
#pragma unroll
    for (int j = 0; j < 2 * C; ++j) {
        e[j] = __shfl_up_sync(kFull, v[kVec - 2 * C + j], 1);
        e[2 * C + kVec + j] = __shfl_down_sync(kFull, v[j], 1);
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) e[2 * C + j] = v[j];
    float o[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) o[j] = tap5(w, e[j], e[j + C], e[j + 2 * C], e[j + 3 * C], e[j + 4 * C]);
    return from_float<T>(o);
}

// One warp's strip: output samples [s + kVec, s + kVec + kWarpOut) of rows [y0, y0 + kRows).
// kInterior: the strip, its 2-pixel apron included, lies inside the image and the rows are
// aligned, so every load and store is a plain vector access with no border logic.
template <class T, int C, bool kInterior>
__device__ __forceinline__ void blur_strip(const Args& a, int lane, int s, int y0) {
    // Input row y0 - 2 + r is loaded kAhead rows before it enters the window, where it lives as
    // floats in win[r % 5]. kAhead = 5 matches the unrolling by 5, so the ring needs no moves.
    constexpr int kAhead = sizeof(T) == 4 ? 2 : 5;
    constexpr int kIn = kRows + 4; // input rows read
    const bool writer = lane >= 1 && lane <= 30;
    // Edge path only: can this lane use vector loads, and if not, where do its samples come from.
    const bool lane_vec = kInterior || (a.in_vec && s >= 0 && s + kVec <= a.samples);
    Sources src{};
    if (!lane_vec) src = column_sources<C>(s, a.width, a.samples, a.border);
    const long long lane_bytes = static_cast<long long>(s) * static_cast<long long>(sizeof(T));
    const char* const in = a.in + lane_bytes;
    char* const out = a.out + lane_bytes;
    // Interior: rows are loaded and stored in order, each once, so one pointer each steps down by
    // the pitch (two adds a row where each row's address was a 64-bit multiply and add).
    const char* in_next = kInterior ? in + (y0 - 2) * a.in_pitch : in;
    char* out_next = kInterior ? out + y0 * a.out_pitch : out;
    auto load = [&](int r) -> Raw<T> {
        if constexpr (kInterior) {
            const Raw<T> v = load_vec(reinterpret_cast<const T*>(in_next));
            in_next += a.in_pitch;
            return v;
        } else {
            const int y = y0 - 2 + r;
            const int ry = unsigned(y) < unsigned(a.height) ? y : border_row(y, a.height, a.border);
            if (ry < 0) return Raw<T>{};
            const char* row = a.in + ry * a.in_pitch;
            if (lane_vec) return load_vec(reinterpret_cast<const T*>(row) + s);
            return gather_row<T>(reinterpret_cast<const T*>(row), src);
        }
    };
    auto store = [&](int i, const Raw<T>& packed) {
        if constexpr (kInterior) {
            if (writer) store_vec(reinterpret_cast<T*>(out_next), packed);
            out_next += a.out_pitch;
        } else if (const int y = y0 + i; writer && y < a.height && s < a.samples) {
            T* row = reinterpret_cast<T*>(a.out + y * a.out_pitch);
            if (a.out_vec && s + kVec <= a.samples)
                store_vec(row + s, packed);
            else
                scatter_row(row, s, a.samples, packed);
        }
    };

    Raw<T> ahead[kAhead];
    float win[5][kVec];
#pragma unroll
    for (int r = 0; r < kAhead; ++r) ahead[r] = load(r);
    // Row r enters `slot`; row r + kAhead is loaded.
    auto advance = [&](int r, float(&slot)[kVec]) {
        to_floats(ahead[0], slot);
#pragma unroll
        for (int k = 0; k + 1 < kAhead; ++k) ahead[k] = ahead[k + 1];
        if (r + kAhead < kIn) ahead[kAhead - 1] = load(r + kAhead);
    };
#pragma unroll
    for (int r = 0; r < 4; ++r) advance(r, win[r]);

#pragma unroll 1
    for (int i = 0; i < kRows; i += 5) { // i % 5 == 0: the window slots are static
        advance(i + 4, win[4]);
        store(i, filter_row<T, C, 0>(a.w, win));
        advance(i + 5, win[0]);
        store(i + 1, filter_row<T, C, 1>(a.w, win));
        advance(i + 6, win[1]);
        store(i + 2, filter_row<T, C, 2>(a.w, win));
        advance(i + 7, win[2]);
        store(i + 3, filter_row<T, C, 3>(a.w, win));
        advance(i + 8, win[3]);
        store(i + 4, filter_row<T, C, 4>(a.w, win));
    }
}

// Warp w of block (bx, by): output samples [(bx * kWarps + w) * kWarpOut, + kWarpOut) of rows
// [by * kRows, + kRows); see the top of the file. No shared memory.
// blockDim.x = 32 * kWarps, gridDim = cuda::grid_rows(ceil(chunks / kWarps), strips): the strip
// index is cuda::block_row(), as gridDim.y holds at most 65535 blocks.
template <class T, int C>
__global__ void __launch_bounds__(32 * kWarps, min_blocks<T>()) gauss5x5_kernel(const Args a) {
    static_assert(2 * C <= kVec, "the horizontal apron must fit in one lane");
    static_assert(kRows % 5 == 0, "the row loop is unrolled by the window's 5 rows");
    const int lane = int(threadIdx.x) & 31;
    const int out0 = (int(blockIdx.x) * kWarps + (int(threadIdx.x) >> 5)) * kWarpOut;
    if (out0 >= a.samples) return; // the whole warp
    const int s = out0 - kVec + lane * kVec;
    const int y0 = int(cuda::block_row()) * kRows;
    if (y0 >= a.height) return; // past the last strip
    // Warp-uniform: all but the warps at the image's edges take the interior path.
    if (a.in_vec && a.out_vec && out0 >= kVec && out0 + kWarpOut + kVec <= a.samples && y0 >= 2 &&
        y0 + kRows + 2 <= a.height)
        blur_strip<T, C, true>(a, lane, s, y0);
    else
        blur_strip<T, C, false>(a, lane, s, y0);
}

} // namespace

void gauss5x5_cuda(const ImageView& in, const ImageView& out, const std::array<float, 5>& taps, Border border,
                   void* stream) {
    gauss5x5_check(in, out, taps, /*on_host=*/false);
    if (in.width == 0 || in.height == 0) return;
    const int samples = int(in.row_samples());
    const long long strips = (in.height + kRows - 1) / kRows;
    const dim3 grid = cuda::grid_rows(cuda::div_up(cuda::div_up(samples, kWarpOut), kWarps), strips);
    // One lane's 8 samples: 8, 16 or 32 bytes, loaded as uint2 or uint4s.
    const std::size_t vec_bytes = dtype_size(in.dtype) == 1 ? 8 : 16;
    const Args a{static_cast<const char*>(in.data),
                 static_cast<char*>(out.data),
                 in.pitch,
                 out.pitch,
                 in.width,
                 in.height,
                 samples,
                 border,
                 Weights{taps[0], taps[1], taps[2]},
                 is_aligned(in, vec_bytes),
                 is_aligned(out, vec_bytes)};
    const cudaStream_t s = cuda::stream_of(stream);
    visit_dtype<DType::u8, DType::u16, DType::f32>("gauss5x5", in.dtype, [&](auto tag) {
        visit_channels("gauss5x5", in.channels, [&](auto c) {
            gauss5x5_kernel<decltype(tag), decltype(c)::value><<<grid, dim3(32 * kWarps), 0, s>>>(a);
        });
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::gauss5x5
