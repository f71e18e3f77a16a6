// Sobel on the GPU. Each thread block computes a 32x8 tile of pixels (all channels); the tile
// plus a one-pixel apron is staged in shared memory with coalesced row loads, so every input
// sample is read from global memory once per tile. The rows of tiles are spread over the grid's
// y and z (cuda::grid_rows), so any height works.
#include "sobel.hpp"

#include <pixflow/cuda.hpp>

namespace sobel {
namespace {

constexpr int TX = 32, TY = 8, MAXC = 4;

__global__ void sobel_kernel(pixflow::ImageView in, pixflow::ImageView out, float scale) {
    __shared__ unsigned char tile[TY + 2][(TX + 2) * MAXC];
    const int C = in.channels, W = in.width, H = in.height;
    const int x0 = blockIdx.x * TX, y0 = int(pixflow::cuda::block_row()) * TY;
    if (y0 >= H) return; // past the last row of tiles: the whole block leaves
    // Stage (TY+2) rows of (TX+2)*C samples, borders replicated.
    for (int r = threadIdx.y; r < TY + 2; r += TY) {
        int y = min(max(y0 + r - 1, 0), H - 1);
        const unsigned char* row = in.row<unsigned char>(y);
        for (int s = threadIdx.x; s < (TX + 2) * C; s += TX) {
            int x = min(max(x0 + s / C - 1, 0), W - 1);
            tile[r][s] = row[x * C + s % C];
        }
    }
    __syncthreads();
    const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= W || y >= H) return;
    for (int c = 0; c < C; ++c) {
        int p[9];
        for (int j = 0; j < 3; ++j)
            for (int i = 0; i < 3; ++i) p[j * 3 + i] = tile[threadIdx.y + j][(threadIdx.x + i) * C + c];
        out.row<unsigned char>(y)[x * C + c] = sobel_sample(p, scale);
    }
}

} // namespace

void sobel_cuda(const pixflow::ImageView& in, const pixflow::ImageView& out, float scale, void* stream) {
    const dim3 block(TX, TY);
    const dim3 grid =
        pixflow::cuda::grid_rows(pixflow::cuda::div_up(in.width, TX), pixflow::cuda::div_up(in.height, TY));
    sobel_kernel<<<grid, block, 0, pixflow::cuda::stream_of(stream)>>>(in, out, scale);
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace sobel
