// pixflow/cuda.hpp: helpers for the .cu files of operators.
//
// Every CUDA call and every kernel launch is checked; a failure throws pixflow::Error with the
// expression, the CUDA message and file:line (status PF_ERR_CUDA).
//
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   PIXFLOW_CUDA_CHECK_LAUNCH();
//
// Grids over image rows: gridDim.y holds at most 65535 blocks, fewer than an image may have
// rows. grid_rows() spreads the rows over y and z, and a kernel finds its row with block_row():
//
//   const dim3 grid = pixflow::cuda::grid_rows(blocks_per_row, in.height);   // host
//   const int y = int(pixflow::cuda::block_row());                           // kernel
//   if (y >= in.height) return;   // the last z slice may hold more rows than the image
#pragma once

#include <pixflow/error.hpp>
#include <pixflow/image.hpp>

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace pixflow::cuda {

/// Throws for a failed call. The runtime also keeps a failure as its "last error" until
/// cudaGetLastError() reads it, which would make the next PIXFLOW_CUDA_CHECK_LAUNCH() report this
/// failure again, at a launch that did not fail (even when the throw was caught): it is read here.
inline void check(cudaError_t e, const char* expr, const char* file, int line) {
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw Error(std::string("CUDA error: ") + expr + " failed with " + cudaGetErrorName(e) + " (" +
                        cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line),
                    PF_ERR_CUDA);
    }
}

inline cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }

/// Ceil division for grid sizes.
constexpr unsigned div_up(long long a, long long b) { return unsigned((a + b - 1) / b); }

/// The most blocks gridDim.y (and gridDim.z) may hold.
constexpr unsigned max_grid_y = 65535;

/// A grid of blocks_x x `rows` blocks for any number of rows (1 to 65535^2): the rows are
/// numbered across gridDim.y and gridDim.z; block_row() gives a block its row.
inline dim3 grid_rows(unsigned blocks_x, long long rows) {
    const unsigned y = unsigned(rows < 1 ? 1 : rows < max_grid_y ? rows : max_grid_y);
    return dim3(blocks_x, y, div_up(rows < 1 ? 1 : rows, y));
}

#if defined(__CUDACC__)
/// Bytes [off, off + 16) of the 32 bytes a:b (a's first), for off in [0, 16): 16 bytes of a row
/// that start `off` bytes into an aligned 16-byte block, from two aligned 16-byte loads (vector
/// access to rows at any byte offset; two selects and four funnel shifts).
__device__ __forceinline__ uint4 byte_window(uint4 a, uint4 b, unsigned off) {
    const bool s8 = off & 8, s4 = off & 4;
    const unsigned sh = (off & 3) * 8;
    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    unsigned c[6], d[5];
#pragma unroll
    for (int j = 0; j < 6; ++j) c[j] = s8 ? w[j + 2] : w[j];
#pragma unroll
    for (int j = 0; j < 5; ++j) d[j] = s4 ? c[j + 1] : c[j];
    return make_uint4(__funnelshift_r(d[0], d[1], sh), __funnelshift_r(d[1], d[2], sh), __funnelshift_r(d[2], d[3], sh),
                      __funnelshift_r(d[3], d[4], sh));
}

/// The row of blocks this block belongs to in a grid from grid_rows(): blockIdx.y + blockIdx.z *
/// gridDim.y. Blocks of the last z slice may lie past the last row: return in those.
__device__ __forceinline__ unsigned block_row() { return blockIdx.y + blockIdx.z * gridDim.y; }
#endif

} // namespace pixflow::cuda

#define PIXFLOW_CUDA_CHECK(expr) ::pixflow::cuda::check((expr), #expr, __FILE__, __LINE__)
#define PIXFLOW_CUDA_CHECK_LAUNCH() PIXFLOW_CUDA_CHECK(cudaGetLastError())
