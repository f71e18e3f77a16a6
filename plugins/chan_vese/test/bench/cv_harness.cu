// cv_harness.cu: standalone check and timing of chan_vese.cu's CUDA kernel against the kernel
// before its sweep dropped the tests for subnormals and partial quads (chan_vese_before.cuh:
// fe140a7's, in namespace ...::before, made from git by scripts/bench/frozen_kernel.sh), not
// part of the build.
// It includes both kernel files, so it reaches the kernels in their anonymous namespaces:
//   mkdir -p build-harness && scripts/bench/frozen_kernel.sh fe140a7 \
//       plugins/chan_vese/kernels/chan_vese.cu before > build-harness/chan_vese_before.cuh
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include -Iplugins/chan_vese/kernels -Ibuild-harness \
//       plugins/chan_vese/test/bench/cv_harness.cu -o build-harness/cv_harness
// (from the repository root; static cudart, so the binary runs on a machine with only a driver)
//   ./harness          every check, then the timings (512^2, 1000^2, 4096^2 u8 shapes, tol = 0)
//   ./harness check    the checks only
//   ./harness small    small checks only (few blocks, few iterations: for compute-sanitizer)
// Checks: phi (f32), mask (u8), iterations and the RMS change (its bits) of the current kernel,
// through launch<T> and through chan_vese_cuda, byte for byte against the kernel before, on shapes,
// random and constant images, u8/u16/f32, sizes from 1x1 to 4096x4096 (odd ones too), tol = 0
// with 500 iterations and tol > 0 cases that stop early, the three initial level sets; outputs
// and scratch poisoned before each run. Timings: CUDA events around the whole call (launch,
// kernel, 16-byte read-back), medians of 9, variants interleaved, 5 rounds; per iteration =
// median / max_iter, and the slope (t(500) - t(50)) / 450 without the fixed start and end.
#include "../../kernels/chan_vese.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"
#include "chan_vese_before.cuh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace pixflow;
namespace cv = pixflow::chan_vese;

#define CK(x) PIXFLOW_CUDA_CHECK(x)

static int failures = 0, cases = 0;

using harness::Dev;

enum class Pattern { shapes, random, constant };
static const char* pattern_name(Pattern p) {
    return p == Pattern::shapes ? "shapes" : p == Pattern::random ? "random" : "constant";
}

/// Host image of one channel, as bytes of T.
template <class T> std::vector<T> make_image(int w, int h, Pattern pat, std::mt19937& rng) {
    std::vector<T> img(std::size_t(w) * h);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    auto put = [&](std::size_t i, float v01) { // v01 in [0, 1]
        if constexpr (std::is_same_v<T, float>)
            img[i] = v01 * 3.0f - 1.0f;
        else
            img[i] = T(std::min(1.f, std::max(0.f, v01)) * float(T(~T(0))));
    };
    if (pat == Pattern::constant) {
        const float c = u(rng);
        for (std::size_t i = 0; i < img.size(); ++i) put(i, c);
        return img;
    }
    if (pat == Pattern::random) {
        for (std::size_t i = 0; i < img.size(); ++i) put(i, u(rng));
        return img;
    }
    // shapes: a dark background with noise, bright disks and rectangles
    std::vector<float> f(img.size());
    for (auto& v : f) v = 0.15f + 0.05f * u(rng);
    for (int s = 0; s < 12; ++s) {
        const float cx = u(rng) * w, cy = u(rng) * h, r = (0.03f + 0.12f * u(rng)) * std::max(w, h);
        const float val = 0.5f + 0.45f * u(rng);
        const bool disk = s % 2 == 0;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                const float dx = x - cx, dy = y - cy;
                const bool in = disk ? dx * dx + dy * dy < r * r : std::abs(dx) < r && std::abs(dy) < 0.6f * r;
                if (in) f[std::size_t(y) * w + x] = val + 0.03f * u(rng);
            }
    }
    for (std::size_t i = 0; i < img.size(); ++i) put(i, f[i]);
    return img;
}

struct Result {
    std::vector<float> phi;
    std::vector<std::uint8_t> mask;
    cv::Outcome out;
};

// Variants: 0 the kernel before (chan_vese_before.cuh), 1 the current one through launch<T>;
// n_variants: the current one through chan_vese_cuda, the plugin's entry, in every check.
constexpr int old_kernel = 0, first_new = 1, n_variants = 2;
static const char* variant_name(int v) { return v == 0 ? "before" : v == 1 ? "new" : "new(entry)"; }

/// Device buffers of one case, reused by every variant.
template <class T> struct Case {
    int w, h;
    std::size_t in_pitch, phi_pitch, mask_pitch, scratch_bytes;
    Dev din, dphi, dmask, dscratch;
    ImageView in, phi, mask;
    Case(int w_, int h_, const std::vector<T>& host)
        : w(w_), h(h_), in_pitch((std::size_t(w) * sizeof(T) + 255) / 256 * 256 + 32),
          phi_pitch((std::size_t(w) * 4 + 255) / 256 * 256), mask_pitch((std::size_t(w) + 127) / 128 * 128 + 64),
          scratch_bytes(0), din(in_pitch * h), dphi(phi_pitch * h), dmask(mask_pitch * h),
          dscratch(scratch_for(w_, h_)) {
        CK(cudaMemcpy2D(din.p, in_pitch, host.data(), std::size_t(w) * sizeof(T), std::size_t(w) * sizeof(T), h,
                        cudaMemcpyHostToDevice));
        in.width = phi.width = mask.width = w;
        in.height = phi.height = mask.height = h;
        in.channels = phi.channels = mask.channels = 1;
        in.dtype = std::is_same_v<T, float> ? DType::f32 : sizeof(T) == 2 ? DType::u16 : DType::u8;
        phi.dtype = DType::f32;
        mask.dtype = DType::u8;
        in.device = phi.device = mask.device = 0;
        in.pitch = std::int64_t(in_pitch);
        phi.pitch = std::int64_t(phi_pitch);
        mask.pitch = std::int64_t(mask_pitch);
        in.data = din.p;
        phi.data = dphi.p;
        mask.data = dmask.p;
        scratch_bytes = scratch_for(w, h);
    }
    std::size_t scratch_for(int ww, int hh) const {
        ImageView v;
        v.width = ww;
        v.height = hh;
        v.channels = 1;
        v.dtype = std::is_same_v<T, float> ? DType::f32 : sizeof(T) == 2 ? DType::u16 : DType::u8;
        v.device = 0;
        return std::max(cv::before::cuda_scratch_bytes(v), cv::cuda_scratch_bytes(v));
    }
    cv::Outcome launch(int variant, const cv::Settings& s) {
        cv::Outcome o;
        switch (variant) {
        case 0: cv::before::chan_vese_cuda(in, mask, phi, s, dscratch.p, nullptr, o); break;
        case 1: cv::launch<T>(in, mask, phi, s, dscratch.p, nullptr, o); break;
        default: cv::chan_vese_cuda(in, mask, phi, s, dscratch.p, nullptr, o); // the plugin's entry
        }
        CK(cudaGetLastError());
        return o;
    }
    Result run(int variant, const cv::Settings& s) {
        CK(cudaMemset(dphi.p, 0xAB, phi_pitch * h));
        CK(cudaMemset(dmask.p, 0xAB, mask_pitch * h));
        CK(cudaMemset(dscratch.p, 0xCD, scratch_bytes));
        Result r;
        r.out = launch(variant, s);
        CK(cudaDeviceSynchronize());
        r.phi.resize(std::size_t(w) * h);
        r.mask.resize(std::size_t(w) * h);
        CK(cudaMemcpy2D(r.phi.data(), std::size_t(w) * 4, dphi.p, phi_pitch, std::size_t(w) * 4, h,
                        cudaMemcpyDeviceToHost));
        CK(cudaMemcpy2D(r.mask.data(), w, dmask.p, mask_pitch, w, h, cudaMemcpyDeviceToHost));
        return r;
    }
};

static const char* init_name(cv::Init i) {
    return i == cv::Init::checkerboard ? "checker" : i == cv::Init::disk ? "disk" : "small_disk";
}

template <class T> void check(int w, int h, Pattern pat, const cv::Settings& s, std::mt19937& rng, bool all_variants) {
    const auto host = make_image<T>(w, h, pat, rng);
    Case<T> c(w, h, host);
    const Result ref = c.run(old_kernel, s);
    bool unwritten = false;
    for (std::uint8_t m : ref.mask) unwritten |= (m != 0 && m != 255);
    std::vector<int> vs{n_variants}; // the plugin's entry (the default choices)
    if (all_variants)
        for (int v = first_new; v < n_variants; ++v) vs.push_back(v);
    for (int v : vs) {
        ++cases;
        const Result got = c.run(v, s);
        const bool same_phi = std::memcmp(ref.phi.data(), got.phi.data(), ref.phi.size() * 4) == 0;
        const bool same_mask = ref.mask == got.mask;
        const bool same_out = ref.out.iterations == got.out.iterations &&
                              std::memcmp(&ref.out.rms_change, &got.out.rms_change, sizeof(double)) == 0;
        if (!same_phi || !same_mask || !same_out || unwritten) {
            ++failures;
            std::size_t bad = 0;
            for (std::size_t i = 0; i < ref.phi.size(); ++i) bad += std::memcmp(&ref.phi[i], &got.phi[i], 4) != 0;
            std::printf(
                "FAIL %s %dx%d %s %s tol=%g max_iter=%d init=%s: phi %zu differ, mask %s, iterations %d vs %d, rms %.17g vs %.17g%s\n",
                variant_name(v), w, h,
                sizeof(T) == 4   ? "f32"
                : sizeof(T) == 2 ? "u16"
                                 : "u8",
                pattern_name(pat), s.tol, s.max_iter, init_name(s.init), bad, same_mask ? "same" : "DIFFERS",
                ref.out.iterations, got.out.iterations, ref.out.rms_change, got.out.rms_change,
                unwritten ? " (reference mask not all 0/255)" : "");
        }
    }
    std::printf("  %-4s %4dx%-4d %-8s tol=%-6g max_iter=%-3d init=%-10s -> %d iterations, rms %.6g\n",
                sizeof(T) == 4   ? "f32"
                : sizeof(T) == 2 ? "u16"
                                 : "u8",
                w, h, pattern_name(pat), s.tol, s.max_iter, init_name(s.init), ref.out.iterations, ref.out.rms_change);
}

static void checks(bool small, std::mt19937& rng) {
    cv::Settings tol0;
    tol0.tol = 0;
    tol0.max_iter = small ? 12 : 500;
    cv::Settings early; // defaults: tol = 1e-3
    early.max_iter = small ? 30 : 500;
    cv::Settings disk = early;
    disk.init = cv::Init::disk;
    disk.tol = 2e-3;
    cv::Settings sdisk = tol0;
    sdisk.init = cv::Init::small_disk;
    sdisk.max_iter = small ? 7 : 123;
    const std::vector<std::pair<int, int>> sizes =
        small ? std::vector<std::pair<int, int>>{{33, 17}, {130, 128}}
              : std::vector<std::pair<int, int>>{{1, 1}, {3, 2}, {33, 17}, {512, 512}, {1000, 1000}, {1001, 999}};
    for (auto [w, h] : sizes)
        for (Pattern pat : {Pattern::shapes, Pattern::random, Pattern::constant})
            for (const cv::Settings* s : {&tol0, &early, &disk, &sdisk}) {
                if (small && (s == &disk || s == &sdisk || pat != Pattern::shapes)) continue;
                check<std::uint8_t>(w, h, pat, *s, rng, !small);
                if (pat == Pattern::constant && s != &tol0) continue;
                check<std::uint16_t>(w, h, pat, *s, rng, false);
                check<float>(w, h, pat, *s, rng, false);
            }
    { // mu * dt < 0 is refused: the kernel's division relies on a denominator >= 1
        ++cases;
        Case<std::uint8_t> c(16, 16, make_image<std::uint8_t>(16, 16, Pattern::shapes, rng));
        cv::Settings negative;
        negative.mu = -0.25;
        bool refused = false;
        try {
            c.launch(n_variants, negative);
        } catch (const pixflow::UserError& e) {
            refused = std::string(e.what()).find("mu * dt >= 0") != std::string::npos;
        }
        if (!refused) {
            ++failures;
            std::printf("FAIL: mu * dt < 0 was not refused with a UserError naming it\n");
        }
    }
    if (!small) {
        check<std::uint8_t>(4096, 4096, Pattern::shapes, tol0, rng, true);
        check<float>(4096, 4096, Pattern::random, early, rng, false);
        check<std::uint8_t>(2053, 3, Pattern::shapes, tol0, rng, false);  // wide and flat
        check<std::uint8_t>(5, 3001, Pattern::shapes, early, rng, false); // tall and narrow
    }
}

using harness::median;
template <class F> float time_it(F&& f, int reps) { return harness::time_it(f, reps, 2); }

static void timings(std::mt19937& rng) {
    std::printf("\ntimings: u8 shapes, tol = 0, checkerboard; ms per call (median of 9) and us per iteration\n");
    std::printf("%-10s %-12s %5s %10s %10s %10s %10s\n", "size", "variant", "round", "ms(500)", "us/it", "ms(50)",
                "slope us/it");
    std::vector<std::string> summary;
    for (int n : {512, 1000, 4096}) {
        const auto host = make_image<std::uint8_t>(n, n, Pattern::shapes, rng);
        Case<std::uint8_t> c(n, n, host);
        cv::Settings s500, s50;
        s500.tol = s50.tol = 0;
        s500.max_iter = 500;
        s50.max_iter = 50;
        float best[n_variants][2];
        for (int v = 0; v < n_variants; ++v) best[v][0] = best[v][1] = 1e30f;
        for (int round = 0; round < 5; ++round)
            for (int v = 0; v < n_variants; ++v) {
                const float t500 = time_it([&] { c.launch(v, s500); }, 9);
                const float t50 = time_it([&] { c.launch(v, s50); }, 9);
                best[v][0] = std::min(best[v][0], t500);
                best[v][1] = std::min(best[v][1], t50);
                std::printf("%4dx%-5d %-12s %5d %10.4f %10.3f %10.4f %10.3f\n", n, n, variant_name(v), round, t500,
                            t500 * 1000 / 500, t50, (t500 - t50) * 1000 / 450);
            }
        for (int v = 0; v < n_variants; ++v) {
            char line[200];
            std::snprintf(line, sizeof line,
                          "%4dx%-5d %-12s best-of-rounds median %8.4f ms = %7.3f us/it; slope %7.3f us/it", n, n,
                          variant_name(v), best[v][0], best[v][0] * 1000 / 500, (best[v][0] - best[v][1]) * 1000 / 450);
            summary.push_back(line);
        }
    }
    std::printf("\nsummary (min over rounds of the medians):\n");
    for (auto& l : summary) std::printf("%s\n", l.c_str());
}

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "all";
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    std::mt19937 rng(20261127);
    try {
        checks(mode == "small", rng);
        std::printf("checks: %d comparisons, %d failures%s\n", cases, failures,
                    failures ? "" : " (all bit-identical: phi, mask, iterations, rms)");
        if (mode == "all") timings(rng);
    } catch (const std::exception& e) {
        std::printf("ERROR: %s\n", e.what());
        return 2;
    }
    return failures ? 1 : 0;
}
