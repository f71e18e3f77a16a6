// jpeg_cuda.cuh: what the CUDA kernels of the jpeg plugin share (dct.cu, idct.cu, quant.cu,
// roundtrip.cu): the thread layout, wide row loads and stores, and the shared-memory transpose.
//
// Layout, every kernel: a block of 256 threads handles a strip of 32 tiles (8x8 pixel blocks)
// side by side, one tile row tall: 256 x 8 pixels. Thread (lane, r) = (threadIdx.x, threadIdx.y)
// owns row r of tile `lane`, for every channel: 8 pixels x C interleaved samples, which it loads
// and stores as one piece with 8- or 16-byte accesses (8 u8 = one 64-bit load, 8 f32 = two
// float4). A warp is one row r of 32 neighbouring tiles, so its accesses cover 32 x 8 pixels of
// one image row: fully coalesced. The 8-point transforms run in registers, a thread per line;
// between a row pass and a column pass the tile goes through shared memory (transpose), where
// each tile has 65 floats per channel (64 + 1 of padding): a warp writing row r of 32 tiles, or
// reading column r of them, then touches 32 different banks.
//
// Stores: a lane's row piece is 8 C samples; the pieces of a warp's lanes are contiguous. Up to
// 32 bytes per lane (u8, f32 gray) each lane stores its own piece. Wider pieces (f32 with 2 to 4
// channels) leave through shared memory: the tile goes there once more and each warp writes its
// image row of the strip as contiguous 16-byte words, 512 bytes per instruction; a lane storing
// its own 96-byte RGB piece (16 bytes every 96) measured 2x the memory floor.
//
// Constants: the DCT matrix is compiled into the instructions (jpeg_math.hpp). The quantisation
// table and its reciprocals are a kernel argument (QuantTable, 512 bytes): kernel arguments live
// in the constant bank, and the entry a thread reads, Q[v][u] with u = its row r, is the same
// across a warp, so every read is a constant-cache broadcast. (A __constant__ symbol written
// before each launch would be shared by concurrent nodes with different tables; an argument
// belongs to its launch.)
//
// Blocks are numbered linearly (strip + strips * tile row), so heights are limited only by
// 2^31 blocks.
#pragma once

#include "jpeg_math.hpp"
#include "tables.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace pixflow::jpeg::cuda_detail {

constexpr int kLanes = 32;           // tiles per block
constexpr int kThreads = kLanes * 8; // one thread per tile row
constexpr int kTileStride = 65;      // floats per tile and channel in shared memory

/// The transpose buffer of a block: [channel][tile][65].
template <int C> struct Transpose { float v[C][kLanes][kTileStride]; };

/// Where a thread is: its tile (tx, ty), its row r in the tile, its lane (tile in the strip).
struct Place {
    int tx, ty, r, lane;
};
__device__ inline Place place(int strips) {
    const int b = int(blockIdx.x);
    return {(b % strips) * kLanes + int(threadIdx.x), b / strips, int(threadIdx.y), int(threadIdx.x)};
}

/// 8 pixels x C samples of T, also viewable as 8- or 16-byte words for wide accesses.
template <class T, int C> struct RowBuf {
    static constexpr int bytes = 8 * C * int(sizeof(T));
    static constexpr int word = bytes % 16 == 0 ? 16 : 8;
    using Word = std::conditional_t<word == 16, uint4, uint2>;
    static constexpr int words = bytes / word;
    union {
        T s[8 * C];
        Word w[words];
    };
};

/// True when a view allows the wide accesses: 16-byte aligned data and pitch (device buffers
/// from the host have a 256-byte pitch). Tile offsets are multiples of 8 pixels, so every row
/// piece is then aligned to its word size.
inline bool wide_ok(const ImageView& v) { return is_aligned(v, 16); }

/// Loads pixels x0..x0+7 of row y; beyond the last column `width - 1` the last pixel repeats
/// (then, or when !wide, sample by sample).
template <class T, int C>
__device__ inline void load_row(const ImageView& im, int x0, int y, bool wide, RowBuf<T, C>& b) {
    const T* row = im.row<const T>(y);
    if (wide && x0 + 8 <= im.width) {
        const auto* p = reinterpret_cast<const typename RowBuf<T, C>::Word*>(row + x0 * C);
#pragma unroll
        for (int k = 0; k < RowBuf<T, C>::words; ++k) b.w[k] = __ldg(p + k);
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const int x = min(x0 + k, im.width - 1);
#pragma unroll
            for (int c = 0; c < C; ++c) b.s[k * C + c] = row[x * C + c];
        }
    }
}

/// Stores pixels x0..x0+n-1 (n <= 8) of row y.
template <class T, int C>
__device__ inline void store_row(const ImageView& im, int x0, int y, int n, bool wide, const RowBuf<T, C>& b) {
    T* row = im.row<T>(y);
    if (wide && n == 8) {
        auto* p = reinterpret_cast<typename RowBuf<T, C>::Word*>(row + x0 * C);
#pragma unroll
        for (int k = 0; k < RowBuf<T, C>::words; ++k) p[k] = b.w[k];
    } else {
#pragma unroll
        for (int k = 0; k < 8 * C; ++k)
            if (k < n * C) row[x0 * C + k] = b.s[k];
    }
}

/// Warp r of the block stores image row y of its strip from the transpose buffer, where
/// sm.v[c][t][r * 8 + k] holds pixel k of the strip's tile t, channel c (as the transform's
/// float; from_transform<T> converts it). Lane L takes the words L, L + 32, ... of the row piece
/// (8 u8 or 4 f32 samples each), so that every store instruction of the warp writes one
/// contiguous run of 256 or 512 bytes. Pixels from 8 * tx0 up to x_end (exclusive) are written.
template <class T, int C>
__device__ inline void store_row_from_smem(const ImageView& im, const Transpose<C>& sm, int r, int lane, int tx0, int y,
                                           int x_end, bool wide) {
    constexpr int W = sizeof(T) == 1 ? 8 : 4; // samples per word: 8 or 16 bytes
    using Word = std::conditional_t<sizeof(T) == 1, uint2, uint4>;
    T* row = im.row<T>(y) + 8 * tx0 * C;
    const int n = (min(8 * (tx0 + kLanes), x_end) - 8 * tx0) * C; // samples to write
    for (int g = lane; g * W < n; g += kLanes) {
        union {
            T s[W];
            Word w;
        } v;
#pragma unroll
        for (int e = 0; e < W; ++e) {
            const int j = g * W + e, p = j / C, c = j - p * C;
            v.s[e] = from_transform<T>(sm.v[c][p >> 3][r * 8 + (p & 7)]);
        }
        if (wide && g * W + W <= n) {
            *reinterpret_cast<Word*>(row + g * W) = v.w;
        } else {
#pragma unroll
            for (int e = 0; e < W; ++e)
                if (g * W + e < n) row[g * W + e] = v.s[e];
        }
    }
}

/// How a thread's row of 8 pixels x C samples of T leaves the kernel: directly (the lanes' pieces
/// are contiguous, and each piece is at most 32 bytes: u8, f32 gray), or through shared memory
/// with store_row_from_smem (f32 with 2 to 4 channels: 64 to 128 bytes per lane).
template <class T, int C> constexpr bool kStoreViaSmem = 8 * C* int(sizeof(T)) > 32;

/// Thread (lane, r) of an inverse kernel holds the pixels `px` of row r of its tile; stores them
/// (converted to T) into row y, cropped to the image: directly, or through the transpose buffer
/// (which must be free: a barrier since its last read) and one more barrier.
template <class T, int C>
__device__ inline void store_pixels(const ImageView& out, Transpose<C>& sm, const Place& p, int nbx, bool wide,
                                    const float (&px)[C][8]) {
    const int y = 8 * p.ty + p.r;
    if constexpr (kStoreViaSmem<T, C>) {
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
            for (int k = 0; k < 8; ++k) sm.v[c][p.lane][p.r * 8 + k] = px[c][k];
        __syncthreads();
        if (y < out.height) store_row_from_smem<T, C>(out, sm, p.r, p.lane, p.tx - p.lane, y, out.width, wide);
    } else {
        if (p.tx >= nbx || y >= out.height) return;
        RowBuf<T, C> dst;
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
            for (int k = 0; k < 8; ++k) dst.s[k * C + c] = from_transform<T>(px[c][k]);
        store_row<T, C>(out, 8 * p.tx, y, min(8, out.width - 8 * p.tx), wide, dst);
    }
}

/// Zeros samples [from, to) of row y.
template <class T> __device__ inline void zero_samples(const ImageView& im, int y, int from, int to) {
    T* row = im.row<T>(y);
    for (int k = from; k < to; ++k) row[k] = T(0);
}

/// Row pass result in, column out: thread (lane, r) gives line r of its tile (a[c][k], k along
/// the row) and gets column r back (b[c][k], k down the column). Two barriers: the buffer is
/// free again when this returns.
template <int C>
__device__ inline void transpose(Transpose<C>& sm, int lane, int r, const float (&a)[C][8], float (&b)[C][8]) {
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
        for (int k = 0; k < 8; ++k) sm.v[c][lane][r * 8 + k] = a[c][k];
    __syncthreads();
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
        for (int k = 0; k < 8; ++k) b[c][k] = sm.v[c][lane][k * 8 + r];
    __syncthreads();
}

// ---- the stages of the transforms, shared by the separate and the fused kernels --------------
//
//   dct.cu        forward_dct (forward_rows, column fdct8) -> (coefficients out)
//   idct.cu       (coefficients in) -> column idct8 -> inverse_rows
//   roundtrip.cu  forward_dct -> quantize_dequantize, column idct8 -> inverse_rows
//
// so the fused kernel runs the separate kernels' float operations, in their order, by running
// their code: bit for bit the same result.

/// The first stage of the forward transform: thread (lane, r) loads row r of its tile (the last
/// column and row repeated past the image's edge), level-shifts it, runs the row transform and
/// gets, through shared memory, column r of the result: a[c][y], ready for the column transform
/// (fdct8(a[c], ...) gives F[v][r]). `t` is scratch. Two barriers: the buffer is free again when
/// this returns.
template <class T, int C>
__device__ inline void forward_rows(const ImageView& in, Transpose<C>& sm, const Place& p, int nbx, bool wide_in,
                                    float (&a)[C][8], float (&t)[C][8]) {
    const int tx = min(p.tx, nbx - 1); // threads past the last tile compute a copy, store nothing
    RowBuf<T, C> src;
    load_row<T, C>(in, 8 * tx, min(8 * p.ty + p.r, in.height - 1), wide_in, src);
#pragma unroll
    for (int c = 0; c < C; ++c) {
#pragma unroll
        for (int k = 0; k < 8; ++k) a[c][k] = level_shift(src.s[k * C + c]);
        fdct8(a[c], t[c]); // row r: t[c][u]
    }
    transpose<C>(sm, p.lane, p.r, t, a); // a[c][y] = column u = r
}

/// The whole forward transform: forward_rows, then for each channel c the column transform, after
/// which t[c][v] = F[v][r] (coefficients of column r), and `column(c)`: what the kernel does with
/// them (dct.cu stores them, roundtrip.cu quantises them and starts the inverse). A device
/// lambda, inlined: the kernels keep their one loop over channels.
template <class T, int C, class Column>
__device__ inline void forward_dct(const ImageView& in, Transpose<C>& sm, const Place& p, int nbx, bool wide_in,
                                   float (&a)[C][8], float (&t)[C][8], Column&& column) {
    forward_rows<T, C>(in, sm, p, nbx, wide_in, a, t); // a[c][y]: column r
#pragma unroll
    for (int c = 0; c < C; ++c) {
        fdct8(a[c], t[c]); // t[c][v] = F[v][r]
        column(c);
    }
}

/// The last stage of the inverse transform: from column r of the tile after the inverse column
/// transform (a[c][y]), row r through shared memory and the inverse row transform: the pixels of
/// row r, left in a[c][x]. `t` is scratch. Two barriers: the buffer is free again when this
/// returns.
template <int C>
__device__ inline void inverse_rows(Transpose<C>& sm, const Place& p, float (&a)[C][8], float (&t)[C][8]) {
    transpose<C>(sm, p.lane, p.r, a, t); // t[c][u]: row r
#pragma unroll
    for (int c = 0; c < C; ++c) idct8(t[c], a[c]); // pixels of row r
}

/// Launch shape: strips of 32 tiles, one block per strip and tile row.
struct Launch {
    int strips;
    unsigned blocks;
};
inline Launch launch_for(int tiles_x, int tiles_y) {
    const int strips = (tiles_x + kLanes - 1) / kLanes;
    const long long blocks = (long long)strips * tiles_y;
    if (blocks > 0x7FFFFFFFLL)
        throw UserError("jpeg: image too large for one launch (" + std::to_string(tiles_x) + "x" +
                            std::to_string(tiles_y) + " tiles)",
                        PF_ERR_UNSUPPORTED);
    return {strips, unsigned(blocks)};
}

} // namespace pixflow::jpeg::cuda_detail
