// copy_2d_kernel.cuh: the kernel of copy_2d.cu (see there), in a header of its own so that
// scripts/bench/copy2d.cu times and checks this code against cudaMemcpy2DAsync.
#pragma once

#include <pixflow/cuda.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace pixflow::host::detail {

__global__ void copy_2d_kernel(std::uint8_t* dst, long long dpitch, const std::uint8_t* src, long long spitch,
                               long long row_bytes, long long rows, long long nb) {
    const long long n = rows * nb, stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long y = i / nb, b = i % nb;
        std::uint8_t* d = dst + y * dpitch;
        const std::uint8_t* s = src + y * spitch;
        std::uint8_t* db = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(d) & ~std::uintptr_t(15)) +
                                                           std::uintptr_t(16 * b));
        const long long o = db - d; // the row's byte at db (negative: before the row)
        if (o >= row_bytes) continue;
        const std::uint8_t* sb = s + o;
        const unsigned sh = unsigned(reinterpret_cast<std::uintptr_t>(sb) & 15u);
        const std::uint8_t* sa = sb - sh;
        if (o >= 0 && o + 16 <= row_bytes && sa >= s && sa + (sh ? 32 : 16) <= s + row_bytes) {
            const uint4 a = __ldg(reinterpret_cast<const uint4*>(sa));
            const uint4 c = sh ? __ldg(reinterpret_cast<const uint4*>(sa + 16)) : a;
            *reinterpret_cast<uint4*>(db) = pixflow::cuda::byte_window(a, c, sh);
            continue;
        }
#pragma unroll 1
        for (int k = 0; k < 16; ++k)
            if (o + k >= 0 && o + k < row_bytes) db[k] = sb[k];
    }
}

/// Launches the copy of `rows` rows of `row_bytes` bytes on `stream`; the launch's status.
inline cudaError_t launch_copy_2d(void* dst, long long dst_pitch, const void* src, long long src_pitch,
                                  std::size_t row_bytes, int rows, cudaStream_t stream) {
    if (rows <= 0 || row_bytes == 0) return cudaSuccess;
    const long long nb = (long long)(row_bytes + 15) / 16 + 1, n = (long long)rows * nb;
    constexpr int threads = 256;
    const long long blocks = std::min<long long>((n + threads - 1) / threads, 1 << 20); // then grid-stride
    copy_2d_kernel<<<unsigned(blocks), threads, 0, stream>>>(static_cast<std::uint8_t*>(dst), dst_pitch,
                                                             static_cast<const std::uint8_t*>(src), src_pitch,
                                                             (long long)row_bytes, rows, nb);
    return cudaGetLastError();
}

} // namespace pixflow::host::detail
