// maxpool2x2.cu: CUDA kernels of maxpool2x2.
//
// u8 with rows on 16-byte boundaries (every buffer pixflow allocates; the bench's 8192 x 8192 x 3):
// maxpool2x2_u8_vec. A block of 128 threads makes a tile of one output row: 128 groups of G
// output pixels, G * C = 16 bytes each (48 for C = 3, so that a group starts on a pixel and a
// 16-byte boundary at once), from 2 G input pixels of each of the two input rows:
//
//  1. coalesced 16-byte loads of the tile's two input rows (a warp reads 512 contiguous bytes per
//     load; every load of a thread in flight before the first use), the vertical max of each
//     pair of words (__vmaxu4, 4 bytes at a time) into shared memory;
//  2. thread g pools group g from shared memory: output byte k = max(v[2 p C + c],
//     v[2 p C + C + c]), p = k / C, c = k % C: byte gathers from compile-time indices (PRMT) and
//     __vmaxu4 per 4 bytes, into shared memory;
//  3. coalesced 16-byte stores of the tile's output.
//
// Shared memory makes the global accesses contiguous per warp: a first version loaded each
// group's bytes straight from global memory (lanes 96 bytes apart for RGB, so each load touched
// 24 cache lines instead of 4) and ran at 2.12x the floor on an H100, slower than the byte-wise
// kernel. The output pixels after the last whole group (fewer than G) are made by one thread of
// the row's last tile.
//
// Every other dtype, and u8 views whose rows are not 16-byte aligned: maxpool2x2_kernel. Grid:
// one row of blocks per output row (cuda::grid_rows); along a row each block covers a tile of
// 1024 output samples, thread t taking samples t, t + 256, t + 512 and t + 768 of it, so each of
// its stores is one coalesced run of 256 samples and each thread has 16 loads in flight. Output
// sample j = ox * C + c of a row reads input samples 2j - c and 2j - c + C of two input rows
// (2ox * C + c = 2j - c): a warp's loads cover one contiguous span of 64 samples per input row.
//
// Measured (8192 x 8192 x 3, median of 20, floor = the bytes moved at the rate of a
// device-to-device copy in the same run): byte-wise u8 kernel 0.122 ms = 1.42x (H100) and
// 0.1225 ms = 1.94x (H200); f32 0.33 ms, 0.99x (H100). The vector kernel: see docs/performance.md.
#include "maxpool2x2.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace pixflow::maxpool2x2 {
namespace {

constexpr int block_threads = 256;
constexpr int items_per_thread = 4;
constexpr int tile = block_threads * items_per_thread; // output samples per block and row

template <class T, int C>
__global__ void __launch_bounds__(block_threads) maxpool2x2_kernel(ImageView in, ImageView out) {
    const unsigned n = unsigned(out.width) * C; // output samples per row
    const int oy = int(cuda::block_row());
    if (oy >= out.height) return;
    const T* top = in.row<T>(2 * oy);
    const T* bottom = in.row<T>(2 * oy + 1);
    T* dst = out.row<T>(oy);
    for (unsigned base = blockIdx.x * tile + threadIdx.x; base < n; base += gridDim.x * tile) {
        T tl[items_per_thread], tr[items_per_thread], bl[items_per_thread], br[items_per_thread];
#pragma unroll
        for (int k = 0; k < items_per_thread; ++k) {
            const unsigned j = base + k * block_threads;
            if (j < n) {
                const unsigned i = 2 * j - j % C; // input sample of the window's top-left
                tl[k] = top[i];
                tr[k] = top[i + C];
                bl[k] = bottom[i];
                br[k] = bottom[i + C];
            }
        }
#pragma unroll
        for (int k = 0; k < items_per_thread; ++k) {
            const unsigned j = base + k * block_threads;
            if (j < n) dst[j] = pool_window(tl[k], tr[k], bl[k], br[k]);
        }
    }
}

/// The bytes of one thread's group: G output pixels, G * C = 16 bytes (C = 3: 48).
template <int C> struct U8Group {
    static constexpr int pixels = C == 3 ? 16 : 16 / C;
    static constexpr int out_bytes = pixels * C;
    static constexpr int in_bytes = 2 * out_bytes; // of each input row
};

/// Byte `i` of the little-endian words v[] (i is a compile-time constant after unrolling).
__device__ __forceinline__ unsigned byte_of(const unsigned* v, int i) { return (v[i >> 2] >> (8 * (i & 3))) & 0xffu; }

constexpr int vec_threads = 128; // = groups per block (a tile of an output row)

template <int C> __global__ void __launch_bounds__(vec_threads) maxpool2x2_u8_vec(ImageView in, ImageView out) {
    using G = U8Group<C>;
    constexpr int in_vecs = G::in_bytes / 16, out_vecs = G::out_bytes / 16; // per group
    __shared__ uint4 vmax[vec_threads * in_vecs];                           // the tile's vertical maxima
    __shared__ uint4 pooled[vec_threads * out_vecs];                        // the tile's output
    const int oy = int(cuda::block_row());
    if (oy >= out.height) return;
    const unsigned groups = unsigned(out.width) / G::pixels;
    const unsigned first = blockIdx.x * vec_threads; // the tile's first group
    const int t = int(threadIdx.x);
    const std::uint8_t* top = in.row<std::uint8_t>(2 * oy);
    const std::uint8_t* bottom = in.row<std::uint8_t>(2 * oy + 1);
    std::uint8_t* dst = out.row<std::uint8_t>(oy);
    const int here = first < groups ? int(min(groups - first, unsigned(vec_threads))) : 0;
    if (here > 0) {
        // 1. Coalesced: thread t loads vectors t, t + 128, ... of both rows (a warp: 512
        //    contiguous bytes per load), all before the first use.
        const uint4* t4 = reinterpret_cast<const uint4*>(top + std::size_t(first) * G::in_bytes);
        const uint4* b4 = reinterpret_cast<const uint4*>(bottom + std::size_t(first) * G::in_bytes);
        const int n_in = here * in_vecs;
        uint4 a[in_vecs], b[in_vecs];
#pragma unroll
        for (int q = 0; q < in_vecs; ++q) {
            const int k = t + q * vec_threads;
            if (k < n_in) {
                a[q] = __ldg(t4 + k);
                b[q] = __ldg(b4 + k);
            }
        }
#pragma unroll
        for (int q = 0; q < in_vecs; ++q) {
            const int k = t + q * vec_threads;
            if (k < n_in)
                vmax[k] = make_uint4(__vmaxu4(a[q].x, b[q].x), __vmaxu4(a[q].y, b[q].y), __vmaxu4(a[q].z, b[q].z),
                                     __vmaxu4(a[q].w, b[q].w));
        }
        __syncthreads();
        // 2. Thread t pools its group from shared memory: output byte k is the max of bytes
        //    2 p C + c and 2 p C + C + c (p = k / C, c = k % C) of the vertical maxima.
        if (t < here) {
            unsigned v[G::in_bytes / 4];
#pragma unroll
            for (int q = 0; q < in_vecs; ++q) {
                const uint4 w = vmax[t * in_vecs + q];
                v[4 * q + 0] = w.x;
                v[4 * q + 1] = w.y;
                v[4 * q + 2] = w.z;
                v[4 * q + 3] = w.w;
            }
            unsigned o[G::out_bytes / 4];
#pragma unroll
            for (int w = 0; w < G::out_bytes / 4; ++w) {
                unsigned left = 0, right = 0;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const int j = 4 * w + k, p = j / C, c = j % C;
                    left |= byte_of(v, 2 * p * C + c) << (8 * k);
                    right |= byte_of(v, 2 * p * C + C + c) << (8 * k);
                }
                o[w] = __vmaxu4(left, right);
            }
#pragma unroll
            for (int q = 0; q < out_vecs; ++q)
                pooled[t * out_vecs + q] = make_uint4(o[4 * q], o[4 * q + 1], o[4 * q + 2], o[4 * q + 3]);
        }
        __syncthreads();
        // 3. Coalesced stores of the tile's output.
        uint4* d4 = reinterpret_cast<uint4*>(dst + std::size_t(first) * G::out_bytes);
        const int n_out = here * out_vecs;
#pragma unroll
        for (int q = 0; q < out_vecs; ++q) {
            const int k = t + q * vec_threads;
            if (k < n_out) d4[k] = pooled[k];
        }
    }
    // The pixels after the last whole group (fewer than G): one thread of the row's last tile.
    if (blockIdx.x == gridDim.x - 1 && t == 0)
        for (unsigned j = groups * G::out_bytes; j < unsigned(out.width) * C; ++j) {
            const unsigned i = 2 * j - j % C;
            dst[j] = pool_window(top[i], top[i + C], bottom[i], bottom[i + C]);
        }
}

} // namespace

void maxpool2x2_cuda(const ImageView& in, const ImageView& out, void* stream) {
    check_size(in);
    const cudaStream_t s = cuda::stream_of(stream);
    if (in.dtype == DType::u8 && is_aligned(in, 16) && is_aligned(out, 16) && out.width > 0 && out.height > 0) {
        visit_channels("maxpool2x2", in.channels, [&](auto c) {
            constexpr int C = decltype(c)::value;
            const unsigned groups = unsigned(out.width) / U8Group<C>::pixels;
            const dim3 grid = cuda::grid_rows(cuda::div_up(std::max(groups, 1u), vec_threads), out.height);
            maxpool2x2_u8_vec<C><<<grid, vec_threads, 0, s>>>(in, out);
        });
        PIXFLOW_CUDA_CHECK_LAUNCH();
        return;
    }
    const dim3 grid = cuda::grid_rows(cuda::div_up(static_cast<long long>(out.row_samples()), tile), out.height);
    visit_dtype(in.dtype, [&](auto tag) {
        visit_channels("maxpool2x2", in.channels, [&](auto c) {
            maxpool2x2_kernel<decltype(tag), decltype(c)::value><<<grid, block_threads, 0, s>>>(in, out);
        });
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::maxpool2x2
