// cuda_harness.cuh: what the standalone CUDA harnesses (plugins/*/test/bench/*.cu) share: a device
// buffer, the random bands of rows their strip checks run in, and their timing (the median of
// `reps` launches, each timed with a pair of CUDA events on the default stream, after `warmups`
// untimed launches). Every CUDA call is checked (PIXFLOW_CUDA_CHECK).
#pragma once

#include <pixflow/cuda.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

namespace pixflow::harness {

/// n bytes of device memory (at least 1), freed with the buffer.
struct Dev {
    void* p = nullptr;
    explicit Dev(std::size_t n) { PIXFLOW_CUDA_CHECK(cudaMalloc(&p, n ? n : 1)); }
    ~Dev() { cudaFree(p); }
    Dev(const Dev&) = delete;
};

/// The heights of the bands of rows a check of h rows runs in: random ones of 1 to h / 2 rows
/// that add up to h when `strips`, else one band of h.
inline std::vector<int> random_bands(int h, bool strips, std::mt19937& rng) {
    std::vector<int> bands;
    if (!strips) return {h};
    for (int y = 0; y < h;) {
        int b = 1 + int(rng() % std::max(1, h / 2));
        if (y + b > h) b = h - y;
        bands.push_back(b);
        y += b;
    }
    return bands;
}

inline float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// Milliseconds: the median of `reps` timed launches of f, after `warmups` untimed ones.
template <class F> float time_it(F&& f, int reps, int warmups = 3) {
    cudaEvent_t a, b;
    PIXFLOW_CUDA_CHECK(cudaEventCreate(&a));
    PIXFLOW_CUDA_CHECK(cudaEventCreate(&b));
    for (int i = 0; i < warmups; ++i) f();
    PIXFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < reps; ++i) {
        PIXFLOW_CUDA_CHECK(cudaEventRecord(a));
        f();
        PIXFLOW_CUDA_CHECK(cudaEventRecord(b));
        PIXFLOW_CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        PIXFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        ts.push_back(ms);
    }
    PIXFLOW_CUDA_CHECK(cudaGetLastError());
    PIXFLOW_CUDA_CHECK(cudaEventDestroy(a));
    PIXFLOW_CUDA_CHECK(cudaEventDestroy(b));
    return median(ts);
}

} // namespace pixflow::harness
