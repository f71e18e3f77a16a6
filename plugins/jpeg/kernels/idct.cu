// idct.cu: the CUDA kernel of idct8x8 (layout and constants: jpeg_cuda.cuh).
//
// Thread (lane, r) loads row r of its tile's coefficients with wide loads; through shared memory
// it gets column r and runs the inverse column transform; a second trip gives it row r, where it
// runs the inverse row transform (inverse_rows, shared with the fused kernel), converts (u8: +128, round, saturate) and stores the pixels
// inside the original image (the last tile column and row are cropped), through shared memory
// for f32 with several channels (jpeg_cuda.cuh, "stores"). Four or five barriers.
//
// Measured on an H100 (pixflow bench, median of 20, floor at the device copy bandwidth):
// 8192 x 8192 f32 -> u8 gray 0.115 ms (0.99x the floor), RGB 0.350 ms (1.01x).
#include "jpeg.hpp"
#include "jpeg_cuda.cuh"

namespace pixflow::jpeg {
namespace {

using namespace cuda_detail;

template <class T, int C>
__global__ void __launch_bounds__(kThreads)
    idct_kernel(ImageView in, ImageView out, int strips, int nbx, bool wide_in, bool wide_out) {
    __shared__ Transpose<C> sm;
    const Place p = place(strips);
    const int tx = min(p.tx, nbx - 1);

    RowBuf<float, C> src;
    load_row<float, C>(in, 8 * tx, 8 * p.ty + p.r, wide_in, src);
    float a[C][8], t[C][8];
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
        for (int k = 0; k < 8; ++k) t[c][k] = src.s[k * C + c]; // F[r][u]
    transpose<C>(sm, p.lane, p.r, t, a);                        // a[c][v] = F[v][r]
#pragma unroll
    for (int c = 0; c < C; ++c) idct8(a[c], t[c]); // t[c][y] = column r after the column pass
    inverse_rows<C>(sm, p, t, a);                  // t[c][x]: pixels of row r
    store_pixels<T, C>(out, sm, p, nbx, wide_out, t);
}

} // namespace

void idct8x8_cuda(const ImageView& in, const ImageView& out, void* stream) {
    check_idct(in, out, /*on_host=*/false);
    const int nbx = coeff_blocks(in.width), nby = coeff_blocks(in.height);
    const Launch l = launch_for(nbx, nby);
    const dim3 block(kLanes, 8);
    const bool wi = wide_ok(in), wo = wide_ok(out);
    visit_dtype<DType::u8, DType::f32>("idct8x8", out.dtype, [&](auto tag) {
        visit_channels("idct8x8", in.channels, [&](auto c) {
            idct_kernel<decltype(tag), decltype(c)::value>
                <<<l.blocks, block, 0, cuda::stream_of(stream)>>>(in, out, l.strips, nbx, wi, wo);
        });
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::jpeg
