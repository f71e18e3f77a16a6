// The sobel operator against a reference written here: its CPU kernel called directly, then
// both backends through pixflow.
#include "../kernels/sobel.hpp"

#include <pixflow/testing.hpp>

#include <algorithm>
#include <cstdlib>

using pixflow::testing::Image;

namespace {
Image reference(const Image& in, float scale) {
    Image out = Image::make(in.width, in.height, in.channels, pixflow::DType::u8);
    auto at = [&](int x, int y, int c) {
        return int(in.at<std::uint8_t>(std::clamp(x, 0, in.width - 1), std::clamp(y, 0, in.height - 1), c));
    };
    for (int y = 0; y < in.height; ++y)
        for (int x = 0; x < in.width; ++x)
            for (int c = 0; c < in.channels; ++c) {
                int gx = at(x + 1, y - 1, c) + 2 * at(x + 1, y, c) + at(x + 1, y + 1, c) - at(x - 1, y - 1, c) -
                         2 * at(x - 1, y, c) - at(x - 1, y + 1, c);
                int gy = at(x - 1, y + 1, c) + 2 * at(x, y + 1, c) + at(x + 1, y + 1, c) - at(x - 1, y - 1, c) -
                         2 * at(x, y - 1, c) - at(x + 1, y - 1, c);
                float m = float(std::abs(gx) + std::abs(gy)) * scale;
                out.at<std::uint8_t>(x, y, c) = m >= 255.f ? 255 : std::uint8_t(m + 0.5f);
            }
    return out;
}

class SobelTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {
  protected:
    Image input() const {
        auto [w, h, c] = GetParam();
        Image in = Image::make(w, h, c, pixflow::DType::u8);
        pixflow::testing::fill_random(in, std::uint32_t(w * 131 + h * 7 + c));
        return in;
    }
};
} // namespace

TEST_P(SobelTest, KernelMatchesReference) {
    Image in = input();
    Image out = Image::make(in.width, in.height, in.channels, pixflow::DType::u8);
    sobel::sobel_cpu(in.view(), out.view(), 0.5f);
    EXPECT_EQ(pixflow::testing::max_abs_diff(out, reference(in, 0.5f)), 0);
}

TEST_P(SobelTest, CpuMatchesReference) {
    Image in = input();
    auto out = pixflow::testing::run_op("sobel", "cpu", {&in}, {{"scale", "0.5"}});
    EXPECT_EQ(pixflow::testing::max_abs_diff(out[0], reference(in, 0.5f)), 0);
}

TEST_P(SobelTest, CudaMatchesCpu) {
    PIXFLOW_REQUIRE_CUDA();
    Image in = input();
    pixflow::testing::expect_backends_agree("sobel", {&in}, {{"scale", "0.5"}});
}

INSTANTIATE_TEST_SUITE_P(Sizes, SobelTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(7, 5, 3),
                                           std::make_tuple(33, 17, 4), std::make_tuple(640, 480, 1)));
