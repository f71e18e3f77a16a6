// dither_harness.cu: standalone check and timing of floyd_steinberg.cu (the CUDA kernel of
// floyd_steinberg), not part of the build. It includes the kernel file itself, so it reaches the
// kernel shapes in its anonymous namespace (launch<R, S, K>: R rows per lane, lane skew S, K warps
// per block), and floyd_steinberg_old.cuh, the kernel as of an earlier commit (REV; 4c7ce32: a
// band's first chunks through the bounded code, two chunks a loop pass; 3d9f0e3: one gray channel
// of unaligned rows through the byte path; 9a25d5a: a band's last chunks through the bounded code;
// REV from 6086472 on, whose cuda_scratch_bytes takes both views; in namespace ...::old, made from git by
// scripts/bench/frozen_kernel.sh) to time both in one run. From the repository root:
//   mkdir -p build-harness && scripts/bench/frozen_kernel.sh REV \
//       plugins/floyd_steinberg/kernels/floyd_steinberg.cu old > build-harness/floyd_steinberg_old.cuh
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include -Iplugins/floyd_steinberg/kernels -Ibuild-harness \
//       plugins/floyd_steinberg/test/bench/dither_harness.cu -o build-harness/dither_harness
//   ./harness          every check of every variant, then the timings (8192^2 gray all variants,
//                      then old, dither_cuda and its last chunks bounded: 8192^2 again, 4096^2,
//                      1920x1080, 8192^2 RGB, and gray of unaligned rows 8191x8192 and 1000x1000)
//   ./harness shapes   timings only: 8192 wide, 32 to 8192 rows (1 to 256 bands; 128 and 160:
//                      one block of bands and the first band of a second), every variant (the
//                      cost of one band alone and of each further band); then dither_cuda with
//                      band 0 fed from a carried row against without (the cost of the poll)
//   ./harness small [NAME...]   the checks of small sizes only (for compute-sanitizer), of the
//                               variants named (default: dither_cuda)
//   ./harness quick    every check of old and dither_cuda, then both timed (8192^2 gray twice,
//                      4096^2, 1920x1080, 8192^2 RGB): an A/B of a kernel change in 15 s
//   ./harness pick NAME...   the same for old, dither_cuda and the variants named
// Checks: each variant against a serial CPU reference written here from diffuse()
// (floyd_steinberg_pixel.hpp), byte for byte: sizes around the band and chunk edges (1x1 to
// 4097x37, 110001x70 where the shared rows do not fit), 1-4 channels, 16-byte aligned pitched views
// (one channel in place) and unaligned ones (planes in scratch), whole images with the carried row
// requested (`last` checked against the reference's last error row) and strips (random bands,
// `above` = `last`, one buffer), with poisoned outputs (and the padding between rows checked
// untouched), carried rows and scratch; the timed outputs are compared too.
// Timings: CUDA events after 3 warm-up launches, medians of 15 (9 for RGB), 3 rounds; the last two
// benches are gray images of packed, unaligned rows (8191 and 1000 bytes).
#include "../../kernels/floyd_steinberg.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"
#include "floyd_steinberg_old.cuh"

#include "../../kernels/floyd_steinberg_pixel.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace pixflow;
namespace fs = pixflow::floyd_steinberg;

#define CK(x) PIXFLOW_CUDA_CHECK(x)

static int failures = 0;

using LaunchFn = void (*)(const ImageView&, const ImageView&, void*, void*, const std::int16_t*, std::int16_t*);
using BytesFn = std::size_t (*)(const ImageView&, const ImageView&);
struct Variant {
    std::string name;
    LaunchFn launch;
    BytesFn bytes;
};

static std::vector<Variant> variants() {
    return {
        {std::string("old (") + PIXFLOW_FROZEN_REV + ")", fs::old::dither_cuda, fs::old::cuda_scratch_bytes},
        {"dither_cuda", fs::dither_cuda, fs::cuda_scratch_bytes},
        {"K2, last chunks bounded", fs::launch<1, 2, 2, true, false>, fs::scratch_bytes<1, 2>},
        {"R1 S2 K1", fs::launch<1, 2, 1>, fs::scratch_bytes<1, 2>},
        {"R1 S2 K4", fs::launch<1, 2, 4>, fs::scratch_bytes<1, 2>},
        {"K2, no receiver", fs::launch<1, 2, 2, false>, fs::scratch_bytes<1, 2>},
        {"R1 S2 K8", fs::launch<1, 2, 8>, fs::scratch_bytes<1, 2>},
        {"R2 S2 K2", fs::launch<2, 2, 2>, fs::scratch_bytes<2, 2>},
        {"R2 S3 K2", fs::launch<2, 3, 2>, fs::scratch_bytes<2, 3>},
        {"R1 S3 K4", fs::launch<1, 3, 4>, fs::scratch_bytes<1, 3>},
        {"R1 S3 K2", fs::launch<1, 3, 2>, fs::scratch_bytes<1, 3>},
        {"R1 S2 K3", fs::launch<1, 2, 3>, fs::scratch_bytes<1, 2>},
        {"R1 S3 K3", fs::launch<1, 3, 3>, fs::scratch_bytes<1, 3>},
    };
}

/// The serial scan from diffuse(): channel by channel, row by row; `above` the carried errors
/// (or null), `last` gets the last row's.
static void reference(const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out, int w, int h, int c,
                      const std::vector<std::int16_t>* above, std::vector<std::int16_t>& last) {
    out.assign(std::size_t(w) * h * c, 0);
    last.assign(std::size_t(w) * c, 0);
    for (int ch = 0; ch < c; ++ch) {
        std::vector<int> prev(w + 2, 0), cur(w + 2, 0); // index x + 1
        if (above)
            for (int x = 0; x < w; ++x) prev[x + 1] = (*above)[std::size_t(ch) * w + x];
        for (int y = 0; y < h; ++y) {
            std::fill(cur.begin(), cur.end(), 0);
            for (int x = 0; x < w; ++x) {
                const int sum = 7 * cur[x] + prev[x] + 5 * prev[x + 1] + 3 * prev[x + 2];
                int o = 0;
                cur[x + 1] = fs::diffuse(in[(std::size_t(y) * w + x) * c + ch], sum, o);
                out[(std::size_t(y) * w + x) * c + ch] = std::uint8_t(o);
            }
            std::swap(prev, cur);
        }
        for (int x = 0; x < w; ++x)
            last[std::size_t(ch) * w + x] =
                std::int16_t(h > 0 ? prev[x + 1] : (above ? (*above)[std::size_t(ch) * w + x] : 0));
    }
}

using harness::Dev;

static void check_case(const Variant& var, int w, int h, int c, bool aligned, bool strips, std::mt19937& rng,
                       const char* label = "") {
    const std::size_t row = std::size_t(w) * c;
    std::vector<std::uint8_t> hin(row * h);
    for (auto& b : hin) b = std::uint8_t(rng());
    // pitched views: aligned ones padded to 256 (16-byte aligned rows), unaligned ones odd
    const std::size_t in_pitch = aligned ? (row + 255) / 256 * 256 : row + 3;
    const std::size_t out_pitch = aligned ? (row + 511) / 256 * 256 : row + 5;
    Dev din(in_pitch * h + 64), dout(out_pitch * h + 64);
    std::uint8_t* in_base = static_cast<std::uint8_t*>(din.p) + (aligned ? 0 : 1);
    std::uint8_t* out_base = static_cast<std::uint8_t*>(dout.p) + (aligned ? 0 : 3);
    CK(cudaMemset(din.p, 0x5A, in_pitch * h + 64));
    CK(cudaMemcpy2D(in_base, in_pitch, hin.data(), row, row, h, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout.p, 0xAB, out_pitch * h + 64));
    ImageView in, out;
    in.width = out.width = w;
    in.channels = out.channels = c;
    in.dtype = out.dtype = DType::u8;
    in.device = out.device = 0;
    in.pitch = std::int64_t(in_pitch);
    out.pitch = std::int64_t(out_pitch);
    Dev carry(row * 2);
    CK(cudaMemset(carry.p, 0xEE, row * 2));
    const std::vector<int> bands = harness::random_bands(h, strips, rng);
    int y = 0;
    auto* cp = static_cast<std::int16_t*>(carry.p);
    for (std::size_t k = 0; k < bands.size(); ++k) {
        ImageView bi = in, bo = out;
        bi.height = bo.height = bands[k];
        bi.data = in_base + std::size_t(y) * in_pitch;
        bo.data = out_base + std::size_t(y) * out_pitch;
        const std::size_t sb = var.bytes(bi, bo);
        Dev scratch(sb);
        CK(cudaMemset(scratch.p, 0xCD, sb ? sb : 1)); // nothing may rely on zeroed scratch
        var.launch(bi, bo, scratch.p, nullptr, k ? cp : nullptr, cp);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        y += bands[k];
    }
    std::vector<std::uint8_t> got(out_pitch * h + 64);
    CK(cudaMemcpy(got.data(), dout.p, got.size(), cudaMemcpyDeviceToHost));
    std::vector<std::uint8_t> ref;
    std::vector<std::int16_t> ref_last;
    reference(hin, ref, w, h, c, nullptr, ref_last);
    std::size_t bad = 0, first = 0, bad_pad = 0;
    const std::size_t ob = aligned ? 0 : 3;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const std::size_t j = i - ob;
        const bool pixel = i >= ob && j / out_pitch < std::size_t(h) && j % out_pitch < row;
        if (pixel) {
            if (got[i] != ref[(j / out_pitch) * row + j % out_pitch] && bad++ == 0)
                first = (j / out_pitch) * row + j % out_pitch;
        } else if (got[i] != 0xAB) {
            ++bad_pad; // written outside the view
        }
    }
    std::vector<std::int16_t> last(row);
    CK(cudaMemcpy(last.data(), carry.p, row * 2, cudaMemcpyDeviceToHost));
    std::size_t bad_last = 0;
    for (std::size_t i = 0; i < row; ++i) bad_last += last[i] != ref_last[i];
    if (bad || bad_pad || bad_last) {
        ++failures;
        std::printf(
            "FAIL %s %s %dx%dx%d aligned=%d strips=%zu: %zu bad, %zu outside, %zu bad carried; first at y=%zu x=%zu c=%zu got %d want %d\n",
            var.name.c_str(), label, w, h, c, aligned, bands.size(), bad, bad_pad, bad_last, first / row,
            (first % row) / c, first % c, bad ? got[ob + (first / row) * out_pitch + first % row] : 0,
            bad ? ref[first] : 0);
    }
}

using harness::median;
using harness::time_it;

static void bench(int w, int h, int c, int reps, const std::vector<Variant>& vs, std::mt19937& rng) {
    const std::size_t row = std::size_t(w) * c;
    std::vector<std::uint8_t> hin(row * h);
    for (auto& b : hin) b = std::uint8_t(rng());
    Dev din(row * h), dout(row * h);
    CK(cudaMemcpy(din.p, hin.data(), row * h, cudaMemcpyHostToDevice));
    ImageView in, out;
    in.width = out.width = w;
    in.height = out.height = h;
    in.channels = out.channels = c;
    in.dtype = out.dtype = DType::u8;
    in.device = out.device = 0;
    in.pitch = out.pitch = std::int64_t(row);
    in.data = din.p;
    out.data = dout.p;
    std::size_t sb = 0;
    for (auto& v : vs) sb = std::max(sb, v.bytes(in, out));
    Dev scratch(sb);
    std::vector<std::uint8_t> ref, got(row * h);
    std::vector<std::int16_t> ref_last;
    reference(hin, ref, w, h, c, nullptr, ref_last);
    const int nv = int(vs.size());
    std::vector<std::vector<float>> t(nv);
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < nv; ++i) {
            CK(cudaMemset(dout.p, 0xAB, row * h));
            CK(cudaMemset(scratch.p, 0xCD, sb));
            t[i].push_back(time_it([&] { vs[i].launch(in, out, scratch.p, nullptr, nullptr, nullptr); }, reps));
            CK(cudaMemcpy(got.data(), dout.p, row * h, cudaMemcpyDeviceToHost));
            if (std::memcmp(got.data(), ref.data(), got.size()) != 0) {
                ++failures;
                std::printf("FAIL bench output of %s %dx%dx%d\n", vs[i].name.c_str(), w, h, c);
            }
        }
    std::printf("%dx%dx%d u8: medians of %d, 3 rounds (x = / first variant's first median)\n", w, h, c, reps);
    for (int i = 0; i < nv; ++i) {
        std::printf("  %-28s", vs[i].name.c_str());
        for (float x : t[i]) std::printf(" %.4f ms (%.3fx)", x, x / t[0][0]);
        std::printf("\n");
    }
}

/// One-channel u8 views of w x h pixels (rows `pitch` bytes apart) over din and dout.
static void gray_views(int w, int h, int pitch, const Dev& din, const Dev& dout, ImageView& in, ImageView& out) {
    in = out = ImageView{};
    in.width = out.width = w;
    in.height = out.height = h;
    in.channels = out.channels = 1;
    in.dtype = out.dtype = DType::u8;
    in.device = out.device = 0;
    in.pitch = out.pitch = pitch;
    in.data = din.p;
    out.data = dout.p;
}

/// Where the time goes: 8192 wide, 1 to 256 bands of each variant (one band runs W + its last
/// row's offset steps; each further band adds the hand-off gap). Medians of 9.
static void shapes(const std::vector<Variant>& vs, std::mt19937& rng) {
    const int w = 8192, heights[] = {32, 64, 96, 128, 160, 256, 512, 1024, 8192};
    std::vector<std::uint8_t> hin(std::size_t(w) * 8192);
    for (auto& b : hin) b = std::uint8_t(rng());
    Dev din(hin.size()), dout(hin.size());
    CK(cudaMemcpy(din.p, hin.data(), hin.size(), cudaMemcpyHostToDevice));
    std::printf("shapes: 8192 wide, ms by height (medians of 9)\n  %-16s", "");
    for (int h : heights) std::printf(" %8d", h);
    std::printf("\n");
    for (const auto& v : vs) {
        std::printf("  %-16s", v.name.c_str());
        for (int h : heights) {
            ImageView in, out;
            gray_views(w, h, w, din, dout, in, out);
            Dev scratch(v.bytes(in, out));
            std::printf(" %8.4f", time_it([&] { v.launch(in, out, scratch.p, nullptr, nullptr, nullptr); }, 9));
        }
        std::printf("\n");
    }
    // Band 0 fed from a carried row of zero errors (a strip's `above`: its hand-off row is whole
    // before the kernel starts, so band 0 polls at every chunk and never waits), against the same
    // without: the cost of a fed band's poll alone. 16 wide: the carried row's own kernel.
    Dev zeros(std::size_t(w) * sizeof(std::int16_t));
    CK(cudaMemset(zeros.p, 0, std::size_t(w) * sizeof(std::int16_t)));
    for (int fw : {w, 16}) {
        std::printf("  %-16s", fw == w ? "fed / not, 8192" : "fed / not, 16");
        for (int h : heights) {
            ImageView in, out;
            gray_views(fw, h, w, din, dout, in, out);
            Dev scratch(fs::cuda_scratch_bytes(in, out));
            const auto* above = static_cast<const std::int16_t*>(zeros.p);
            const float fed = time_it([&] { fs::dither_cuda(in, out, scratch.p, nullptr, above, nullptr); }, 9);
            const float not_fed = time_it([&] { fs::dither_cuda(in, out, scratch.p, nullptr, nullptr, nullptr); }, 9);
            std::printf(" %.4f/%.4f", fed, not_fed);
        }
        std::printf("\n");
    }
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const bool small = argc > 1 && std::strcmp(argv[1], "small") == 0;
    const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
    std::mt19937 rng(12345);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    std::printf("device %s, %d SMs, clock %d MHz\n", prop.name, prop.multiProcessorCount, clock_khz / 1000);
    auto vs = variants();
    auto named = [&](std::vector<Variant> chosen) { // `chosen`, then the variants named on the command line
        for (auto& v : vs)
            for (int i = 2; i < argc; ++i)
                if (v.name == argv[i]) chosen.push_back(v);
        return chosen;
    };
    const bool pick = argc > 1 && std::strcmp(argv[1], "pick") == 0;
    if (small) vs = argc == 2 ? std::vector<Variant>{vs[1]} : named({});
    if (pick) vs = named({vs[0], vs[1]}); // old, dither_cuda and the variants named: checked, then timed as in quick
    if (quick) vs.resize(2);
    if (argc > 1 && std::strcmp(argv[1], "shapes") == 0) {
        shapes(vs, rng);
        return 0;
    }
    const std::pair<int, int> sizes[] = {{1, 1},       {2, 2},     {15, 1},     {16, 1},    {17, 3},    {1, 40},
                                         {31, 33},     {33, 31},   {100, 63},   {100, 64},  {100, 65},  {127, 129},
                                         {128, 128},   {129, 257}, {5, 300},    {300, 130}, {513, 300}, {1000, 1000},
                                         {1920, 1080}, {4097, 37}, {110001, 70}};
    int cases = 0;
    for (const auto& var : vs)
        for (auto [w, h] : sizes)
            for (int c = 1; c <= 4; ++c) {
                const bool big = std::size_t(w) * h > 40000;
                if (small && std::size_t(w) * h > 20000) continue;
                if (small && (big || (c == 3 && w > 20))) continue;
                if (big && c > 1 && c != 3) continue;
                if (w > 8192 && c > 1) continue; // one wide case: shared rows too wide, one band per block
                check_case(var, w, h, c, true, false, rng);
                check_case(var, w, h, c, false, false, rng, "unaligned");
                check_case(var, w, h, c, true, true, rng, "strips");
                check_case(var, w, h, c, false, true, rng, "strips unaligned");
                cases += 4;
            }
    std::printf("correctness: %d cases, %d failures\n", cases, failures);
    if (quick || pick) {
        bench(8192, 8192, 1, 15, vs, rng);
        bench(8192, 8192, 1, 15, vs, rng);
        bench(4096, 4096, 1, 15, vs, rng);
        bench(1920, 1080, 1, 15, vs, rng);
        bench(8192, 8192, 3, 9, vs, rng);
    } else if (!small) {
        bench(8192, 8192, 1, 15, vs, rng);
        std::vector<Variant> three = {vs[0], vs[1], vs[2]}; // old, today's, today's without the padded last chunks
        bench(8192, 8192, 1, 15, three, rng);               // again, after the others: the spread between runs
        bench(4096, 4096, 1, 15, three, rng);
        bench(1920, 1080, 1, 15, three, rng);
        bench(8192, 8192, 3, 9, three, rng); // planar (old: the byte path)
        // packed rows that are not 16-byte aligned: the old kernel's byte path against planes
        bench(8191, 8192, 1, 15, three, rng);
        bench(1000, 1000, 1, 15, three, rng);
    }
    std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
