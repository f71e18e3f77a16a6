// dct.cu: the CUDA kernel of dct8x8 (layout and constants: jpeg_cuda.cuh).
//
// Thread (lane, r) loads row r of its tile (8 pixels x C samples, the last column and row
// repeated past the image's edge), level-shifts it and runs the row transform in registers; the
// tile goes through shared memory so that the thread holds column r (forward_rows, shared with
// the fused kernel) and runs the column transform; the coefficients go back to shared memory, from where warp r stores image row r of
// the strip with contiguous wide stores. Threads of the last tile column and row also write the
// zero marker columns and rows (jpeg_math.hpp, "shapes"). Three barriers per block.
//
// Measured on an H100 (pixflow bench, median of 20; floor = bytes read + written at the 2.9 TB/s
// of a device-to-device copy): 8192 x 8192 u8 -> f32 gray 0.123 ms (1.06x the floor), RGB
// 0.352 ms (1.01x). Before the stores went through shared memory, RGB took 0.686 ms (1.99x).
#include "jpeg.hpp"
#include "jpeg_cuda.cuh"

namespace pixflow::jpeg {
namespace {

using namespace cuda_detail;

template <class T, int C>
__global__ void __launch_bounds__(kThreads)
    dct_kernel(ImageView in, ImageView out, int strips, int nbx, int nby, bool wide_in, bool wide_out) {
    __shared__ Transpose<C> sm;
    const Place p = place(strips);
    float a[C][8], t[C][8];
    forward_dct<T, C>(in, sm, p, nbx, wide_in, a, t, [&](int c) { // t[c][v] = F[v][r]
#pragma unroll
        for (int v = 0; v < 8; ++v) sm.v[c][p.lane][v * 8 + p.r] = t[c][v];
    });
    __syncthreads();
    const int y = 8 * p.ty + p.r;
    store_row_from_smem<float, C>(out, sm, p.r, p.lane, p.tx - p.lane, y, 8 * nbx, wide_out);
    if (p.tx >= nbx) return;

    // Markers: zero columns past the blocks (last tile column), zero rows past them (last tile
    // row), and their corner.
    const int wblocks = 8 * nbx * C, wall = out.width * C;
    if (p.tx == nbx - 1) zero_samples<float>(out, y, wblocks, wall);
    const int ym = 8 * nby + p.r;
    if (p.ty == nby - 1 && ym < out.height) {
        zero_samples<float>(out, ym, 8 * p.tx * C, 8 * p.tx * C + 8 * C);
        if (p.tx == nbx - 1) zero_samples<float>(out, ym, wblocks, wall);
    }
}

} // namespace

void dct8x8_cuda(const ImageView& in, const ImageView& out, void* stream) {
    check_dct(in, out, /*on_host=*/false);
    const int nbx = (in.width + 7) / 8, nby = (in.height + 7) / 8;
    const Launch l = launch_for(nbx, nby);
    const dim3 block(kLanes, 8);
    const bool wi = wide_ok(in), wo = wide_ok(out);
    visit_dtype<DType::u8, DType::f32>("dct8x8", in.dtype, [&](auto tag) {
        visit_channels("dct8x8", in.channels, [&](auto c) {
            dct_kernel<decltype(tag), decltype(c)::value>
                <<<l.blocks, block, 0, cuda::stream_of(stream)>>>(in, out, l.strips, nbx, nby, wi, wo);
        });
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::jpeg
