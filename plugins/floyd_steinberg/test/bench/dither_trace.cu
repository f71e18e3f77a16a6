// dither_trace.cu: where the time of floyd_steinberg's CUDA kernel goes between bands. Not part
// of the build. It defines PIXFLOW_FS_TRACE before including the kernel file, so that lane 0 of
// every band stamps each chunk with clock64 before its poll of the band above's hand-off (0),
// after it (1) and after the chunk's stores (2), and with %globaltimer (one clock for all SMs,
// but in steps of 512 ns or more) after the poll. From the repository root:
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include -Iplugins/floyd_steinberg/kernels \
//       plugins/floyd_steinberg/test/bench/dither_trace.cu -o build-harness/dither_trace
//   ./dither_trace [WIDTH HEIGHT]      (default 8192 8192, gray; the operator's shape, then K = 1)
// (-DNO_TRACE builds the kernel as shipped, for its untraced time; the stamps cost about 5%.)
// It prints, per kind of band (the first; fed by the warp before it in its block; a block's
// first band, fed from the block before through the receiver warp): a chunk's period, its wait
// at the start and its 16 steps with the stores, in cycles; the lag behind the band above at the
// same chunk; and for the bands fed within a block the
// time from the band above's store of chunk k + 4 (the last one chunk k needs) to this band's
// start of chunk k. TRACE_DIR=DIR also writes the raw stamps to DIR/trace-K{4,1}.bin: 3 int32
// (bands, chunks, K), then [band][chunk][8] u64: 0, ns(1), 0, cycles(0), cycles(1), cycles(2),
// 0, SM (chunk 0 only).
#include <cstdint>

__constant__ unsigned long long* g_trace; // the raw stamps (above), or null: none
__constant__ int g_trace_chunks;

__device__ __forceinline__ unsigned long long trace_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#ifndef NO_TRACE
#define PIXFLOW_FS_TRACE(phase)                                                                                        \
    do {                                                                                                               \
        if (g_trace != nullptr && (threadIdx.x & 31) == 0) {                                                           \
            unsigned long long* t_ = g_trace + ((long long)top.id * g_trace_chunks + k) * 8;                           \
            t_[3 + (phase)] = clock64();                                                                               \
            if ((phase) == 1) t_[1] = trace_ns();                                                                      \
            if ((phase) == 0 && k == 0) {                                                                              \
                unsigned sm_;                                                                                          \
                asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_));                                                       \
                t_[7] = sm_;                                                                                           \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)
#endif

#include "../../kernels/floyd_steinberg.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace pixflow;
namespace fs = pixflow::floyd_steinberg;
using harness::Dev;

/// The p-quantile of v (the lower middle for p = 0.5), 0 when v is empty.
static double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::size_t(p * (v.size() - 1))];
}

template <int K> static void trace(const char* name, int w, int h) {
    using G = fs::Shape<1, 2>;
    const int bands = (h + 31) / 32, chunks = G::chunks_for(w);
    const std::size_t pitch = (std::size_t(w) + 15) / 16 * 16;
    std::vector<std::uint8_t> host(pitch * h);
    std::mt19937 rng(7);
    for (auto& b : host) b = std::uint8_t(rng());
    Dev in(host.size()), out(host.size());
    PIXFLOW_CUDA_CHECK(cudaMemcpy(in.p, host.data(), host.size(), cudaMemcpyHostToDevice));
    auto view = [&](void* d) {
        ImageView v;
        v.width = w, v.height = h, v.channels = 1, v.dtype = DType::u8, v.device = 0;
        v.pitch = std::int64_t(pitch), v.data = d;
        return v;
    };
    const ImageView vi = view(in.p), vo = view(out.p);
    Dev scratch(fs::scratch_bytes<1, 2>(vi, vo));
    auto run = [&] { fs::launch<1, 2, K>(vi, vo, scratch.p, nullptr, nullptr, nullptr); };
    const float plain = harness::time_it(run, 9);

    const std::size_t n = std::size_t(bands) * chunks * 8;
    Dev tr(n * 8);
    PIXFLOW_CUDA_CHECK(cudaMemset(tr.p, 0, n * 8));
    unsigned long long* p = static_cast<unsigned long long*>(tr.p);
    PIXFLOW_CUDA_CHECK(cudaMemcpyToSymbol(g_trace_chunks, &chunks, sizeof chunks));
    PIXFLOW_CUDA_CHECK(cudaMemcpyToSymbol(g_trace, &p, sizeof p));
    const float traced = harness::time_it(run, 1, 1); // the last run's stamps stay
    PIXFLOW_CUDA_CHECK(cudaMemset(tr.p, 0, n * 8));
    run();
    PIXFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    unsigned long long* none = nullptr;
    PIXFLOW_CUDA_CHECK(cudaMemcpyToSymbol(g_trace, &none, sizeof none));
    std::vector<unsigned long long> t(n);
    PIXFLOW_CUDA_CHECK(cudaMemcpy(t.data(), tr.p, n * 8, cudaMemcpyDeviceToHost));
    if (const char* dir = std::getenv("TRACE_DIR")) {
        const std::string f = std::string(dir) + "/trace-K" + std::to_string(K) + ".bin";
        if (FILE* fp = std::fopen(f.c_str(), "wb")) {
            const int head[3] = {bands, chunks, K};
            std::fwrite(head, sizeof head, 1, fp);
            std::fwrite(t.data(), 8, n, fp);
            std::fclose(fp);
        }
    }
    auto at = [&](int b, int k, int f) { return double(t[(std::size_t(b) * chunks + k) * 8 + f]); };

    // c0 c1 c2: clock64 before the poll, after it, after the chunk's stores (fields 3, 4, 5: one
    // SM's clock, so compared only within a band or a block); g1: %globaltimer after the poll
    // (field 1: one clock for the GPU, but in steps of 512 ns or more, so only means of it).
    auto c = [&](int b, int k, int f) { return at(b, k, 3 + f); };
    auto g1 = [&](int b, int k) { return at(b, k, 1); };
    double res = 1e18;
    for (int k = 1; k < chunks; ++k)
        if (g1(0, k) > g1(0, k - 1)) res = std::min(res, g1(0, k) - g1(0, k - 1));
    std::printf("\n%s, %d x %d gray: %d bands, %d chunks; %.4f ms untraced (this build), %.4f ms traced; "
                "%%globaltimer steps by %.0f ns\n",
                name, w, h, bands, chunks, plain, traced, res);
    const int k_lo = 8, k_hi = chunks - 8;
    // 0: band 0; 1: fed by the warp before in the block; 2: a block's first band, fed from the
    // block before (through the receiver's shared row when K > 1, from L2 when K = 1)
    for (int kind = 0; kind < 3; ++kind) {
        std::vector<double> period, wait, exec, lag_c, from_store, lag_ns;
        for (int b = 0; b < bands; ++b) {
            if ((b == 0 ? 0 : b % K != 0 ? 1 : 2) != kind) continue;
            for (int k = k_lo; k < k_hi; ++k) {
                period.push_back(c(b, k + 1, 1) - c(b, k, 1));
                wait.push_back(c(b, k, 1) - c(b, k, 0));
                exec.push_back(c(b, k, 2) - c(b, k, 1));
                if (b > 0) lag_ns.push_back(g1(b, k) - g1(b - 1, k));
                if (kind == 1) {
                    lag_c.push_back(c(b, k, 1) - c(b - 1, k, 1));
                    from_store.push_back(c(b, k, 1) - c(b - 1, k + 4, 2));
                }
            }
        }
        if (period.empty()) continue;
        auto mean = [](const std::vector<double>& v) {
            double s = 0;
            for (double x : v) s += x;
            return s / double(v.size());
        };
        static const char* kinds[] = {"band 0 (nothing above)", "fed by the warp before (shared memory)",
                                      "a block's first band (fed from the block before)"};
        std::printf("  %s (%zu chunks), cycles: chunk period median %.0f (mean %.0f); wait at its start median %.0f "
                    "(p90 %.0f); its 16 steps and stores median %.0f (p90 %.0f)\n",
                    kinds[kind], period.size(), pct(period, 0.5), mean(period), pct(wait, 0.5), pct(wait, 0.9),
                    pct(exec, 0.5), pct(exec, 0.9));
        if (!lag_ns.empty()) std::printf("    lag behind the band above at the same chunk: mean %.0f ns", mean(lag_ns));
        if (!lag_c.empty())
            std::printf(", median %.0f cycles; from its store of chunk k+4 to this chunk's start: median %.0f cycles "
                        "(p10 %.0f, p90 %.0f)",
                        pct(lag_c, 0.5), pct(from_store, 0.5), pct(from_store, 0.1), pct(from_store, 0.9));
        if (!lag_ns.empty()) std::printf("\n");
    }
    std::printf(
        "  band: us from band 0's chunk 0 to its chunk 0 / chunk %d / last chunk; lag behind the band above (ns)\n",
        chunks / 2);
    for (int b = 0; b < bands; ++b) {
        if (!(b < 9 || b % 32 == 0 || b == bands - 1)) continue;
        std::printf("   %4d  %9.2f %9.2f %9.2f", b, (g1(b, 0) - g1(0, 0)) * 1e-3, (g1(b, chunks / 2) - g1(0, 0)) * 1e-3,
                    (g1(b, chunks - 1) - g1(0, 0)) * 1e-3);
        if (b > 0)
            std::printf("   %7.0f %7.0f %7.0f", g1(b, 8) - g1(b - 1, 8), g1(b, chunks / 2) - g1(b - 1, chunks / 2),
                        g1(b, chunks - 9) - g1(b - 1, chunks - 9));
        std::printf("\n");
    }
}

int main(int argc, char** argv) {
    const int w = argc > 2 ? std::atoi(argv[1]) : 8192, h = argc > 2 ? std::atoi(argv[2]) : 8192;
    trace<fs::kWarpsPerBlock>("dither_cuda (the operator's warps per block)", w, h);
    trace<1>("one warp per block", w, h);
    return 0;
}
