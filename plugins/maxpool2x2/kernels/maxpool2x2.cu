// maxpool2x2.cu: CUDA kernel of maxpool2x2.
//
// Grid: one row of blocks per output row (cuda::grid_rows); along a row each block covers a tile
// of 1024 output samples, thread t taking samples t, t + 256, t + 512 and t + 768 of it, so each of its
// stores is one coalesced run of 256 samples and each thread has 16 loads in flight. Output
// sample j = ox * C + c of a row reads input samples 2j - c and 2j - c + C of two input rows
// (2ox * C + c = 2j - c): a warp's loads cover one contiguous span of 64 samples per input row.
// No shared memory. Input read once, output written once. Measured on an H100 for
// 8192 x 8192 x 3 (median of 20; floor = those bytes at the 3.0 TB/s of a device-to-device
// copy): f32 0.33 ms, 0.99x the floor; u8 0.125 ms, 1.5x: one-byte loads cost instructions, and
// 4-byte loads of whole pixel groups with __vmaxu4 would be the next step.
#include "maxpool2x2.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

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

} // namespace

void maxpool2x2_cuda(const ImageView& in, const ImageView& out, void* stream) {
    check_size(in);
    const dim3 grid = cuda::grid_rows(cuda::div_up(static_cast<long long>(out.row_samples()), tile), out.height);
    const cudaStream_t s = cuda::stream_of(stream);
    visit_dtype(in.dtype, [&](auto tag) {
        visit_channels("maxpool2x2", in.channels, [&](auto c) {
            maxpool2x2_kernel<decltype(tag), decltype(c)::value><<<grid, block_threads, 0, s>>>(in, out);
        });
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::maxpool2x2
