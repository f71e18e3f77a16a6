// Tests of the basic plugin (synth, convert, grayscale) through the real plugin. convert and
// grayscale run on every backend against references computed here, and CUDA must match the CPU
// bit for bit.
#include "../kernels/convert.hpp"
#include "../kernels/grayscale.hpp"
#include "../kernels/synth.hpp"
#include "support/op_harness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;

const DType all_dtypes[] = {DType::u8,  DType::u16, DType::i16, DType::i32,
                            DType::u32, DType::u64, DType::f32, DType::f64};

Image run1(const std::string& op, const std::string& backend, const std::vector<const Image*>& in,
           const std::map<std::string, std::string>& params) {
    auto out = run_op(op, backend, in, params);
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

Image synth(const std::string& pattern, int w, int h, int c, DType d, int seed) {
    return run1("synth", "cpu", {},
                {{"pattern", pattern},
                 {"width", std::to_string(w)},
                 {"height", std::to_string(h)},
                 {"channels", std::to_string(c)},
                 {"dtype", pixflow::dtype_name(d)},
                 {"seed", std::to_string(seed)}});
}

/// Largest value of a dtype as double (1 for floats: their natural range is 0..1).
double dtype_max(DType d) {
    return pixflow::visit_dtype(d, [](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<T>)
            return 1.0;
        else
            return double(std::numeric_limits<T>::max());
    });
}

std::string param(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos) s += ".0"; // a float, not an int, for TOML
    return s;
}

// ---- synth ------------------------------------------------------------------------------------

TEST(Synth, HasTheRequestedShapeAndDtype) {
    for (const char* pattern : {"noise", "gradient", "checker", "shapes"})
        for (DType d : all_dtypes)
            for (int c : {1, 3, 4}) {
                Image im = synth(pattern, 37, 21, c, d, 1);
                EXPECT_EQ(im.width, 37);
                EXPECT_EQ(im.height, 21);
                EXPECT_EQ(im.channels, c);
                EXPECT_EQ(im.dtype, d) << pattern;
            }
}

TEST(Synth, SameSeedGivesSameBytes) {
    for (const char* pattern : {"noise", "gradient", "checker", "shapes"})
        for (DType d : {DType::u8, DType::i32, DType::f32, DType::u64}) {
            Image a = synth(pattern, 300, 200, 3, d, 42);
            Image b = synth(pattern, 300, 200, 3, d, 42);
            EXPECT_TRUE(a.bytes == b.bytes) << pattern << " " << pixflow::dtype_name(d);
        }
}

TEST(Synth, DifferentSeedGivesDifferentNoiseAndShapes) {
    for (const char* pattern : {"noise", "shapes"}) {
        Image a = synth(pattern, 64, 64, 3, DType::u8, 1);
        Image b = synth(pattern, 64, 64, 3, DType::u8, 2);
        EXPECT_FALSE(a.bytes == b.bytes) << pattern;
    }
}

TEST(Synth, ValuesSpanTheDtypesNaturalRange) {
    for (DType d : all_dtypes) {
        const double top = dtype_max(d);
        for (const char* pattern : {"noise", "gradient", "checker", "shapes"}) {
            Image im = synth(pattern, 128, 96, 4, d, 3);
            double lo = std::numeric_limits<double>::max(), hi = -lo;
            for (std::size_t k = 0; k < im.samples(); ++k) {
                lo = std::min(lo, im.get(k));
                hi = std::max(hi, im.get(k));
            }
            SCOPED_TRACE(std::string(pattern) + " " + pixflow::dtype_name(d));
            EXPECT_GE(lo, 0.0);
            EXPECT_LE(hi, top);
            if (std::string(pattern) == "gradient" || std::string(pattern) == "checker") {
                EXPECT_EQ(lo, 0.0);
                EXPECT_EQ(hi, top);
            } else {
                EXPECT_LT(lo, 0.15 * top);
                EXPECT_GT(hi, 0.85 * top);
            }
        }
    }
}

TEST(Synth, CheckerHas32PixelSquares) {
    Image im = synth("checker", 96, 64, 1, DType::u8, 1);
    EXPECT_EQ(im.at<std::uint8_t>(0, 0), 0);
    EXPECT_EQ(im.at<std::uint8_t>(31, 31), 0);
    EXPECT_EQ(im.at<std::uint8_t>(32, 0), 255);
    EXPECT_EQ(im.at<std::uint8_t>(0, 32), 255);
    EXPECT_EQ(im.at<std::uint8_t>(32, 32), 0);
}

// ---- references -------------------------------------------------------------------------------

/// Nearest integer, ties away from zero, written without round() so it is independent.
double round_half_away(double v) {
    const double t = std::trunc(v);
    return std::fabs(v - t) >= 0.5 ? t + (v < 0 ? -1.0 : 1.0) : t;
}

/// What convert must produce for one input value, as double (NaN stays NaN for float outputs).
double convert_reference(double in, double scale, double offset, DType out) {
    const double v = in * scale + offset;
    if (pixflow::dtype_is_float(out)) return out == DType::f32 ? double(float(v)) : v;
    if (std::isnan(v)) return 0.0;
    const double lo = pixflow::visit_dtype(
        out, [](auto tag) { return double(std::numeric_limits<decltype(tag)>::lowest()); });
    return std::clamp(round_half_away(v), lo, dtype_max(out));
}

bool same_value(double got, double want) {
    return got == want || (std::isnan(got) && std::isnan(want));
}

/// Values that probe rounding, saturation at both ends, NaN and infinities.
const std::vector<double> probes = {0.0,
                                    0.5,
                                    -0.5,
                                    1.5,
                                    2.5,
                                    -2.5,
                                    0.49999999999999994,
                                    127.5,
                                    254.5,
                                    255.5,
                                    256.0,
                                    -1.0,
                                    -1e10,
                                    1e30,
                                    65534.5,
                                    65535.4,
                                    32767.5,
                                    -32768.5,
                                    -32769.0,
                                    2147483647.4,
                                    2147483647.6,
                                    -2147483648.6,
                                    4294967295.4,
                                    4294967295.5,
                                    1.8e19,
                                    3e19,
                                    1e-300,
                                    std::nan(""),
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity()};

Image probe_image() {
    Image im = Image::make(int(probes.size()), 1, 1, DType::f64);
    for (std::size_t k = 0; k < probes.size(); ++k) im.set(k, probes[k]);
    return im;
}

// ---- convert, on every backend ----------------------------------------------------------------

class ConvertOn : public pixflow::testing::OnEachBackend {};

TEST_P(ConvertOn, RoundsSaturatesAndMapsNanToZero) {
    const Image in = probe_image();
    for (double scale : {1.0, 3.0, -0.5})
        for (double offset : {0.0, 0.25, -7.0})
            for (DType d : all_dtypes) {
                Image out = run1("convert", GetParam(), {&in},
                                 {{"dtype", pixflow::dtype_name(d)},
                                  {"scale", param(scale)},
                                  {"offset", param(offset)}});
                ASSERT_EQ(out.dtype, d);
                for (std::size_t k = 0; k < probes.size(); ++k) {
                    const double want = convert_reference(probes[k], scale, offset, d);
                    // u64's largest value is 2^64 - 1, which the double `want` cannot hold
                    const double got = d == DType::u64 && reinterpret_cast<const std::uint64_t*>(
                                                              out.bytes.data())[k] == ~0ull
                                           ? dtype_max(d)
                                           : out.get(k);
                    EXPECT_TRUE(same_value(got, want))
                        << probes[k] << " * " << scale << " + " << offset << " as "
                        << pixflow::dtype_name(d) << ": got " << got << ", want " << want;
                }
            }
}

TEST_P(ConvertOn, MapsU8ToUnitFloatAndBack) {
    Image in = Image::make(256, 1, 1, DType::u8);
    for (int v = 0; v < 256; ++v) in.at<std::uint8_t>(v, 0) = std::uint8_t(v);
    Image f = run1("convert", GetParam(), {&in}, {{"dtype", "f32"}, {"scale", param(1.0 / 255.0)}});
    for (int v = 0; v < 256; ++v) EXPECT_EQ(f.at<float>(v, 0), float(v * (1.0 / 255.0)));
    Image back = run1("convert", GetParam(), {&f}, {{"dtype", "u8"}, {"scale", "255.0"}});
    EXPECT_TRUE(back.bytes == in.bytes);
}

TEST_P(ConvertOn, KeepsEveryBitOfIntegersWhenScaleIsOne) {
    Image in = Image::make(4, 1, 1, DType::u64);
    const std::uint64_t values[4] = {~0ull, (1ull << 53) + 1, 70000, 12};
    for (int k = 0; k < 4; ++k) in.at<std::uint64_t>(k, 0) = values[k];
    Image same = run1("convert", GetParam(), {&in}, {{"dtype", "u64"}});
    EXPECT_TRUE(same.bytes == in.bytes);
    Image narrow = run1("convert", GetParam(), {&in}, {{"dtype", "u16"}});
    EXPECT_EQ(narrow.at<std::uint16_t>(0, 0), 65535);
    EXPECT_EQ(narrow.at<std::uint16_t>(2, 0), 65535);
    EXPECT_EQ(narrow.at<std::uint16_t>(3, 0), 12);

    Image s = Image::make(3, 1, 1, DType::i32);
    s.at<std::int32_t>(0, 0) = -5;
    s.at<std::int32_t>(1, 0) = -70000;
    s.at<std::int32_t>(2, 0) = 70000;
    Image i16 = run1("convert", GetParam(), {&s}, {{"dtype", "i16"}});
    EXPECT_EQ(i16.at<std::int16_t>(0, 0), -5);
    EXPECT_EQ(i16.at<std::int16_t>(1, 0), -32768);
    EXPECT_EQ(i16.at<std::int16_t>(2, 0), 32767);
    Image u8 = run1("convert", GetParam(), {&s}, {{"dtype", "u8"}});
    EXPECT_EQ(u8.at<std::uint8_t>(0, 0), 0);
    EXPECT_EQ(u8.at<std::uint8_t>(2, 0), 255);
}

TEST_P(ConvertOn, KeepsShapeAndChannels) {
    Image in = Image::make(17, 9, 4, DType::u16);
    fill_random(in, 3);
    Image out = run1("convert", GetParam(), {&in}, {{"dtype", "f64"}});
    EXPECT_EQ(out.width, 17);
    EXPECT_EQ(out.height, 9);
    EXPECT_EQ(out.channels, 4);
    for (std::size_t k = 0; k < in.samples(); ++k) ASSERT_EQ(out.get(k), in.get(k));
}

INSTANTIATE_TEST_SUITE_P(Convert, ConvertOn, pixflow::testing::each_backend(), pixflow::testing::backend_name);

// ---- grayscale, on every backend --------------------------------------------------------------

class GrayscaleOn : public pixflow::testing::OnEachBackend {};

TEST_P(GrayscaleOn, MatchesBt601OnRandomImages) {
    std::uint32_t seed = 7;
    for (DType d : {DType::u8, DType::u16, DType::f32})
        for (int c : {3, 4}) {
            SCOPED_TRACE(std::string(pixflow::dtype_name(d)) + " x" + std::to_string(c));
            Image in = Image::make(61, 23, c, d);
            fill_random(in, seed++);
            Image out = run1("grayscale", GetParam(), {&in}, {});
            ASSERT_EQ(out.channels, 1);
            ASSERT_EQ(out.dtype, d);
            for (std::size_t p = 0; p < out.samples(); ++p) {
                const double r = in.get(p * c), g = in.get(p * c + 1), b = in.get(p * c + 2);
                const double y = 0.299 * r + 0.587 * g + 0.114 * b;
                if (d == DType::f32) {
                    ASSERT_NEAR(out.get(p), y, 1e-6) << "pixel " << p;
                } else {
                    // Integers: exactly (299 R + 587 G + 114 B) / 1000 rounded half up.
                    const std::uint64_t thousandths = std::uint64_t(299 * r + 587 * g + 114 * b);
                    ASSERT_EQ(out.get(p), double((thousandths + 500) / 1000)) << "pixel " << p;
                }
            }
        }
}

TEST_P(GrayscaleOn, CopiesASingleChannel) {
    for (DType d : {DType::u8, DType::u16, DType::f32}) {
        Image in = Image::make(19, 5, 1, d);
        fill_random(in, 11);
        Image out = run1("grayscale", GetParam(), {&in}, {});
        EXPECT_TRUE(out.bytes == in.bytes);
    }
}

TEST_P(GrayscaleOn, KeepsWhiteWhite) {
    Image in = Image::make(3, 1, 3, DType::u16);
    for (std::size_t k = 0; k < in.samples(); ++k) in.set(k, 65535);
    Image out = run1("grayscale", GetParam(), {&in}, {});
    for (int x = 0; x < 3; ++x) EXPECT_EQ(out.at<std::uint16_t>(x, 0), 65535);
}

INSTANTIATE_TEST_SUITE_P(Grayscale, GrayscaleOn, pixflow::testing::each_backend(), pixflow::testing::backend_name);

// The u8 AVX2 kernel against the portable loop, byte for byte: widths around its 32-pixel steps
// (RGB needs 2 pixels after its last step), rows with padding.
TEST(Grayscale, U8CpuKernelEqualsThePortableLoop) {
    std::uint32_t seed = 500;
    for (int c : {3, 4})
        for (int w : {1, 2, 31, 32, 33, 34, 35, 63, 64, 65, 66, 1000}) {
            Image in = Image::make(w + 3, 7, c, DType::u8); // 3 pixels of padding per row
            fill_random(in, seed++);
            pixflow::ImageView vin = in.view();
            vin.width = w;
            Image a = Image::make(w, 7, 1, DType::u8), b = Image::make(w, 7, 1, DType::u8);
            pixflow::basic::grayscale_cpu(vin, a.view(), /*portable=*/true);
            pixflow::basic::grayscale_cpu(vin, b.view());
            ASSERT_TRUE(a.bytes == b.bytes) << w << " pixels x" << c;
        }
}

// The u8 CPU kernel divides by 1000 with a multiply and shifts (kernels/grayscale.cpp): every one
// of the 2^24 RGB triples, as RGB and as RGBA, rows of 4096 pixels (whole 32-pixel vectors) and
// of 4099 (a portable tail), against the formula.
TEST(Grayscale, U8CpuKernelMatchesTheFormulaOnEveryRgbTriple) {
    for (int c : {3, 4})
        for (int w : {4096, 4099}) {
            SCOPED_TRACE("x" + std::to_string(c) + ", rows of " + std::to_string(w));
            const int h = int(((std::size_t(1) << 24) + w - 1) / w);
            Image in = Image::make(w, h, c, DType::u8);
            for (std::size_t p = 0; p < std::size_t(w) * h; ++p) {
                const std::uint32_t rgb = std::uint32_t(p & 0xffffff);
                for (int k = 0; k < 3; ++k) in.bytes[p * c + k] = std::byte(rgb >> (8 * k) & 0xff);
                if (c == 4) in.bytes[p * c + 3] = std::byte(p * 37 & 0xff);
            }
            Image out = run1("grayscale", "cpu", {&in}, {});
            const auto* src = reinterpret_cast<const std::uint8_t*>(in.bytes.data());
            const auto* y = reinterpret_cast<const std::uint8_t*>(out.bytes.data());
            for (std::size_t p = 0; p < std::size_t(w) * h; ++p) {
                const std::uint32_t want =
                    (299u * src[p * c] + 587u * src[p * c + 1] + 114u * src[p * c + 2] + 500u) / 1000u;
                ASSERT_EQ(y[p], want) << "pixel " << p;
            }
        }
}

// ---- CUDA against CPU, bit for bit ------------------------------------------------------------

TEST(ConvertCuda, MatchesCpuBitForBitForEveryDtypePair) {
    PIXFLOW_REQUIRE_CUDA();
    std::uint32_t seed = 100;
    for (DType from : all_dtypes) {
        Image in = Image::make(129, 33, 3, from);
        fill_random(in, seed++);
        if (pixflow::dtype_is_float(from)) // spread floats over every output's range, with specials
            for (std::size_t k = 0; k < in.samples(); ++k)
                in.set(k, k < probes.size() ? probes[k] : (in.get(k) - 0.25) * 3e5);
        for (DType to : all_dtypes)
            for (auto [scale, offset] :
                 {std::pair{1.0, 0.0}, std::pair{257.3, -11.5}, std::pair{1.0 / 255, 0.5}}) {
                const std::map<std::string, std::string> p = {{"dtype", pixflow::dtype_name(to)},
                                                              {"scale", param(scale)},
                                                              {"offset", param(offset)}};
                Image cpu = run1("convert", "cpu", {&in}, p);
                Image gpu = run1("convert", "cuda", {&in}, p);
                EXPECT_TRUE(cpu.bytes == gpu.bytes)
                    << pixflow::dtype_name(from) << " -> " << pixflow::dtype_name(to) << " scale "
                    << scale;
            }
    }
}

TEST(GrayscaleCuda, MatchesCpuBitForBit) {
    PIXFLOW_REQUIRE_CUDA();
    std::uint32_t seed = 200;
    for (DType d : {DType::u8, DType::u16, DType::f32})
        for (int c : {1, 3, 4}) {
            Image in = Image::make(301, 67, c, d);
            fill_random(in, seed++);
            Image cpu = run1("grayscale", "cpu", {&in}, {});
            Image gpu = run1("grayscale", "cuda", {&in}, {});
            EXPECT_TRUE(cpu.bytes == gpu.bytes) << pixflow::dtype_name(d) << " x" << c;
        }
}

} // namespace

// ---- the kernels on their own, without pixflow
// ---------------------------------------------------

namespace {

namespace b = pixflow::basic;

TEST(BasicKernels, SynthThenConvertThroughPaddedViewsGiveTheOperatorsBytes) {
    // synth into rows padded to 1000 bytes, then convert to f32 from there: the same samples as
    // the operators give through pixflow.
    std::vector<std::uint8_t> rows(1000 * 45);
    pixflow::ImageView v;
    v.width = 67;
    v.height = 45;
    v.channels = 3;
    v.dtype = DType::u8;
    v.pitch = 1000;
    v.data = rows.data();
    b::synth(v, b::Pattern::shapes, 9);
    Image f = Image::make(67, 45, 3, DType::f32);
    b::convert_cpu(v, f.view(), 0.5, 1.0);

    const Image src = synth("shapes", 67, 45, 3, DType::u8, 9);
    const Image want = run1("convert", "cpu", {&src}, {{"dtype", "f32"}, {"scale", "0.5"}, {"offset", "1.0"}});
    EXPECT_TRUE(f.bytes == want.bytes);
}

} // namespace
