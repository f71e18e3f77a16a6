#include "cli/new_operator.hpp"

#include <fstream>
#include <regex>
#include <stdexcept>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

// @NAME@ is the operator's name, @CLASS@ its class name.
const char* k_cmake = R"(# The @NAME@ operator, built against an installed pixflow:
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<pixflow prefix> && cmake --build build
#   (cd build && ctest)
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
pixflow_add_operator(@NAME@
  SOURCES @NAME@.cpp
  CUDA_SOURCES @NAME@.cu
  LIBRARIES TBB::tbb
  OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)

find_package(GTest QUIET)
if(GTest_FOUND)
  enable_testing()
  include(GoogleTest)
  add_executable(@NAME@_test @NAME@_test.cpp)
  target_link_libraries(@NAME@_test PRIVATE pixflow::framework GTest::gtest_main)
  target_compile_definitions(@NAME@_test PRIVATE PLUGIN_DIR="${CMAKE_BINARY_DIR}/plugins")
  add_dependencies(@NAME@_test pixflow_@NAME@)
  gtest_discover_tests(@NAME@_test PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endif()
)";

const char* k_hpp = R"(// The @NAME@ kernels: plain functions over image views, no framework types.
#pragma once

#include <pixflow/image.hpp>

namespace @NAME@ {

/// out = in * gain + bias for f32 samples, every channel.
void run_cpu(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias);
#ifdef PIXFLOW_WITH_CUDA
void run_cuda(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias, void* stream);
#endif

} // namespace @NAME@
)";

const char* k_cpp = R"(// The @NAME@ operator: its schema, declared once, and one run function per backend.
#include "@NAME@.hpp"

#include <pixflow/operator.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace @NAME@ {

void run_cpu(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias) {
    tbb::parallel_for(tbb::blocked_range<int>(0, in.height), [&](const tbb::blocked_range<int>& rows) {
        for (int y = rows.begin(); y != rows.end(); ++y) {
            const float* src = in.row<float>(y);
            float* dst = out.row<float>(y);
            for (std::size_t i = 0; i < in.row_samples(); ++i) dst[i] = src[i] * gain + bias;
        }
    });
}

} // namespace @NAME@

struct @CLASS@ {
    static pixflow::Schema schema() {
        using namespace pixflow;
        return Schema("@NAME@", "out = in * gain + bias (f32); replace with what your operator does")
            .input("in", dtypes({DType::f32}), channels(1, 4), "the image")
            .output("out", dtypes({DType::f32}), channels(1, 4), "the result, same shape")
            .param_float("gain", 1.0, -1e6, 1e6, "multiplier")
            .param_float("bias", 0.0, -1e6, 1e6, "added after the multiplication");
    }
    static void run_cpu(pixflow::Context& ctx) {
        const auto& p = ctx.params();
        @NAME@::run_cpu(ctx.input(), ctx.output(), float(p.f("gain")), float(p.f("bias")));
    }
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(pixflow::Context& ctx) {
        const auto& p = ctx.params();
        @NAME@::run_cuda(ctx.input(), ctx.output(), float(p.f("gain")), float(p.f("bias")), ctx.stream());
    }
#endif
};

PIXFLOW_PLUGIN("@NAME@", "0.1.0", @CLASS@)
)";

const char* k_cu = R"(// The @NAME@ CUDA kernel: one thread per sample of a row, rows strided over the grid's y.
// Launch on the stream pixflow gives you; never synchronise; check every launch.
#include "@NAME@.hpp"

#include <pixflow/cuda.hpp>

namespace @NAME@ {
namespace {
__global__ void kernel(pixflow::ImageView in, pixflow::ImageView out, float gain, float bias) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= in.row_samples()) return;
    for (int y = blockIdx.y; y < in.height; y += gridDim.y)
        out.row<float>(y)[i] = in.row<float>(y)[i] * gain + bias;
}
} // namespace

void run_cuda(const pixflow::ImageView& in, const pixflow::ImageView& out, float gain, float bias, void* stream) {
    dim3 block(256), grid(pixflow::cuda::div_up((long long)in.row_samples(), 256), unsigned(in.height < 65535 ? in.height : 65535));
    kernel<<<grid, block, 0, pixflow::cuda::stream_of(stream)>>>(in, out, gain, bias);
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace @NAME@
)";

const char* k_test = R"(// @NAME@ through pixflow, against a reference written here, on the CPU and on CUDA.
#include <pixflow/testing.hpp>

using pixflow::testing::Image;

class @CLASS@Test : public ::testing::Test {
  protected:
    void SetUp() override { pixflow::testing::plugin_path() = PLUGIN_DIR; }
};

TEST_F(@CLASS@Test, CpuMatchesReference) {
    Image in = Image::make(37, 21, 3, pixflow::DType::f32);
    pixflow::testing::fill_random(in, 1);
    auto out = pixflow::testing::run_op("@NAME@", "cpu", {&in}, {{"gain", "2"}, {"bias", "0.5"}});
    ASSERT_EQ(out.size(), 1u);
    for (std::size_t k = 0; k < in.samples(); ++k) EXPECT_FLOAT_EQ(float(out[0].get(k)), float(in.get(k)) * 2 + 0.5f);
}

TEST_F(@CLASS@Test, CudaMatchesCpu) {
    PIXFLOW_REQUIRE_CUDA();
    Image in = Image::make(640, 480, 1, pixflow::DType::f32);
    pixflow::testing::fill_random(in, 2);
    pixflow::testing::expect_backends_agree("@NAME@", {&in}, {{"gain", "3"}}, 1e-6);
}
)";

const char* k_toml = R"(# A pipeline that uses @NAME@:  pixflow --plugin-path build/plugins run @NAME@.toml
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
    fs::create_directories(dir);
    std::vector<std::pair<std::string, const char*>> files = {
        {"CMakeLists.txt", k_cmake}, {name + ".hpp", k_hpp},        {name + ".cpp", k_cpp},
        {name + ".cu", k_cu},        {name + "_test.cpp", k_test}, {name + ".toml", k_toml}};
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
