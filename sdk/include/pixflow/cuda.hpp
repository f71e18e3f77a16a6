// pixflow/cuda.hpp: helpers for the .cu files of operators.
//
// Every CUDA call and every kernel launch is checked; a failure throws pixflow::Error with the
// expression, the CUDA message and file:line (status PF_ERR_CUDA).
//
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   PIXFLOW_CUDA_CHECK_LAUNCH();
#pragma once

#include <pixflow/error.hpp>
#include <pixflow/image.hpp>

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace pixflow::cuda {

inline void check(cudaError_t e, const char* expr, const char* file, int line) {
    if (e != cudaSuccess)
        throw Error(std::string("CUDA error: ") + expr + " failed with " +
                        cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " + file + ":" +
                        std::to_string(line),
                    PF_ERR_CUDA);
}

inline cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }

/// Ceil division for grid sizes.
constexpr unsigned div_up(long long a, long long b) { return unsigned((a + b - 1) / b); }

} // namespace pixflow::cuda

#define PIXFLOW_CUDA_CHECK(expr) ::pixflow::cuda::check((expr), #expr, __FILE__, __LINE__)
#define PIXFLOW_CUDA_CHECK_LAUNCH() PIXFLOW_CUDA_CHECK(cudaGetLastError())
