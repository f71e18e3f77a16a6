#include "cli/new_operator.hpp"

#include <fstream>
#include <regex>
#include <stdexcept>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

// @NAME@ is the operator's name, @CLASS@ its class name. The folder has the layout of every
// built-in plugin and of sdk/examples/sobel (cmake/PixflowOperator.cmake describes it).
const char* k_cmake = R"(# The @NAME@ operator, built against an installed pixflow:
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<pixflow prefix> && cmake --build build
#   (cd build && ctest)                      its tests, then its example pipeline
#   pixflow --plugin-path build/plugins run @NAME@.toml
cmake_minimum_required(VERSION 3.24)
project(@NAME@ LANGUAGES CXX)

include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # sm_90 (H100/H200), as pixflow itself. "native" would fail to configure on a machine
    # without a GPU; pass -DCMAKE_CUDA_ARCHITECTURES=native or your own list to change it.
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
endif()

find_package(pixflow REQUIRED)
enable_testing()
# FLOAT exact: the CPU and CUDA kernels round every operation as written, so they agree bit for
# bit. The tests need GoogleTest; -DPIXFLOW_BUILD_TESTS=OFF leaves them out.
pixflow_add_operator(@NAME@
  SOURCES @NAME@.cpp
  KERNELS kernels/@NAME@_cpu.cpp
  CUDA_SOURCES kernels/@NAME@.cu
  LIBRARIES TBB::tbb
  FLOAT exact
  TESTS test/@NAME@_test.cpp
  EXAMPLE @NAME@.toml
  OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
)";

const char* k_hpp = R"(// The @NAME@ kernels: plain functions over image views, no framework types, so that they can
// be called and tested without pixflow.
#pragma once

#include <pixflow/image.hpp>

namespace @NAME@ {

/// out = in * gain + bias for f32 samples, every channel; in and out of one shape.
void run_cpu(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias);
#ifdef PIXFLOW_WITH_CUDA
/// The same on device memory, enqueued on `stream` (a cudaStream_t); never synchronises.
void run_cuda(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias, void* stream);
#endif

/// One sample, exactly as both backends compute it (no fused multiply-add: FLOAT exact).
inline PIXFLOW_HD float sample(float v, float gain, float bias) { return v * gain + bias; }

} // namespace @NAME@
)";

const char* k_cpu = R"(// The @NAME@ CPU kernel: TBB over rows, SIMD along a row.
#include "@NAME@.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace @NAME@ {

void run_cpu(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias) {
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& rows) {
        for (int y = rows.begin(); y != rows.end(); ++y) {
            const float* src = in.row<float>(y);
            float* dst = out.row<float>(y);
#pragma omp simd
            for (std::size_t i = 0; i < in.row_samples(); ++i) dst[i] = sample(src[i], gain, bias);
        }
    });
}

} // namespace @NAME@
)";

const char* k_cpp = R"(// The @NAME@ operator: its parameters, its schema, declared once, and one run function per
// backend over the kernels of kernels/.
#include "kernels/@NAME@.hpp"

#include <pixflow/operator.hpp>

struct @CLASS@ {
    struct Params {
        float gain = 1.0f;
        float bias = 0.0f;
    };

    static pixflow::Schema schema() {
        using namespace pixflow;
        return Schema("@NAME@", "out = in * gain + bias (f32); replace with what your operator does")
            .input("in", dtypes({DType::f32}), channels(1, 4), "the image")
            .output("out", dtypes({DType::f32}), channels(1, 4), "the result, same shape")
            .param(&Params::gain, "gain", range(-1e6, 1e6), "multiplier")
            .param(&Params::bias, "bias", range(-1e6, 1e6), "added after the multiplication");
    }
    static void run_cpu(pixflow::Context& ctx, const Params& p) {
        @NAME@::run_cpu(ctx.input(), ctx.output(), p.gain, p.bias);
    }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(pixflow::Context& ctx, const Params& p) {
        @NAME@::run_cuda(ctx.input(), ctx.output(), p.gain, p.bias, ctx.stream());
    }
#endif
};

PIXFLOW_PLUGIN("@NAME@", "0.1.0", @CLASS@)
)";

const char* k_cu = R"(// The @NAME@ CUDA kernel: one thread per sample of a row, one row of blocks per image row
// (pixflow::cuda::grid_rows covers any height). Enqueue on the stream pixflow gives you, never
// synchronise, check every launch.
#include "@NAME@.hpp"

#include <pixflow/cuda.hpp>

namespace @NAME@ {
namespace {
__global__ void kernel(pixflow::ImageView in, pixflow::ImageView out, float gain, float bias) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int y = int(pixflow::cuda::block_row());
    if (i >= in.row_samples() || y >= in.height) return;
    out.row<float>(y)[i] = sample(in.row<float>(y)[i], gain, bias);
}
} // namespace

void run_cuda(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias, void* stream) {
    const dim3 block(256);
    const dim3 grid = pixflow::cuda::grid_rows(pixflow::cuda::div_up((long long)in.row_samples(), 256), in.height);
    kernel<<<grid, block, 0, pixflow::cuda::stream_of(stream)>>>(in, out, gain, bias);
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace @NAME@
)";

const char* k_test = R"(// @NAME@ against a reference written here: its CPU kernel called directly, then both backends
// through pixflow (pixflow/testing.hpp; the plugin is found in its build folder).
#include "../kernels/@NAME@.hpp"

#include <pixflow/testing.hpp>

using pixflow::testing::Image;

namespace {
Image input(int w, int h, int c, std::uint32_t seed) {
    Image in = Image::make(w, h, c, pixflow::DType::f32);
    pixflow::testing::fill_random(in, seed);
    return in;
}
} // namespace

TEST(@CLASS@, KernelMatchesReference) {
    const Image in = input(37, 21, 3, 1);
    Image out = Image::make(37, 21, 3, pixflow::DType::f32);
    @NAME@::run_cpu(in.view(), out.view(), 2.0f, 0.5f);
    for (std::size_t k = 0; k < in.samples(); ++k) EXPECT_FLOAT_EQ(float(out.get(k)), float(in.get(k)) * 2 + 0.5f);
}

class @CLASS@On : public pixflow::testing::OnEachBackend {};

TEST_P(@CLASS@On, MatchesReference) {
    const Image in = input(37, 21, 3, 2);
    auto out = pixflow::testing::run_op("@NAME@", backend(), {&in}, {{"gain", "2"}, {"bias", "0.5"}});
    ASSERT_EQ(out.size(), 1u);
    for (std::size_t k = 0; k < in.samples(); ++k) EXPECT_FLOAT_EQ(float(out[0].get(k)), float(in.get(k)) * 2 + 0.5f);
}

TEST(@CLASS@, CudaMatchesCpu) {
    PIXFLOW_REQUIRE_CUDA();
    const Image in = input(640, 480, 1, 3);
    pixflow::testing::expect_backends_agree("@NAME@", {&in}, {{"gain", "3"}});
}

INSTANTIATE_TEST_SUITE_P(@CLASS@, @CLASS@On, pixflow::testing::each_backend(), pixflow::testing::backend_name);
)";

const char* k_toml =
    R"(# @NAME@'s example pipeline (CTest runs it):  pixflow --plugin-path build/plugins run @NAME@.toml
[pipeline]
name = "@NAME@-demo"

[nodes.src]
op = "synth"
pattern = "gradient"
width = 256
height = 256
channels = 1
dtype = "f32"

[nodes.@NAME@]
op = "@NAME@"
input = "src"
gain = 0.5
bias = 0.25

[nodes.out]
op = "save"
input = "@NAME@"
path = "out/@NAME@.pfm"
)";

std::string fill(std::string s, const std::string& name, const std::string& cls) {
    for (auto [key, value] : {std::pair<std::string, std::string>{"@NAME@", name}, {"@CLASS@", cls}})
        for (std::size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + value.size()))
            s.replace(p, key.size(), value);
    return s;
}

} // namespace

std::vector<fs::path> write_operator_skeleton(const std::string& name, const fs::path& dir) {
    if (!std::regex_match(name, std::regex("[a-z][a-z0-9_]*")))
        throw std::runtime_error("operator name '" + name +
                                 "' is not valid; use lower case letters, digits and _, starting with a letter");
    if (fs::exists(dir) && !fs::is_empty(dir))
        throw std::runtime_error(dir.string() + " exists and is not empty; choose another --dir");
    std::string cls;
    bool upper = true;
    for (char c : name) {
        if (c == '_') {
            upper = true;
            continue;
        }
        cls += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
        upper = false;
    }
    fs::create_directories(dir / "kernels");
    fs::create_directories(dir / "test");
    std::vector<std::pair<std::string, const char*>> files = {{"CMakeLists.txt", k_cmake},
                                                              {name + ".cpp", k_cpp},
                                                              {name + ".toml", k_toml},
                                                              {"kernels/" + name + ".hpp", k_hpp},
                                                              {"kernels/" + name + "_cpu.cpp", k_cpu},
                                                              {"kernels/" + name + ".cu", k_cu},
                                                              {"test/" + name + "_test.cpp", k_test}};
    std::vector<fs::path> written;
    for (const auto& [file, text] : files) {
        std::ofstream o(dir / file);
        o << fill(text, name, cls);
        if (!o) throw std::runtime_error("cannot write " + (dir / file).string());
        written.push_back(dir / file);
    }
    return written;
}

} // namespace pixflow::host
