// Tests of the jpeg plugin (dct8x8, quantize, dequantize, idct8x8, jpeg_roundtrip8x8) through the
// real plugin, against references written here in double precision: the DCT as its definition
// (a quadruple sum per coefficient), the quantisation tables from the Annex K numbers and the
// libjpeg formula, the padding by repeating the last row and column. CUDA is compared with the
// CPU; the fused operator with the unfused chain through the real planner, bit for bit.
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;
namespace host = pixflow::host;

const double kPi = 3.14159265358979323846;

// ---- references -------------------------------------------------------------------------------

/// Coefficient extent of an n-pixel axis: the padded blocks plus one zero marker per padded pixel.
int coeff_extent(int n) {
    const int padded = (n + 7) / 8 * 8;
    return padded + (padded - n);
}

/// The sample the DCT sees at (x, y, c) of the image padded by repetition: u8 shifted by -128.
double padded_sample(const Image& in, int x, int y, int c) {
    const int xx = std::min(x, in.width - 1), yy = std::min(y, in.height - 1);
    const double v = in.get((std::size_t(yy) * in.width + xx) * in.channels + c);
    return in.dtype == DType::u8 ? v - 128.0 : v;
}

/// F[v][u] of every block by the definition, 1/4 C(u) C(v) sum f(x, y) cos((2x+1)u pi/16)
/// cos((2y+1)v pi/16), in double; the marker columns and rows are 0.
std::vector<double> dct_reference(const Image& in) {
    const int w = coeff_extent(in.width), h = coeff_extent(in.height), C = in.channels;
    const int bw = (in.width + 7) / 8, bh = (in.height + 7) / 8;
    std::vector<double> out(std::size_t(w) * h * C, 0.0);
    for (int by = 0; by < bh; ++by)
        for (int bx = 0; bx < bw; ++bx)
            for (int c = 0; c < C; ++c)
                for (int v = 0; v < 8; ++v)
                    for (int u = 0; u < 8; ++u) {
                        double s = 0;
                        for (int y = 0; y < 8; ++y)
                            for (int x = 0; x < 8; ++x)
                                s += padded_sample(in, 8 * bx + x, 8 * by + y, c) *
                                     std::cos((2 * x + 1) * u * kPi / 16) * std::cos((2 * y + 1) * v * kPi / 16);
                        const double cu = u == 0 ? 1 / std::sqrt(2.0) : 1.0;
                        const double cv = v == 0 ? 1 / std::sqrt(2.0) : 1.0;
                        out[(std::size_t(8 * by + v) * w + 8 * bx + u) * C + c] = 0.25 * cu * cv * s;
                    }
    return out;
}

// ITU-T T.81 Annex K, tables K.1 and K.2, typed in again here (natural order).
const int kLuma[64] = {16, 11,  10,  16, 24, 40, 51, 61, 12,  12,  14,  19,  26, 58, 60, 55,  14,  13,  16,  24, 40, 57,
                       69, 56,  14,  17, 22, 29, 51, 87, 80,  62,  18,  22,  37, 56, 68, 109, 103, 77,  24,  35, 55, 64,
                       81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98,  112, 100, 103, 99};
const int kChroma[64] = {17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99,
                         99, 99, 47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
                         99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};

/// The formula (libjpeg jpeg_quality_scaling + jpeg_add_quant_table).
int table_entry(int quality, bool luma, bool baseline, int i) {
    const int scale = quality < 50 ? 5000 / quality : 200 - 2 * quality;
    int v = ((luma ? kLuma : kChroma)[i] * scale + 50) / 100;
    v = std::clamp(v, 1, 32767);
    return baseline ? std::min(v, 255) : v;
}

/// round(x) with halves away from zero (C's round), saturated to i16.
int quantize_ref(double f, double q) { return int(std::clamp(std::round(f / q), -32768.0, 32767.0)); }

std::string bool_text(bool b) { return b ? "true" : "false"; }

Image single(const std::string& op, const std::string& backend, const Image& in,
             const std::map<std::string, std::string>& params = {}) {
    auto out = run_op(op, backend, {&in}, params);
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

/// A smooth test image: gradients and low-frequency waves, plus one sharp disc, in [0, 255].
Image smooth_image(int w, int h, int channels, DType d) {
    Image im = Image::make(w, h, channels, d);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) {
                double v = 128 + 60 * std::sin(x / 9.0 + c) * std::cos(y / 13.0) + 40.0 * x / w;
                if (std::hypot(x - w / 2.0, y - h / 2.0) < h / 5.0) v = 220 - 30 * c;
                v = std::clamp(std::round(v), 0.0, 255.0);
                im.set((std::size_t(y) * w + x) * channels + c, v);
            }
    return im;
}

Image random_f32(int w, int h, int channels, std::uint32_t seed, double scale) {
    Image im = Image::make(w, h, channels, DType::f32);
    fill_random(im, seed);
    for (std::size_t k = 0; k < im.samples(); ++k) im.set(k, im.get(k) * scale);
    return im;
}

class JpegOp : public pixflow::testing::OnEachBackend {};

const std::pair<int, int> kOddSizes[] = {{1, 1}, {9, 7}, {17, 33}};

} // namespace

// ---- the DCT -------------------------------------------------------------------------------------

TEST_P(JpegOp, DctMatchesTheDoublePrecisionDefinition) {
    // Within 1e-4 of the image's largest coefficient (float rounding scales with the magnitudes
    // summed; a near-zero coefficient has no meaningful relative error of its own).
    for (DType d : {DType::u8, DType::f32})
        for (int channels : {1, 3}) {
            Image in = Image::make(40, 24, channels, d);
            fill_random(in, 11 + channels);
            if (d == DType::f32)
                for (std::size_t k = 0; k < in.samples(); ++k) in.set(k, in.get(k) * 255.0 - 100.0);
            Image out = single("dct8x8", GetParam(), in);
            ASSERT_EQ(out.dtype, DType::f32);
            ASSERT_EQ(out.width, 40);
            ASSERT_EQ(out.height, 24);
            const auto ref = dct_reference(in);
            double peak = 0;
            for (double v : ref) peak = std::max(peak, std::abs(v));
            for (std::size_t k = 0; k < ref.size(); ++k)
                ASSERT_LE(std::abs(out.get(k) - ref[k]), 1e-4 * peak)
                    << pixflow::dtype_name(d) << " x" << channels << " sample " << k;
        }
}

TEST_P(JpegOp, IdctOfDctReturnsF32InputWithin1e3) {
    for (auto [w, h] : {std::pair{64, 40}, std::pair{1, 1}, std::pair{9, 7}, std::pair{17, 33}})
        for (int channels : {1, 2, 4}) {
            Image in = random_f32(w, h, channels, 5, 255.0);
            Image coeffs = single("dct8x8", GetParam(), in);
            Image back = single("idct8x8", GetParam(), coeffs, {{"dtype", "f32"}});
            ASSERT_EQ(back.width, w);
            ASSERT_EQ(back.height, h);
            ASSERT_EQ(back.channels, channels);
            ASSERT_EQ(back.dtype, DType::f32);
            for (std::size_t k = 0; k < in.samples(); ++k)
                ASSERT_NEAR(back.get(k), in.get(k), 1e-3) << w << "x" << h << "x" << channels << " sample " << k;
        }
}

TEST_P(JpegOp, OddSizesArePaddedByRepetitionAndComeBackAtTheirSize) {
    for (auto [w, h] : kOddSizes)
        for (int channels : {1, 3}) {
            SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels));
            Image in = Image::make(w, h, channels, DType::u8);
            fill_random(in, 21);
            Image coeffs = single("dct8x8", GetParam(), in);
            ASSERT_EQ(coeffs.width, coeff_extent(w));
            ASSERT_EQ(coeffs.height, coeff_extent(h));
            // The padded blocks match the definition; the markers are exactly 0.
            const auto ref = dct_reference(in);
            for (std::size_t k = 0; k < ref.size(); ++k) ASSERT_NEAR(coeffs.get(k), ref[k], 1e-3) << k;
            // quantize and dequantize keep the shape and the zero markers.
            Image q = single("quantize", GetParam(), coeffs, {{"quality", "100"}});
            ASSERT_EQ(q.width, coeffs.width);
            ASSERT_EQ(q.height, coeffs.height);
            Image dq = single("dequantize", GetParam(), q, {{"quality", "100"}});
            const int xb = (w + 7) / 8 * 8, yb = (h + 7) / 8 * 8;
            for (int y = 0; y < coeffs.height; ++y)
                for (int x = 0; x < coeffs.width; ++x)
                    if (x >= xb || y >= yb)
                        for (int c = 0; c < channels; ++c) {
                            const std::size_t k = (std::size_t(y) * coeffs.width + x) * channels + c;
                            ASSERT_EQ(coeffs.get(k), 0.0) << "marker " << x << "," << y;
                            ASSERT_EQ(q.get(k), 0.0) << "marker " << x << "," << y;
                            ASSERT_EQ(dq.get(k), 0.0) << "marker " << x << "," << y;
                        }
            // Back at the original size: exact for u8 (the transform's error is far below 0.5);
            // after quality-100 quantisation (steps of 1, errors <= 0.5 per coefficient) within
            // 0.5 * (sum_u |K[u][x]|)^2 + 0.5 < 4 per pixel.
            Image back = single("idct8x8", GetParam(), coeffs);
            ASSERT_EQ(back.width, w);
            ASSERT_EQ(back.height, h);
            ASSERT_EQ(back.dtype, DType::u8);
            EXPECT_EQ(back.bytes, in.bytes);
            Image lossy = single("idct8x8", GetParam(), dq);
            ASSERT_EQ(lossy.width, w);
            ASSERT_EQ(lossy.height, h);
            EXPECT_LE(pixflow::testing::max_abs_diff(lossy, in), 4.0);
        }
}

TEST_P(JpegOp, IdctRoundsAndSaturatesU8) {
    // A flat block with DC = 8 * (v - 128) comes back as v; past the range it saturates.
    Image coeffs = Image::make(24, 8, 1, DType::f32);
    const double dc[3] = {8 * (-300.0), 8 * (100.4 - 128), 8 * (400.0)};
    for (int b = 0; b < 3; ++b) coeffs.set(std::size_t(8 * b), dc[b]);
    Image out = single("idct8x8", GetParam(), coeffs);
    ASSERT_EQ(out.width, 24);
    EXPECT_EQ(out.get(0), 0.0);
    EXPECT_EQ(out.get(8), 100.0);
    EXPECT_EQ(out.get(16), 255.0);
}

// ---- the tables ----------------------------------------------------------------------------------

TEST(JpegTables, EveryQualityMatchesTheLibjpegFormula) {
    // dequantize of an all-ones block returns the table; quantize of table * k returns k.
    Image ones = Image::make(8, 8, 1, DType::i16);
    for (std::size_t k = 0; k < 64; ++k) ones.set(k, 1);
    for (bool luma : {true, false})
        for (bool baseline : {true, false})
            for (int quality = 1; quality <= 100; ++quality) {
                const std::map<std::string, std::string> p = {{"quality", std::to_string(quality)},
                                                              {"table", luma ? "luma" : "chroma"},
                                                              {"baseline", bool_text(baseline)}};
                Image t = single("dequantize", "cpu", ones, p);
                Image scaled = Image::make(8, 8, 1, DType::f32);
                for (int i = 0; i < 64; ++i) {
                    const int want = table_entry(quality, luma, baseline, i);
                    ASSERT_EQ(t.get(std::size_t(i)), double(want))
                        << (luma ? "luma" : "chroma") << " quality " << quality << " baseline " << baseline << " entry "
                        << i;
                    scaled.set(std::size_t(i), double(want) * (i % 7 - 3) + 0.25 * want);
                }
                Image q = single("quantize", "cpu", scaled, p);
                for (int i = 0; i < 64; ++i) ASSERT_EQ(q.get(std::size_t(i)), double(i % 7 - 3));
            }
}

TEST(JpegTables, KnownLibjpegValues) {
    // Spot values of libjpeg's tables: quality 50 is Annex K as it is, 100 is all ones, and
    // quality 10 without baseline exceeds 255 (121 * 500 / 100 = 605).
    EXPECT_EQ(table_entry(50, true, true, 0), 16);
    EXPECT_EQ(table_entry(75, true, true, 0), 8);
    EXPECT_EQ(table_entry(100, false, true, 63), 1);
    EXPECT_EQ(table_entry(10, true, false, 6 * 8 + 5), 605);
    EXPECT_EQ(table_entry(10, true, true, 6 * 8 + 5), 255);
    Image ones = Image::make(8, 8, 1, DType::i16);
    for (std::size_t k = 0; k < 64; ++k) ones.set(k, 1);
    Image t = single("dequantize", "cpu", ones, {{"quality", "10"}, {"baseline", "false"}});
    EXPECT_EQ(t.get(6 * 8 + 5), 605.0);
    Image d = single("dequantize", "cpu", ones); // defaults: quality 75, luma, baseline
    EXPECT_EQ(d.get(0), 8.0);
    EXPECT_EQ(d.get(63), 50.0); // (99 * 50 + 50) / 100
}

TEST_P(JpegOp, QuantizeRoundsHalvesAwayFromZeroAndSaturates) {
    // Quality 50: Q[0] = 16, Q[1] = 11. Exact halves and the i16 limits.
    Image f = Image::make(8, 8, 1, DType::f32);
    const double in[8] = {8.0, -8.0, 24.0, -24.0, 7.99, 1e9, -1e9, std::nan("")};
    for (int i = 0; i < 8; ++i) f.set(std::size_t(8 * i), in[i]); // column 0: Q[v][0]
    f.set(1, 5.5);                                                // Q[0][1] = 11: 0.5 -> 1
    Image q = single("quantize", GetParam(), f, {{"quality", "50"}});
    const int q_col0[8] = {16, 12, 14, 14, 18, 24, 49, 72};
    for (int i = 0; i < 7; ++i) EXPECT_EQ(q.get(std::size_t(8 * i)), double(quantize_ref(in[i], q_col0[i]))) << i;
    EXPECT_EQ(q.get(0), 1.0);  // 8 / 16 = 0.5 -> 1
    EXPECT_EQ(q.get(8), -1.0); // -8 / 12 -> -0.67 -> -1
    EXPECT_EQ(q.get(40), 32767.0);
    EXPECT_EQ(q.get(48), -32768.0);
    EXPECT_EQ(q.get(56), 0.0); // NaN -> 0
    EXPECT_EQ(q.get(1), 1.0);  // 5.5 / 11 = 0.5 -> 1
}

TEST_P(JpegOp, QuantizeIsTheRoundedIeeeQuotientForEveryTable) {
    // q = round(F / Q) with F / Q the float quotient, halves away from zero: random coefficients
    // and exact halves (k + 1/2) Q, for several tables.
    Image f = Image::make(64, 16, 1, DType::f32);
    fill_random(f, 17);
    for (std::size_t k = 0; k < f.samples(); ++k) f.set(k, (f.get(k) - 0.5) * 4000.0);
    for (int quality : {1, 13, 50, 77, 100})
        for (const char* table : {"luma", "chroma"}) {
            const bool luma = std::string(table) == "luma";
            Image in = f;
            for (int y = 8; y < 16; ++y) // the second block row: exact halves
                for (int x = 0; x < 64; ++x)
                    in.set(std::size_t(y) * 64 + x,
                           (double((x * 7 + y) % 41) - 20.5) * table_entry(quality, luma, true, (y % 8) * 8 + x % 8));
            Image q = single("quantize", GetParam(), in, {{"quality", std::to_string(quality)}, {"table", table}});
            for (int y = 0; y < 16; ++y)
                for (int x = 0; x < 64; ++x) {
                    const std::size_t k = std::size_t(y) * 64 + x;
                    const float Q = float(table_entry(quality, luma, true, (y % 8) * 8 + x % 8));
                    const float quotient = float(in.get(k)) / Q; // IEEE float division
                    ASSERT_EQ(q.get(k), double(quantize_ref(quotient, 1.0)))
                        << table << " quality " << quality << " at " << x << "," << y << ": " << in.get(k) << " / "
                        << Q;
                }
        }
}

// ---- the round trip ------------------------------------------------------------------------------

TEST_P(JpegOp, RoundTripPsnrRisesWithQuality) {
    Image in = smooth_image(96, 64, 1, DType::u8);
    double last = 0;
    for (int quality : {5, 10, 25, 50, 75, 90, 100}) {
        const std::map<std::string, std::string> p = {{"quality", std::to_string(quality)}};
        Image c = single("dct8x8", GetParam(), in);
        Image q = single("quantize", GetParam(), c, p);
        Image d = single("dequantize", GetParam(), q, p);
        Image out = single("idct8x8", GetParam(), d);
        double se = 0;
        for (std::size_t k = 0; k < in.samples(); ++k) se += std::pow(out.get(k) - in.get(k), 2);
        const double psnr = 10 * std::log10(255.0 * 255.0 / (se / double(in.samples())));
        EXPECT_GT(psnr, last) << "quality " << quality;
        last = psnr;
    }
    EXPECT_GT(last, 45.0); // quality 100 (all steps 1) is nearly lossless
}

INSTANTIATE_TEST_SUITE_P(Backends, JpegOp, pixflow::testing::each_backend(), pixflow::testing::backend_name);

// ---- CUDA against the CPU --------------------------------------------------------------------------

namespace {

/// Counts samples where a and b differ, and the largest difference.
struct Diff {
    std::size_t count = 0;
    double worst = 0;
};
Diff diff(const Image& a, const Image& b) {
    Diff d;
    EXPECT_EQ(a.samples(), b.samples());
    for (std::size_t k = 0; k < std::min(a.samples(), b.samples()); ++k) {
        const double e = std::abs(a.get(k) - b.get(k));
        d.count += e != 0;
        d.worst = std::max(d.worst, e);
    }
    return d;
}

/// f32: within 1e-4 relative to the largest magnitude of the CPU result.
void expect_f32_close(const Image& cpu, const Image& gpu, const std::string& what) {
    double peak = 0;
    for (std::size_t k = 0; k < cpu.samples(); ++k) peak = std::max(peak, std::abs(cpu.get(k)));
    const Diff d = diff(cpu, gpu);
    EXPECT_LE(d.worst, 1e-4 * std::max(peak, 1e-30)) << what;
    std::printf("[          ] %s: %zu of %zu f32 samples differ (largest %g)\n", what.c_str(), d.count, cpu.samples(),
                d.worst);
}

/// i16 (and u8): equal, except at most 0.01% of the samples by 1.
void expect_int_close(const Image& cpu, const Image& gpu, const std::string& what) {
    const Diff d = diff(cpu, gpu);
    EXPECT_LE(d.worst, 1.0) << what;
    EXPECT_LE(double(d.count), 1e-4 * double(cpu.samples())) << what;
    std::printf("[          ] %s: %zu of %zu samples differ\n", what.c_str(), d.count, cpu.samples());
}

} // namespace

TEST(JpegCuda, EveryOperatorMatchesTheCpu) {
    PIXFLOW_REQUIRE_CUDA();
    for (auto [w, h] : {std::pair{1000, 600}, std::pair{17, 33}, std::pair{1, 1}})
        for (int channels : {1, 3, 4})
            for (DType d : {DType::u8, DType::f32}) {
                const std::string what = std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels) +
                                         " " + pixflow::dtype_name(d);
                Image in = d == DType::u8 ? smooth_image(w, h, channels, d) : random_f32(w, h, channels, 3, 255.0);
                if (d == DType::u8 && channels == 4) fill_random(in, 9);
                const std::map<std::string, std::string> p = {{"quality", "60"}, {"table", "chroma"}};
                Image c_cpu = single("dct8x8", "cpu", in), c_gpu = single("dct8x8", "cuda", in);
                expect_f32_close(c_cpu, c_gpu, "dct8x8 " + what);
                Image q_cpu = single("quantize", "cpu", c_cpu, p), q_gpu = single("quantize", "cuda", c_cpu, p);
                expect_int_close(q_cpu, q_gpu, "quantize " + what);
                Image d_cpu = single("dequantize", "cpu", q_cpu, p), d_gpu = single("dequantize", "cuda", q_cpu, p);
                EXPECT_EQ(d_cpu.bytes, d_gpu.bytes) << "dequantize " << what; // exact: one product
                for (const char* dt : {"u8", "f32"}) {
                    Image i_cpu = single("idct8x8", "cpu", d_cpu, {{"dtype", dt}});
                    Image i_gpu = single("idct8x8", "cuda", d_cpu, {{"dtype", dt}});
                    if (std::string(dt) == "u8")
                        expect_int_close(i_cpu, i_gpu, std::string("idct8x8 u8 ") + what);
                    else
                        expect_f32_close(i_cpu, i_gpu, std::string("idct8x8 f32 ") + what);
                    auto rp = p;
                    rp["dtype"] = dt;
                    Image r_cpu = single("jpeg_roundtrip8x8", "cpu", in, rp);
                    Image r_gpu = single("jpeg_roundtrip8x8", "cuda", in, rp);
                    if (std::string(dt) == "u8")
                        expect_int_close(r_cpu, r_gpu, std::string("roundtrip u8 ") + what);
                    else
                        expect_f32_close(r_cpu, r_gpu, std::string("roundtrip f32 ") + what);
                }
            }
}

// ---- fused equal to unfused, through the real planner ----------------------------------------------

namespace {

const host::Registry& registry() {
    static host::Registry r;
    static bool loaded = (r.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    return r;
}

std::string chain_text(int w, int h, int channels, const std::string& dtype, const std::string& out_dtype,
                       int quality = 50, int dequant_quality = 50) {
    return "[nodes.src]\nop = \"synth\"\npattern = \"shapes\"\nwidth = " + std::to_string(w) +
           "\nheight = " + std::to_string(h) + "\nchannels = " + std::to_string(channels) + "\ndtype = \"" + dtype +
           "\"\n"
           "[nodes.dct]\nop = \"dct8x8\"\ninput = \"src\"\n"
           "[nodes.quant]\nop = \"quantize\"\ninput = \"dct\"\nquality = " +
           std::to_string(quality) +
           "\ntable = \"chroma\"\n"
           "[nodes.dequant]\nop = \"dequantize\"\ninput = \"quant\"\nquality = " +
           std::to_string(dequant_quality) +
           "\ntable = \"chroma\"\n"
           "[nodes.idct]\nop = \"idct8x8\"\ninput = \"dequant\"\ndtype = \"" +
           out_dtype + "\"\n";
}

struct Planned {
    host::Graph g;
    host::Plan p;
    int fused = 0;
};

Planned plan(const std::string& text, bool fuse_on, const std::string& backend) {
    host::PlanOptions o;
    o.cuda_usable = host::cuda_usable(&o.cuda_why);
    o.backend_override = backend;
    host::Graph g = host::build_graph(host::parse_pipeline_text(text, "jpeg.toml"), registry());
    host::Plan p = host::make_plan(g, o);
    const int n = fuse_on ? host::fuse(g, p, o, registry()) : 0;
    return {std::move(g), std::move(p), n};
}

host::HostImage output_of(Planned& r, const std::string& id, host::RunReport* report = nullptr) {
    host::Executor ex(r.g, r.p);
    host::RunOptions o;
    o.keep_buffers = true;
    host::RunReport rep = ex.run(o);
    if (report) *report = rep;
    return ex.fetch(r.g.find(id));
}

} // namespace

class JpegFusion : public JpegOp {};

TEST_P(JpegFusion, FusedChainEqualsTheUnfusedChainBitForBit) {
    for (auto [w, h] : {std::pair{67, 45}, std::pair{9, 7}, std::pair{256, 64}})
        for (int channels : {1, 3})
            for (const char* dtype : {"u8", "f32"})
                for (const char* out_dtype : {"u8", "f32"}) {
                    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels) + " " +
                                 dtype + " -> " + out_dtype);
                    const std::string text = chain_text(w, h, channels, dtype, out_dtype);
                    Planned fused = plan(text, true, GetParam());
                    Planned plain = plan(text, false, GetParam());
                    ASSERT_EQ(fused.fused, 1);
                    ASSERT_EQ(fused.g.nodes.size(), 2u);
                    const host::Node& n = fused.g.nodes[fused.g.find("idct")];
                    EXPECT_STREQ(n.op->desc->name, "jpeg_roundtrip8x8");
                    EXPECT_EQ(fused.p.on_device(fused.g.find("idct")), GetParam() == "cuda");
                    host::RunReport rep;
                    host::HostImage a = output_of(fused, "idct", &rep);
                    host::HostImage b = output_of(plain, "idct");
                    EXPECT_EQ(a.shape.width, w);
                    EXPECT_EQ(a.shape.height, h);
                    EXPECT_EQ(a.shape.width, b.shape.width);
                    EXPECT_EQ(a.shape.height, b.shape.height);
                    EXPECT_EQ(a.shape.dtype, b.shape.dtype);
                    EXPECT_TRUE(a.bytes == b.bytes) << "fused and unfused outputs differ";
                    ASSERT_EQ(rep.nodes.size(), 2u);
                    EXPECT_EQ(rep.nodes[1].op, "jpeg_roundtrip8x8");
                    EXPECT_EQ(rep.nodes[1].replaced, (std::vector<std::string>{"dct", "quant", "dequant", "idct"}));
                    EXPECT_EQ(nlohmann::json::parse(rep.to_json())["nodes"][1]["replaced"][2], "dequant");
                }
}

TEST_P(JpegFusion, TheGraphShowsTheFusedNode) {
    Planned r = plan(chain_text(64, 64, 1, "u8", "u8"), true, GetParam());
    const std::string dot = host::plan_to_dot(r.g, r.p);
    EXPECT_NE(dot.find("jpeg_roundtrip8x8"), std::string::npos) << dot;
    EXPECT_NE(dot.find("fused: dct + quant + dequant + idct"), std::string::npos) << dot;
    bool noted = false;
    for (const auto& s : r.p.notes)
        noted |= s.find("fused dct, quant, dequant, idct into one jpeg_roundtrip8x8") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST_P(JpegFusion, DifferentTablesOrAnotherReaderKeepTheChain) {
    EXPECT_EQ(plan(chain_text(64, 64, 1, "u8", "u8", 50, 60), true, GetParam()).fused, 0);
    const std::string extra = chain_text(64, 64, 1, "u8", "u8") +
                              "[nodes.peek]\nop = \"compare\"\ninputs = { a = \"dct\", b = \"dequant\" }\n";
    Planned r = plan(extra, true, GetParam());
    EXPECT_EQ(r.fused, 0);
    EXPECT_TRUE(r.g.find("dct").valid());
}

INSTANTIATE_TEST_SUITE_P(Backends, JpegFusion, pixflow::testing::each_backend(), pixflow::testing::backend_name);

TEST(JpegFusion, PixflowGraphShowsTheFusedNodeAndNoFuseRunsTheChain) {
    auto r = pixflow::testing::run_pixflow("graph pipelines/jpeg-roundtrip.toml");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("jpeg_roundtrip8x8"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fused: dct + quant + dequant + idct"), std::string::npos) << r.out;
    auto plain = pixflow::testing::run_pixflow("graph pipelines/jpeg-roundtrip.toml --no-fuse");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out.find("jpeg_roundtrip8x8"), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("dct8x8"), std::string::npos) << plain.out;
}

TEST(JpegFusion, RoundtripPipelineReportsTheSameMetricsFusedAndUnfused) {
    pixflow::testing::TempDir dir;
    std::string out[2];
    for (int k = 0; k < 2; ++k) {
        auto r = pixflow::testing::run_pixflow(std::string("run pipelines/jpeg-roundtrip.toml --set out.path=") +
                                               (dir / ("o" + std::to_string(k) + ".pgm")) + " --report " +
                                               (dir / ("r" + std::to_string(k) + ".json")) + (k ? " --no-fuse" : ""));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find("diff: psnr = "), std::string::npos) << r.out;
        out[k] = r.out.substr(0, r.out.find("wrote"));
    }
    EXPECT_EQ(out[0], out[1]); // the same metrics, printed the same
    std::ifstream a(dir / "o0.pgm", std::ios::binary), b(dir / "o1.pgm", std::ios::binary);
    std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
    EXPECT_FALSE(sa.empty());
    EXPECT_EQ(sa, sb);
    EXPECT_EQ(sa.rfind("P5\n77 51\n255\n", 0), 0u) << "the round trip keeps the 77x51 source size";
}

TEST(JpegErrors, IdctOfLessThanOneBlockSaysWhatItNeeds) {
    Image tiny = Image::make(5, 9, 1, DType::f32);
    try {
        run_op("idct8x8", "cpu", {&tiny});
        ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("idct8x8: the input (5x9) holds no whole 8x8 block"), std::string::npos) << msg;
    }
}

// Issue 15 item 6: a 5x5 f32 image fed straight to quantize used to give 25 zeros silently (the
// kernel saw no whole block, only "marker" samples). Now validation refuses it, naming the node,
// the size and what is accepted, as idct8x8 does.
TEST(JpegErrors, QuantizeAndDequantizeOfLessThanOneBlockAreRefusedNamingNodeAndSize) {
    for (const char* op : {"quantize", "dequantize"})
        for (auto [w, h] : {std::pair{5, 5}, std::pair{7, 64}, std::pair{64, 1}}) {
            Image tiny = Image::make(w, h, 1, std::string(op) == "quantize" ? DType::f32 : DType::i16);
            const std::string size = std::to_string(w) + "x" + std::to_string(h);
            try {
                run_op(op, "cpu", {&tiny});
                ADD_FAILURE() << op << " of " << size << ": no error";
            } catch (const std::runtime_error& e) {
                const std::string msg = e.what();
                EXPECT_NE(msg.find("node 'op'"), std::string::npos) << msg;
                EXPECT_NE(msg.find(std::string(op) + ": the input (" + size + ") holds no whole 8x8 block"),
                          std::string::npos)
                    << msg;
                EXPECT_NE(msg.find("at least 8x8"), std::string::npos) << msg;
            }
        }
}

TEST(JpegErrors, QuantizeTakesTheSmallestCoefficientImages) {
    // dct8x8 of a 1x1 image gives 15x15 coefficients (one block, 7 markers); 8x8 is the least.
    for (auto [w, h] : {std::pair{8, 8}, std::pair{15, 15}}) {
        Image c = Image::make(w, h, 1, DType::f32);
        for (std::size_t k = 0; k < c.samples(); ++k) c.set(k, 100.0);
        Image q = single("quantize", "cpu", c, {{"quality", "50"}});
        EXPECT_EQ(q.width, w);
        EXPECT_EQ(q.at<std::int16_t>(0, 0), 6);                  // 100 / 16 = 6.25
        EXPECT_EQ(q.at<std::int16_t>(w - 1, 0), w == 8 ? 2 : 0); // 100 / 61 or a marker
    }
}
