// Tests of chan_vese through the real plugin, on the CPU and on CUDA, against a straightforward
// double-precision implementation of scikit-image's scheme written here (reference() below):
// noisy synthetic shapes of several sizes (square and not), dtypes, initial level sets and
// seeds; a constant image; 1x1 and 2x2; RGB refused with a hint; the metrics in the run report;
// CUDA against the CPU.
#include "../kernels/chan_vese.hpp"

#include "executor/run_op.hpp"
#include "loader/registry.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::Image;

// ---- the reference: scikit-image's chan_vese, written plainly in double ----------------------

struct Scheme {
    double mu = 0.25, lambda1 = 1, lambda2 = 1, tol = 1e-3, dt = 0.5;
    int max_iter = 500;
    std::string init = "checkerboard";

    std::map<std::string, std::string> params() const {
        auto num = [](double v) {
            char b[64];
            std::snprintf(b, sizeof b, "%.17g", v);
            return std::string(b);
        };
        return {{"mu", num(mu)},
                {"lambda1", num(lambda1)},
                {"lambda2", num(lambda2)},
                {"tol", num(tol)},
                {"dt", num(dt)},
                {"max_iter", std::to_string(max_iter)},
                {"init", "\"" + init + "\""}};
    }
};

struct RefResult {
    std::vector<double> phi;
    int iterations = 0;
    double rms = 0;
};

/// skimage.segmentation.chan_vese (phi padded by edge replication, x along columns), with the
/// documented guard for images under 3 pixels along a side (radius 1 where skimage divides by 0).
RefResult reference(const Image& in, const Scheme& s) {
    const int w = in.width, h = in.height;
    const std::size_t n = std::size_t(w) * h;
    std::vector<double> img(n);
    for (std::size_t k = 0; k < n; ++k) img[k] = in.get(k);
    const double lo = *std::min_element(img.begin(), img.end());
    for (double& v : img) v -= lo;
    const double hi = *std::max_element(img.begin(), img.end());
    if (hi != 0)
        for (double& v : img) v /= hi;

    RefResult r;
    r.phi.resize(n);
    const int cx = (w - 1) / 2, cy = (h - 1) / 2;
    const double radius = std::max(1, std::min(cx, cy));
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double d = std::sqrt(double(x - cx) * (x - cx) + double(y - cy) * (y - cy));
            double& p = r.phi[std::size_t(y) * w + x];
            if (s.init == "checkerboard")
                p = std::sin(y * (M_PI / 5)) * std::sin(x * (M_PI / 5));
            else if (s.init == "disk")
                p = (radius - d) / radius;
            else
                p = (radius / 2 - d) / (radius / 2 * 3);
        }

    auto at = [&](const std::vector<double>& f, int x, int y) {
        return f[std::size_t(std::clamp(y, 0, h - 1)) * w + std::clamp(x, 0, w - 1)];
    };
    const double eta = 1e-16;
    std::vector<double> next(n);
    double rms = s.tol + 1;
    while (r.iterations == 0 || (rms > s.tol && r.iterations < s.max_iter)) {
        double sum_in = 0, sum_out = 0, n_in = 0, n_out = 0;
        for (std::size_t k = 0; k < n; ++k) {
            if (r.phi[k] > 0)
                sum_in += img[k], n_in += 1;
            else
                sum_out += img[k], n_out += 1;
        }
        const double c1 = n_in ? sum_in / n_in : 0, c2 = n_out ? sum_out / n_out : 0;
        double sq = 0;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                const auto& f = r.phi;
                const double p = at(f, x, y);
                const double xp = at(f, x + 1, y) - p, xn = p - at(f, x - 1, y);
                const double x0 = (at(f, x + 1, y) - at(f, x - 1, y)) / 2;
                const double yp = at(f, x, y + 1) - p, yn = p - at(f, x, y - 1);
                const double y0 = (at(f, x, y + 1) - at(f, x, y - 1)) / 2;
                const double C1 = 1 / std::sqrt(eta + xp * xp + y0 * y0);
                const double C2 = 1 / std::sqrt(eta + xn * xn + y0 * y0);
                const double C3 = 1 / std::sqrt(eta + x0 * x0 + yp * yp);
                const double C4 = 1 / std::sqrt(eta + x0 * x0 + yn * yn);
                const double K =
                    at(f, x + 1, y) * C1 + at(f, x - 1, y) * C2 + at(f, x, y + 1) * C3 + at(f, x, y - 1) * C4;
                const double I = img[std::size_t(y) * w + x];
                const double delta = 1 / (1 + p * p);
                const double v =
                    (p +
                     s.dt * delta * (s.mu * K - s.lambda1 * (I - c1) * (I - c1) + s.lambda2 * (I - c2) * (I - c2))) /
                    (1 + s.mu * s.dt * delta * (C1 + C2 + C3 + C4));
                next[std::size_t(y) * w + x] = v;
                sq += (v - p) * (v - p);
            }
        r.phi.swap(next);
        rms = std::sqrt(sq / double(n));
        ++r.iterations;
    }
    r.rms = rms;
    return r;
}

// ---- inputs ----------------------------------------------------------------------------------

/// A disc and a rectangle on a background, plus Gaussian noise; values in [0, 1] scaled to the
/// dtype's range (integers rounded and clamped; f32 left unclamped, the op normalises).
Image noisy_shapes(int w, int h, DType d, std::uint32_t seed, double noise = 0.08) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> g(0, noise);
    const double dcx = w * (0.25 + 0.2 * u(rng)), dcy = h * (0.3 + 0.3 * u(rng));
    const double rad = std::min(w, h) * (0.15 + 0.1 * u(rng));
    const int rx0 = int(w * 0.6), rx1 = int(w * 0.9), ry0 = int(h * 0.2), ry1 = int(h * 0.75);
    const double top = d == DType::u8 ? 255 : d == DType::u16 ? 65535 : 1;
    Image im = Image::make(w, h, 1, d);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double v = 0.25;
            if ((x - dcx) * (x - dcx) + (y - dcy) * (y - dcy) < rad * rad)
                v = 0.75;
            else if (x >= rx0 && x < rx1 && y >= ry0 && y < ry1)
                v = 0.6;
            v += g(rng);
            if (d != DType::f32) v = std::clamp(std::round(v * top), 0.0, top);
            im.set(std::size_t(y) * w + x, v);
        }
    return im;
}

// ---- the operator ----------------------------------------------------------------------------

const pixflow::host::Registry& registry() {
    static pixflow::host::Registry reg;
    static bool loaded = (reg.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    return reg;
}

struct OpResult {
    Image mask, phi;
    int iterations = -1;
    double rms = -1;
};

OpResult chan_vese(const std::string& backend, const Image& in, const Scheme& s) {
    pixflow::host::RunReport report;
    auto outs = pixflow::host::run_single_op(registry(), "chan_vese", backend, {in.view().to_c()}, s.params(), &report);
    auto to_image = [](const pixflow::host::HostImage& h) {
        Image im = Image::make(h.shape.width, h.shape.height, h.shape.channels, DType(h.shape.dtype));
        EXPECT_EQ(h.bytes.size(), im.bytes.size());
        std::memcpy(im.bytes.data(), h.bytes.data(), std::min(h.bytes.size(), im.bytes.size()));
        return im;
    };
    OpResult r;
    EXPECT_EQ(outs.size(), 2u);
    r.mask = to_image(outs.at(0));
    r.phi = to_image(outs.at(1));
    for (const auto& node : report.nodes)
        if (node.id == "op") {
            EXPECT_EQ(node.backend, backend);
            if (node.metrics.count("iterations")) r.iterations = int(node.metrics.at("iterations"));
            if (node.metrics.count("rms_change")) r.rms = node.metrics.at("rms_change");
        }
    return r;
}

/// Share of pixels where the mask says the same as phi_ref > 0.
double agreement(const Image& mask, const std::vector<double>& phi_ref) {
    std::size_t same = 0;
    for (std::size_t k = 0; k < phi_ref.size(); ++k) same += (mask.get(k) == 255) == (phi_ref[k] > 0);
    return double(same) / double(phi_ref.size());
}

double agreement(const Image& a, const Image& b) {
    std::size_t same = 0;
    for (std::size_t k = 0; k < a.samples(); ++k) same += a.get(k) == b.get(k);
    return double(same) / double(a.samples());
}

void expect_mask_is_sign_of_phi(const OpResult& r) {
    ASSERT_EQ(r.mask.dtype, DType::u8);
    ASSERT_EQ(r.phi.dtype, DType::f32);
    for (std::size_t k = 0; k < r.phi.samples(); ++k) {
        ASSERT_TRUE(std::isfinite(r.phi.get(k))) << "phi[" << k << "] = " << r.phi.get(k);
        ASSERT_EQ(r.mask.get(k), r.phi.get(k) > 0 ? 255 : 0) << "pixel " << k;
    }
}

/// Iteration counts within 5% of the reference's.
void expect_iterations_close(int got, int want) {
    EXPECT_LE(std::abs(got - want), 0.05 * want) << "iterations " << got << ", reference " << want;
}

struct Case {
    int w, h;
    DType dtype;
    const char* init;
    std::uint32_t seed;
};

const Case noisy_cases[] = {
    {64, 48, DType::u8, "checkerboard", 1},    {97, 61, DType::u8, "checkerboard", 2},
    {128, 128, DType::f32, "checkerboard", 3}, {200, 150, DType::u16, "checkerboard", 4},
    {61, 97, DType::f32, "disk", 5},           {150, 100, DType::u8, "disk", 6},
    {120, 90, DType::u8, "small_disk", 7},     {90, 120, DType::u16, "small_disk", 8},
};

std::string describe(const Case& c) {
    return std::to_string(c.w) + "x" + std::to_string(c.h) + " " + pixflow::dtype_name(c.dtype) + " init=" + c.init +
           " seed=" + std::to_string(c.seed);
}

class ChanVeseOn : public pixflow::testing::OnEachBackend {};

TEST_P(ChanVeseOn, MatchesDoubleReferenceOnNoisyShapes) {
    for (const Case& c : noisy_cases) {
        SCOPED_TRACE(describe(c));
        const Image in = noisy_shapes(c.w, c.h, c.dtype, c.seed);
        Scheme s;
        s.init = c.init;
        s.max_iter = 200;
        const RefResult ref = reference(in, s);
        const OpResult got = chan_vese(GetParam(), in, s);
        ASSERT_EQ(got.mask.width, c.w);
        ASSERT_EQ(got.mask.height, c.h);
        expect_mask_is_sign_of_phi(got);
        EXPECT_GE(agreement(got.mask, ref.phi), 0.995);
        expect_iterations_close(got.iterations, ref.iterations);
        if (got.iterations < s.max_iter) EXPECT_LE(got.rms, s.tol);
    }
}

TEST_P(ChanVeseOn, HonoursTheWeightsAndTimeStep) {
    const Image in = noisy_shapes(80, 60, DType::u8, 11, 0.12);
    Scheme s;
    s.mu = 0.6;
    s.lambda1 = 1.5;
    s.lambda2 = 0.7;
    s.dt = 0.3;
    s.tol = 5e-4;
    s.max_iter = 150;
    const RefResult ref = reference(in, s);
    const OpResult got = chan_vese(GetParam(), in, s);
    expect_mask_is_sign_of_phi(got);
    EXPECT_GE(agreement(got.mask, ref.phi), 0.995);
    expect_iterations_close(got.iterations, ref.iterations);
}

TEST_P(ChanVeseOn, RunsMaxIterIterationsWhenTolIsZero) {
    const Image in = noisy_shapes(70, 50, DType::u8, 12);
    Scheme s;
    s.tol = 0;
    s.max_iter = 37;
    const RefResult ref = reference(in, s);
    const OpResult got = chan_vese(GetParam(), in, s);
    EXPECT_EQ(got.iterations, 37);
    EXPECT_EQ(ref.iterations, 37);
    EXPECT_NEAR(got.rms, ref.rms, 1e-4 + 1e-3 * ref.rms);
    // After a fixed number of steps phi itself follows the reference closely.
    double worst = 0;
    for (std::size_t k = 0; k < ref.phi.size(); ++k) worst = std::max(worst, std::abs(got.phi.get(k) - ref.phi[k]));
    EXPECT_LT(worst, 1e-3);
    EXPECT_GE(agreement(got.mask, ref.phi), 0.995);
}

TEST_P(ChanVeseOn, ConstantImageTerminatesWithoutNaN) {
    // Only curvature moves phi here, and where phi is locally flat, eta = 1e-16 lies far below
    // f32 resolution: C1..C4 come from differences of a few ulps, so an f32 run and the double
    // reference part ways there (the checkerboard's zero lines even split on rounding alone).
    // What must hold: it stops, within max_iter, with finite values and a consistent mask.
    for (DType d : {DType::u8, DType::f32})
        for (const char* init : {"checkerboard", "disk", "small_disk"}) {
            SCOPED_TRACE(std::string(pixflow::dtype_name(d)) + " init=" + init);
            Image in = Image::make(40, 30, 1, d);
            for (std::size_t k = 0; k < in.samples(); ++k) in.set(k, d == DType::u8 ? 7 : 0.3);
            Scheme s;
            s.init = init;
            s.max_iter = 100;
            const OpResult got = chan_vese(GetParam(), in, s);
            expect_mask_is_sign_of_phi(got);
            EXPECT_TRUE(std::isfinite(got.rms));
            EXPECT_GE(got.iterations, 1);
            EXPECT_LE(got.iterations, s.max_iter);
            if (got.iterations < s.max_iter) EXPECT_LE(got.rms, s.tol);
            if (std::string(init) != "checkerboard") {
                const RefResult ref = reference(in, s);
                EXPECT_GE(agreement(got.mask, ref.phi), 0.95);
            }
        }
}

TEST_P(ChanVeseOn, HandlesOneAndTwoPixelImages) {
    for (auto [w, h] : {std::pair{1, 1}, std::pair{2, 2}, std::pair{1, 9}, std::pair{9, 2}})
        for (const char* init : {"checkerboard", "disk", "small_disk"}) {
            SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + " init=" + init);
            const Image in = noisy_shapes(w, h, DType::u8, 21 + w * 10 + h);
            Scheme s;
            s.init = init;
            s.max_iter = 50;
            const RefResult ref = reference(in, s);
            const OpResult got = chan_vese(GetParam(), in, s);
            ASSERT_EQ(got.mask.width, w);
            ASSERT_EQ(got.mask.height, h);
            expect_mask_is_sign_of_phi(got);
            EXPECT_EQ(agreement(got.mask, ref.phi), 1.0);
            expect_iterations_close(got.iterations, ref.iterations);
        }
}

INSTANTIATE_TEST_SUITE_P(Backends, ChanVeseOn, pixflow::testing::each_backend(), pixflow::testing::backend_name);

TEST(ChanVese, RefusesRgbInputSuggestingGrayscale) {
    auto in = Image::make(16, 12, 3, DType::u8);
    pixflow::testing::fill_random(in, 3);
    try {
        pixflow::testing::run_op("chan_vese", "cpu", {&in});
        FAIL() << "an RGB input was accepted";
    } catch (const std::exception& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("3 channels"), std::string::npos) << msg;
        EXPECT_NE(msg.find("grayscale"), std::string::npos) << msg;
    }
}

TEST(ChanVese, RecordsIterationsAndRmsChangeInTheRunReport) {
    const Image in = noisy_shapes(64, 48, DType::u8, 31);
    Scheme s;
    const RefResult ref = reference(in, s);
    const OpResult got = chan_vese("cpu", in, s);
    ASSERT_GE(got.iterations, 1) << "no 'iterations' metric";
    ASSERT_GE(got.rms, 0) << "no 'rms_change' metric";
    expect_iterations_close(got.iterations, ref.iterations);
    EXPECT_NEAR(got.rms, ref.rms, 0.05 * ref.rms);
}

TEST(ChanVese, CudaAgreesWithCpu) {
    PIXFLOW_REQUIRE_CUDA();
    for (const Case& c : noisy_cases) {
        SCOPED_TRACE(describe(c));
        const Image in = noisy_shapes(c.w, c.h, c.dtype, c.seed + 100);
        Scheme s;
        s.init = c.init;
        s.max_iter = 200;
        const OpResult cpu = chan_vese("cpu", in, s);
        const OpResult gpu = chan_vese("cuda", in, s);
        expect_mask_is_sign_of_phi(gpu);
        EXPECT_GE(agreement(gpu.mask, cpu.mask), 0.995);
        expect_iterations_close(gpu.iterations, cpu.iterations);
    }
    // A larger image, every block of the grid busy, a fixed number of iterations. After 10, phi
    // follows the CPU's everywhere (a stale read of a neighbour across the grid-wide barrier
    // would be off by about one step, ~1e-2). After 60, the few pixels where phi is locally
    // flat have amplified f32 rounding (the CPU departs from the double reference there too,
    // by up to ~1e-2), so only count those apart.
    const Image in = noisy_shapes(1031, 517, DType::u8, 77);
    Scheme s;
    s.tol = 0;
    s.max_iter = 10;
    OpResult cpu = chan_vese("cpu", in, s);
    OpResult gpu = chan_vese("cuda", in, s);
    EXPECT_EQ(gpu.iterations, 10);
    EXPECT_NEAR(gpu.rms, cpu.rms, 1e-4 * cpu.rms);
    EXPECT_LT(pixflow::testing::max_abs_diff(gpu.phi, cpu.phi), 1e-4);
    s.max_iter = 60;
    cpu = chan_vese("cpu", in, s);
    gpu = chan_vese("cuda", in, s);
    EXPECT_EQ(gpu.iterations, 60);
    EXPECT_NEAR(gpu.rms, cpu.rms, 1e-3 * cpu.rms);
    std::size_t apart = 0;
    for (std::size_t k = 0; k < cpu.phi.samples(); ++k) apart += std::abs(gpu.phi.get(k) - cpu.phi.get(k)) > 1e-4;
    EXPECT_LT(double(apart), 0.01 * double(cpu.phi.samples()));
    EXPECT_GE(agreement(gpu.mask, cpu.mask), 0.999);
}

} // namespace

// ---- the kernel on its own, without pixflow
// ------------------------------------------------------

namespace {

namespace cv = pixflow::chan_vese;

TEST(ChanVeseKernel, RunsWithTheDefaultSettingsAndStopsWhenCancelled) {
    Image in = Image::make(40, 30, 1, DType::u8);
    pixflow::testing::fill_random(in, 8);
    Image mask = Image::make(40, 30, 1, DType::u8), phi = Image::make(40, 30, 1, DType::f32);
    std::vector<std::byte> scratch(cv::cpu_scratch_bytes(40, 30));
    cv::Settings s; // the operator's defaults
    s.max_iter = 20;
    cv::Outcome o;
    ASSERT_TRUE(cv::chan_vese_cpu(in.view(), mask.view(), phi.view(), s, scratch.data(), o, nullptr));
    EXPECT_GE(o.iterations, 1);
    EXPECT_LE(o.iterations, 20);
    for (std::size_t k = 0; k < mask.samples(); ++k) ASSERT_EQ(mask.get(k), phi.get(k) > 0 ? 255.0 : 0.0) << k;
    EXPECT_FALSE(cv::chan_vese_cpu(in.view(), mask.view(), phi.view(), s, scratch.data(), o, [] { return true; }));
}

} // namespace
