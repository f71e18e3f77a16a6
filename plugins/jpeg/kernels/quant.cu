// quant.cu: the CUDA kernels of quantize and dequantize (layout: jpeg_cuda.cuh).
//
// Element-wise. A block covers the same strip as in the other kernels (32 tiles, 8 rows); warp r
// takes image row r of it and walks it in groups of 4 samples, lane L taking groups L, L + 32,
// ..., so that every load and store of the warp is one contiguous run (f32: 512 bytes, i16: 256).
// Sample j of the row is pixel j / C, whose table entry is Q[r][(j / C) mod 8]: lane L holds
// entry L mod 8 of row r of the table (and its reciprocal), read once from the kernel argument,
// and each sample fetches its entry from lane (j / C) mod 8 with a warp shuffle. No shared memory, no barrier. The grid also
// covers the marker columns and rows of a padded coefficient image, which get zeros.
//
// Measured on an H100 (pixflow bench, median of 20, floor at the device copy bandwidth),
// 8192 x 8192: quantize gray 0.139 ms (1.00x the floor), RGB 0.406 ms (0.97x); dequantize gray
// 0.145 ms (1.05x), RGB 0.424 ms (1.02x; 0.763 ms, 1.85x, when each lane stored its own 96-byte
// tile row).
#include "jpeg.hpp"
#include "jpeg_cuda.cuh"

namespace pixflow::jpeg {
namespace {

using namespace cuda_detail;

/// 4 samples, also viewable as one 8- or 16-byte word.
template <class T> struct Quad {
    using Word = std::conditional_t<sizeof(T) == 4, uint4, uint2>;
    union {
        T s[4];
        Word w;
    };
};

template <class Ti, class To, int C>
__global__ void __launch_bounds__(kThreads)
    quant_kernel(ImageView in, ImageView out, QuantTable q, int strips, int nbx, int nby, bool wide) {
    const Place p = place(strips);
    const int y = 8 * p.ty + p.r;
    if (y >= out.height) return; // the whole warp
    const int row_end = out.width * C;
    const int blocks_end = p.ty < nby ? 8 * nbx * C : 0; // samples of whole blocks in this row
    const float q_lane = q.q[p.r * 8 + (p.lane & 7)];
    const float r_lane = q.r[p.r * 8 + (p.lane & 7)];
    const Ti* src = in.row<const Ti>(y);
    To* dst = out.row<To>(y);
    const int g0 = 2 * (p.tx - p.lane) * C; // the strip's first group: sample 8 * tx0 * C
#pragma unroll
    for (int k = 0; k < 2 * C; ++k) { // 256 C samples = 64 C groups = 2 C per lane
        const int j0 = 4 * (g0 + kLanes * k + p.lane);
        float qk[4], rk[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) { // every lane, before any of them leaves the loop body
            const int u = ((j0 + e) / C) & 7;
            qk[e] = __shfl_sync(0xFFFFFFFFu, q_lane, u);
            rk[e] = __shfl_sync(0xFFFFFFFFu, r_lane, u);
        }
        if (j0 >= row_end) continue;
        Quad<Ti> a;
        Quad<To> b;
        // Groups start on multiples of 4 samples and whole blocks end on one (8 C samples per
        // block), so a group is all block or all marker; only the row's end can cut one.
        if (j0 + 4 <= blocks_end) {
            if (wide) {
                a.w = __ldg(reinterpret_cast<const typename Quad<Ti>::Word*>(src + j0));
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) a.s[e] = src[j0 + e];
            }
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if constexpr (std::is_same_v<To, std::int16_t>)
                    b.s[e] = quantize_sample(a.s[e], qk[e], rk[e]);
                else
                    b.s[e] = dequantize_sample(a.s[e], qk[e]);
            }
            if (wide) {
                *reinterpret_cast<typename Quad<To>::Word*>(dst + j0) = b.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) dst[j0 + e] = b.s[e];
            }
        } else { // marker samples, or the row's last group
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (j0 + e < row_end) dst[j0 + e] = To(0);
        }
    }
}

template <class Ti, class To>
void launch(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream) {
    const int nbx = coeff_blocks(in.width), nby = coeff_blocks(in.height);
    const Launch l = launch_for((in.width + 7) / 8, (in.height + 7) / 8);
    const dim3 block(kLanes, 8);
    const bool wide = wide_ok(in) && wide_ok(out);
    visit_channels(std::is_same_v<To, std::int16_t> ? "quantize" : "dequantize", in.channels, [&](auto c) {
        quant_kernel<Ti, To, decltype(c)::value>
            <<<l.blocks, block, 0, cuda::stream_of(stream)>>>(in, out, q, l.strips, nbx, nby, wide);
    });
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace

void quantize_cuda(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream) {
    check_quantize(in, out, /*on_host=*/false);
    launch<float, std::int16_t>(in, out, q, stream);
}

void dequantize_cuda(const ImageView& in, const ImageView& out, const QuantTable& q, void* stream) {
    check_dequantize(in, out, /*on_host=*/false);
    launch<std::int16_t, float>(in, out, q, stream);
}

} // namespace pixflow::jpeg
