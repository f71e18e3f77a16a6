// The host overhead of Pipeline::run(): a 3-node CUDA chain (gauss5x5 three times) on a 256x256 RGB
// u8 image whose input and output are device memory of this program, on its own CUDA stream.
//
// Each timed run: t0, run() (it enqueues and returns), t1, wait for the stream, t2. The kernels'
// time is the sum of the three nodes' GPU times (CUDA events around each launch, from report()).
//   overhead = (t2 - t0) - kernels   the time a run costs beyond its kernels: pixflow's host
//                                    work, launch latency and the gaps between the kernels
//   enqueue  = t1 - t0               what the calling thread spends in run()
// Medians over the timed runs, after warm-up runs.
//
// usage: bench_api [runs] [report.json]     (scripts/gpu-check.sh run calls it)
#include <pixflow/pixflow.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* expr, const char* file, int line) {
    if (e == cudaSuccess) return;
    std::fprintf(stderr, "CUDA error: %s failed with %s at %s:%d\n", expr, cudaGetErrorString(e), file, line);
    std::exit(2);
}
#define CHECK(expr) check((expr), #expr, __FILE__, __LINE__)

const char* const kChain = R"(
[nodes.src]
op = "memory"
[nodes.a]
op = "gauss5x5"
input = "src"
[nodes.b]
op = "gauss5x5"
input = "a"
[nodes.c]
op = "gauss5x5"
input = "b"
)";

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
    const int warmup = 100, width = 256, height = 256, channels = 3;
    try {
        pixflow::Engine engine;
        if (!engine.cuda_available()) {
            std::printf("bench_api: no usable CUDA device; nothing measured\n");
            return 3;
        }
        CHECK(cudaSetDevice(0));
        cudaStream_t stream;
        CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        void *d_in = nullptr, *d_out = nullptr;
        std::size_t pitch_in = 0, pitch_out = 0;
        CHECK(cudaMallocPitch(&d_in, &pitch_in, std::size_t(width) * channels, height));
        CHECK(cudaMallocPitch(&d_out, &pitch_out, std::size_t(width) * channels, height));
        std::vector<unsigned char> h_in(std::size_t(width) * channels * height);
        for (std::size_t k = 0; k < h_in.size(); ++k) h_in[k] = static_cast<unsigned char>((k * 2654435761u) >> 24);
        CHECK(cudaMemcpy2DAsync(d_in, pitch_in, h_in.data(), std::size_t(width) * channels,
                                std::size_t(width) * channels, height, cudaMemcpyHostToDevice, stream));

        pixflow::ImageView in, out;
        in.width = out.width = width;
        in.height = out.height = height;
        in.channels = out.channels = channels;
        in.dtype = out.dtype = pixflow::DType::u8;
        in.device = out.device = 0;
        in.pitch = std::int64_t(pitch_in);
        out.pitch = std::int64_t(pitch_out);
        in.data = d_in;
        out.data = d_out;
        {
            pixflow::Pipeline pipeline = engine.load_string(kChain, "bench_api.toml");
            pipeline.input("src", in).output("c", out).stream(stream);

            using Clock = std::chrono::steady_clock;
            auto us = [](Clock::time_point a, Clock::time_point b) {
                return std::chrono::duration<double, std::micro>(b - a).count();
            };
            std::vector<double> overhead, enqueue, total, kernels;
            for (int k = 0; k < warmup + runs; ++k) {
                auto t0 = Clock::now();
                pipeline.run();
                auto t1 = Clock::now();
                CHECK(cudaStreamSynchronize(stream));
                auto t2 = Clock::now();
                if (k < warmup) continue;
                double kernel_us = 0;
                for (const auto& n : pipeline.report().nodes)
                    if (n.backend == "cuda") kernel_us += n.ms * 1e3;
                enqueue.push_back(us(t0, t1));
                total.push_back(us(t0, t2));
                kernels.push_back(kernel_us);
                overhead.push_back(us(t0, t2) - kernel_us);
            }
            std::string device = pipeline.report().device;
            std::printf("device: %s\n", device.c_str());
            std::printf(
                "api run(): 3 x gauss5x5 (cuda), %dx%d u8 x%d, device in and out, caller stream; median of %d runs\n",
                width, height, channels, runs);
            std::printf("  run() + wait: %.1f us, kernels: %.1f us, enqueue (run() alone): %.1f us\n", median(total),
                        median(kernels), median(enqueue));
            std::printf("api host overhead: %.1f us per run (target <= 20 us)\n", median(overhead));
            if (argc > 2) {
                std::ofstream o(argv[2]);
                o << "{\"device\": \"" << device << "\", \"runs\": " << runs
                  << ", \"overhead_us\": " << median(overhead) << ", \"run_and_wait_us\": " << median(total)
                  << ", \"kernels_us\": " << median(kernels) << ", \"enqueue_us\": " << median(enqueue) << "}\n";
            }
        } // the pipeline goes before the memory and the stream it uses
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
        CHECK(cudaStreamDestroy(stream));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
}
