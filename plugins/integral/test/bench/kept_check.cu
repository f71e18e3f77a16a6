// kept_check.cu: standalone check of integral's one-pass kernel on scratch kept between launches
// (ABI 1.6, pf_host.persistent; launch_lookback's `kept`), not part of the build:
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include plugins/integral/test/bench/kept_check.cu -o kept_check
//   ./kept_check        the checks below
//   ./kept_check time   then 8192 x 8192 RGB and gray timed three ways in one run, 3 rounds of
//                       medians of 50: with the flags cleared by a memset before each launch (as
//                       before ABI 1.6), on kept flags (no memset), and a device-to-device copy
//                       of the floor's bytes (input read, output written once)
// For gray and RGB images of several tile rows and columns: eight launches on one kept block,
// each on a new random image of the same layout (so only the first clears the flags), then a
// launch of another layout and one of the first again (each clears), every output against a
// serial reference byte for byte: every launch must match. Then the negative control: the same
// launches with the host word forged after each one so that the next reuses its epoch (the last
// image's flags then read as published): some of those launches must NOT match (a tile that
// finds its neighbour's new value published in time still adds it right), or this check could
// not see a launch that misreads the kept flags. Exit status 0 only when both hold.
#include "../../kernels/integral.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace pixflow;
namespace pi = pixflow::integral;

/// out(x, y, c) = the sum of in(i, j, c) over i <= x, j <= y, modulo 2^32.
std::vector<std::uint32_t> reference(const std::vector<std::uint8_t>& in, int w, int h, int c) {
    const std::size_t row = std::size_t(w) * c;
    std::vector<std::uint32_t> out(row * std::size_t(h)), left(static_cast<std::size_t>(c));
    for (int y = 0; y < h; ++y) {
        std::fill(left.begin(), left.end(), 0u); // row y's sum up to x, per channel
        for (std::size_t i = 0; i < row; ++i) {
            left[i % c] += in[y * row + i];
            out[y * row + i] = left[i % c] + (y > 0 ? out[(y - 1) * row + i] : 0u);
        }
    }
    return out;
}

/// Packed views of a w x h image of c channels, u8 at `in`, and of its u32 integral at `out`.
std::pair<ImageView, ImageView> views(int w, int h, int c, void* in_data, void* out_data) {
    ImageView in, out;
    in.width = out.width = w;
    in.height = out.height = h;
    in.channels = out.channels = c;
    in.dtype = DType::u8;
    out.dtype = DType::u32;
    in.device = out.device = 0;
    in.pitch = std::int64_t(w) * c;
    out.pitch = in.pitch * 4;
    in.data = in_data;
    out.data = out_data;
    return {in, out};
}

/// One launch on kept memory: a new image of w x h, its output against the reference.
template <int C> bool launch_matches(int w, int h, void* kept, std::uint64_t* state, std::mt19937& rng) {
    const std::size_t row = std::size_t(w) * C;
    std::vector<std::uint8_t> hin(row * std::size_t(h));
    for (auto& b : hin) b = std::uint8_t(rng());
    harness::Dev din(hin.size()), dout(hin.size() * 4);
    PIXFLOW_CUDA_CHECK(cudaMemcpy(din.p, hin.data(), hin.size(), cudaMemcpyHostToDevice));
    const auto [in, out] = views(w, h, C, din.p, dout.p);
    constexpr int TH = pi::lb_rows<std::uint32_t, C>();
    const std::size_t plain =
        pi::lookback_scratch_bytes<std::uint32_t, C, TH>(in) - pi::lookback_kept_bytes<std::uint32_t, C, TH>(in);
    harness::Dev scratch(plain);
    PIXFLOW_CUDA_CHECK(cudaMemset(scratch.p, 0xCD, plain)); // nothing may rely on zeroed scratch
    pi::launch_lookback<std::uint32_t, C, TH>(in, out, scratch.p, nullptr, nullptr, nullptr, kept, state);
    PIXFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> got(row * std::size_t(h));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(got.data(), dout.p, got.size() * 4, cudaMemcpyDeviceToHost));
    return got == reference(hin, w, h, C);
}

/// Launches on one kept block; returns how many matched. forge: after each launch the host word
/// says the last launch had the epoch before its own, so the next launch reuses it.
template <int C> int matching_launches(int w, int h, bool forge, std::mt19937& rng) {
    constexpr int TH = pi::lb_rows<std::uint32_t, C>();
    ImageView big;
    big.width = 2 * w;
    big.height = 2 * h;
    big.channels = C;
    const std::size_t bytes = pi::lookback_kept_bytes<std::uint32_t, C, TH>(big);
    harness::Dev kept(bytes);
    PIXFLOW_CUDA_CHECK(cudaMemset(kept.p, 0, bytes)); // as the host gives it: zero, state 0
    std::uint64_t state = 0;
    const std::pair<int, int> shapes[] = {{w, h}, {w, h}, {w, h},         {w, h}, {w, h}, {w, h},
                                          {w, h}, {w, h}, {2 * w, h / 2}, {w, h}, {w, h}};
    int matched = 0;
    for (auto [sw, sh] : shapes) {
        matched += launch_matches<C>(sw, sh, kept.p, &state, rng);
        if (forge && (state & 3) != 0) state = (state & ~std::uint64_t(3)) | ((state & 3) + 1) % 3 + 1;
    }
    return matched;
}

/// The timings of `time` for C channels.
template <int C> void time_kept(int w, int h) {
    constexpr int TH = pi::lb_rows<std::uint32_t, C>();
    const std::size_t row = std::size_t(w) * C;
    harness::Dev din(row * h), dout(row * h * 4);
    PIXFLOW_CUDA_CHECK(cudaMemset(din.p, 0x5A, row * h));
    const auto [in, out] = views(w, h, C, din.p, dout.p);
    const std::size_t all = pi::lookback_scratch_bytes<std::uint32_t, C, TH>(in);
    const std::size_t kept_bytes = pi::lookback_kept_bytes<std::uint32_t, C, TH>(in);
    harness::Dev scratch(all), kept(kept_bytes);
    PIXFLOW_CUDA_CHECK(cudaMemset(kept.p, 0, kept_bytes));
    std::uint64_t state = 0;
    const std::size_t floor_bytes = row * h * 5; // read once, written once
    harness::Dev a(floor_bytes / 2), b(floor_bytes / 2);
    for (int round = 0; round < 3; ++round) {
        const float cleared = harness::time_it(
            [&] { pi::launch_lookback<std::uint32_t, C, TH>(in, out, scratch.p, nullptr, nullptr); }, 50);
        const float on_kept = harness::time_it(
            [&] {
                pi::launch_lookback<std::uint32_t, C, TH>(in, out, scratch.p, nullptr, nullptr, nullptr, kept.p,
                                                          &state);
            },
            50);
        const float copy = harness::time_it(
            [&] { PIXFLOW_CUDA_CHECK(cudaMemcpyAsync(b.p, a.p, floor_bytes / 2, cudaMemcpyDeviceToDevice)); }, 50);
        std::printf("%d x %d x %d  memset + launch %.4f ms (%.3fx)  kept %.4f ms (%.3fx)  copy %.4f ms\n", w, h, C,
                    cleared, cleared / copy, on_kept, on_kept / copy, copy);
    }
}

int main(int argc, char** argv) {
    std::mt19937 rng(18);
    int failures = 0;
    auto report = [&](const char* what, int matched, bool all) {
        const bool ok = all ? matched == 11 : matched < 11; // forged: at most the 3 that clear match
        std::printf("%-44s %2d of 11 launches match  %s\n", what, matched, ok ? "PASSED" : "FAILED");
        failures += !ok;
    };
    report("gray 2600 x 400, kept flags", matching_launches<1>(2600, 400, false, rng), true);
    report("RGB 2600 x 200, kept flags", matching_launches<3>(2600, 200, false, rng), true);
    report("gray 2600 x 400, epoch forged (must fail)", matching_launches<1>(2600, 400, true, rng), false);
    report("RGB 2600 x 200, epoch forged (must fail)", matching_launches<3>(2600, 200, true, rng), false);
    std::printf("%s\n", failures ? "kept_check: FAILED" : "kept_check: PASSED");
    if (argc > 1 && std::string(argv[1]) == "time") {
        time_kept<3>(8192, 8192);
        time_kept<1>(8192, 8192);
    }
    return failures ? 1 : 0;
}
