// gauss_harness.cu: standalone check and timing of gauss5x5.cu (the CUDA kernel of gauss5x5)
// beside the kernel of an earlier commit, not part of the build. It includes the kernel file and
// gauss5x5_old.cuh (the file as of REV in namespace pixflow::gauss5x5::old, made by
// scripts/bench/frozen_kernel.sh), so both link into one program. From the repository root:
//   mkdir -p build-harness && scripts/bench/frozen_kernel.sh REV \
//       plugins/gauss5x5/kernels/gauss5x5.cu old > build-harness/gauss5x5_old.cuh
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include -Iplugins/gauss5x5/kernels -Ibuild-harness \
//       plugins/gauss5x5/test/bench/gauss_harness.cu -o build-harness/gauss_harness
//   ./gauss_harness
// Checks: today's kernel against the frozen one, byte for byte, on random images of every dtype
// (u8, u16, f32), 1-4 channels, the three borders, sizes from 1 x 1 to 8192 x 8192 with odd
// widths and heights and pitches beyond the row (the frozen kernel is the reference: the plugin's
// tests hold it to the CPU kernel bit for bit). Timings: CUDA events after 3 warm-up launches,
// medians of 15, the two kernels alternating, 3 rounds, 8192 x 8192.
#include "../../kernels/gauss5x5.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"
#include "gauss5x5_old.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

using namespace pixflow;
namespace g = pixflow::gauss5x5;

// The check gauss5x5_cuda makes lives in gauss5x5_cpu.cpp, which this program does not link;
// the harness passes valid views only.
void pixflow::gauss5x5::gauss5x5_check(const ImageView&, const ImageView&, const std::array<float, 5>&, bool) {}

#define CK(x) PIXFLOW_CUDA_CHECK(x)

static int failures = 0, cases = 0;

static std::array<float, 5> taps(double sigma) { // as gauss5x5_taps: normalised in double
    double w[5], s = 0;
    for (int i = 0; i < 5; ++i) s += w[i] = std::exp(-double((i - 2) * (i - 2)) / (2 * sigma * sigma));
    std::array<float, 5> t;
    for (int i = 0; i < 5; ++i) t[i] = float(w[i] / s);
    return t;
}

struct Img {
    ImageView v;
    harness::Dev mem;
    Img(int w, int h, int c, DType t, int pad) : mem(std::size_t(h) * (std::size_t(w) * c * dtype_size(t) + pad)) {
        v.width = w, v.height = h, v.channels = c, v.dtype = t, v.device = 0;
        v.pitch = std::int64_t(std::size_t(w) * c * dtype_size(t) + pad);
        v.data = mem.p;
    }
    std::size_t bytes() const { return std::size_t(v.height) * v.pitch; }
};

static void fill(Img& im, std::mt19937& rng) {
    std::vector<unsigned char> h(im.bytes());
    if (im.v.dtype == DType::f32) {
        for (std::size_t i = 0; i + 4 <= h.size(); i += 4) {
            const float f = float(rng() % 100000) / 997.0f;
            std::memcpy(&h[i], &f, 4);
        }
    } else {
        for (auto& b : h) b = (unsigned char)(rng());
    }
    CK(cudaMemcpy(im.v.data, h.data(), h.size(), cudaMemcpyHostToDevice));
}

static void check(int w, int h, int c, DType t, g::Border border, int pad, std::mt19937& rng) {
    Img in(w, h, c, t, pad), a(w, h, c, t, pad), b(w, h, c, t, pad);
    fill(in, rng);
    CK(cudaMemset(a.v.data, 0x5a, a.bytes()));
    CK(cudaMemset(b.v.data, 0x5a, b.bytes()));
    const auto tp = taps(1.0 + double(rng() % 100) / 50.0);
    g::old::gauss5x5_cuda(in.v, a.v, tp, border, nullptr);
    g::gauss5x5_cuda(in.v, b.v, tp, border, nullptr);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned char> ha(a.bytes()), hb(b.bytes());
    CK(cudaMemcpy(ha.data(), a.v.data, ha.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b.v.data, hb.size(), cudaMemcpyDeviceToHost));
    ++cases;
    if (ha != hb) {
        ++failures;
        std::printf("MISMATCH %dx%dx%d dtype %d border %d pad %d\n", w, h, c, int(t), int(border), pad);
    }
}

static void bench(int w, int h, int c, DType t, std::mt19937& rng) {
    Img in(w, h, c, t, 0), out(w, h, c, t, 0);
    fill(in, rng);
    const auto tp = taps(1.5);
    std::printf("%dx%dx%d dtype %d, ms (median of 15), 3 rounds:", w, h, c, int(t));
    for (int round = 0; round < 3; ++round) {
        const float o =
            harness::time_it([&] { g::old::gauss5x5_cuda(in.v, out.v, tp, g::Border::reflect101, nullptr); }, 15);
        const float n =
            harness::time_it([&] { g::gauss5x5_cuda(in.v, out.v, tp, g::Border::reflect101, nullptr); }, 15);
        std::printf("  old %.4f new %.4f (%.3fx)", o, n, n / o);
    }
    std::printf("\n");
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    std::mt19937 rng(2026113);
    const std::pair<int, int> sizes[] = {{1, 1},    {2, 3},    {7, 5},      {31, 17},     {64, 64},
                                         {241, 13}, {480, 97}, {1000, 777}, {1921, 1083}, {4099, 61}};
    for (auto [w, h] : sizes)
        for (int c = 1; c <= 4; ++c)
            for (DType t : {DType::u8, DType::u16, DType::f32})
                for (int border = 0; border < 3; ++border)
                    for (int pad : {0, 24}) check(w, h, c, t, g::Border(border), pad, rng);
    check(8192, 8192, 3, DType::u8, g::Border::reflect101, 0, rng);
    check(8192, 8192, 1, DType::u8, g::Border::zero, 0, rng);
    std::printf("checks: %d cases, %d failures\n", cases, failures);
    bench(8192, 8192, 3, DType::u8, rng);
    bench(8192, 8192, 1, DType::u8, rng);
    bench(8192, 8192, 4, DType::u8, rng);
    bench(8192, 8192, 3, DType::u16, rng);
    bench(8192, 8192, 3, DType::f32, rng);
    std::printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
