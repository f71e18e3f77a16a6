// Tests of integral through the real plugin: every backend against a naive reference written
// here, for every input dtype, output dtype, 1 to 4 channels and odd sizes; the auto dtype on
// both sides of the u32 limit; u32 wrap-around with exact box sums; CUDA equal to the CPU bit
// for bit (f64 included: both add in the documented order); the CPU kernel on its own by bands of
// columns, at every CPU level, and in bands of rows with the carried row (strips).
#include "../kernels/integral.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <pixflow/pixflow.hpp>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;

const DType input_dtypes[] = {DType::u8, DType::u16, DType::u32, DType::f32};
const std::pair<int, int> sizes[] = {{1, 1},
                                     {1, 300},
                                     {300, 1},
                                     {2, 2},
                                     {7, 9},
                                     {1023, 769},
                                     {4096, 3},
                                     // tile edges (512 x 128) and fetch_depth (4) of integral.cu:
                                     // a last tile row of 3 rows, a last tile column of 1 pixel
                                     {513, 131},
                                     {1024, 258}};

std::string describe(int w, int h, int c, DType d, const std::string& out) {
    return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c) + " " + pixflow::dtype_name(d) +
           " -> " + out;
}

/// out(x, y) = sum over i <= x, j <= y, written plainly: integers summed exactly in u64 and then
/// reduced to the output type (u32: modulo 2^32); f64 summed along each row, then down each
/// column, the order the operator documents.
Image reference(const Image& in, DType out_dtype) {
    Image out = Image::make(in.width, in.height, in.channels, out_dtype);
    const std::size_t row = std::size_t(in.width) * in.channels;
    if (out_dtype == DType::f64) {
        auto* o = reinterpret_cast<double*>(out.bytes.data());
        for (int y = 0; y < in.height; ++y)
            for (int c = 0; c < in.channels; ++c) {
                double acc = 0;
                for (int x = 0; x < in.width; ++x) {
                    acc += in.get(y * row + std::size_t(x) * in.channels + c);
                    o[y * row + std::size_t(x) * in.channels + c] = acc;
                }
            }
        for (int y = 1; y < in.height; ++y)
            for (std::size_t i = 0; i < row; ++i) o[y * row + i] = o[(y - 1) * row + i] + o[y * row + i];
        return out;
    }
    std::vector<std::uint64_t> sum(row * in.height);
    for (int y = 0; y < in.height; ++y)
        for (std::size_t i = 0; i < row; ++i) {
            const std::uint64_t v = std::uint64_t(in.get(y * row + i)); // exact: integers < 2^53
            sum[y * row + i] = v + (i >= std::size_t(in.channels) ? sum[y * row + i - in.channels] : 0);
        }
    for (int y = 1; y < in.height; ++y)
        for (std::size_t i = 0; i < row; ++i) sum[y * row + i] += sum[(y - 1) * row + i];
    for (std::size_t k = 0; k < sum.size(); ++k) {
        if (out_dtype == DType::u32)
            reinterpret_cast<std::uint32_t*>(out.bytes.data())[k] = std::uint32_t(sum[k]);
        else
            reinterpret_cast<std::uint64_t*>(out.bytes.data())[k] = sum[k];
    }
    return out;
}

/// What dtype = auto must choose.
DType expected_auto(int w, int h, DType in) {
    if (in == DType::f32) return DType::f64;
    const double top = in == DType::u8 ? 255.0 : in == DType::u16 ? 65535.0 : 4294967295.0;
    return double(w) * h * top <= 4294967295.0 ? DType::u32 : DType::u64;
}

Image integral(const std::string& backend, const Image& in, const std::string& dtype = "auto") {
    auto out = run_op("integral", backend, {&in}, {{"dtype", dtype}});
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

Image constant(int w, int h, DType d, double v) {
    Image im = Image::make(w, h, 1, d);
    for (std::size_t k = 0; k < im.samples(); ++k) im.set(k, v);
    return im;
}

class IntegralOn : public pixflow::testing::OnEachBackend {};

TEST_P(IntegralOn, MatchesReferenceForEverySizeDtypeAndChannelCount) {
    std::uint32_t seed = 1;
    for (auto [w, h] : sizes)
        for (DType d : input_dtypes)
            for (int c : {1, 3, 4}) {
                SCOPED_TRACE(describe(w, h, c, d, "auto"));
                Image in = Image::make(w, h, c, d);
                fill_random(in, seed++);
                const Image out = integral(GetParam(), in);
                ASSERT_EQ(out.width, w);
                ASSERT_EQ(out.height, h);
                ASSERT_EQ(out.channels, c);
                ASSERT_EQ(out.dtype, expected_auto(w, h, d));
                EXPECT_TRUE(out.bytes == reference(in, out.dtype).bytes);
            }
}

TEST_P(IntegralOn, HonoursAnExplicitOutputDtype) {
    std::uint32_t seed = 300;
    for (auto [w, h] : {std::pair{7, 9}, std::pair{1023, 769}})
        for (DType d : input_dtypes)
            for (const char* out_name : {"u32", "u64", "f64"}) {
                if (d == DType::f32 && std::string(out_name) != "f64") continue;
                SCOPED_TRACE(describe(w, h, 3, d, out_name));
                Image in = Image::make(w, h, 3, d);
                fill_random(in, seed++);
                const Image out = integral(GetParam(), in, out_name);
                ASSERT_EQ(std::string(pixflow::dtype_name(out.dtype)), out_name);
                EXPECT_TRUE(out.bytes == reference(in, out.dtype).bytes);
            }
}

TEST_P(IntegralOn, AutoPicksU32UpToTheLimitAndU64Beyond) {
    // u32 input: its largest value alone fills u32.
    const Image one = constant(1, 1, DType::u32, 4294967295.0);
    Image out = integral(GetParam(), one);
    ASSERT_EQ(out.dtype, DType::u32);
    EXPECT_EQ(out.at<std::uint32_t>(0, 0), 4294967295u);
    for (auto [w, h] : {std::pair{2, 1}, std::pair{1, 2}}) {
        out = integral(GetParam(), constant(w, h, DType::u32, 4294967295.0));
        ASSERT_EQ(out.dtype, DType::u64);
        EXPECT_EQ(out.at<std::uint64_t>(w - 1, h - 1), 2 * 4294967295ull);
    }
    // u16: 65537 * 65535 = 2^32 - 1 exactly.
    out = integral(GetParam(), constant(65537, 1, DType::u16, 65535));
    ASSERT_EQ(out.dtype, DType::u32);
    EXPECT_EQ(out.at<std::uint32_t>(65536, 0), 4294967295u);
    out = integral(GetParam(), constant(1, 65538, DType::u16, 65535));
    ASSERT_EQ(out.dtype, DType::u64);
    EXPECT_EQ(out.at<std::uint64_t>(0, 65537), 65538ull * 65535);
    // u8: 257 * 65537 * 255 = 2^32 - 1 exactly; every value is 255 (x+1)(y+1).
    out = integral(GetParam(), constant(257, 65537, DType::u8, 255));
    ASSERT_EQ(out.dtype, DType::u32);
    for (int y = 0; y < out.height; y += 61)
        for (int x = 0; x < out.width; ++x)
            ASSERT_EQ(out.at<std::uint32_t>(x, y), 255u * std::uint32_t(x + 1) * std::uint32_t(y + 1));
    EXPECT_EQ(out.at<std::uint32_t>(256, 65536), 4294967295u);
    out = integral(GetParam(), constant(2, 8421505, DType::u8, 255));
    ASSERT_EQ(out.dtype, DType::u64);
    EXPECT_EQ(out.at<std::uint64_t>(1, 8421504), 2ull * 8421505 * 255);
}

TEST_P(IntegralOn, ExplicitU32WrapsButKeepsBoxSumsExact) {
    const int w = 600, h = 400; // total about 7.9e9: wraps
    Image in = Image::make(w, h, 1, DType::u16);
    fill_random(in, 77);
    const Image out = integral(GetParam(), in, "u32");
    ASSERT_EQ(out.dtype, DType::u32);
    EXPECT_TRUE(out.bytes == reference(in, DType::u32).bytes); // modulo 2^32
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < in.samples(); ++k) total += std::uint64_t(in.get(k));
    EXPECT_GT(total, 4294967295ull);
    EXPECT_EQ(out.at<std::uint32_t>(w - 1, h - 1), std::uint32_t(total));
    // Boxes [x0, x1] x [y0, y1] with true sums below 2^32: the four-corner formula in u32.
    std::mt19937 rng(5);
    for (int k = 0; k < 200; ++k) {
        const int x0 = int(rng() % w), y0 = int(rng() % h);
        const int x1 = std::min(w - 1, x0 + int(rng() % 300)), y1 = std::min(h - 1, y0 + int(rng() % 300));
        std::uint64_t truth = 0;
        for (int y = y0; y <= y1; ++y)
            for (int x = x0; x <= x1; ++x) truth += in.at<std::uint16_t>(x, y);
        if (truth >= 4294967296ull) continue;
        auto o = [&](int x, int y) { return x < 0 || y < 0 ? 0u : out.at<std::uint32_t>(x, y); };
        const std::uint32_t box = o(x1, y1) - o(x0 - 1, y1) - o(x1, y0 - 1) + o(x0 - 1, y0 - 1);
        EXPECT_EQ(box, truth) << "box " << x0 << "," << y0 << " .. " << x1 << "," << y1;
    }
}

INSTANTIATE_TEST_SUITE_P(Integral, IntegralOn, pixflow::testing::each_backend(), pixflow::testing::backend_name);

TEST(Integral, RejectsIntegerOutputsForFloatInput) {
    const Image in = Image::make(4, 4, 1, DType::f32);
    for (const char* d : {"u32", "u64"}) {
        try {
            run_op("integral", "cpu", {&in}, {{"dtype", d}});
            ADD_FAILURE() << "dtype " << d << " was accepted for f32";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("integral: dtype = \"") + d +
                                                 "\" needs an integer input, got f32"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(IntegralCuda, MatchesCpuBitForBit) {
    PIXFLOW_REQUIRE_CUDA();
    std::uint32_t seed = 900;
    for (auto [w, h] : sizes)
        for (DType d : input_dtypes)
            for (int c : {1, 2, 3, 4})
                for (const char* out_name : {"auto", "u32", "u64", "f64"}) {
                    if (d == DType::f32 && std::string(out_name) != "auto" && std::string(out_name) != "f64") continue;
                    Image in = Image::make(w, h, c, d);
                    fill_random(in, seed++);
                    const Image cpu = integral("cpu", in, out_name);
                    const Image gpu = integral("cuda", in, out_name);
                    EXPECT_EQ(cpu.dtype, gpu.dtype);
                    EXPECT_TRUE(cpu.bytes == gpu.bytes) << describe(w, h, c, d, out_name);
                }
}

// u8 -> u32 on CUDA is one pass with decoupled look-back between tiles of 512 x TH pixels (TH =
// 89, 48, 31, 22 rows for 1-4 channels; kernels/integral.cu), or TH/2 and TH/4 rows on smaller
// images (lb_split: gray up to 2^22 pixels TH/4, up to 2^23 TH/2; RGB up to 2^20 TH/2): for
// each tile height, widths at the tile edge (one tile, one more pixel, four tile columns so that
// look-backs add aggregates before they find an inclusive prefix, ten so that a look-back along
// x reads more than one window of flags) or, where the tile height needs more pixels, a width
// that brings the image into its range; heights at the tile edge (TH - 1, TH, TH + 1, several
// tile rows, so that the corner comes from the tile row above); a tall image of one tile column
// and hundreds of tile rows, and a grid of 5 x 20 tiles, all against the reference, bit for bit.
TEST(IntegralCuda, OnePassLookBackMatchesAtTileEdges) {
    PIXFLOW_REQUIRE_CUDA();
    const int tile_rows[] = {89, 48, 31, 22};
    struct Split {
        int divisor;
        std::int64_t above_px; // the tile height is used for images of more pixels than this
    };
    std::uint32_t seed = 1300;
    for (int c : {1, 2, 3, 4}) {
        const int th = tile_rows[c - 1];
        std::vector<Split> splits = {{1, 0}};
        if (c == 1) splits = {{4, 0}, {2, std::int64_t(1) << 22}, {1, std::int64_t(1) << 23}};
        if (c == 3) splits = {{2, 0}, {1, std::int64_t(1) << 20}};
        std::vector<std::pair<int, int>> shapes;
        for (const Split& sp : splits) {
            const int t = th / sp.divisor;
            if (sp.above_px == 0) {
                for (int w : {1, 511, 512, 513, 2049, 4609})
                    for (int h : {1, t - 1, t, t + 1, 3 * t + 2}) shapes.push_back({w, h});
            } else {
                for (int h : {t - 1, t, t + 1, 3 * t + 2}) shapes.push_back({int(sp.above_px / h) + 514, h});
            }
        }
        shapes.push_back({64, 200 * th + 7});     // one tile column, many tile rows
        shapes.push_back({5 * 512 - 3, 20 * th}); // 5 x 20 tiles
        for (auto [w, h] : shapes) {
            SCOPED_TRACE(describe(w, h, c, DType::u8, "u32"));
            Image in = Image::make(w, h, c, DType::u8);
            fill_random(in, seed++);
            const Image gpu = integral("cuda", in, "u32");
            ASSERT_EQ(gpu.dtype, DType::u32);
            EXPECT_TRUE(gpu.bytes == reference(in, DType::u32).bytes);
        }
    }
    // the largest values everywhere: every carry and the corner are exercised at their largest,
    // with the tallest tiles (the column sums packed in 15-bit fields: TH * 255 < 2^15), RGB and
    // gray images large enough for the full tile height
    for (auto [w, h, c] : {std::tuple{12289, 3 * 31 + 2, 3}, std::tuple{47000, 2 * 89 + 2, 1}}) {
        Image full = Image::make(w, h, c, DType::u8);
        for (std::size_t k = 0; k < full.samples(); ++k) full.set(k, 255);
        EXPECT_TRUE(integral("cuda", full, "u32").bytes == integral("cpu", full, "u32").bytes)
            << w << "x" << h << "x" << c;
    }
}

// The one-pass kernel's flags live in memory the node keeps between its calls (ABI 1.6,
// pf_host.persistent), cleared only when the layout changes: each launch of a layout seen just
// before reads the last launch's flags as not yet published (a later epoch). One pipeline run
// again and again on new images of one shape (the plan, and so the kept block, reused: with the
// flags misread, a tile would add a neighbour's sums from the last image), for shapes of 1 to 4
// channels and several tile rows and columns, each output against the reference bit for bit.
TEST(IntegralCuda, RunsOfOnePipelineOnNewImagesEachMatchTheReference) {
    PIXFLOW_REQUIRE_CUDA();
    static const pixflow::Engine engine({pixflow::testing::plugin_dir()});
    std::uint32_t seed = 2100;
    for (auto [w, h, c] : {std::tuple{1537, 95, 3}, std::tuple{2049, 400, 1}, std::tuple{1100, 70, 2},
                           std::tuple{700, 50, 4}, std::tuple{8192, 64, 3}}) {
        pixflow::Pipeline p = engine.load_string(
            "[nodes.src]\nop = \"memory\"\n[nodes.sat]\nop = \"integral\"\ninput = \"src\"\ndtype = \"u32\"\n",
            "sat.toml");
        p.backend("cuda");
        for (int run = 0; run < 5; ++run) {
            SCOPED_TRACE(describe(w, h, c, DType::u8, "u32") + ", run " + std::to_string(run));
            Image in = Image::make(w, h, c, DType::u8);
            fill_random(in, seed++);
            Image out = Image::make(w, h, c, DType::u32);
            p.input("src", in.view()).output("sat", out.view());
            const pixflow::RunReport r = p.run();
            for (const auto& n : r.nodes)
                if (n.id == "sat") EXPECT_EQ(n.backend, "cuda");
            EXPECT_TRUE(out.bytes == reference(in, DType::u32).bytes);
        }
    }
}

} // namespace

// ---- the kernel on its own, without pixflow
// ------------------------------------------------------

namespace {

TEST(IntegralKernel, MatchesTheReferenceWithTheScratchItAsksFor) {
    // Tall enough for several strips of the integer path.
    Image in = Image::make(37, 700, 3, DType::u16);
    fill_random(in, 21);
    for (DType d : {DType::u32, DType::u64, DType::f64}) {
        Image out = Image::make(37, 700, 3, d);
        std::vector<std::byte> scratch(pixflow::integral::integral_cpu_scratch_bytes(in.view(), out.view()));
        pixflow::integral::integral_cpu(in.view(), out.view(), scratch.data());
        EXPECT_TRUE(out.bytes == reference(in, d).bytes) << pixflow::dtype_name(d);
    }
}

// Images wide enough for a band of columns per worker go by bands, each waiting row by row for
// the totals of the band to its left (kernels/integral.cpp): band edges that are not whole vector
// groups, two to many bands, every integer path, and thread counts from one (strips) to more than
// there are bands (strips again: 1030 pixels make two bands at most).
TEST(IntegralKernel, MatchesTheReferenceByBandsOfColumnsWithAnyThreadCount) {
    std::uint32_t seed = 50;
    for (int w : {1030, 4096, 4101, 6150, 16391})
        for (int c : {1, 3, 4})
            for (DType d : {DType::u8, DType::u16, DType::u32})
                for (DType o : {DType::u32, DType::u64}) {
                    if (w == 16391 && (d != DType::u8 || c == 4)) continue; // keep the test short
                    Image in = Image::make(w, 23, c, d);
                    fill_random(in, seed++);
                    const Image want = reference(in, o);
                    for (int threads : {1, 2, 5}) {
                        Image out = Image::make(w, 23, c, o);
                        std::vector<std::byte> scratch(
                            pixflow::integral::integral_cpu_scratch_bytes(in.view(), out.view()));
                        tbb::task_arena(threads).execute(
                            [&] { pixflow::integral::integral_cpu(in.view(), out.view(), scratch.data()); });
                        ASSERT_TRUE(out.bytes == want.bytes)
                            << w << "x23x" << c << " " << pixflow::dtype_name(d) << " -> " << pixflow::dtype_name(o)
                            << ", " << threads << " threads";
                    }
                }
}

// The SIMD row kernels (AVX-512 and AVX2, for u32 outputs) against the portable loops, bit for
// bit: strips and bands, every channel count, widths that leave tails after the last group.
TEST(IntegralKernel, EveryCpuLevelGivesTheSameBits) {
    namespace k = pixflow::integral;
    std::uint32_t seed = 90;
    for (int w : {1, 5, 47, 48, 49, 100, 1030, 4101})
        for (int c : {1, 2, 3, 4})
            for (DType d : {DType::u8, DType::u16, DType::u32}) {
                Image in = Image::make(w, 19, c, d);
                fill_random(in, seed++);
                Image want = Image::make(w, 19, c, DType::u32);
                std::vector<std::byte> scratch(k::integral_cpu_scratch_bytes(in.view(), want.view()));
                k::integral_cpu(in.view(), want.view(), scratch.data(), nullptr, nullptr, k::CpuLevel::portable);
                for (k::CpuLevel level : {k::CpuLevel::avx2, k::CpuLevel::best}) {
                    Image got = Image::make(w, 19, c, DType::u32);
                    k::integral_cpu(in.view(), got.view(), scratch.data(), nullptr, nullptr, level);
                    ASSERT_TRUE(got.bytes == want.bytes)
                        << w << "x19x" << c << " " << pixflow::dtype_name(d) << " level " << int(level);
                }
            }
}

// Outputs of 64 MiB and more are written with streaming stores (kernels/integral.cpp): one of
// 72 MiB, a width that leaves a tail after the vector groups, and a row pitch that is not a
// multiple of 32 bytes (no streaming for those rows).
TEST(IntegralKernel, MatchesTheReferenceOnOutputsLargeEnoughToStream) {
    for (int c : {1, 3, 4}) {
        SCOPED_TRACE(std::to_string(c) + " channels");
        const int w = 4099, h = (72 << 20) / (4 * 4099 * c);
        Image in = Image::make(w, h, c, DType::u8);
        fill_random(in, 31 + c);
        Image out = Image::make(w, h, c, DType::u32);
        std::vector<std::byte> scratch(pixflow::integral::integral_cpu_scratch_bytes(in.view(), out.view()));
        pixflow::integral::integral_cpu(in.view(), out.view(), scratch.data());
        EXPECT_TRUE(out.bytes == reference(in, DType::u32).bytes);
    }
}

// Strips (docs/strips.md): a band of rows run from the output row above it, at every CPU level,
// gives the whole image's rows and leaves its last row for the next band. Every input dtype and
// output dtype (u32 by the SIMD row kernels, by strips and by bands of columns; u64 and f64 by
// the portable loops), bands of 1, 2 and 7 rows and a height they do not divide, a 1-row image,
// one buffer for the state in and out as the host passes it, 1 and 2 threads.
TEST(IntegralKernel, BandsOfRowsMatchTheReferenceAtEveryCpuLevel) {
    namespace k = pixflow::integral;
    std::uint32_t seed = 700;
    for (auto [w, h] : {std::pair{45, 1}, std::pair{45, 23}, std::pair{4101, 9}})
        for (int c : {1, 3})
            for (DType d : input_dtypes)
                for (DType o : {DType::u32, DType::u64, DType::f64}) {
                    if ((d == DType::f32) != (o == DType::f64)) continue; // the pairs the operator makes
                    Image in = Image::make(w, h, c, d);
                    fill_random(in, seed++);
                    const Image want = reference(in, o);
                    const std::size_t row_bytes = std::size_t(w) * c * pixflow::dtype_size(o);
                    for (k::CpuLevel level : {k::CpuLevel::portable, k::CpuLevel::avx2, k::CpuLevel::best})
                        for (int threads : {1, 2})
                            for (int rows : {1, 2, 7, h}) {
                                SCOPED_TRACE(describe(w, h, c, d, pixflow::dtype_name(o)) + ", level " +
                                             std::to_string(int(level)) + ", " + std::to_string(threads) +
                                             " threads, bands of " + std::to_string(rows));
                                Image out = Image::make(w, h, c, o);
                                std::vector<std::byte> carry(row_bytes, std::byte{0});
                                for (int y0 = 0; y0 < h; y0 += rows) {
                                    const int n = std::min(rows, h - y0);
                                    pixflow::ImageView vi = in.view(), vo = out.view();
                                    vi.data =
                                        static_cast<std::byte*>(vi.data) + std::size_t(y0) * std::size_t(vi.pitch);
                                    vo.data =
                                        static_cast<std::byte*>(vo.data) + std::size_t(y0) * std::size_t(vo.pitch);
                                    vi.height = vo.height = n;
                                    std::vector<std::byte> scratch(k::integral_cpu_scratch_bytes(vi, vo));
                                    tbb::task_arena(threads).execute([&] {
                                        k::integral_cpu(vi, vo, scratch.data(), y0 > 0 ? carry.data() : nullptr,
                                                        carry.data(), level);
                                    });
                                }
                                ASSERT_TRUE(out.bytes == want.bytes);
                                ASSERT_TRUE(std::equal(carry.begin(), carry.end(),
                                                       want.bytes.end() - std::ptrdiff_t(row_bytes)))
                                    << "the state is not the last row";
                            }
                }
}

} // namespace
