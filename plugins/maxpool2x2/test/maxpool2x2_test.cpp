// Tests of maxpool2x2 through the real plugin: every backend against a naive reference written
// here, for every dtype, 1 to 4 channels and odd sizes; NaN and signed-zero rules; the error for
// inputs smaller than 2x2; CUDA equal to the CPU bit for bit.
#include "../kernels/maxpool2x2.hpp"
#include "support/op_harness.hpp"

#include <pixflow/error.hpp>

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;

const DType all_dtypes[] = {DType::u8,  DType::u16, DType::i16, DType::i32,
                            DType::u32, DType::u64, DType::f32, DType::f64};

/// Sizes (width x height) that pool; 1xN, Nx1 and 1x1 are rejected (see below).
const std::pair<int, int> valid_sizes[] = {{2, 2}, {7, 9}, {1023, 769}, {4096, 3}};

std::string describe(int w, int h, int c, DType d) {
    return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c) + " " + pixflow::dtype_name(d);
}

/// The documented rule, written out plainly: the first NaN of tl, tr, bl, br if there is one,
/// else the first of the largest values in that order.
template <class T> T reference_window(const T (&v)[4]) {
    if constexpr (std::is_floating_point_v<T>)
        for (T x : v)
            if (std::isnan(x)) return x;
    T best = v[0];
    for (int k = 1; k < 4; ++k)
        if (v[k] > best) best = v[k];
    return best;
}

Image reference(const Image& in) {
    Image out = Image::make(in.width / 2, in.height / 2, in.channels, in.dtype);
    pixflow::visit_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        for (int y = 0; y < out.height; ++y)
            for (int x = 0; x < out.width; ++x)
                for (int c = 0; c < in.channels; ++c) {
                    const T v[4] = {in.at<T>(2 * x, 2 * y, c), in.at<T>(2 * x + 1, 2 * y, c),
                                    in.at<T>(2 * x, 2 * y + 1, c), in.at<T>(2 * x + 1, 2 * y + 1, c)};
                    out.at<T>(x, y, c) = reference_window(v);
                }
    });
    return out;
}

/// Random samples; float images get random bit patterns instead: NaNs with payloads and either
/// sign, infinities, subnormals, -0.
Image random_image(int w, int h, int c, DType d, std::uint32_t seed) {
    Image im = Image::make(w, h, c, d);
    fill_random(im, seed);
    if (pixflow::dtype_is_float(d)) {
        std::mt19937_64 rng(seed);
        for (auto& b : im.bytes) b = std::byte(rng() & 0xFF);
        // plenty of exact ties and signed zeros too
        for (std::size_t k = 0; k < im.samples(); k += 5) im.set(k, k % 10 ? 0.0 : -0.0);
    }
    return im;
}

Image pool(const std::string& backend, const Image& in) {
    auto out = run_op("maxpool2x2", backend, {&in});
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

class Maxpool2x2On : public pixflow::testing::OnEachBackend {};

TEST_P(Maxpool2x2On, MatchesReferenceForEveryDtypeSizeAndChannelCount) {
    std::uint32_t seed = 1;
    for (auto [w, h] : valid_sizes)
        for (DType d : all_dtypes)
            for (int c : {1, 3, 4}) {
                SCOPED_TRACE(describe(w, h, c, d));
                const Image in = random_image(w, h, c, d, seed++);
                const Image out = pool(GetParam(), in);
                ASSERT_EQ(out.width, w / 2);
                ASSERT_EQ(out.height, h / 2);
                ASSERT_EQ(out.channels, c);
                ASSERT_EQ(out.dtype, d);
                EXPECT_TRUE(out.bytes == reference(in).bytes);
            }
}

TEST_P(Maxpool2x2On, DropsTheOddLastRowAndColumn) {
    Image in = Image::make(5, 3, 1, DType::u8);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 5; ++x) in.at<std::uint8_t>(x, y) = x == 4 || y == 2 ? 255 : x + 10 * y;
    const Image out = pool(GetParam(), in);
    ASSERT_EQ(out.width, 2);
    ASSERT_EQ(out.height, 1);
    EXPECT_EQ(out.at<std::uint8_t>(0, 0), 11);
    EXPECT_EQ(out.at<std::uint8_t>(1, 0), 13);
}

TEST_P(Maxpool2x2On, PropagatesTheFirstNanAndKeepsTheFirstOfEqualZeros) {
    const float nan_a = std::bit_cast<float>(0x7FC00001u), nan_b = std::bit_cast<float>(0xFFC00002u);
    const float inf = std::numeric_limits<float>::infinity();
    // One 2x2 window per case, laid side by side: values in order tl, tr, bl, br.
    const std::vector<std::array<float, 4>> windows = {
        {1.f, nan_a, 2.f, 3.f}, {nan_b, nan_a, 1.f, 1.f}, {1.f, 2.f, nan_b, nan_a}, {inf, 1.f, 2.f, nan_a},
        {0.f, -0.f, -0.f, 0.f}, {-0.f, 0.f, 0.f, -0.f},   {-inf, -inf, -1.f, -2.f}, {-3.f, -2.f, 5.f, 4.f},
    };
    const std::uint32_t want[] = {0x7FC00001u,
                                  0xFFC00002u,
                                  0xFFC00002u,
                                  0x7FC00001u,
                                  0x00000000u,
                                  0x80000000u,
                                  std::bit_cast<std::uint32_t>(-1.f),
                                  std::bit_cast<std::uint32_t>(5.f)};
    Image in = Image::make(int(windows.size()) * 2, 2, 1, DType::f32);
    for (std::size_t k = 0; k < windows.size(); ++k) {
        in.at<float>(int(2 * k), 0) = windows[k][0];
        in.at<float>(int(2 * k + 1), 0) = windows[k][1];
        in.at<float>(int(2 * k), 1) = windows[k][2];
        in.at<float>(int(2 * k + 1), 1) = windows[k][3];
    }
    const Image out = pool(GetParam(), in);
    for (std::size_t k = 0; k < windows.size(); ++k)
        EXPECT_EQ(std::bit_cast<std::uint32_t>(out.at<float>(int(k), 0)), want[k]) << "window " << k;
}

TEST_P(Maxpool2x2On, KeepsExtremeIntegers) {
    Image in = Image::make(4, 2, 2, DType::u64);
    for (std::size_t k = 0; k < in.samples(); ++k) reinterpret_cast<std::uint64_t*>(in.bytes.data())[k] = k;
    in.at<std::uint64_t>(1, 1, 0) = ~0ull;
    Image s = Image::make(2, 2, 1, DType::i32);
    s.at<std::int32_t>(0, 0) = -7;
    s.at<std::int32_t>(1, 0) = std::numeric_limits<std::int32_t>::min();
    s.at<std::int32_t>(0, 1) = -8;
    s.at<std::int32_t>(1, 1) = -9;
    EXPECT_EQ(pool(GetParam(), in).at<std::uint64_t>(0, 0, 0), ~0ull);
    EXPECT_EQ(pool(GetParam(), s).at<std::int32_t>(0, 0), -7);
}

INSTANTIATE_TEST_SUITE_P(Maxpool2x2, Maxpool2x2On, pixflow::testing::each_backend(), pixflow::testing::backend_name);

TEST(Maxpool2x2, RejectsInputsNarrowerOrShorterThanTwo) {
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 7}, std::pair{300, 1}, std::pair{1, 300}}) {
        const Image in = Image::make(w, h, 3, DType::u8);
        const std::string want =
            "maxpool2x2 needs at least 2x2 pixels; got " + std::to_string(w) + "x" + std::to_string(h);
        try {
            run_op("maxpool2x2", "cpu", {&in});
            ADD_FAILURE() << w << "x" << h << " was accepted";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
        }
    }
}

TEST(Maxpool2x2Cuda, MatchesCpuBitForBit) {
    PIXFLOW_REQUIRE_CUDA();
    std::uint32_t seed = 500;
    for (auto [w, h] : valid_sizes)
        for (DType d : all_dtypes)
            for (int c : {1, 2, 3, 4}) {
                const Image in = random_image(w, h, c, d, seed++);
                EXPECT_TRUE(pool("cpu", in).bytes == pool("cuda", in).bytes) << describe(w, h, c, d);
            }
    // u8 runs 16 output bytes per thread (48 for RGB): widths below, at and around a group, odd
    // widths and heights (the dropped column and row) and a long row.
    for (auto [w, h] : {std::pair{31, 5}, {32, 4}, {33, 7}, {64, 2}, {65, 3}, {97, 9}, {8191, 5}})
        for (int c : {1, 2, 3, 4}) {
            const Image in = random_image(w, h, c, DType::u8, seed++);
            EXPECT_TRUE(pool("cpu", in).bytes == pool("cuda", in).bytes) << describe(w, h, c, DType::u8);
        }
}

} // namespace

// ---- the kernel on its own, without pixflow
// ------------------------------------------------------

namespace {

TEST(Maxpool2x2Kernel, PoolsAViewIntoALargerImage) {
    // A 9x7 window at (5, 3) of a 40x20 RGB image, pooled through views that keep the parent's
    // pitch, into a 4x3 window of another image: the same as pooling a packed copy.
    const Image parent = random_image(40, 20, 3, DType::u16, 77);
    Image sub = Image::make(9, 7, 3, DType::u16);
    for (int y = 0; y < 7; ++y)
        for (int x = 0; x < 9; ++x)
            for (int c = 0; c < 3; ++c) sub.at<std::uint16_t>(x, y, c) = parent.at<std::uint16_t>(5 + x, 3 + y, c);
    pixflow::ImageView in = parent.view();
    in.width = 9;
    in.height = 7;
    in.data = const_cast<std::uint16_t*>(&parent.at<std::uint16_t>(5, 3));
    Image dst = Image::make(30, 10, 3, DType::u16);
    pixflow::ImageView out = dst.view();
    out.width = 4;
    out.height = 3;
    out.data = &dst.at<std::uint16_t>(2, 1);
    pixflow::maxpool2x2::maxpool2x2_cpu(in, out);
    const Image want = reference(sub);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x)
            for (int c = 0; c < 3; ++c)
                EXPECT_EQ(dst.at<std::uint16_t>(2 + x, 1 + y, c), want.at<std::uint16_t>(x, y, c)) << x << "," << y;
    EXPECT_EQ(dst.at<std::uint16_t>(0, 0, 0), 0); // nothing outside the window
}

// The u8 AVX2 kernels against the portable loop, byte for byte: 1 to 4 channels, widths around
// their steps (16 or 32 / C output pixels; the loads reach one pixel past the last window), odd
// widths and heights, rows with padding.
TEST(Maxpool2x2Kernel, U8KernelsEqualThePortableLoop) {
    std::uint32_t seed = 700;
    for (int c = 1; c <= 4; ++c)
        for (int w : {2, 3, 31, 32, 33, 34, 35, 63, 64, 65, 66, 67, 129, 1001}) {
            Image in = Image::make(w + 5, 9, c, DType::u8); // 5 pixels of padding per row
            fill_random(in, seed++);
            pixflow::ImageView vin = in.view();
            vin.width = w;
            Image a = Image::make(w / 2, 4, c, DType::u8), b = Image::make(w / 2, 4, c, DType::u8);
            pixflow::maxpool2x2::maxpool2x2_cpu(vin, a.view(), /*portable=*/true);
            pixflow::maxpool2x2::maxpool2x2_cpu(vin, b.view());
            ASSERT_TRUE(a.bytes == b.bytes) << w << " pixels x" << c;
        }
}

TEST(Maxpool2x2Kernel, RefusesFiveChannelsAsUnsupported) {
    Image in = Image::make(4, 4, 1, DType::u8), out = Image::make(2, 2, 1, DType::u8);
    pixflow::ImageView v = in.view(), o = out.view();
    v.channels = o.channels = 5;
    try {
        pixflow::maxpool2x2::maxpool2x2_cpu(v, o);
        ADD_FAILURE() << "5 channels were accepted";
    } catch (const pixflow::UserError& e) {
        EXPECT_EQ(e.status(), PF_ERR_UNSUPPORTED);
        EXPECT_STREQ(e.what(), "maxpool2x2: 5 channels are not supported; accepted: 1, 2, 3, 4");
    }
}

} // namespace
