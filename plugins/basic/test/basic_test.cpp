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
    const double lo =
        pixflow::visit_dtype(out, [](auto tag) { return double(std::numeric_limits<decltype(tag)>::lowest()); });
    return std::clamp(round_half_away(v), lo, dtype_max(out));
}

bool same_value(double got, double want) { return got == want || (std::isnan(got) && std::isnan(want)); }

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
                Image out =
                    run1("convert", GetParam(), {&in},
                         {{"dtype", pixflow::dtype_name(d)}, {"scale", param(scale)}, {"offset", param(offset)}});
                ASSERT_EQ(out.dtype, d);
                for (std::size_t k = 0; k < probes.size(); ++k) {
                    const double want = convert_reference(probes[k], scale, offset, d);
                    // u64's largest value is 2^64 - 1, which the double `want` cannot hold
                    const double got =
                        d == DType::u64 && reinterpret_cast<const std::uint64_t*>(out.bytes.data())[k] == ~0ull
                            ? dtype_max(d)
                            : out.get(k);
                    EXPECT_TRUE(same_value(got, want))
                        << probes[k] << " * " << scale << " + " << offset << " as " << pixflow::dtype_name(d)
                        << ": got " << got << ", want " << want;
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

// Issue 15 item 6: integer -> integer conversions went through double, so 2^53 + 1 came out as
// 2^53 whenever scale or offset was not the identity. The expected values below were computed
// with exact (arbitrary precision) integers: clamp(in * scale + offset) to each output's range.
struct IntegralCase {
    const char* scale;
    const char* offset;
    std::uint64_t from_u64_to_u64[6];
    std::int64_t from_u64_to_i32[6];
    int from_u64_to_u8[6];
    std::uint64_t from_i32_to_u64[3];
    std::int64_t from_i32_to_i32[3];
    int from_i32_to_u8[3];
};
const std::uint64_t kU64Inputs[6] = {0, 1, (1ull << 53) + 1, 1ull << 63, (1ull << 63) + 1, ~0ull};
const std::int32_t kI32Inputs[3] = {-2147483647 - 1, -1, 2147483647};
const IntegralCase kIntegralCases[] = {
    {
        "1.0",
        "1.0",
        {1ull, 2ull, 9007199254740994ull, 9223372036854775809ull, 9223372036854775810ull, 18446744073709551615ull},
        {1, 2, 2147483647, 2147483647, 2147483647, 2147483647},
        {1, 2, 255, 255, 255, 255},
        {0ull, 0ull, 2147483648ull},
        {-2147483647, 0, 2147483647},
        {0, 0, 255},
    },
    {
        "1.0",
        "-1.0",
        {0ull, 0ull, 9007199254740992ull, 9223372036854775807ull, 9223372036854775808ull, 18446744073709551614ull},
        {-1, 0, 2147483647, 2147483647, 2147483647, 2147483647},
        {0, 0, 255, 255, 255, 255},
        {0ull, 0ull, 2147483646ull},
        {-2147483647 - 1, -2, 2147483646},
        {0, 0, 255},
    },
    {
        "2.0",
        "0.0",
        {0ull, 2ull, 18014398509481986ull, 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull},
        {0, 2, 2147483647, 2147483647, 2147483647, 2147483647},
        {0, 2, 255, 255, 255, 255},
        {0ull, 0ull, 4294967294ull},
        {-2147483647 - 1, -2, 2147483647},
        {0, 0, 255},
    },
    {
        "-1.0",
        "0.0",
        {0ull, 0ull, 0ull, 0ull, 0ull, 0ull},
        {0, -1, -2147483647 - 1, -2147483647 - 1, -2147483647 - 1, -2147483647 - 1},
        {0, 0, 0, 0, 0, 0},
        {2147483648ull, 1ull, 0ull},
        {2147483647, 1, -2147483647},
        {255, 1, 0},
    },
    {
        "3.0",
        "-5.0",
        {0ull, 0ull, 27021597764222974ull, 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull},
        {-5, -2, 2147483647, 2147483647, 2147483647, 2147483647},
        {0, 0, 255, 255, 255, 255},
        {0ull, 0ull, 6442450936ull},
        {-2147483647 - 1, -8, 2147483647},
        {0, 0, 255},
    },
    {
        "1.0",
        "9007199254740992.0",
        {9007199254740992ull, 9007199254740993ull, 18014398509481985ull, 9232379236109516800ull, 9232379236109516801ull,
         18446744073709551615ull},
        {2147483647, 2147483647, 2147483647, 2147483647, 2147483647, 2147483647},
        {255, 255, 255, 255, 255, 255},
        {9007197107257344ull, 9007199254740991ull, 9007201402224639ull},
        {2147483647, 2147483647, 2147483647},
        {255, 255, 255},
    },
    {
        "4611686018427387904.0",
        "0.0",
        {0ull, 4611686018427387904ull, 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull,
         18446744073709551615ull},
        {0, 2147483647, 2147483647, 2147483647, 2147483647, 2147483647},
        {0, 255, 255, 255, 255, 255},
        {0ull, 0ull, 18446744073709551615ull},
        {-2147483647 - 1, -2147483647 - 1, 2147483647},
        {0, 0, 255},
    },
    {
        "1180591620717411303424.0",
        "-1180591620717411303424.0",
        {0ull, 0ull, 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull,
         18446744073709551615ull},
        {-2147483647 - 1, 0, 2147483647, 2147483647, 2147483647, 2147483647},
        {0, 0, 255, 255, 255, 255},
        {0ull, 0ull, 18446744073709551615ull},
        {-2147483647 - 1, -2147483647 - 1, 2147483647},
        {0, 0, 255},
    },
    {
        "1e30",
        "0.0",
        {0ull, 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull,
         18446744073709551615ull},
        {0, 2147483647, 2147483647, 2147483647, 2147483647, 2147483647},
        {0, 255, 255, 255, 255, 255},
        {0ull, 0ull, 18446744073709551615ull},
        {-2147483647 - 1, -2147483647 - 1, 2147483647},
        {0, 0, 255},
    },
    {
        "0.0",
        "1152921504606846976.0",
        {1152921504606846976ull, 1152921504606846976ull, 1152921504606846976ull, 1152921504606846976ull,
         1152921504606846976ull, 1152921504606846976ull},
        {2147483647, 2147483647, 2147483647, 2147483647, 2147483647, 2147483647},
        {255, 255, 255, 255, 255, 255},
        {1152921504606846976ull, 1152921504606846976ull, 1152921504606846976ull},
        {2147483647, 2147483647, 2147483647},
        {255, 255, 255},
    },
};

TEST_P(ConvertOn, IntegerToIntegerIsExactAndSaturatesForIntegerScaleAndOffset) {
    Image u64 = Image::make(6, 1, 1, DType::u64);
    for (int k = 0; k < 6; ++k) u64.at<std::uint64_t>(k, 0) = kU64Inputs[k];
    Image i32 = Image::make(3, 1, 1, DType::i32);
    for (int k = 0; k < 3; ++k) i32.at<std::int32_t>(k, 0) = kI32Inputs[k];
    for (const IntegralCase& c : kIntegralCases) {
        SCOPED_TRACE(std::string("scale ") + c.scale + ", offset " + c.offset);
        auto run = [&](const Image& in, const char* dtype) {
            return run1("convert", GetParam(), {&in}, {{"dtype", dtype}, {"scale", c.scale}, {"offset", c.offset}});
        };
        const Image a = run(u64, "u64"), b = run(u64, "i32"), d = run(u64, "u8");
        for (int k = 0; k < 6; ++k) {
            EXPECT_EQ(a.at<std::uint64_t>(k, 0), c.from_u64_to_u64[k]) << "u64 " << kU64Inputs[k] << " -> u64";
            EXPECT_EQ(b.at<std::int32_t>(k, 0), c.from_u64_to_i32[k]) << "u64 " << kU64Inputs[k] << " -> i32";
            EXPECT_EQ(d.at<std::uint8_t>(k, 0), c.from_u64_to_u8[k]) << "u64 " << kU64Inputs[k] << " -> u8";
        }
        const Image e = run(i32, "u64"), f = run(i32, "i32"), g = run(i32, "u8");
        for (int k = 0; k < 3; ++k) {
            EXPECT_EQ(e.at<std::uint64_t>(k, 0), c.from_i32_to_u64[k]) << "i32 " << kI32Inputs[k] << " -> u64";
            EXPECT_EQ(f.at<std::int32_t>(k, 0), c.from_i32_to_i32[k]) << "i32 " << kI32Inputs[k] << " -> i32";
            EXPECT_EQ(g.at<std::uint8_t>(k, 0), c.from_i32_to_u8[k]) << "i32 " << kI32Inputs[k] << " -> u8";
        }
    }
}

/// clamp(v * scale + offset) in 128-bit integers, for |scale| and |offset| below 2^60 (no overflow).
template <class T> T exact_affine(__int128 v, __int128 scale, __int128 offset) {
    const __int128 x = v * scale + offset;
    if (x < __int128(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (x > __int128(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(x);
}

TEST_P(ConvertOn, EveryIntegerPairIsExactOnRandomValuesNearTheLimits) {
    // Random 64-bit patterns reinterpreted in each input type, so every type sees its extremes.
    const int n = 257;
    for (DType from : {DType::u8, DType::u16, DType::i16, DType::i32, DType::u32, DType::u64}) {
        Image in = Image::make(n, 1, 1, from);
        std::uint64_t state = 0x9E3779B97F4A7C15ull * (int(from) + 1);
        for (std::size_t k = 0; k < in.bytes.size(); ++k) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            in.bytes[k] = std::byte(state >> 56);
        }
        for (auto [scale, offset] : {std::pair{1.0, 1.0}, std::pair{-3.0, 7.0}, std::pair{1.0, -9007199254740992.0},
                                     std::pair{65536.0, -1.0}, std::pair{-1.0, 18446744073709549568.0}})
            for (DType to : {DType::u8, DType::u16, DType::i16, DType::i32, DType::u32, DType::u64}) {
                const Image out =
                    run1("convert", GetParam(), {&in},
                         {{"dtype", pixflow::dtype_name(to)}, {"scale", param(scale)}, {"offset", param(offset)}});
                for (int k = 0; k < n; ++k) {
                    const __int128 v =
                        pixflow::visit_dtype(from, [&](auto t) { return __int128(in.at<decltype(t)>(k, 0)); });
                    pixflow::visit_dtype(to, [&](auto t) {
                        using T = decltype(t);
                        if constexpr (std::is_integral_v<T>) {
                            const T want = exact_affine<T>(v, __int128(scale), __int128(offset));
                            ASSERT_EQ(out.at<T>(k, 0), want)
                                << pixflow::dtype_name(from) << " " << std::uint64_t(v) << " * " << scale << " + "
                                << offset << " as " << pixflow::dtype_name(to);
                        }
                    });
                }
            }
    }
}

TEST_P(ConvertOn, FloatToU64AndI32RoundsHalfAwaySaturatesAndMapsNanToZero) {
    const double inf = std::numeric_limits<double>::infinity();
    const double in_values[] = {0.5,
                                2.5,
                                -0.5,
                                -1e10,
                                4503599627370495.5,     // 2^52 - 0.5: rounds up to 2^52
                                9007199254740994.0,     // 2^53 + 2
                                9223372036854775808.0,  // 2^63
                                18446744073709549568.0, // the largest double below 2^64
                                18446744073709551616.0, // 2^64
                                1e30,
                                -2147483648.5,
                                2147483647.5,
                                std::nan(""),
                                inf,
                                -inf};
    const std::uint64_t want_u64[] = {1,
                                      3,
                                      0,
                                      0,
                                      4503599627370496ull,
                                      9007199254740994ull,
                                      9223372036854775808ull,
                                      18446744073709549568ull,
                                      ~0ull,
                                      ~0ull,
                                      0,
                                      2147483648ull,
                                      0,
                                      ~0ull,
                                      0};
    const std::int32_t want_i32[] = {1,
                                     3,
                                     -1,
                                     -2147483647 - 1,
                                     2147483647,
                                     2147483647,
                                     2147483647,
                                     2147483647,
                                     2147483647,
                                     2147483647,
                                     -2147483647 - 1,
                                     2147483647,
                                     0,
                                     2147483647,
                                     -2147483647 - 1};
    const int n = int(std::size(in_values));
    Image f64 = Image::make(n, 1, 1, DType::f64);
    for (int k = 0; k < n; ++k) f64.at<double>(k, 0) = in_values[k];
    const Image u64 = run1("convert", GetParam(), {&f64}, {{"dtype", "u64"}});
    const Image i32 = run1("convert", GetParam(), {&f64}, {{"dtype", "i32"}});
    for (int k = 0; k < n; ++k) {
        EXPECT_EQ(u64.at<std::uint64_t>(k, 0), want_u64[k]) << in_values[k];
        EXPECT_EQ(i32.at<std::int32_t>(k, 0), want_i32[k]) << in_values[k];
    }
    // f32 too: 2^63 and 2^64 are floats.
    Image f32 = Image::make(3, 1, 1, DType::f32);
    f32.at<float>(0, 0) = 9223372036854775808.0f;
    f32.at<float>(1, 0) = 18446744073709551616.0f;
    f32.at<float>(2, 0) = -3.5f;
    const Image u = run1("convert", GetParam(), {&f32}, {{"dtype", "u64"}});
    EXPECT_EQ(u.at<std::uint64_t>(0, 0), 1ull << 63);
    EXPECT_EQ(u.at<std::uint64_t>(1, 0), ~0ull);
    EXPECT_EQ(u.at<std::uint64_t>(2, 0), 0u);
}

TEST_P(ConvertOn, U64ToF32IsRoundedOnceNotThroughDouble) {
    // 2^60 + 2^36 + 1 lies just above the midpoint of the floats 2^60 and 2^60 + 2^37. Through
    // double it first became 2^60 + 2^36 (the +1 is below double's precision), a tie, which then
    // went to the even float 2^60.
    Image in = Image::make(2, 1, 1, DType::u64);
    in.at<std::uint64_t>(0, 0) = (1ull << 60) + (1ull << 36) + 1;
    in.at<std::uint64_t>(1, 0) = ~0ull;
    const Image out = run1("convert", GetParam(), {&in}, {{"dtype", "f32"}});
    EXPECT_EQ(out.at<float>(0, 0), float((1ull << 60) + (1ull << 37)));
    EXPECT_EQ(out.at<float>(1, 0), 18446744073709551616.0f);
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
            for (auto [scale, offset] : {std::pair{1.0, 0.0}, std::pair{257.3, -11.5}, std::pair{1.0 / 255, 0.5},
                                         // the integral path (128-bit), with and without saturation of the product
                                         std::pair{-3.0, 9007199254740993.0}, std::pair{1e30, -1e30}}) {
                const std::map<std::string, std::string> p = {
                    {"dtype", pixflow::dtype_name(to)}, {"scale", param(scale)}, {"offset", param(offset)}};
                Image cpu = run1("convert", "cpu", {&in}, p);
                Image gpu = run1("convert", "cuda", {&in}, p);
                EXPECT_TRUE(cpu.bytes == gpu.bytes)
                    << pixflow::dtype_name(from) << " -> " << pixflow::dtype_name(to) << " scale " << scale;
            }
    }
}

TEST(GrayscaleCuda, MatchesCpuBitForBit) {
    PIXFLOW_REQUIRE_CUDA();
    std::uint32_t seed = 200;
    // Widths below, at and around the u8 kernel's group of 16 pixels, and a long row.
    for (DType d : {DType::u8, DType::u16, DType::f32})
        for (int c : {1, 3, 4})
            for (int w : {1, 15, 16, 17, 33, 301, 4099}) {
                Image in = Image::make(w, 67, c, d);
                fill_random(in, seed++);
                Image cpu = run1("grayscale", "cpu", {&in}, {});
                Image gpu = run1("grayscale", "cuda", {&in}, {});
                EXPECT_TRUE(cpu.bytes == gpu.bytes) << pixflow::dtype_name(d) << " x" << c << " width " << w;
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
