// cv_traffic.cu: the memory traffic of chan_vese's CUDA sweep without its arithmetic, to tell
// what bounds the sweep at 4096 x 4096 (issue 18): its loads and stores alone, in the kernel's
// grid (2 blocks of 512 an SM, thread g owning quads g, g + G, ...), one launch a sweep, phi
// read from one buffer and written to the other. Not part of the build:
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include plugins/chan_vese/test/bench/cv_traffic.cu \
//       -o build-harness/carry/cv_traffic
//   ./cv_traffic [blocks an SM]   (default: as many as fit; chan_vese's kernel has 2)
// Variants, each timed as the median of 20 runs of 10 sweeps (CUDA events), 3 rounds:
//   copy        cudaMemcpy of the sweep's DRAM bytes (9 a pixel for u8: phi read and written,
//               the input read) as 4.5 bytes read and written: the floor
//   mid         each quad's own phi (float4) and input (uchar4) in, phi' out: the floor's bytes
//               in the sweep's order
//   stencil     the sweep's six loads (the row, the rows above and below, the pixels left and
//               right, the input) and its store: its whole traffic, L2 included
//   stencil+N   the same with N dependent FMAs a pixel between the loads and the store (the
//               arithmetic's latency and issue without its instructions' mix)
//   stencil+update's MUFU   the same with the update's special-function work a pixel (4 rsqrt,
//               a reciprocal, conversions to double and a double sum)
// A sum of what each thread loaded goes to one word per block, so no load is dropped.
#include "../../../../scripts/bench/cuda_harness.cuh"

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <vector>

#define CK(x) PIXFLOW_CUDA_CHECK(x)

namespace {

constexpr int threads = 512;

struct Args {
    const float* src;
    float* dst;
    const std::uint8_t* img;
    int width, height, pitch, quads_per_row;
    long long quads;
    float* sink;
};

template <int Mode, int Fma> __global__ void __launch_bounds__(threads, 2) sweep(Args a) {
    const long long first = (long long)blockIdx.x * threads + threadIdx.x;
    const long long step = (long long)gridDim.x * threads;
    float keep = 0.0f;
    for (long long q = first; q < a.quads; q += step) {
        const int y = int(q / a.quads_per_row), x0 = int(q - (long long)y * a.quads_per_row) * 4;
        const std::size_t at = std::size_t(y) * a.pitch + x0;
        const float* mid = a.src + at;
        const float4 c = *reinterpret_cast<const float4*>(mid);
        const uchar4 v = *reinterpret_cast<const uchar4*>(a.img + at);
        float4 o = make_float4(c.x + v.x, c.y + v.y, c.z + v.z, c.w + v.w);
        if constexpr (Mode >= 1) {
            const float4 u = *reinterpret_cast<const float4*>(mid - (y > 0 ? a.pitch : 0));
            const float4 d = *reinterpret_cast<const float4*>(mid + (y + 1 < a.height ? a.pitch : 0));
            const float l = mid[x0 > 0 ? -1 : 0];
            const float r = mid[x0 + 4 < a.width ? 4 : a.width - 1 - x0];
            o.x += u.x + d.x + l;
            o.y += u.y + d.y;
            o.z += u.z + d.z;
            o.w += u.w + d.w + r;
            // Mode 2: the update's special functions a pixel (4 rsqrt, a reciprocal, 2 conversions to double).
            if constexpr (Mode == 2) {
                float* p = &o.x;
                double acc = 0;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const float k1 = rsqrtf(1.0f + p[k] * p[k]), k2 = rsqrtf(2.0f + p[k] * p[k]);
                    const float k3 = rsqrtf(3.0f + p[k] * p[k]), k4 = rsqrtf(4.0f + p[k] * p[k]);
                    p[k] = __fdividef(p[k] * (k1 + k2) + k3, 1.0f + k4);
                    acc += double(p[k] * p[k]) + double(p[k]);
                }
                keep += float(acc);
            }
#pragma unroll
            for (int i = 0; i < Fma; ++i) { // a dependent chain per pixel
                o.x = fmaf(o.x, 0.999f, u.y);
                o.y = fmaf(o.y, 0.999f, d.z);
                o.z = fmaf(o.z, 0.999f, u.w);
                o.w = fmaf(o.w, 0.999f, d.x);
            }
        }
        keep += o.x;
        *reinterpret_cast<float4*>(a.dst + at) = o;
    }
    if (keep == 12345.678f) a.sink[blockIdx.x] = keep; // never in practice; keeps the loads
}

} // namespace

int main(int argc, char** argv) {
    using namespace pixflow;
    const int n = 4096, pitch = 4096;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sweep<1, 0>, threads, 0));
    if (argc > 1) per_sm = std::atoi(argv[1]); // blocks an SM (chan_vese's kernel: 2, by its registers)
    const int grid = per_sm * prop.multiProcessorCount;
    std::printf("device: %s, %d SMs, grid %d x %d\n", prop.name, prop.multiProcessorCount, grid, threads);
    const std::size_t px = std::size_t(pitch) * n;
    harness::Dev phi0(px * 4), phi1(px * 4), img(px), sink(4096 * 4), ca(px * 9 / 2), cb(px * 9 / 2);
    CK(cudaMemset(phi0.p, 0, px * 4));
    CK(cudaMemset(phi1.p, 0, px * 4));
    CK(cudaMemset(img.p, 7, px));
    CK(cudaMemset(ca.p, 1, px * 9 / 2));
    Args a{};
    a.img = static_cast<const std::uint8_t*>(img.p);
    a.width = a.height = n;
    a.pitch = pitch;
    a.quads_per_row = n / 4;
    a.quads = (long long)(n / 4) * n;
    a.sink = static_cast<float*>(sink.p);
    auto run10 = [&](auto kernel) {
        Args b = a;
        float *from = static_cast<float*>(phi0.p), *to = static_cast<float*>(phi1.p);
        for (int i = 0; i < 10; ++i) {
            b.src = from;
            b.dst = to;
            kernel<<<grid, threads>>>(b);
            std::swap(from, to);
        }
        CK(cudaGetLastError());
    };
    struct V {
        const char* name;
        std::function<void()> f;
    };
    std::vector<V> vs{
        {"copy (9 B a pixel)",
         [&] {
             for (int i = 0; i < 10; ++i) CK(cudaMemcpyAsync(cb.p, ca.p, px * 9 / 2, cudaMemcpyDeviceToDevice));
         }},
        {"mid", [&] { run10(sweep<0, 0>); }},
        {"stencil", [&] { run10(sweep<1, 0>); }},
        {"stencil+8", [&] { run10(sweep<1, 8>); }},
        {"stencil+32", [&] { run10(sweep<1, 32>); }},
        {"stencil+update's MUFU", [&] { run10(sweep<2, 0>); }},
    };
    std::printf("4096 x 4096, us a sweep (median of 20 runs of 10 sweeps), 3 rounds:\n");
    for (int round = 0; round < 3; ++round)
        for (auto& v : vs) {
            const float ms = harness::time_it(v.f, 20, 2);
            const double us = ms * 100; // a sweep: a tenth of the run
            std::printf("  %-20s round %d  %8.2f us  (%.2f TB/s of 9 B a pixel)\n", v.name, round, us,
                        double(px) * 9 / (us * 1e-6) / 1e12);
        }
    return 0;
}
