// cuda_check.hpp: the framework's check of a CUDA runtime call (device.cpp, copy_2d.cu; operators
// use the SDK's PIXFLOW_CUDA_CHECK). Builds with CUDA only.
#pragma once

#include <cuda_runtime.h>

#include <string_view>

namespace pixflow::host {

/// Throws InternalError naming the call (`what`), `file` and `line`, with the runtime's error
/// name and text, when `e` is not cudaSuccess. It reads the runtime's last error first, so that a
/// failure somebody catches is not reported again by a later, innocent launch check.
void check_cuda(cudaError_t e, std::string_view what, const char* file, int line);

} // namespace pixflow::host
