// cuda_event_timing.cuh: the timing of the standalone CUDA harnesses (plugins/*/test/bench/*.cu):
// the median of `reps` launches of f, each timed with a pair of CUDA events on the default stream,
// after `warmups` untimed launches. Every CUDA call is checked (PIXFLOW_CUDA_CHECK).
#pragma once

#include <pixflow/cuda.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace pixflow::harness {

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
