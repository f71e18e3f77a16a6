// convert.cu: CUDA kernel of convert.
//
// Grid: one row of blocks per image row (cuda::grid_rows); along a row each block covers a tile
// of 4 x 256 samples,
// thread t taking samples t, t + 256, t + 512, t + 768 of the tile, so every load and store
// instruction of a warp touches 32 consecutive samples (coalesced whatever the pitch) and each
// thread has 4 loads in flight. No shared memory. Memory-bound: one read and one write per
// sample. Measured with `pixflow bench` on an H200 (8192x8192x3, median of 20; floor = bytes
// moved at the device-to-device copy rate, 4.1 TB/s): u8 -> f32 1.15x the floor, f32 -> u8
// (1 channel) 1.33x. One sample per thread, as first written, was 2.6x and 3.2x at 4096x4096.
#include "convert.hpp"

#include "convert_sample.hpp"

#include <pixflow/cuda.hpp>

namespace pixflow::basic {
namespace {

constexpr int block_threads = 256;
constexpr int items_per_thread = 4;
constexpr int tile = block_threads * items_per_thread; // samples per block and row step

template <class Ti, class To, ConvertPath P>
__global__ void __launch_bounds__(block_threads) convert_kernel(ImageView in, ImageView out, ConvertRule rule) {
    const std::size_t n = in.row_samples();
    const int y = int(cuda::block_row());
    if (y >= in.height) return;
    const Ti* src = in.row<Ti>(y);
    To* dst = out.row<To>(y);
    for (std::size_t base = std::size_t(blockIdx.x) * tile + threadIdx.x; base < n;
         base += std::size_t(gridDim.x) * tile) {
        // All loads first, so that items_per_thread of them are in flight at once.
        Ti v[items_per_thread];
#pragma unroll
        for (int j = 0; j < items_per_thread; ++j) {
            const std::size_t i = base + std::size_t(j) * block_threads;
            if (i < n) v[j] = src[i];
        }
#pragma unroll
        for (int j = 0; j < items_per_thread; ++j) {
            const std::size_t i = base + std::size_t(j) * block_threads;
            if (i < n) dst[i] = convert_sample<To, Ti, P>(v[j], rule);
        }
    }
}

} // namespace

void convert_cuda(const ImageView& in, const ImageView& out, double scale, double offset, void* stream) {
    if (in.width <= 0 || in.height <= 0) return;
    const dim3 block(block_threads);
    const dim3 grid = cuda::grid_rows(cuda::div_up((long long)in.row_samples(), tile), in.height);
    cudaStream_t s = cuda::stream_of(stream);
    const ConvertRule rule = make_convert_rule(scale, offset);
    visit_conversion(in.dtype, out.dtype, scale, offset, [&](auto ti, auto to, auto path) {
        convert_kernel<decltype(ti), decltype(to), decltype(path)::value><<<grid, block, 0, s>>>(in, out, rule);
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::basic
