// pixflow/testing.hpp: test your operator with GoogleTest, on the CPU and on CUDA.
//
//   #include <pixflow/testing.hpp>
//   TEST(Invert, CpuAndCudaAgree) {
//       PIXFLOW_REQUIRE_CUDA();                       // SKIPPED, never passed, without a GPU
//       auto in = pixflow::testing::Image::make(640, 480, 3, pixflow::DType::u8);
//       pixflow::testing::fill_random(in, 7);
//       pixflow::testing::expect_backends_agree("invert", {&in}, {{"gain", "2"}});
//   }
//
// One test, run on each backend (OnEachBackend; its CUDA case skips without a GPU):
//
//   class InvertOn : public pixflow::testing::OnEachBackend {};
//   TEST_P(InvertOn, MatchesTheReference) {
//       auto out = pixflow::testing::run_op("invert", backend(), {&in});
//       ...
//   }
//   INSTANTIATE_TEST_SUITE_P(Invert, InvertOn, pixflow::testing::each_backend(),
//                            pixflow::testing::backend_name);
//
// run_op goes through the real loader, schema validation, shape inference, allocation,
// transfers and the operator's C entry point, in libpixflow_framework (link pixflow::framework).
// Parameters are written as in a pipeline file or `--set`: 1.5, true, "zero" or zero.
#pragma once

#include <pixflow/host_api.h>
#include <pixflow/image.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace pixflow::testing {

/// An owning, tightly packed host image.
struct Image {
    int width = 0, height = 0, channels = 0;
    DType dtype = DType::u8;
    std::vector<std::byte> bytes;

    static Image make(int w, int h, int c, DType d) {
        Image im;
        im.width = w;
        im.height = h;
        im.channels = c;
        im.dtype = d;
        im.bytes.assign(std::size_t(w) * h * c * dtype_size(d), std::byte{0});
        return im;
    }
    ImageView view() const {
        ImageView v;
        v.width = width;
        v.height = height;
        v.channels = channels;
        v.dtype = dtype;
        v.device = PF_HOST;
        v.pitch = std::int64_t(width) * channels * dtype_size(dtype);
        v.data = const_cast<std::byte*>(bytes.data());
        return v;
    }
    template <class T> T& at(int x, int y, int c = 0) {
        return reinterpret_cast<T*>(bytes.data())[(std::size_t(y) * width + x) * channels + c];
    }
    template <class T> const T& at(int x, int y, int c = 0) const {
        return reinterpret_cast<const T*>(bytes.data())[(std::size_t(y) * width + x) * channels + c];
    }
    /// Sample k of the image as double (any dtype).
    double get(std::size_t k) const {
        return visit_dtype(dtype, [&](auto tag) {
            using T = decltype(tag);
            return double(reinterpret_cast<const T*>(bytes.data())[k]);
        });
    }
    void set(std::size_t k, double v) {
        visit_dtype(dtype, [&](auto tag) {
            using T = decltype(tag);
            reinterpret_cast<T*>(bytes.data())[k] = T(v);
        });
    }
    std::size_t samples() const { return std::size_t(width) * height * channels; }
};

/// Fills with uniform random values over the dtype's range (floats in [0, 1)).
inline void fill_random(Image& im, std::uint32_t seed) {
    std::mt19937_64 rng(seed);
    for (std::size_t k = 0; k < im.samples(); ++k) {
        switch (im.dtype) {
        case DType::f32:
        case DType::f64: im.set(k, std::uniform_real_distribution<double>(0, 1)(rng)); break;
        case DType::u8: im.set(k, double(rng() & 0xFF)); break;
        case DType::u16: im.set(k, double(rng() & 0xFFFF)); break;
        case DType::i16: im.set(k, double(std::int16_t(rng() & 0xFFFF))); break;
        case DType::i32: im.set(k, double(std::int32_t(rng() & 0x7FFFFFFF) - 0x3FFFFFFF)); break;
        case DType::u32: im.set(k, double(std::uint32_t(rng()))); break;
        case DType::u64: reinterpret_cast<std::uint64_t*>(im.bytes.data())[k] = rng(); break;
        }
    }
}

/// Folders or files (':'-separated) searched for plugins before $PIXFLOW_PLUGIN_PATH and the
/// installation's plugin folder: PIXFLOW_TEST_PLUGIN_DIR, the plugin's build folder, which
/// pixflow_add_operator defines for the tests it builds; else empty. Assign it to change it.
inline std::string& plugin_path() {
#ifdef PIXFLOW_TEST_PLUGIN_DIR
    static std::string path = PIXFLOW_TEST_PLUGIN_DIR;
#else
    static std::string path;
#endif
    return path;
}

/// True when a CUDA device is usable and pixflow was built with CUDA.
inline bool cuda_available() { return pixflow_host_cuda_usable() != 0; }

/// Runs `op` on `backend` ("cpu" or "cuda") with host inputs, through pixflow's loader,
/// validation, planner and executor; returns every output on the host. Throws
/// std::runtime_error with pixflow's message on failure.
inline std::vector<Image> run_op(const std::string& op, const std::string& backend,
                                 const std::vector<const Image*>& inputs,
                                 const std::map<std::string, std::string>& params = {}) {
    std::vector<pf_image> ins;
    for (const Image* im : inputs) ins.push_back(im->view().to_c());
    std::vector<std::string> kv;
    for (const auto& [k, v] : params) kv.push_back(k + "=" + v);
    std::vector<const char*> kvp;
    for (const auto& s : kv) kvp.push_back(s.c_str());
    pf_image* outs = nullptr;
    int32_t n = 0;
    char err[4096] = {0};
    int32_t st = pixflow_host_run_op(plugin_path().c_str(), op.c_str(), backend.c_str(), ins.data(),
                                     int32_t(ins.size()), kvp.data(), int32_t(kvp.size()), &outs, &n, err, sizeof err);
    if (st != PF_OK) throw std::runtime_error(err);
    std::vector<Image> result;
    for (int32_t k = 0; k < n; ++k) {
        Image im = Image::make(outs[k].width, outs[k].height, outs[k].channels, DType(outs[k].dtype));
        std::memcpy(im.bytes.data(), outs[k].data, im.bytes.size());
        result.push_back(std::move(im));
    }
    pixflow_host_free_outputs(outs, n);
    return result;
}

/// Largest absolute difference between two images of the same shape (any dtype), or +inf when
/// the shapes differ.
inline double max_abs_diff(const Image& a, const Image& b) {
    if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.dtype != b.dtype)
        return std::numeric_limits<double>::infinity();
    double worst = 0;
    for (std::size_t k = 0; k < a.samples(); ++k) worst = std::max(worst, std::abs(a.get(k) - b.get(k)));
    return worst;
}

/// Runs `op` on the CPU and on CUDA with the same inputs and expects every output to agree
/// within `tolerance` (0: bit for bit for integers). Call PIXFLOW_REQUIRE_CUDA() first.
inline void expect_backends_agree(const std::string& op, const std::vector<const Image*>& inputs,
                                  const std::map<std::string, std::string>& params = {}, double tolerance = 0) {
    auto cpu = run_op(op, "cpu", inputs, params);
    auto gpu = run_op(op, "cuda", inputs, params);
    ASSERT_EQ(cpu.size(), gpu.size());
    for (std::size_t k = 0; k < cpu.size(); ++k)
        EXPECT_LE(max_abs_diff(cpu[k], gpu[k]), tolerance) << op << " output " << k;
}

} // namespace pixflow::testing

/// First line of a CUDA test: reports SKIPPED (never a pass) without a device.
#define PIXFLOW_REQUIRE_CUDA()                                                                                         \
    do {                                                                                                               \
        if (!::pixflow::testing::cuda_available()) GTEST_SKIP() << "no usable CUDA device (or built without CUDA)";    \
    } while (0)

namespace pixflow::testing {

/// The fixture of a test that runs once per backend (see the top of this file): backend() is
/// "cpu" or "cuda" (or another name given to INSTANTIATE_TEST_SUITE_P, run as it is); the
/// "cuda" case reports SKIPPED without a usable device.
class OnEachBackend : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        if (GetParam() == "cuda") PIXFLOW_REQUIRE_CUDA();
    }
    const std::string& backend() const { return GetParam(); }
};

/// The backends for INSTANTIATE_TEST_SUITE_P with OnEachBackend: "cpu" and "cuda".
inline auto each_backend() { return ::testing::Values(std::string("cpu"), std::string("cuda")); }

/// Names the instances by their backend: Suite/Fixture.Test/cpu, .../cuda.
inline std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

} // namespace pixflow::testing
