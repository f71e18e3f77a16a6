// grayscale.cu: CUDA kernel of grayscale.
//
// Grid: one row of blocks per image row (cuda::grid_rows); along a row each block covers a tile
// of 4 x 256 pixels,
// thread t taking pixels t, t + 256, t + 512, t + 768 of the tile. A warp's store covers 32
// consecutive outputs (coalesced) and its loads one contiguous span of 32 pixels (96 or 128
// samples, the same cache lines); each thread has 4 pixels of loads in flight. No shared memory.
// Measured with `pixflow bench` on an H200 (8192x8192x3, median of 20; floor = bytes moved at the
// device copy rate, 4.1 TB/s): f32 0.92x the floor (L2 helps), u8 2.0x: one-byte loads at a
// 3-byte stride cost instructions; 4-byte vector loads of 4 pixels would be the next step.
#include "grayscale.hpp"

#include "grayscale_pixel.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

namespace pixflow::basic {
namespace {

constexpr int block_threads = 256;
constexpr int items_per_thread = 4;
constexpr int tile = block_threads * items_per_thread; // pixels per block and row step

template <class T> __global__ void __launch_bounds__(block_threads)
    grayscale_kernel(ImageView in, ImageView out) {
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

} // namespace

void grayscale_cuda(const ImageView& in, const ImageView& out, void* stream) {
    if (in.width <= 0 || in.height <= 0) return;
    const dim3 grid = cuda::grid_rows(cuda::div_up(in.width, tile), in.height);
    const cudaStream_t s = cuda::stream_of(stream);
    visit_dtype<DType::u8, DType::u16, DType::f32>("grayscale", in.dtype, [&](auto tag) {
        grayscale_kernel<decltype(tag)><<<grid, block_threads, 0, s>>>(in, out);
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::basic
