// grayscale.cu: CUDA kernels of grayscale.
//
// u8 with rows on 16-byte boundaries (every buffer pixflow allocates): grayscale_u8_vec. Thread
// g of a row makes 16 output pixels, one 16-byte store, from C 16-byte loads of 16 input pixels
// (48 bytes for RGB, 64 for RGBA, 16 for gray: a copy). Each pixel's bytes are picked from the
// loaded words at compile-time offsets, and luma<u8> is the exact integer rule of
// grayscale_pixel.hpp, so the bytes are those of the CPU kernel. The pixels after the last whole
// group (fewer than 16) are made by the last group's thread. No shared memory.
//
// Every other dtype, and u8 views whose rows are not 16-byte aligned: grayscale_kernel. Grid:
// one row of blocks per image row (cuda::grid_rows); along a row each block covers a tile of
// 4 x 256 pixels, thread t taking pixels t, t + 256, t + 512, t + 768 of the tile. A warp's store
// covers 32 consecutive outputs (coalesced) and its loads one contiguous span of 32 pixels (96 or
// 128 samples, the same cache lines); each thread has 4 pixels of loads in flight.
//
// Measured with `pixflow bench` (8192x8192x3, median of 20; floor = bytes moved at the rate of a
// device-to-device copy in the same run): the byte-wise kernel, u8 0.135 ms = 1.44x (H100),
// 0.1174 ms = 1.73x (H200); f32 0.92x (L2 helps). The vector kernel: see docs/performance.md.
#include "grayscale.hpp"

#include "grayscale_pixel.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

namespace pixflow::basic {
namespace {

constexpr int block_threads = 256;
constexpr int items_per_thread = 4;
constexpr int tile = block_threads * items_per_thread; // pixels per block and row step

template <class T> __global__ void __launch_bounds__(block_threads) grayscale_kernel(ImageView in, ImageView out) {
    const int c = in.channels;
    const unsigned w = unsigned(in.width);
    const int y = int(cuda::block_row());
    if (y >= in.height) return;
    const T* src = in.row<T>(y);
    T* dst = out.row<T>(y);
    for (unsigned base = blockIdx.x * tile + threadIdx.x; base < w; base += gridDim.x * tile) {
        T r[items_per_thread], g[items_per_thread], b[items_per_thread];
#pragma unroll
        for (int j = 0; j < items_per_thread; ++j) {
            const unsigned x = base + j * block_threads;
            if (x < w) {
                const T* p = src + std::size_t(x) * c;
                r[j] = p[0];
                g[j] = c == 1 ? p[0] : p[1];
                b[j] = c == 1 ? p[0] : p[2];
            }
        }
#pragma unroll
        for (int j = 0; j < items_per_thread; ++j) {
            const unsigned x = base + j * block_threads;
            if (x < w) dst[x] = c == 1 ? r[j] : luma<T>(r[j], g[j], b[j]);
        }
    }
}

constexpr int vec_threads = 128;
constexpr int vec_pixels = 16; // per thread

/// Byte `i` of the little-endian words v[] (i is a compile-time constant after unrolling).
__device__ __forceinline__ unsigned byte_of(const unsigned* v, int i) { return (v[i >> 2] >> (8 * (i & 3))) & 0xffu; }

template <int C> __global__ void __launch_bounds__(vec_threads) grayscale_u8_vec(ImageView in, ImageView out) {
    const int y = int(cuda::block_row());
    if (y >= in.height) return;
    const unsigned groups = unsigned(in.width) / vec_pixels;
    const unsigned g = blockIdx.x * vec_threads + threadIdx.x;
    const std::uint8_t* src = in.row<std::uint8_t>(y);
    std::uint8_t* dst = out.row<std::uint8_t>(y);
    if (g < groups) {
        const uint4* s4 = reinterpret_cast<const uint4*>(src + std::size_t(g) * vec_pixels * C);
        uint4 a[C];
#pragma unroll
        for (int q = 0; q < C; ++q) a[q] = __ldg(s4 + q);
        unsigned v[4 * C];
#pragma unroll
        for (int q = 0; q < C; ++q) {
            v[4 * q + 0] = a[q].x;
            v[4 * q + 1] = a[q].y;
            v[4 * q + 2] = a[q].z;
            v[4 * q + 3] = a[q].w;
        }
        unsigned o[4];
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            unsigned word = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int p = 4 * w + k;
                const unsigned l =
                    C == 1 ? byte_of(v, p)
                           : luma<std::uint8_t>(std::uint8_t(byte_of(v, p * C)), std::uint8_t(byte_of(v, p * C + 1)),
                                                std::uint8_t(byte_of(v, p * C + 2)));
                word |= l << (8 * k);
            }
            o[w] = word;
        }
        *reinterpret_cast<uint4*>(dst + std::size_t(g) * vec_pixels) = make_uint4(o[0], o[1], o[2], o[3]);
    }
    if (g == (groups ? groups - 1 : 0)) // the pixels after the last whole group
        for (unsigned x = groups * vec_pixels; x < unsigned(in.width); ++x) {
            const std::uint8_t* p = src + std::size_t(x) * C;
            dst[x] = C == 1 ? p[0] : luma<std::uint8_t>(p[0], p[1], p[2]);
        }
}

} // namespace

void grayscale_cuda(const ImageView& in, const ImageView& out, void* stream) {
    if (in.width <= 0 || in.height <= 0) return;
    const cudaStream_t s = cuda::stream_of(stream);
    if (in.dtype == DType::u8 && is_aligned(in, 16) && is_aligned(out, 16)) {
        const unsigned groups = unsigned(in.width) / vec_pixels;
        const dim3 grid = cuda::grid_rows(cuda::div_up(groups > 1 ? groups : 1, vec_threads), in.height);
        visit_channels<1, 3, 4>("grayscale", in.channels, [&](auto c) {
            grayscale_u8_vec<decltype(c)::value><<<grid, vec_threads, 0, s>>>(in, out);
        });
        PIXFLOW_CUDA_CHECK_LAUNCH();
        return;
    }
    const dim3 grid = cuda::grid_rows(cuda::div_up(in.width, tile), in.height);
    visit_dtype<DType::u8, DType::u16, DType::f32>("grayscale", in.dtype, [&](auto tag) {
        grayscale_kernel<decltype(tag)><<<grid, block_threads, 0, s>>>(in, out);
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::basic
