// roundtrip.cu: the CUDA kernel of jpeg_roundtrip8x8, the fused dct8x8 -> quantize -> dequantize
// -> idct8x8 (layout and constants: jpeg_cuda.cuh).
//
// One pass, no intermediate image: thread (lane, r) loads row r of its tile (edge pixels
// repeated), runs the row transform, gets column r through shared memory (forward_rows, as
// dct.cu), runs the column transform, quantises and dequantises its 8 coefficients F[v][r]
// (Q[v][r]: a constant-bank broadcast), runs the inverse column transform, gets row r back
// through shared memory, runs the inverse row transform (inverse_rows, as idct.cu) and stores the
// pixels as idct.cu does. The stages are the separate kernels' own code (jpeg_cuda.cuh) and the
// arithmetic is jpeg_math.hpp's (quantize_dequantize skips only the exact trip through an
// integer), so the result is the unfused chain's, bit for bit. Four or five barriers. It moves the image in and out once, against
// 11x the bytes (u8 in, u8 out) for the four separate kernels, whose f32 and i16 intermediates
// are 4 and 2 bytes per sample.
//
// Measured on an H100 (pixflow bench, median of 20), 8192 x 8192 u8 -> u8: gray 0.138 ms, 3.8x
// faster than the four nodes (0.522 ms); RGB 0.347 ms, 4.4x faster (1.532 ms). It is bound by
// instruction issue, not memory (3.0x and 2.5x its own floor): about 400 instructions per thread
// for 8 pixels (4 transforms, 8 divisions, roundings). Avoiding float<->int conversions and the
// division's slow path (jpeg_math.hpp) took gray from 0.185 ms to 0.138 ms.
#include "jpeg.hpp"
#include "jpeg_cuda.cuh"

namespace pixflow::jpeg {
namespace {

using namespace cuda_detail;

template <class Ti, class To, int C>
__global__ void __launch_bounds__(kThreads)
    roundtrip_kernel(ImageView in, ImageView out, QuantTable q, int strips, int nbx, bool wide_in, bool wide_out) {
    __shared__ Transpose<C> sm;
    const Place p = place(strips);
    float a[C][8], t[C][8];
    forward_dct<Ti, C>(in, sm, p, nbx, wide_in, a, t, [&](int c) { // t[c][v] = F[v][r]
#pragma unroll
        for (int v = 0; v < 8; ++v) t[c][v] = quantize_dequantize(t[c][v], q.q[v * 8 + p.r], q.r[v * 8 + p.r]);
        idct8(t[c], a[c]); // a[c][y]: column r after the inverse column pass
    });
    inverse_rows<C>(sm, p, a, t); // a[c][x]: pixels of row r
    store_pixels<To, C>(out, sm, p, nbx, wide_out, a);
}

} // namespace

void roundtrip8x8_cuda(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream) {
    check_roundtrip(in, out, /*on_host=*/false);
    const int nbx = (in.width + 7) / 8, nby = (in.height + 7) / 8;
    const Launch l = launch_for(nbx, nby);
    const dim3 block(kLanes, 8);
    const bool wi = wide_ok(in), wo = wide_ok(out);
    visit_dtype<DType::u8, DType::f32>("jpeg_roundtrip8x8", in.dtype, [&](auto ti) {
        visit_dtype<DType::u8, DType::f32>("jpeg_roundtrip8x8", out.dtype, [&](auto to) {
            visit_channels("jpeg_roundtrip8x8", in.channels, [&](auto c) {
                roundtrip_kernel<decltype(ti), decltype(to), decltype(c)::value>
                    <<<l.blocks, block, 0, cuda::stream_of(stream)>>>(in, out, q, l.strips, nbx, wi, wo);
            });
        });
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace pixflow::jpeg
