// Tests of the floyd_steinberg plugin through the real plugin: every backend (and the CPU's
// sequential schedule) against a reference written here from the rules alone, CUDA against the
// CPU bit for bit, and one small image whose output was worked out by hand.
#include "../kernels/floyd_steinberg.hpp"
#include "support/op_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;

/// The rules of the issue, transcribed as directly as possible: a full error image, e = 0 outside
/// it, C division for the 1/16 weights, and each channel on its own.
Image reference(const Image& in) {
    Image out = Image::make(in.width, in.height, in.channels, DType::u8);
    const int w = in.width, h = in.height;
    for (int c = 0; c < in.channels; ++c) {
        std::vector<int> err(std::size_t(w) * h, 0);
        auto e = [&](int y, int x) { return y < 0 || x < 0 || x >= w ? 0 : err[std::size_t(y) * w + x]; };
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                const int sum = 7 * e(y, x - 1) + 1 * e(y - 1, x - 1) + 5 * e(y - 1, x) + 3 * e(y - 1, x + 1);
                const int v = std::clamp(int(in.at<std::uint8_t>(x, y, c)) + sum / 16, 0, 255);
                const int o = v > 128 ? 255 : 0;
                out.at<std::uint8_t>(x, y, c) = std::uint8_t(o);
                err[std::size_t(y) * w + x] = v - o;
            }
    }
    return out;
}

Image dither(const Image& in, const std::string& backend) {
    std::map<std::string, std::string> params;
    std::string b = backend;
    if (backend == "sequential") {
        b = "cpu";
        params["cpu_schedule"] = "sequential";
    }
    auto out = run_op("floyd_steinberg", b, {&in}, params);
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

Image random_image(int w, int h, int c, std::uint32_t seed) {
    Image im = Image::make(w, h, c, DType::u8);
    fill_random(im, seed);
    return im;
}

Image constant_image(int w, int h, int c, std::uint8_t v) {
    Image im = Image::make(w, h, c, DType::u8);
    std::fill(im.bytes.begin(), im.bytes.end(), std::byte{v});
    return im;
}

/// Index of the first differing sample, as "x,y,c", or "" when equal.
std::string first_difference(const Image& a, const Image& b) {
    if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.dtype != b.dtype) return "shape";
    for (std::size_t k = 0; k < a.bytes.size(); ++k)
        if (a.bytes[k] != b.bytes[k]) {
            const std::size_t p = k / std::size_t(a.channels);
            return std::to_string(p % std::size_t(a.width)) + "," + std::to_string(p / std::size_t(a.width)) + "," +
                   std::to_string(k % std::size_t(a.channels));
        }
    return "";
}

struct Case {
    std::string name;
    Image in;
};

/// Sizes at and around every edge the implementations special-case: single rows and columns,
/// fewer rows than a CPU row group or a CUDA band (32), widths around 16-pixel vectors.
std::vector<Case> cases() {
    std::vector<Case> out;
    std::uint32_t seed = 1;
    const int sizes[][2] = {{1, 1},      {1, 700}, {700, 1}, {2, 2},   {3, 1000}, {1000, 3},
                            {1023, 517}, {16, 33}, {17, 64}, {64, 65}, {95, 31},  {250, 97}};
    for (auto [w, h] : sizes)
        out.push_back({"random " + std::to_string(w) + "x" + std::to_string(h), random_image(w, h, 1, seed++)});
    for (int v : {0, 128, 129, 255})
        for (auto [w, h] : {std::pair{1, 1}, std::pair{3, 1000}, std::pair{200, 70}})
            out.push_back({"constant " + std::to_string(v) + " " + std::to_string(w) + "x" + std::to_string(h),
                           constant_image(w, h, 1, std::uint8_t(v))});
    for (int c : {2, 3, 4})
        for (auto [w, h] : {std::pair{1, 1}, std::pair{37, 41}, std::pair{1023, 517}})
            out.push_back({"random " + std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c),
                           random_image(w, h, c, seed++)});
    return out;
}

/// "cpu", "sequential" (the CPU with cpu_schedule = sequential) or "cuda".
class FloydSteinbergOn : public pixflow::testing::OnEachBackend {};

TEST_P(FloydSteinbergOn, MatchesAHandComputedImage) {
    // Worked out from the rules, row by row (e: error, in 1/16 units inside the sums):
    //  row 0: 100 -> 0 (e 100); 200 + 700/16=43 -> 243 -> 255 (e -12); 50 - 84/16=-5 -> 45 -> 0
    //         (e 45); 130 + 315/16=19 -> 149 -> 255 (e -106)
    //  row 1: 120 + (5*100 - 3*12)/16=29 -> 149 -> 255 (e -106); 60 + (-742+100-60+135)/16=-35
    //         -> 25 -> 0 (e 25); 240 + (175-12+225-318)/16=4 -> 244 -> 255 (e -11); 10 +
    //         (-77+45-530)/16=-35 -> 0 -> 0 (e 0; e(0,4) is outside: dropped)
    //  row 2: 128 + (-530+75)/16=-28 -> 100 -> 0 (e 100); 129 + (700-106+125-33)/16=42 -> 171
    //         -> 255 (e -84); 0 + (-588+25-55)/16=-38 -> 0 -> 0 (e 0); 255 + (-11)/16=0 -> 255
    //         (floor division would give 254: the quotient rounds toward zero)
    Image in = Image::make(4, 3, 1, DType::u8);
    const std::uint8_t pixels[3][4] = {{100, 200, 50, 130}, {120, 60, 240, 10}, {128, 129, 0, 255}};
    const std::uint8_t expected[3][4] = {{0, 255, 0, 255}, {255, 0, 255, 0}, {0, 255, 0, 255}};
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x) in.at<std::uint8_t>(x, y) = pixels[y][x];
    const Image out = dither(in, GetParam());
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x) EXPECT_EQ(int(out.at<std::uint8_t>(x, y)), int(expected[y][x])) << x << "," << y;
}

TEST_P(FloydSteinbergOn, MatchesTheReferenceBitForBit) {
    for (const Case& c : cases()) {
        const Image out = dither(c.in, GetParam());
        EXPECT_EQ(first_difference(out, reference(c.in)), "") << c.name;
    }
}

TEST_P(FloydSteinbergOn, KeepsShapeAndWritesOnly0And255) {
    const Image in = random_image(57, 23, 3, 99);
    const Image out = dither(in, GetParam());
    EXPECT_EQ(out.width, 57);
    EXPECT_EQ(out.height, 23);
    EXPECT_EQ(out.channels, 3);
    EXPECT_EQ(out.dtype, DType::u8);
    for (std::byte b : out.bytes) EXPECT_TRUE(b == std::byte{0} || b == std::byte{255});
}

TEST_P(FloydSteinbergOn, PreservesTheMeanOfAConstantImage) {
    for (int v : {1, 64, 128, 200, 254}) {
        const Image out = dither(constant_image(256, 256, 1, std::uint8_t(v)), GetParam());
        double sum = 0;
        for (std::byte b : out.bytes) sum += double(std::to_integer<int>(b));
        EXPECT_NEAR(sum / double(out.bytes.size()), v, 1.0) << "constant " << v;
    }
}

TEST_P(FloydSteinbergOn, HandlesEachChannelOnItsOwn) {
    // A 3-channel image whose channels are three different gray images dithers like each of them.
    Image rgb = random_image(131, 45, 3, 5);
    const Image out = dither(rgb, GetParam());
    for (int c = 0; c < 3; ++c) {
        Image gray = Image::make(131, 45, 1, DType::u8);
        for (int y = 0; y < 45; ++y)
            for (int x = 0; x < 131; ++x) gray.at<std::uint8_t>(x, y) = rgb.at<std::uint8_t>(x, y, c);
        const Image g = dither(gray, GetParam());
        for (int y = 0; y < 45; ++y)
            for (int x = 0; x < 131; ++x)
                ASSERT_EQ(out.at<std::uint8_t>(x, y, c), g.at<std::uint8_t>(x, y)) << x << "," << y << "," << c;
    }
}

INSTANTIATE_TEST_SUITE_P(FloydSteinberg, FloydSteinbergOn, ::testing::Values("cpu", "sequential", "cuda"),
                         pixflow::testing::backend_name);

TEST(FloydSteinbergCuda, MatchesCpuBitForBit) {
    PIXFLOW_REQUIRE_CUDA();
    for (const Case& c : cases()) {
        const Image cpu = dither(c.in, "cpu");
        const Image gpu = dither(c.in, "cuda");
        EXPECT_EQ(first_difference(gpu, cpu), "") << c.name;
    }
}

TEST(FloydSteinbergCuda, MatchesCpuOnATallAndAWideImage) {
    PIXFLOW_REQUIRE_CUDA();
    // Many bands waiting on each other, and rows much longer than the band lag; 2 to 4 channels
    // run as planes in scratch, widths that are and are not multiples of 16. A gray width that is
    // one runs its bands' last chunks padded on the right (errors beyond the width that no pixel
    // may read), 31 whole bands over a partial one (the bounded code below a padded band). Rows
    // too wide for a block's hand-off rows in shared memory (over about 100,000 columns) run one
    // band per block, every hand-off through global memory.
    for (auto [w, h, c] :
         {std::tuple{300, 4099, 1}, std::tuple{4099, 300, 1}, std::tuple{777, 1500, 3}, std::tuple{1024, 200, 2},
          std::tuple{513, 700, 4}, std::tuple{1024, 1000, 1}, std::tuple{110001, 70, 1}}) {
        const Image in = random_image(w, h, c, std::uint32_t(w + h));
        EXPECT_EQ(first_difference(dither(in, "cuda"), dither(in, "cpu")), "") << w << "x" << h << "x" << c;
    }
}

TEST(FloydSteinberg, RefusesOtherDtypes) {
    Image in = Image::make(8, 8, 1, DType::u16);
    EXPECT_THROW(run_op("floyd_steinberg", "cpu", {&in}), std::runtime_error);
}

} // namespace

// ---- the kernels on their own, without pixflow
// ---------------------------------------------------

namespace {

namespace fs_k = pixflow::floyd_steinberg;

/// Host scratch aligned to 64 bytes, as the wavefront wants it.
struct Scratch {
    void* p;
    explicit Scratch(std::size_t bytes) : p(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)) {}
    ~Scratch() { std::free(p); }
};

TEST(FloydSteinbergKernel, TheWavefrontEqualsTheSequentialScanForAnyWorkerCount) {
    const Image in = random_image(203, 97, 2, 12);
    Image want = Image::make(203, 97, 2, DType::u8);
    Scratch seq(fs_k::sequential_scratch_bytes(in.view()));
    fs_k::dither_sequential(in.view(), want.view(), seq.p);
    for (int workers : {1, 2, 5}) {
        Image got = Image::make(203, 97, 2, DType::u8);
        Scratch s(fs_k::wavefront_scratch_bytes(in.view(), workers));
        ASSERT_TRUE(fs_k::dither_wavefront(in.view(), got.view(), workers, s.p, [] { return false; }));
        EXPECT_TRUE(got.bytes == want.bytes) << workers << " workers";
    }
}

// The wavefront stages each group of 16 rows in chunks of 256 steps (kernels/floyd_steinberg.cpp),
// a row's last 30 steps trailing into the next chunk; with one channel the inner steps move by
// 16 x 16 transposes. Widths around those boundaries, partial last groups and 1 to 4 channels,
// against the sequential scan. (Run under scripts/sanitize.sh this caught an index one past the
// end of the staging array once a row spanned more than one chunk.)
TEST(FloydSteinbergKernel, TheWavefrontEqualsTheSequentialScanAcrossChunkBoundaries) {
    std::uint32_t seed = 40;
    for (int c : {1, 3})
        for (int w : {1, 2, 15, 16, 17, 31, 32, 33, 225, 226, 227, 241, 242, 256, 257, 481, 482, 483, 513})
            for (int h : {1, 15, 16, 17, 33}) {
                const Image in = random_image(w, h, c, seed++);
                Image want = Image::make(w, h, c, DType::u8), got = Image::make(w, h, c, DType::u8);
                Scratch seq(fs_k::sequential_scratch_bytes(in.view()));
                fs_k::dither_sequential(in.view(), want.view(), seq.p);
                Scratch s(fs_k::wavefront_scratch_bytes(in.view(), 2));
                ASSERT_TRUE(fs_k::dither_wavefront(in.view(), got.view(), 2, s.p, [] { return false; }));
                ASSERT_EQ(first_difference(got, want), "") << w << "x" << h << "x" << c;
            }
}

// Each group of rows starts by reading the error of the group above at column 0, which must wait
// for that group's progress: a tall image, many groups, several worker counts, a few times over.
TEST(FloydSteinbergKernel, TheWavefrontWaitsForTheGroupAboveOnATallImage) {
    const Image in = random_image(300, 1500, 1, 77);
    Image want = Image::make(300, 1500, 1, DType::u8);
    Scratch seq(fs_k::sequential_scratch_bytes(in.view()));
    fs_k::dither_sequential(in.view(), want.view(), seq.p);
    for (int round = 0; round < 3; ++round)
        for (int workers : {2, 3, 8}) {
            Image got = Image::make(300, 1500, 1, DType::u8);
            Scratch s(fs_k::wavefront_scratch_bytes(in.view(), workers));
            ASSERT_TRUE(fs_k::dither_wavefront(in.view(), got.view(), workers, s.p, [] { return false; }));
            ASSERT_EQ(first_difference(got, want), "") << workers << " workers, round " << round;
        }
}

// Strips (docs/strips.md): a band of rows run from the error row that the band above left gives
// the whole image's rows, and leaves its own last row's errors. Every CPU kernel (the sequential
// scan, the wavefront's SSE2 and portable scans, several worker counts), 1 and 3 channels, bands
// of 1, 2 and 7 rows and heights they do not divide, partial and whole row groups of 16, a 1-row
// image; one carry buffer in and out, as the host passes it. The final state is checked against
// the error row of the reference written from the rules.

/// The reference's errors of the last row, channel by channel (the carried state's layout).
std::vector<std::int16_t> reference_last_errors(const Image& in) {
    const int w = in.width, h = in.height;
    std::vector<std::int16_t> last(std::size_t(w) * in.channels, 0);
    for (int c = 0; c < in.channels; ++c) {
        std::vector<int> err(std::size_t(w) * h, 0);
        auto e = [&](int y, int x) { return y < 0 || x < 0 || x >= w ? 0 : err[std::size_t(y) * w + x]; };
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                const int sum = 7 * e(y, x - 1) + 1 * e(y - 1, x - 1) + 5 * e(y - 1, x) + 3 * e(y - 1, x + 1);
                const int v = std::clamp(int(in.at<std::uint8_t>(x, y, c)) + sum / 16, 0, 255);
                err[std::size_t(y) * w + x] = v - (v > 128 ? 255 : 0);
            }
        for (int x = 0; x < w; ++x) last[std::size_t(c) * w + x] = std::int16_t(e(h - 1, x));
    }
    return last;
}

/// Rows y0 .. y0 + n - 1 of an image, as a view.
pixflow::ImageView band(const Image& im, int y0, int n) {
    pixflow::ImageView v = im.view();
    v.data = static_cast<std::byte*>(v.data) + std::size_t(y0) * std::size_t(v.pitch);
    v.height = n;
    return v;
}

struct CpuRun {
    std::string name;
    int workers; // 0: the sequential scan
    fs_k::CpuLevel level;
};

/// Runs one band with `run`, the state in `carry` (read unless `top`, then written).
void run_band(const CpuRun& run, const pixflow::ImageView& in, const pixflow::ImageView& out, bool top,
              std::vector<std::int16_t>& carry) {
    const std::int16_t* above = top ? nullptr : carry.data();
    if (run.workers == 0) {
        Scratch s(fs_k::sequential_scratch_bytes(in));
        fs_k::dither_sequential(in, out, s.p, above, carry.data());
        return;
    }
    Scratch s(fs_k::wavefront_scratch_bytes(in, run.workers));
    ASSERT_TRUE(fs_k::dither_wavefront(
        in, out, run.workers, s.p, [] { return false; }, above, carry.data(), run.level));
}

TEST(FloydSteinbergKernel, BandsWithTheCarriedErrorRowEqualTheWholeImage) {
    const std::vector<CpuRun> runs = {{"sequential", 0, fs_k::CpuLevel::best},
                                      {"wavefront, 1 worker", 1, fs_k::CpuLevel::best},
                                      {"wavefront, 2 workers", 2, fs_k::CpuLevel::best},
                                      {"wavefront, 3 workers", 3, fs_k::CpuLevel::best},
                                      {"wavefront portable, 2 workers", 2, fs_k::CpuLevel::portable}};
    std::uint32_t seed = 300;
    for (int c : {1, 3})
        for (auto [w, h] :
             {std::pair{37, 1}, std::pair{1, 20}, std::pair{203, 45}, std::pair{300, 33}, std::pair{520, 64}}) {
            const Image in = random_image(w, h, c, seed++);
            const Image want = reference(in);
            const std::vector<std::int16_t> want_last = reference_last_errors(in);
            ASSERT_EQ(fs_k::carry_bytes(w, c), want_last.size() * sizeof(std::int16_t));
            for (const CpuRun& run : runs)
                for (int rows : {1, 2, 7, 16, 17, h}) {
                    SCOPED_TRACE(run.name + ", " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                                 std::to_string(c) + " in bands of " + std::to_string(rows));
                    Image got = Image::make(w, h, c, DType::u8);
                    std::vector<std::int16_t> carry(want_last.size(), 0); // zero-filled, as the host does
                    for (int y0 = 0; y0 < h; y0 += rows) {
                        const int n = std::min(rows, h - y0);
                        run_band(run, band(in, y0, n), band(got, y0, n), y0 == 0, carry);
                    }
                    ASSERT_EQ(first_difference(got, want), "");
                    ASSERT_TRUE(carry == want_last) << "the last row's errors";
                }
        }
}

// The wavefront's portable scan (the only one off x86-64) on whole images, against the
// reference, including a channel's partial last group and many groups.
TEST(FloydSteinbergKernel, ThePortableWavefrontEqualsTheReference) {
    std::uint32_t seed = 500;
    for (int c : {1, 2, 4})
        for (auto [w, h] : {std::pair{1, 1}, std::pair{257, 15}, std::pair{300, 100}}) {
            const Image in = random_image(w, h, c, seed++);
            Image got = Image::make(w, h, c, DType::u8);
            Scratch s(fs_k::wavefront_scratch_bytes(in.view(), 2));
            ASSERT_TRUE(fs_k::dither_wavefront(
                in.view(), got.view(), 2, s.p, [] { return false; }, nullptr, nullptr, fs_k::CpuLevel::portable));
            EXPECT_EQ(first_difference(got, reference(in)), "") << w << "x" << h << "x" << c;
        }
}

TEST(FloydSteinbergKernel, StopsWhenCancelled) {
    const Image in = random_image(64, 64, 1, 3);
    Image out = Image::make(64, 64, 1, DType::u8);
    Scratch s(fs_k::wavefront_scratch_bytes(in.view(), 2));
    EXPECT_FALSE(fs_k::dither_wavefront(in.view(), out.view(), 2, s.p, [] { return true; }));
}

} // namespace
