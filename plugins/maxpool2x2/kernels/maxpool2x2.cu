// maxpool2x2.cu: CUDA kernels of maxpool2x2.
//
// u8 with rows on 16-byte boundaries (every buffer pixflow allocates; the bench's 8192 x 8192 x 3):
// maxpool2x2_u8_vec. Thread g of an output row makes one group of G output pixels, G * C = 16
// bytes (48 for C = 3, so that a group starts on a pixel and a 16-byte boundary at once), from
// 2 G input pixels of each of the two input rows:
//
//   top row      [ 16-byte loads: 2 G C bytes ]--.
//                                                 >-- __vmaxu4: the vertical max, 4 bytes at a time
//   bottom row   [ 16-byte loads: 2 G C bytes ]--'
//   output       byte k = max(v[2 p C + c], v[2 p C + C + c]), p = k / C, c = k % C: two byte
//                gathers (PRMT, from compile-time indices) and __vmaxu4 per 4 bytes; 16-byte stores
//
// so a thread has 4 (C = 3: 12) 16-byte loads in flight and a warp's loads cover 1 KiB (3 KiB)
// of each row: memory-level parallelism, not instruction issue, is what the byte-wise kernel
// lacked. The output pixels after the last whole group (fewer than G) are made by the last
// group's thread. No shared memory.
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

template <class T, int C> __global__ void __launch_bounds__(block_threads)
    maxpool2x2_kernel(ImageView in, ImageView out) {
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

constexpr int vec_threads = 128;

template <int C> __global__ void __launch_bounds__(vec_threads)
    maxpool2x2_u8_vec(ImageView in, ImageView out) {
    using G = U8Group<C>;
    const int oy = int(cuda::block_row());
    if (oy >= out.height) return;
    const unsigned groups = unsigned(out.width) / G::pixels;
    const unsigned g = blockIdx.x * vec_threads + threadIdx.x;
    const std::uint8_t* top = in.row<std::uint8_t>(2 * oy);
    const std::uint8_t* bottom = in.row<std::uint8_t>(2 * oy + 1);
    std::uint8_t* dst = out.row<std::uint8_t>(oy);
    if (g < groups) {
        constexpr int loads = G::in_bytes / 16;
        unsigned v[G::in_bytes / 4];
        const uint4* t4 = reinterpret_cast<const uint4*>(top + std::size_t(g) * G::in_bytes);
        const uint4* b4 = reinterpret_cast<const uint4*>(bottom + std::size_t(g) * G::in_bytes);
        uint4 a[loads], b[loads];
#pragma unroll
        for (int q = 0; q < loads; ++q) {
            a[q] = __ldg(t4 + q);
            b[q] = __ldg(b4 + q);
        }
#pragma unroll
        for (int q = 0; q < loads; ++q) {
            v[4 * q + 0] = __vmaxu4(a[q].x, b[q].x);
            v[4 * q + 1] = __vmaxu4(a[q].y, b[q].y);
            v[4 * q + 2] = __vmaxu4(a[q].z, b[q].z);
            v[4 * q + 3] = __vmaxu4(a[q].w, b[q].w);
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
        uint4* d4 = reinterpret_cast<uint4*>(dst + std::size_t(g) * G::out_bytes);
#pragma unroll
        for (int q = 0; q < G::out_bytes / 16; ++q)
            d4[q] = make_uint4(o[4 * q], o[4 * q + 1], o[4 * q + 2], o[4 * q + 3]);
    }
    if (g == (groups ? groups - 1 : 0)) // the pixels after the last whole group
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
            const dim3 grid = cuda::grid_rows(cuda::div_up(std::max(groups, 1u), unsigned(vec_threads)), out.height);
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
