// Test harness: run one operator from the built plugins on one backend, on host images.
//
//   auto in = pixflow::testing::Image::make(7, 5, 3, pixflow::DType::u8);
//   fill_random(in, 42);
//   auto out = pixflow::testing::run_op("gauss5x5", "cpu", {&in}, {{"border", "zero"}});
//   out[0].at<std::uint8_t>(x, y, c) ...
//
// Parameters are written as in a pipeline file or `--set`: 1.5, true, "zero" or zero.
// run_op goes through the real loader, schema validation, shape inference, allocation,
// upload/download and the operator's C entry point; it throws std::runtime_error with the
// operator's message on failure.
#pragma once

#include <pixflow/image.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
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
        case DType::u64:
            reinterpret_cast<std::uint64_t*>(im.bytes.data())[k] = rng();
            break;
        }
    }
}

/// True when a CUDA device is usable and the framework was built with CUDA.
bool cuda_available();

/// Runs `op` on `backend` ("cpu" or "cuda") with host inputs; returns every output on the host.
std::vector<Image> run_op(const std::string& op, const std::string& backend,
                          const std::vector<const Image*>& inputs,
                          const std::map<std::string, std::string>& params = {});

} // namespace pixflow::testing

/// First line of a CUDA test: reports SKIPPED (never a pass) without a device.
#define PIXFLOW_REQUIRE_CUDA()                                                                     \
    do {                                                                                           \
        if (!::pixflow::testing::cuda_available())                                                 \
            GTEST_SKIP() << "no usable CUDA device (or built without CUDA)";                       \
    } while (0)
