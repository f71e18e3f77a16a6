// Pitched copies within a device's memory (framework/device/copy_2d.cu: the embedding API's
// staging of a caller's unaligned device images, outputs copied into a caller's buffer, rows
// copied between strip buffers), against host memcpy row by row. They need a GPU and skip,
// saying so, without one.
#include "device/device.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace pixflow::host;

// Every start of a source and of a destination row within a 16-byte block, rows shorter than a
// block, of one, of a block and a byte, and long ones, pitches that shift every row's alignment:
// the destination gets each row's bytes and not one byte around them (the buffer is poisoned).
TEST(DeviceCopyCuda, PitchedCopiesOfAnyAlignmentCarryEveryRowAndNothingElse) {
    if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
    set_device(0);
    Stream s(0);
    constexpr int rows = 5;
    constexpr std::size_t cap = 64 * 1024;
    DeviceBuffer src(cap, 0), dst(cap, 0);
    std::vector<unsigned char> h_src(cap), poison(cap, 0xAB), want(cap), got(cap);
    std::mt19937 rng(7);
    for (auto& b : h_src) b = static_cast<unsigned char>(rng());
    copy_2d_async(src.get(), std::int64_t(cap), h_src.data(), std::int64_t(cap), cap, 1, s);
    int cases = 0;
    for (std::size_t row : {1, 2, 15, 16, 17, 31, 33, 100, 257, 1000, 4099})
        for (std::size_t so = 0; so < 16; ++so)
            for (std::size_t dof = 0; dof < 16; ++dof) {
                const std::size_t sp = row + so % 4, dp = row + 16 - dof % 3; // pitches: row + 0..3, + 14..16
                copy_2d_async(dst.get(), std::int64_t(cap), poison.data(), std::int64_t(cap), cap, 1, s);
                copy_2d_device_async(static_cast<unsigned char*>(dst.get()) + dof, std::int64_t(dp),
                                     static_cast<const unsigned char*>(src.get()) + so, std::int64_t(sp), row, rows, s);
                copy_2d_async(got.data(), std::int64_t(cap), dst.get(), std::int64_t(cap), cap, 1, s);
                s.synchronize();
                want = poison;
                for (int y = 0; y < rows; ++y) std::memcpy(&want[dof + y * dp], &h_src[so + y * sp], row);
                ASSERT_TRUE(got == want) << row << "-byte rows, source at +" << so << " pitch " << sp
                                         << ", destination at +" << dof << " pitch " << dp;
                ++cases;
            }
    EXPECT_EQ(cases, 11 * 16 * 16);
    // no rows or empty rows: nothing is written
    copy_2d_async(dst.get(), std::int64_t(cap), poison.data(), std::int64_t(cap), cap, 1, s);
    copy_2d_device_async(dst.get(), 64, src.get(), 64, 64, 0, s);
    copy_2d_device_async(dst.get(), 64, src.get(), 64, 0, 3, s);
    copy_2d_async(got.data(), std::int64_t(cap), dst.get(), std::int64_t(cap), cap, 1, s);
    s.synchronize();
    EXPECT_TRUE(got == poison);
}
