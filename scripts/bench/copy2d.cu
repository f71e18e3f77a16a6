// copy2d.cu: standalone timing of pitched device-to-device copies (what the embedding API does to
// stage a caller's device image whose rows are not 256-byte aligned, and to copy an output into
// a caller's buffer): cudaMemcpy2DAsync against pixflow's kernel (framework/device/copy_2d.cu),
// which writes aligned 16-byte blocks of the destination from aligned 16-byte loads of the
// source, shifted into place, and the edge blocks of a row byte by byte. Not part of the build:
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include scripts/bench/copy2d.cu -o copy2d && ./copy2d
// Every copy is checked byte for byte (and the bytes around the destination rows untouched);
// timings are CUDA events, medians of 21 after 3 warm-ups, GB/s = 2 x bytes copied / time.
#include "cuda_harness.cuh"
#include "../../framework/device/copy_2d_kernel.cuh"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

void copy_kernel(void* dst, long long dpitch, const void* src, long long spitch, long long row_bytes, long long rows) {
    PIXFLOW_CUDA_CHECK(
        pixflow::host::detail::launch_copy_2d(dst, dpitch, src, spitch, std::size_t(row_bytes), int(rows), 0));
}

void copy_runtime(void* dst, long long dpitch, const void* src, long long spitch, long long row_bytes, long long rows) {
    PIXFLOW_CUDA_CHECK(cudaMemcpy2DAsync(dst, std::size_t(dpitch), src, std::size_t(spitch), std::size_t(row_bytes),
                                         std::size_t(rows), cudaMemcpyDeviceToDevice, 0));
}

int failures = 0;

void run_case(const char* name, long long row_bytes, long long rows, long long spitch, long long soff, long long dpitch,
              long long doff, bool time) {
    using pixflow::harness::Dev;
    const std::size_t sbytes = std::size_t(spitch * rows + soff), dbytes = std::size_t(dpitch * rows + doff + 16);
    Dev s(sbytes), d(dbytes);
    std::vector<std::uint8_t> hs(sbytes), hd(dbytes), want(dbytes, 0xAB);
    std::mt19937 rng(unsigned(row_bytes * 31 + rows));
    for (auto& v : hs) v = std::uint8_t(rng());
    for (long long y = 0; y < rows; ++y)
        std::memcpy(&want[std::size_t(doff + y * dpitch)], &hs[std::size_t(soff + y * spitch)], std::size_t(row_bytes));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(s.p, hs.data(), sbytes, cudaMemcpyHostToDevice));
    auto* sp = static_cast<std::uint8_t*>(s.p) + soff;
    auto* dp = static_cast<std::uint8_t*>(d.p) + doff;
    float t[2] = {0, 0};
    for (int v = 0; v < 2; ++v) {
        auto f = [&] { (v ? copy_kernel : copy_runtime)(dp, dpitch, sp, spitch, row_bytes, rows); };
        PIXFLOW_CUDA_CHECK(cudaMemset(d.p, 0xAB, dbytes));
        f();
        PIXFLOW_CUDA_CHECK(cudaMemcpy(hd.data(), d.p, dbytes, cudaMemcpyDeviceToHost));
        if (hd != want) {
            ++failures;
            std::printf("FAIL %s (%s)\n", name, v ? "kernel" : "cudaMemcpy2DAsync");
        }
        if (time) t[v] = pixflow::harness::time_it(f, 21);
    }
    if (time) {
        const double gb = 2.0 * double(row_bytes) * double(rows) / 1e9;
        std::printf("%-44s cudaMemcpy2DAsync %.4f ms (%6.0f GB/s)   kernel %.4f ms (%6.0f GB/s)\n", name, t[0],
                    gb / t[0] * 1e3, t[1], gb / t[1] * 1e3);
    }
}

} // namespace

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    cudaDeviceProp prop;
    PIXFLOW_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device %s\n", prop.name);
    // checks: every source and destination misalignment, rows shorter and longer than a block
    for (long long row : {1LL, 3LL, 15LL, 16LL, 17LL, 31LL, 33LL, 100LL, 1000LL})
        for (long long so = 0; so < 16; so += 3)
            for (long long dof = 0; dof < 16; dof += 5)
                run_case("check", row, 7, row + (so % 5), so, row + 16 + (dof % 3), dof, false);
    std::printf("checks: %d failures\n", failures);
    // timings: packed and aligned (a plain copy), then the API's staging cases
    run_case("8192x8192 u8, both pitch 8192", 8192, 8192, 8192, 0, 8192, 0, true);
    run_case("8191x8192 u8, pitch 8191 -> 8192", 8191, 8192, 8191, 0, 8192, 0, true);
    run_case("8191x8192 u8, pitch 8192 -> 8191", 8191, 8192, 8192, 0, 8191, 0, true);
    run_case("1920x1080x3 u8, pitch 5760 -> 5888", 5760, 1080, 5760, 0, 5888, 0, true);
    run_case("1920x1080x3 u8, pitch 5888 -> 5760", 5760, 1080, 5888, 0, 5760, 0, true);
    run_case("1000x1000 u8, pitch 1000 +1 -> 1024", 1000, 1000, 1000, 1, 1024, 0, true);
    run_case("3840x2160x4 f32, pitch 61440 +4 -> 61440", 61440, 2160, 61440, 4, 61440, 0, true);
    std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
