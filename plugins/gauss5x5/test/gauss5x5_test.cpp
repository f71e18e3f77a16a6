// Tests of the gauss5x5 operator through the real plugin. Every case runs on the CPU and, where a
// GPU is usable, on CUDA, and is compared with a direct double-precision 2D 5x5 convolution
// written here (taps and border indexing computed independently of the plugin). CUDA must also
// match the CPU bit for bit: both kernels use the same float operations in the same order.
#include "../kernels/gauss5x5.hpp"
#include "support/op_harness.hpp"

#include <pixflow/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;

Image blur(const std::string& backend, const Image& in, double sigma, const std::string& border) {
    char s[32];
    std::snprintf(s, sizeof s, "%.6f", sigma); // always a float literal for the pipeline syntax
    auto out = run_op("gauss5x5", backend, {&in}, {{"sigma", s}, {"border", border}});
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

// ---- the reference ------------------------------------------------------------------------------

/// Index read for i, or -1 (zero border). reflect101 is written as a reflection with period
/// 2(n-1), unlike the plugin's repeated folding: ...d c b | a b c d | c b a b c d c...
int ref_index(int i, int n, const std::string& border) {
    if (i >= 0 && i < n) return i;
    if (border == "zero") return -1;
    if (border == "replicate" || n == 1) return std::clamp(i, 0, n - 1);
    const int period = 2 * (n - 1);
    const int m = ((i % period) + period) % period;
    return m < n ? m : period - m;
}

/// Direct 2D convolution with the outer product of the taps, in double; integer dtypes rounded
/// and saturated.
Image reference(const Image& in, double sigma, const std::string& border) {
    double w[5];
    double sum = 0;
    for (int k = 0; k < 5; ++k) sum += w[k] = std::exp(-double((k - 2) * (k - 2)) / (2 * sigma * sigma));
    for (double& x : w) x /= sum;
    const double hi = in.dtype == DType::u8 ? 255.0 : in.dtype == DType::u16 ? 65535.0 : HUGE_VAL;
    Image out = Image::make(in.width, in.height, in.channels, in.dtype);
    for (int y = 0; y < in.height; ++y)
        for (int x = 0; x < in.width; ++x)
            for (int c = 0; c < in.channels; ++c) {
                double acc = 0;
                for (int dy = -2; dy <= 2; ++dy)
                    for (int dx = -2; dx <= 2; ++dx) {
                        const int yy = ref_index(y + dy, in.height, border);
                        const int xx = ref_index(x + dx, in.width, border);
                        if (yy < 0 || xx < 0) continue;
                        acc += w[dy + 2] * w[dx + 2] * in.get((std::size_t(yy) * in.width + xx) * in.channels + c);
                    }
                if (in.dtype != DType::f32) acc = std::clamp(std::nearbyint(acc), 0.0, hi);
                out.set((std::size_t(y) * in.width + x) * in.channels + c, acc);
            }
    return out;
}

/// Largest error of `got` against `want`: absolute for integers, relative (to max(1, |want|))
/// for f32.
double max_error(const Image& got, const Image& want) {
    EXPECT_EQ(got.samples(), want.samples());
    double worst = 0;
    for (std::size_t k = 0; k < std::min(got.samples(), want.samples()); ++k) {
        double e = std::abs(got.get(k) - want.get(k));
        if (got.dtype == DType::f32) e /= std::max(1.0, std::abs(want.get(k)));
        if (!(e <= worst)) worst = e; // NaN propagates
    }
    return worst;
}

double tolerance(DType d) { return d == DType::f32 ? 1e-5 : 1.0; }

// ---- every size, border, channel count and dtype
// -------------------------------------------------

struct Size {
    int width, height;
};
using Case = std::tuple<DType, int, Size, std::string>; // dtype, channels, size, border

class Gauss5x5Case : public ::testing::TestWithParam<Case> {
  protected:
    Image input() const {
        const auto& [dtype, channels, size, border] = GetParam();
        Image in = Image::make(size.width, size.height, channels, dtype);
        fill_random(in, std::uint32_t(size.width * 131 + size.height * 7 + channels));
        return in;
    }
    const std::string& border() const { return std::get<3>(GetParam()); }
};

class Gauss5x5Cpu : public Gauss5x5Case {};
class Gauss5x5Cuda : public Gauss5x5Case {};

TEST_P(Gauss5x5Cpu, MatchesDirect2DConvolution) {
    const Image in = input();
    const Image out = blur("cpu", in, 1.5, border());
    ASSERT_EQ(out.dtype, in.dtype);
    ASSERT_EQ(out.width, in.width);
    ASSERT_EQ(out.height, in.height);
    ASSERT_EQ(out.channels, in.channels);
    EXPECT_LE(max_error(out, reference(in, 1.5, border())), tolerance(in.dtype));
}

TEST_P(Gauss5x5Cuda, MatchesDirect2DConvolutionAndTheCpuBitForBit) {
    PIXFLOW_REQUIRE_CUDA();
    const Image in = input();
    const Image gpu = blur("cuda", in, 1.5, border());
    EXPECT_LE(max_error(gpu, reference(in, 1.5, border())), tolerance(in.dtype));
    const Image cpu = blur("cpu", in, 1.5, border());
    EXPECT_TRUE(gpu.bytes == cpu.bytes) << "CUDA and CPU differ; largest difference " << max_error(gpu, cpu);
}

// More strips of rows than one grid dimension holds (65535): the grid must wrap into z.
TEST(Gauss5x5Cuda, ImagesTallerThanOneGridDimensionMatchTheCpu) {
    PIXFLOW_REQUIRE_CUDA();
    Image in = Image::make(3, 700001, 1, DType::u8);
    fill_random(in, 11);
    const Image gpu = blur("cuda", in, 1.5, "reflect101");
    const Image cpu = blur("cpu", in, 1.5, "reflect101");
    EXPECT_TRUE(gpu.bytes == cpu.bytes) << "largest difference " << max_error(gpu, cpu);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    const auto& [dtype, channels, size, border] = info.param;
    std::string b = border;
    b[0] = char(std::toupper(static_cast<unsigned char>(b[0])));
    std::string d = pixflow::dtype_name(dtype);
    d[0] = char(std::toupper(static_cast<unsigned char>(d[0])));
    return d + "C" + std::to_string(channels) + "W" + std::to_string(size.width) + "H" + std::to_string(size.height) +
           b;
}

const auto all_cases =
    ::testing::Combine(::testing::Values(DType::u8, DType::u16, DType::f32), ::testing::Values(1, 3, 4),
                       ::testing::Values(Size{1, 1}, Size{2, 3}, Size{7, 5}, Size{333, 251}),
                       ::testing::Values(std::string("reflect101"), std::string("replicate"), std::string("zero")));

INSTANTIATE_TEST_SUITE_P(All, Gauss5x5Cpu, all_cases, case_name);
INSTANTIATE_TEST_SUITE_P(All, Gauss5x5Cuda, all_cases, case_name);

// ---- single properties
// ---------------------------------------------------------------------------

std::vector<std::string> backends() {
    std::vector<std::string> b{"cpu"};
    if (pixflow::testing::cuda_available()) b.push_back("cuda");
    return b;
}

TEST(Gauss5x5, ImpulseGivesTheKernelWithCornerWeight) {
    // A single 1 in the middle of a 5x5 zero image, zero border: the output is the 2D kernel.
    Image in = Image::make(5, 5, 1, DType::f32);
    in.at<float>(2, 2) = 1.0f;
    for (const std::string& backend : backends()) {
        const Image out = blur(backend, in, 1.5, "zero");
        EXPECT_NEAR(out.at<float>(0, 0), 0.01441881, 1e-7) << backend;
        EXPECT_NEAR(out.at<float>(4, 4), 0.01441881, 1e-7) << backend;
        double sum = 0;
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 5; ++x) {
                sum += out.at<float>(x, y);
                EXPECT_EQ(out.at<float>(x, y), out.at<float>(4 - x, y)) << backend; // symmetric
                EXPECT_EQ(out.at<float>(x, y), out.at<float>(y, x)) << backend;
            }
        EXPECT_NEAR(sum, 1.0, 1e-6) << backend;
    }
}

TEST(Gauss5x5, ConstantImageStaysConstant) {
    for (const std::string& backend : backends())
        for (const char* border : {"reflect101", "replicate"})
            for (Size size : {Size{1, 1}, Size{2, 3}, Size{33, 17}})
                for (DType d : {DType::u8, DType::u16, DType::f32}) {
                    const double value = d == DType::u8 ? 77 : d == DType::u16 ? 40000 : 0.3;
                    Image in = Image::make(size.width, size.height, 3, d);
                    for (std::size_t k = 0; k < in.samples(); ++k) in.set(k, value);
                    const Image out = blur(backend, in, 2.5, border);
                    double mean = 0;
                    for (std::size_t k = 0; k < out.samples(); ++k) {
                        if (d == DType::f32)
                            ASSERT_NEAR(out.get(k), value, 1e-6) << backend << " " << border;
                        else
                            ASSERT_EQ(out.get(k), value) << backend << " " << border;
                        mean += out.get(k) / double(out.samples());
                    }
                    EXPECT_NEAR(mean, value, 1e-6 * value) << backend << " " << border;
                }
}

TEST(Gauss5x5, ZeroBorderKeepsTheInteriorOfAConstantImage) {
    // Pixels two or more away from every edge see only the image; the corner sees the 3x3
    // quarter of the kernel.
    Image in = Image::make(9, 8, 1, DType::f32);
    for (std::size_t k = 0; k < in.samples(); ++k) in.set(k, 1.0);
    double w[5], sum = 0;
    for (int k = 0; k < 5; ++k) sum += w[k] = std::exp(-double((k - 2) * (k - 2)) / (2 * 1.5 * 1.5));
    const double quarter = (w[2] + w[3] + w[4]) / sum;
    for (const std::string& backend : backends()) {
        const Image out = blur(backend, in, 1.5, "zero");
        for (int y = 2; y < 6; ++y)
            for (int x = 2; x < 7; ++x) EXPECT_NEAR(out.at<float>(x, y), 1.0, 1e-6) << backend;
        EXPECT_NEAR(out.at<float>(0, 0), quarter * quarter, 1e-6) << backend;
        EXPECT_NEAR(out.at<float>(8, 7), quarter * quarter, 1e-6) << backend;
    }
}

TEST(Gauss5x5, OtherSigmasMatchTheReference) {
    for (const std::string& backend : backends())
        for (double sigma : {0.1, 0.5, 4.0, 100.0})
            for (const char* border : {"reflect101", "replicate", "zero"}) {
                Image in = Image::make(41, 19, 3, DType::u8);
                fill_random(in, 5);
                const Image out = blur(backend, in, sigma, border);
                EXPECT_LE(max_error(out, reference(in, sigma, border)), 1.0)
                    << backend << " sigma " << sigma << " " << border;
            }
}

TEST(Gauss5x5, RejectsAnUnknownBorderAndSigmaOutOfRange) {
    Image in = Image::make(4, 4, 1, DType::u8);
    EXPECT_THROW(run_op("gauss5x5", "cpu", {&in}, {{"border", "mirror"}}), std::runtime_error);
    EXPECT_THROW(run_op("gauss5x5", "cpu", {&in}, {{"sigma", "0.01"}}), std::runtime_error);
    EXPECT_THROW(run_op("gauss5x5", "cpu", {&in}, {{"sigma", "250.0"}}), std::runtime_error);
}

} // namespace

// ---- the kernels on their own, without pixflow
// ---------------------------------------------------

namespace {

namespace g = pixflow::gauss5x5;

TEST(Gauss5x5Kernel, TapsAreSymmetricNonNegativeAndSumToOne) {
    for (double sigma : {0.1, 1.5, 100.0}) {
        const auto w = g::gauss5x5_taps(sigma);
        EXPECT_EQ(w[0], w[4]);
        EXPECT_EQ(w[1], w[3]);
        EXPECT_GE(w[0], 0.0f);
        EXPECT_NEAR(double(w[0]) + w[1] + w[2] + w[3] + w[4], 1.0, 1e-6);
    }
    EXPECT_THROW(g::gauss5x5_taps(0.0), pixflow::UserError);
}

TEST(Gauss5x5Kernel, RowsWithPaddingGiveTheSameBytes) {
    // The same image twice, once packed and once with 40 bytes of padding after every row.
    Image in = Image::make(29, 13, 3, DType::u8);
    fill_random(in, 3);
    Image out = Image::make(29, 13, 3, DType::u8);
    const auto taps = g::gauss5x5_taps(1.5);
    g::gauss5x5_cpu(in.view(), out.view(), taps, g::Border::reflect101);

    const std::int64_t pitch = std::int64_t(in.view().row_bytes()) + 40;
    std::vector<std::uint8_t> pin(std::size_t(pitch) * 13), pout(pin.size());
    for (int y = 0; y < 13; ++y)
        std::copy_n(in.view().row<std::uint8_t>(y), in.view().row_bytes(), pin.data() + y * pitch);
    pixflow::ImageView vin = in.view(), vout = out.view();
    vin.pitch = vout.pitch = pitch;
    vin.data = pin.data();
    vout.data = pout.data();
    g::gauss5x5_cpu(vin, vout, taps, g::Border::reflect101);
    for (int y = 0; y < 13; ++y)
        EXPECT_TRUE(std::equal(pout.data() + y * pitch, pout.data() + y * pitch + in.view().row_bytes(),
                               out.view().row<std::uint8_t>(y)))
            << "row " << y;
}

// The u8 SIMD kernels (AVX-512, AVX2: kernels/gauss5x5_u8_planes.inc) against the portable
// loops, byte for byte: every channel count and border, sigmas, widths with and without a tail
// after the last whole block (one block is 32 or 64 samples), rows shorter than one block, images
// shorter than the filter, noise and two-level images (exact rounding ties), padded rows.
TEST(Gauss5x5Kernel, EveryCpuLevelGivesTheSameBytes) {
    const std::pair<int, int> sizes[] = {{1, 1},  {2, 7},  {5, 3},    {7, 2},   {11, 9},   {32, 4},
                                         {64, 5}, {67, 6}, {129, 17}, {300, 7}, {1000, 3}, {4099, 5}};
    std::uint32_t seed = 100;
    for (int c = 1; c <= 4; ++c)
        for (auto [w, h] : sizes)
            for (g::Border border : {g::Border::reflect101, g::Border::replicate, g::Border::zero})
                for (double sigma : {0.4, 1.5, 7.0})
                    for (bool two_level : {false, true}) {
                        Image in = Image::make(w, h, c, DType::u8);
                        fill_random(in, seed++);
                        if (two_level)
                            for (std::size_t k = 0; k < in.bytes.size(); ++k)
                                in.bytes[k] =
                                    std::byte(100 + ((k / std::size_t(c) / 3 + k / (std::size_t(w) * c * 2)) % 2));
                        const auto taps = g::gauss5x5_taps(sigma);
                        Image want = Image::make(w, h, c, DType::u8);
                        g::gauss5x5_cpu(in.view(), want.view(), taps, border, g::CpuLevel::portable);
                        for (g::CpuLevel level : {g::CpuLevel::avx2, g::CpuLevel::best}) {
                            Image got = Image::make(w, h, c, DType::u8);
                            g::gauss5x5_cpu(in.view(), got.view(), taps, border, level);
                            ASSERT_TRUE(got.bytes == want.bytes)
                                << w << "x" << h << "x" << c << " border " << int(border) << " sigma " << sigma
                                << (two_level ? " two-level" : " noise") << " level " << int(level);
                        }
                    }
}

// Outputs of 64 MiB and more are written with streaming stores; rows whose start is not aligned
// to a block are written with plain ones (a pitch of 8191 * 3 + 5 bytes mixes both).
TEST(Gauss5x5Kernel, LargeOutputsWrittenWithStreamingStoresGiveTheSameBytes) {
    const int w = 8191, h = 2800, c = 3;
    const std::int64_t pitch = std::int64_t(w) * c + 5;
    std::vector<std::uint8_t> in(std::size_t(pitch) * h), want(in.size()), got(in.size());
    std::mt19937 rng(7);
    for (auto& b : in) b = std::uint8_t(rng());
    pixflow::ImageView vin;
    vin.width = w;
    vin.height = h;
    vin.channels = c;
    vin.dtype = DType::u8;
    vin.device = PF_HOST;
    vin.pitch = pitch;
    vin.data = in.data();
    pixflow::ImageView vwant = vin, vgot = vin;
    vwant.data = want.data();
    vgot.data = got.data();
    const auto taps = g::gauss5x5_taps(1.5);
    g::gauss5x5_cpu(vin, vwant, taps, g::Border::reflect101, g::CpuLevel::portable);
    for (g::CpuLevel level : {g::CpuLevel::avx2, g::CpuLevel::best}) {
        std::fill(got.begin(), got.end(), std::uint8_t(0));
        g::gauss5x5_cpu(vin, vgot, taps, g::Border::reflect101, level);
        for (int y = 0; y < h; ++y)
            ASSERT_TRUE(std::equal(want.data() + y * pitch, want.data() + y * pitch + std::int64_t(w) * c,
                                   got.data() + y * pitch))
                << "row " << y << ", level " << int(level);
    }
}

TEST(Gauss5x5Kernel, RefusesInPlaceFilteringAsAnInternalError) {
    Image im = Image::make(8, 8, 1, DType::f32);
    try {
        g::gauss5x5_cpu(im.view(), im.view(), g::gauss5x5_taps(1.0), g::Border::zero);
        ADD_FAILURE() << "in-place filtering was accepted";
    } catch (const pixflow::InternalError& e) {
        EXPECT_EQ(e.status(), PF_ERR_RUNTIME);
        EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("internal error at plugins/gauss5x5/kernels/gauss5x5_cpu.cpp:"),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
