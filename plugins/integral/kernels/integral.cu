// integral.cu: CUDA kernels of integral.
//
// u8 -> u32 (issue 18): one pass, "decoupled look-back" between tiles (Merrill & Garland's
// single-pass scan, in 2D). Tiles of 512 x TH pixels (TH = lb_rows: 89, 48, 31, 22 rows for 1-4
// channels; for 2-4 channels as many as let 4 blocks share an SM's shared memory; a half or a
// quarter of that on smaller images, lb_split), taken in
// row-major order from an atomic ticket; one block of 4 compute warps and a z warp per tile. The
// block copies its tile's input into shared memory (cp.async; the input is read from DRAM once),
// publishes its row sums and column sums, looks back along x for each row's sum left of the tile
// and along y for each column's sum above it, gets the corner (everything above and left) from
// the tile row above, and writes out(x, y) = local + carries + corner once. See
// integral_lookback_kernel.
// Scratch: per tile the aggregate and then the inclusive prefix of its 512 * C column values,
// TH * C row values and C corner values (z): rows and z one value to a 64-bit Slot with its
// status, so that a reader needs no fence; the columns' aggregates four to a Slot, their
// inclusive prefixes in a plain array behind a flag per tile (LookBack); and a ticket. The slots,
// flags and ticket are cleared by a memset before a launch, unless they lie in memory the node
// keeps and the launch before on it had the same layout (Tags, launch_lookback).
// Measured on an H100 (harness of 2026-11-27: the old and new kernels and a device-to-device copy
// of the floor's bytes in one run, 3 rounds of medians of 25), 8192 x 8192 x 3 u8 -> u32, floor
// 1.007 GB = 0.339 ms at the copy's 2.97 TB/s: 0.484-0.492 ms, 1.42-1.44x, against 0.506-0.509 ms
// (1.49x) for reduce-then-scan. The 1.2x target is not reached: with the tile held in shared
// memory only 4 tiles fit an SM (about 490 in flight), and a tile lives 54 us (globaltimer stamps,
// mean over the 4240 tiles: load 3.8, sums 6.5, look-backs 20.6, corner 6.6, output 16.4 us), so
// tiles complete at about 9 per us. The look-backs wait for the flags of neighbours that started
// at the same time; a flag goes up only after a __threadfence, which under the output's store
// traffic takes several microseconds (with the compute warps fencing themselves, the first
// version spent 57 us per tile and ran 0.51 ms; moving the fences to a publisher warp gave 0.49).
// For u64 outputs the same kernel ran 0.91 ms against 0.83 for reduce-then-scan (its tiles are
// shorter and its output phase twice as long), so u64 keeps reduce-then-scan below.
// 2026-11-28: look-backs read a window of predecessors' flags at once, one per lane (look_window,
// as CUB does), and pause 512 ns between polls. Same harness, 3 rounds: gray 0.212 -> 0.192 ms
// (1.82x -> 1.64x the floor; reduce-then-scan 0.204, so before this the look-back was the slower
// of the two for gray), RGB 0.483-0.489 -> 0.479-0.481 ms, 2 and 4 channels level. The windows did
// not shorten RGB's waits (a window of 32 was 4% slower): a tile's look-back waits for flags that
// are not up yet, not on a long walk through aggregates, so its neighbours' progress is the limit.
// 2026-11-28: values published in Slots (value and status in one 64-bit word, as CUB's tile state
// for 32-bit values) instead of behind flags raised after a fence: rows and z for every channel
// count, columns for 1 and 2 channels. H200, same harness, 3 rounds each: RGB 0.411-0.423 ->
// 0.381-0.393 ms, 2 channels 0.281-0.287 -> 0.264-0.265, gray 0.170-0.171 -> 0.166-0.170, RGBA
// 0.534-0.542 -> 0.530-0.536 (the corner's wait: 5.3 -> 2.8 us a tile for RGB). Columns of 3 and 4
// channels in slots were slower (RGB 0.445, RGBA 0.78 ms): twice the bytes per look-back.
//
// 2026-11-29: the pause between polls does not matter: harness built with 0, 128, 256 and 512 ns
// (PIXFLOW_INTEGRAL_BACKOFF_NS), alternating on one H200: RGB 0.381-0.390 ms, gray 0.148-0.151,
// RGBA 0.522-0.530, 2 channels 0.269-0.274 for every value. A tile lives 43.6-44.3 us (RGB: load
// 3.8, sums 8.2, look-backs 10.0-10.4, corner 3.1, output 18.6 us) with 497 of the 528 that fit
// in flight, and the kernel moves 2.64 TB/s where a copy moves 4.2. Then the output phase lost its
// barriers (a warp scan plus the warps' row sums kept in `part` since step 2, instead of a block
// scan per two rows): harness, same card, f0efa7a frozen beside it, 3 rounds: output phase RGB
// 18.8 -> 16.2 us, RGBA 20.7 -> 13.4 us, a tile's life 44.6 -> 39.6 (RGBA 45.2 -> 38.3) us, but
// the tiles in flight fell with it (500 -> 457, 499 -> 463) and the times stayed: RGB 0.387-0.394
// -> 0.386-0.392 ms, RGBA 0.529-0.540 -> 0.517-0.527, gray 0.150-0.152 -> 0.152-0.153, 2
// channels 0.279-0.282 -> 0.282-0.283. So the rate is not the tiles' life over the room for
// them: tiles wait to start on a ticket that advances as fast as the look-backs down the image
// let the tile rows complete (about 1.4 us a tile row for RGB, 265 rows: 0.37 ms). Kept: the
// same bits (414 harness cases, racecheck 0 on 340), fewer barriers.
// 2026-11-29 (later): the z warp no longer waits for the tiles to its left (it could outlast the
// compute warps and hold the block's slot); it publishes z's inclusive prefix only if they have,
// and the corner walks the aggregates otherwise. H200 harness, 3 rounds: RGB 0.383-0.386 ->
// 0.377-0.379 ms, RGBA 0.514-0.518 -> 0.504-0.505, gray and 2 channels level. Persistent blocks
// (a ticket loop, 4 blocks an SM) were slower everywhere (RGB 0.400, gray 0.215 ms; not kept).
// 2026-11-29 (third): Nsight Compute's stall samples by SASS line (scripts/gpu-profile.sh
// DETAIL=integral_lookback, RGB) put 66% of the instructions and 46% of the warps' time in the
// output phase and 17% of the time in the sums, much of it waiting on shuffles, and 45% of the
// shared stores in bank conflicts (put_row's 12 scalar stores a row). Now the output goes
// through the staging area as 16-byte vectors (put_row_vec) and its row scan shuffles two
// values a register (warp_exclusive_u16); the sums take 8 rows at once (warp_sums: 9 shuffles
// where 40 were). Harness, ae0f4a8 frozen beside it, 3 rounds: RGB 0.380-0.383 -> 0.354-0.357 ms
// (1.58x -> 1.47-1.49x the copy), gray 0.152-0.155 -> 0.142-0.145, RGBA 0.509-0.514 ->
// 0.489-0.491, 2 channels 0.273 -> 0.256-0.257; the sums phase 7.2 -> 2.7 us a tile (RGB). Then
// one value per channel added in the output (80 registers for RGB, 54 for gray) and the column
// depths 2 (RGB) and 1 (gray): RGB 0.340-0.345 ms (1.41-1.43x), gray 0.132, RGBA 0.466-0.471.
// What was left was the column look-back: thread 0 walked 6.5 predecessors in 10 us, two round
// trips each (a flag, then 6 KB of aggregates), back to the nearest published inclusive prefix.
// 2026-11-29 (fourth): the aggregates packed four to a Slot with their status (no fence, no flag;
// 2 predecessors' a round trip), the row look-back moved to the z warp beside the column
// look-back, the inclusive prefixes' flag raised past the block scan by a release store alone,
// gray tiles of 89 rows. Harness, 2f3444b frozen beside it, 3 rounds: RGB 0.336-0.340 ->
// 0.319-0.320 ms (1.33x the copy), gray 0.128 -> 0.122-0.125, RGBA 0.466-0.471 -> 0.433-0.436,
// 2 channels 0.246-0.251 -> 0.228-0.231. The column look-back is now 7.2 us over 6.3
// predecessors, at 1.5-1.8 us a dependent round trip under the kernel's own traffic; a tile
// lives 35 us (38 before), 490 in flight (docs/performance.md).
// 2026-11-29 (fifth): the row carries go from the z warp to the compute warps in shared memory
// (level to 1% faster). The corner (3.5-4 us of step 4) waits for its data, the slowest of the
// tiles of the row above to its left: looked back by the z warp, first or after its rows, it is
// no sooner; looked back along y over each tile's row carries it is 3-7% slower (a chain along
// y slower than the tile rows; docs/performance.md).
// 2026-11-29 (sixth): the inclusive column prefixes stored vector-major (store_vec/add_vec):
// each warp access 512 contiguous bytes; harness against d36ada8: RGB 0.3217-0.3250 ->
// 0.3197-0.3221 ms, RGBA and 2 channels 0.3-0.6% faster, gray level.
// 2026-12-01: where the rest goes (H200, RGB; docs/performance.md, twenty-sixth session): the
// kernel moves 5% more DRAM bytes than a copy of its tiles (its scratch, written back by L2:
// ncu), the memset takes 9 us (0.037x), and a tile row completes every 1.08-1.12 us in the steady
// state, 1.18-1.23x the copy's rate. Measured and left out: the output rows by TMA bulk copies
// (1.46x: a warp waits for its copy to have read its one staging buffer) and a clear kernel that
// launches this one behind it with programmatic dependent launch (level).
// 2026-12-01 (later): what the scratch's bytes cost: each tile dropping the column scratch of the
// tile 1-8 tile rows above it from L2 unwritten (discard.global.L2; a probe with no safe rule,
// branch next/integral-discard) made RGB 0.5-1% faster and gray level (docs/performance.md).
// 2026-12-01 (thirtieth session): four more designs built, byte-exact and slower or level (H200,
// same harness; docs/performance.md): the tile in L2 instead of shared memory, read twice (RGB
// 1.55x against 1.32x), two row groups of 4 warps a tile (RGB 1.49x, 2 channels 1-2% faster),
// the last tile rows at half or a quarter of the height (every setting slower) and 8-32 more
// rows a tile in registers (RGB 1.50x with spills, 2 channels 1% faster without); on the output
// phase, the row carries added into `part` once (level) and the rows stored from registers
// without the staging area (kept for gray only: put_row_vec).
// 2026-12-01 (thirty-first session): column strips walking down the image (a block a strip of 32
// pixels, column carries kept in the block, a look-back along x a row; strip_harness.cu): correct
// and 4-5.6x the copy, and its access pattern alone, copied with nothing computed, is 1.30-1.37x
// (1.15x at best with the strips kept within two iterations of each other; 64-pixel strips 1.19x)
// where row-major tiles copy at 1.05-1.07x: not pursued; other tile shapes through this kernel's tile path (64 x 248 to
// 1024 x 15) copy within 1% of 512 x 31 (docs/performance.md).
// 2026-12-01 (thirty-third session): the slots, flags and ticket in memory the node keeps between
// launches (ABI 1.6, pf_host.persistent), each launch's statuses tagged with its epoch (Tags), so
// a launch of the layout seen last needs no memset (launch_lookback). test/bench/kept_check.cu,
// H200, one run: RGB 0.3214-0.3227 -> 0.3157-0.3175 ms (1.316-1.330x -> 1.293-1.308x the copy),
// gray 0.1226-0.1243 -> 0.1176-0.1186 ms; byte-exact over launches on new images, and a forged
// epoch is caught (docs/performance.md).
//
// Other integer outputs (u16 and u32 inputs, and u8 -> u64): "reduce, then scan", over tiles of
// tile_w x th = 512 x 128 pixels (th = tiles_rows: 64, 32 or 16 for images of fewer than 1024
// such tiles; 2026-11-29, H200: 1920 x 1080 x 3 135 -> 44 us, 512 x 512 x 3 123 -> 31 us, 8192^2
// unchanged), one 128-thread block per tile. Thread t of a block owns pixels 4t .. 4t+3 of each
// row of its tile (K = 4 * C consecutive samples), so a row of a tile is 128 * K samples.
//   1. tile_sums:  each block walks down its tile once and writes, for each column of the tile,
//                  the column's sum over the tile's rows (d_col[ty][x]) and, for each row, the
//                  row's sum over the tile's columns (d_row[tx][y]). Reads the input once.
//   2. scan_col_rows: one block per row of d_col: inclusive prefix sum along x, per channel.
//   3. carry_scan: one thread per column of d_col and of d_row: exclusive prefix sum down it.
//                  Now d_col[ty][x] is the integral of everything above tile row ty at x
//                  ("top"), and d_row[tx][y] the sum of row y left of tile column tx ("left").
//   4. integral_tiles: each block walks down its tile again: per row, a block-wide scan along
//                  the row (plus "left"), added into per-thread column sums that start at "top";
//                  writes each output sample once.
// Bytes moved: input read twice, output written once, plus d_col (1/128 of the output: written,
// read and written, read) and d_row (1/512). For 8192 x 8192 x 3 u8 -> u32: 2 * 201 + 805 +
// about 30 MB = 1.24 GB against a floor (input read once, output written once) of 1.01 GB, 1.23x.
// Measured on an H100 (gpu_check harness, median of 20, floor = 1.01 GB at the 3.0 TB/s of a
// device-to-device copy, 0.335 ms): 0.52 ms, 1.55x the floor; u8 -> u64 0.86 ms, 1.43x. Kernel
// times under ncu: tile_sums 107 us (1.9 TB/s: latency-bound, few loads in flight), scan 18 us,
// carry 10 us, integral_tiles 387 us (2.6 TB/s).
// Change of 2026-11-23 (issue 18): tile_sums had one row of input in flight per thread (12
// bytes for RGB u8, about 12 KB per SM: 1.85 TB/s means about 0.86 us of loaded latency, and
// 2.9 TB/s at that latency needs about 19 KB per SM). Now every tile kernel keeps fetch_depth = 4
// rows in flight per thread (a ring of registers, indexed by constants), and asks for 8 blocks
// per SM (64 registers) where ptxas reports no spills, so that the 1024 tiles of 8192 x 8192 stay
// one wave on 132 SMs. Measured on the H100 (3 new/old pairs in one run, median of 20 each):
// u8 -> u32 0.503-0.511 ms (1.45-1.46x the floor) against 0.524-0.527 ms (1.51-1.53x); u8 -> u64
// 0.837 against 0.869 ms; under ncu tile_sums 109 -> 89 us, integral_tiles unchanged (381 us,
// DRAM-bound on its own bytes). This design cannot reach 1.2x whatever the kernels do: the second
// read of the input alone costs 0.069 ms at the copy rate (docs/performance.md, "integral").
// Any order of integer additions gives the same bits (modulo 2^32 or 2^64), so this matches the
// CPU's order exactly.
//
// Strips (a band of a larger image, `above` given): carry_scan starts each column of d_col at the
// output row above the band instead of 0 (integers), the look-back kernel adds it to each
// column's start, col_scan_seq starts from it (f64); the band's last output row is then copied
// into `last`, the state for the next band.
//
// f64 outputs: the additions must happen in the order integral.hpp defines (along each row,
// then down each column), so the tile decomposition above, which regroups them, cannot be used:
//   1. row_scan_seq: one block per 32 rows; chunks of 32 x 32 pixels go through shared memory
//      (coalesced loads and stores), where thread (row, channel) continues its running sum
//      across the chunk, left to right.
//   2. col_scan_seq: one thread per column (sample), walking down the rows with a running sum;
//      a warp's loads and stores are 32 consecutive samples of a row.
// Bytes moved: input read once, output written, then read and written again: 3x the output.
// Measured on an H100 for 8192 x 8192 x 3: f32 -> f64 2.09 ms, 2.6x the floor; u8 -> f64
// 1.92 ms, 3.2x.
#include "integral.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

#include <cub/block/block_scan.cuh>

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

namespace pixflow::integral {
namespace {

// ---- integer outputs: reduce, then scan ------------------------------------------------------

constexpr int block_threads = 128;
constexpr int warps = block_threads / 32;
constexpr int px_per_thread = 4;
constexpr int tile_w = block_threads * px_per_thread; // pixels
constexpr int tile_h = 128;                           // rows, at most (tiles_rows)
/// Rows of input each thread has in flight while it works on one (tile_sums, integral_tiles):
/// one row was too few to keep DRAM busy (see the design note).
constexpr int fetch_depth = 4;
/// Blocks per SM the tile kernels ask registers for: 8 (64 registers) where that costs no
/// spills (checked with --resource-usage), so that the 1024 tiles of an 8192 x 8192 image run
/// in one wave on an H100's 132 SMs; otherwise whatever the compiler needs.
template <class T, class U, int C> constexpr int min_blocks = sizeof(T) * sizeof(U) * C <= 12 ? 8 : 1;
static_assert(32 % fetch_depth == 0 && fetch_depth % 2 == 0, "rows go in groups of 32, scans alternate");

/// One pixel's worth of running sums: C channels. BlockScan scans these.
template <class U, int C> struct Vec { U v[C]; };
template <class U, int C> __device__ __forceinline__ Vec<U, C> operator+(const Vec<U, C>& a, const Vec<U, C>& b) {
    Vec<U, C> r;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = a.v[c] + b.v[c];
    return r;
}

/// Per-thread sizes for input T, output U and C channels: K samples, and the 32-bit words they
/// occupy in the input (in_words) and the output (out_words). K * sizeof(T) is a multiple of 4
/// for every T since K = 4 * C.
template <class T, class U, int C> struct Shape {
    static constexpr int K = px_per_thread * C;
    static constexpr int in_words = K * int(sizeof(T)) / 4;
    static constexpr int out_words = K * int(sizeof(U)) / 4;
    static constexpr int max_words = in_words > out_words ? in_words : out_words;
    /// Words of a warp's staging area: 32 * max_words plus one pad word per 32 (see stage_at).
    static constexpr int stage_words = 33 * max_words;
};

/// Index into a warp's staging area with one pad word after every 32: the striped side (word
/// lane + 32 j) is conflict-free and the blocked side (word lane * n + j) at most 2-way.
__device__ __forceinline__ int stage_at(int w) { return w + (w >> 5); }

/// Starts loading the K samples of this thread from a tile row `seg` (of which `valid`
/// samples exist) into raw 32-bit words. When the input is 4-byte aligned and the warp's whole
/// span is valid, the warp loads its span as consecutive words (fully coalesced), which
/// finish_fetch later transposes; returns true then. Otherwise each thread loads its own
/// samples, guarded, packed little-endian into the same words; returns false.
template <class T, class U, int C>
__device__ __forceinline__ bool start_fetch(const T* seg, int valid, bool aligned,
                                            std::uint32_t (&raw)[Shape<T, U, C>::in_words]) {
    using S = Shape<T, U, C>;
    const int lane = threadIdx.x & 31;
    const int warp_base = (threadIdx.x >> 5) * 32 * S::K;
    if (aligned && warp_base + 32 * S::K <= valid) {
        const std::uint32_t* words = reinterpret_cast<const std::uint32_t*>(seg + warp_base);
#pragma unroll
        for (int j = 0; j < S::in_words; ++j) raw[j] = __ldg(words + lane + 32 * j);
        return true;
    }
    const int base = threadIdx.x * S::K;
#pragma unroll
    for (int j = 0; j < S::in_words; ++j) raw[j] = 0;
#pragma unroll
    for (int k = 0; k < S::K; ++k) {
        constexpr int per_word = 4 / int(sizeof(T));
        if (base + k < valid) raw[k / per_word] |= std::uint32_t(seg[base + k]) << (8 * sizeof(T) * (k % per_word));
    }
    return false;
}

/// Completes start_fetch: transposes striped words through the warp's staging area into this
/// thread's own words, then unpacks them into K samples of type U.
template <class T, class U, int C>
__device__ __forceinline__ void finish_fetch(std::uint32_t (&raw)[Shape<T, U, C>::in_words], bool striped,
                                             std::uint32_t* stage, U (&v)[Shape<T, U, C>::K]) {
    using S = Shape<T, U, C>;
    if (striped) {
        const int lane = threadIdx.x & 31;
#pragma unroll
        for (int j = 0; j < S::in_words; ++j) stage[stage_at(lane + 32 * j)] = raw[j];
        __syncwarp();
#pragma unroll
        for (int j = 0; j < S::in_words; ++j) raw[j] = stage[stage_at(lane * S::in_words + j)];
        __syncwarp(); // the staging area is reused by the next transpose
    }
#pragma unroll
    for (int k = 0; k < S::K; ++k) {
        constexpr int per_word = 4 / int(sizeof(T));
        v[k] = U(T(raw[k / per_word] >> (8 * sizeof(T) * (k % per_word))));
    }
}

/// K output samples as the 32-bit words they occupy (1 or 2 a sample, little-endian).
template <class U, int K>
__device__ __forceinline__ void to_words(const U (&v)[K], std::uint32_t (&w)[K * sizeof(U) / 4]) {
    constexpr int per_sample = int(sizeof(U)) / 4;
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
        for (int h = 0; h < per_sample; ++h) w[k * per_sample + h] = std::uint32_t(std::uint64_t(v[k]) >> (32 * h));
}

/// Stores this thread's K output samples into a tile row `seg` (`valid` samples exist). When
/// the output is 4-byte aligned and the warp's span is whole, the warp transposes through its
/// staging area and stores consecutive words (fully coalesced); otherwise each thread stores
/// its own valid samples.
template <class T, class U, int C>
__device__ __forceinline__ void put_row(U* seg, int valid, bool aligned, std::uint32_t* stage,
                                        const U (&v)[Shape<T, U, C>::K]) {
    using S = Shape<T, U, C>;
    const int lane = threadIdx.x & 31;
    const int warp_base = (threadIdx.x >> 5) * 32 * S::K;
    if (aligned && warp_base + 32 * S::K <= valid) {
        std::uint32_t w[S::out_words];
        to_words(v, w);
#pragma unroll
        for (int i = 0; i < S::out_words; ++i) stage[stage_at(lane * S::out_words + i)] = w[i];
        __syncwarp();
        std::uint32_t* words = reinterpret_cast<std::uint32_t*>(seg + warp_base);
#pragma unroll
        for (int j = 0; j < S::out_words; ++j) words[lane + 32 * j] = stage[stage_at(lane + 32 * j)];
        __syncwarp();
        return;
    }
    const int base = threadIdx.x * S::K;
#pragma unroll
    for (int k = 0; k < S::K; ++k)
        if (base + k < valid) seg[base + k] = v[k];
}

/// put_row for an output whose rows are 16-byte aligned, where the warp's span is whole (the
/// look-back kernel): this thread's K samples go into the warp's staging area as 16-byte vectors
/// and the warp stores its span as consecutive 16-byte vectors, so a row costs a thread
/// out_words / 4 shared stores, shared loads and global stores (3 each for RGB u32) instead of
/// out_words of each. The staging slots are XOR-swizzled where a thread's vectors are a power of
/// two (> 1) apart, so that neither side has bank conflicts (3 apart has none unswizzled). With
/// one vector a thread (gray u32) the staging would be the identity: the thread stores its
/// vector straight from registers (H200, lookback_harness, two runs against f449e55: gray
/// 0.1200-0.1214 ms against 0.1217-0.1246, 1.4-2% faster). Where a thread has several vectors,
/// storing them straight (16 bytes in every 32 or 48, half sectors) was far slower: RGB 1.65x the
/// copy against 1.31x, 2 channels 1.43x against 1.35x (branch next/integral-direct-stores).
template <class U, int C>
__device__ __forceinline__ void put_row_vec(U* seg, std::uint32_t* stage, const U (&v)[Shape<std::uint8_t, U, C>::K]) {
    using S = Shape<std::uint8_t, U, C>;
    constexpr int n = S::out_words / 4;
    static_assert(S::out_words % 4 == 0, "whole 16-byte vectors per thread");
    constexpr bool swizzle = n > 1 && (n & (n - 1)) == 0;
    const auto slot = [](int q) { return swizzle ? q ^ ((q >> 3) & 7) : q; };
    const int lane = threadIdx.x & 31;
    std::uint32_t w[S::out_words];
    to_words(v, w);
    uint4* const dst = reinterpret_cast<uint4*>(seg + (threadIdx.x >> 5) * 32 * S::K); // the warp's span
    if constexpr (n == 1) { // lane l's vector is vector l of the span
        __stcs(dst + lane, make_uint4(w[0], w[1], w[2], w[3]));
        return;
    }
    uint4* const st = reinterpret_cast<uint4*>(stage);
#pragma unroll
    for (int j = 0; j < n; ++j) st[slot(lane * n + j)] = make_uint4(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3]);
    __syncwarp();
    // Streaming stores (st.global.cs, evict-first): the output is never read again here, and the
    // look-backs' slots and prefixes and the tiles' input stay in L2. H200, lookback_harness, two
    // runs against 105e80c (plain stores): RGB 0.3189-0.3203 and 0.3149-0.3168 ms against
    // 0.3227-0.3258 and 0.3175-0.3186, gray 0.5-1.5% faster, RGBA 0-1%, 2 channels about 1%.
#pragma unroll
    for (int j = 0; j < n; ++j) __stcs(dst + lane + 32 * j, st[slot(lane + 32 * j)]);
    __syncwarp(); // the staging area is reused by the next row
}

/// Rows of a reduce-then-scan tile for a width x height image: tile_h, halved (down to 16) while
/// the image has fewer than 1024 tiles. Each block walks its tile's rows one after another, so
/// an image of few tiles is latency-bound on a few SMs: with 128-row tiles a 1920 x 1080 RGB
/// image (36 tiles) took 135 us and 512 x 512 123 us (H200, lookback_harness `sizes`).
inline int tiles_rows(int width, int height) {
    const long long n_tx = cuda::div_up(width, tile_w);
    int th = tile_h;
    while (th > 16 && n_tx * cuda::div_up(height, th) < 1024) th /= 2;
    return th;
}

/// Tile geometry shared by tile_sums and integral_tiles (tiles of tile_w x th pixels).
/// Tile rows are numbered across gridDim.y and gridDim.z (cuda::grid_rows), so any height works;
/// blocks past the last tile row have rows <= 0 and return at once.
struct Tile {
    int x0, y0;  // first pixel
    unsigned ty; // tile row
    int rows;    // rows of the tile inside the image
    int valid;   // samples of a tile row inside the image
    __device__ Tile(int width, int height, int channels, int th) {
        ty = cuda::block_row();
        x0 = blockIdx.x * tile_w;
        y0 = int(ty) * th;
        rows = min(th, height - y0);
        valid = min(tile_w, width - x0) * channels;
    }
};

/// Both tile_sums kernels, after a group of n <= 32 rows: adds the warps' partial row sums left in
/// `part` and writes them to d_row for rows y .. y+n-1 of this block's tile column. Called by the
/// whole block; `part` may be overwritten once it returns.
template <class U, int C>
__device__ void write_row_sums(const U (&part)[32][warps][C], int n, U* d_row, int height, int y) {
    __syncthreads();
    const std::size_t hc = std::size_t(height) * C;
    for (int i = threadIdx.x; i < n * C; i += block_threads) {
        const int r = i / C, c = i - r * C;
        U total = 0;
#pragma unroll
        for (int w = 0; w < warps; ++w) total += part[r][w][c];
        d_row[blockIdx.x * hc + std::size_t(y + r) * C + c] = total;
    }
    __syncthreads();
}

// Kernel 1, for u16 and u32 inputs (u8 has its own, below). Block (tx, ty) reads its tile once,
// top to bottom, prefetching row r + 1 while it adds row r. Each thread keeps K column sums in
// registers. Row sums: each thread adds its
// pixels per channel, a warp shuffle reduces them, and lane 0 leaves the warp's sum in shared
// memory (part[32 rows][warps][C]); every 32 rows the block adds the warps' sums and writes
// d_row. Shared memory: part, and a staging area per warp for the transposing loads.
template <class T, class U, int C>
__global__ void __launch_bounds__(block_threads, min_blocks<T, U, C>)
    tile_sums_kernel(ImageView in, U* d_col, U* d_row, bool aligned, int th) {
    using S = Shape<T, U, C>;
    __shared__ std::uint32_t stage[warps][S::stage_words];
    __shared__ U part[32][warps][C];
    const Tile t(in.width, in.height, C, th);
    if (t.rows <= 0) return; // past the last tile row (whole block)
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const std::size_t seg_offset = std::size_t(t.x0) * C;

    U col[S::K];
#pragma unroll
    for (int k = 0; k < S::K; ++k) col[k] = 0;
    std::uint32_t raw[fetch_depth][S::in_words]; // rows r .. r + fetch_depth - 1, in flight
    bool striped[fetch_depth];
#pragma unroll
    for (int d = 0; d < fetch_depth; ++d)
        if (d < t.rows) striped[d] = start_fetch<T, U, C>(in.row<T>(t.y0 + d) + seg_offset, t.valid, aligned, raw[d]);
    for (int r0 = 0; r0 < t.rows; r0 += 32) {
        const int n = min(32, t.rows - r0);
        for (int r1 = 0; r1 < n; r1 += fetch_depth) {
#pragma unroll // whole: the ring's index (slot) is then a constant (registers)
            for (int slot = 0; slot < fetch_depth; ++slot) {
                const int r = r1 + slot; // r0 and r1 are multiples of fetch_depth
                if (r >= n) break;
                U v[S::K];
                finish_fetch<T, U, C>(raw[slot], striped[slot], stage[warp], v);
                if (r0 + r + fetch_depth < t.rows)
                    striped[slot] = start_fetch<T, U, C>(in.row<T>(t.y0 + r0 + r + fetch_depth) + seg_offset, t.valid,
                                                         aligned, raw[slot]);
                U sum[C];
#pragma unroll
                for (int c = 0; c < C; ++c) sum[c] = 0;
#pragma unroll
                for (int k = 0; k < S::K; ++k) {
                    col[k] += v[k];
                    sum[k % C] += v[k];
                }
#pragma unroll
                for (int c = 0; c < C; ++c) {
#pragma unroll
                    for (int d = 16; d > 0; d >>= 1) sum[c] += __shfl_xor_sync(0xFFFFFFFFu, sum[c], d);
                    if (lane == 0) part[r][warp][c] = sum[c];
                }
            }
        }
        write_row_sums<U, C>(part, n, d_row, in.height, t.y0 + r0);
    }
    U* dst = d_col + t.ty * std::size_t(in.width) * C + seg_offset;
    const int base = threadIdx.x * S::K;
#pragma unroll
    for (int k = 0; k < S::K; ++k)
        if (base + k < t.valid) dst[base + k] = col[k];
}

/// The byte mask selecting, of word j of a thread's K = 4C bytes (u8 input), the bytes of
/// channel c: byte b of word j is sample 4j + b, of channel (4j + b) % C.
template <int C> __host__ __device__ constexpr unsigned channel_mask(int j, int c) {
    unsigned m = 0;
    for (int b = 0; b < 4; ++b)
        if ((4 * j + b) % C == c) m |= 1u << (8 * b);
    return m;
}

/// One row of a tile, u8 input, this thread's part: adds its C words `w` (4 pixels) into its
/// column sums (`even`: bytes 0 and 2 of word j, `odd`: bytes 1 and 3, in 16-bit halves) and
/// sums its part of the row per channel: __dp4a of each word with the channel's byte mask, two
/// channels packed per register (16-bit halves: a warp's sum is at most 128 * 255 < 2^16), for
/// a shuffle reduction over the warp (add_row, or warp_sums over several rows).
template <int C>
__device__ __forceinline__ void add_row_own(const std::uint32_t (&w)[C], std::uint32_t (&even)[C],
                                            std::uint32_t (&odd)[C], std::uint32_t (&packed)[(C + 1) / 2]) {
    constexpr int pairs = (C + 1) / 2;
    std::uint32_t sum[2 * pairs] = {};
#pragma unroll
    for (int j = 0; j < C; ++j) {
        even[j] += w[j] & 0x00FF00FFu;
        odd[j] += (w[j] >> 8) & 0x00FF00FFu;
#pragma unroll
        for (int c = 0; c < C; ++c) // unrolled: the masks are constants
            if (const unsigned m = channel_mask<C>(j, c)) sum[c] = __dp4a(w[j], m, sum[c]);
    }
#pragma unroll
    for (int p = 0; p < pairs; ++p) packed[p] = sum[2 * p] | (sum[2 * p + 1] << 16);
}
/// add_row_own, then the warp's sums of the row: every lane gets them; row_sum() unpacks channel c.
template <int C>
__device__ __forceinline__ void add_row(const std::uint32_t (&w)[C], std::uint32_t (&even)[C], std::uint32_t (&odd)[C],
                                        std::uint32_t (&packed)[(C + 1) / 2]) {
    constexpr int pairs = (C + 1) / 2;
    add_row_own<C>(w, even, odd, packed); // this thread's part, then the warp's sums
#pragma unroll
    for (int p = 0; p < pairs; ++p)
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) packed[p] += __shfl_xor_sync(0xFFFFFFFFu, packed[p], d);
}

/// The warp's sums of G rows at once (G = 4 or 8; the look-back kernel): packed[i] holds this
/// thread's part of row i (add_row_own). Halving exchanges (lanes 16 apart trade rows G/2.. for
/// 0..G/2-1, then 8 apart, ..: G - 1 shuffles a register) leave each lane one row,
/// r = lane / (32 / G), summed over G lanes, and butterfly steps finish it: 9 shuffles for 8
/// rows (G = 8) or 6 for 4, where add_row takes 5 a row. Returns row r's warp sums, packed as
/// add_row's.
template <int G, int P>
__device__ __forceinline__ void warp_sums(std::uint32_t (&packed)[G][P], std::uint32_t (&out)[P]) {
    static_assert(G == 4 || G == 8, "groups of 4 or 8 rows");
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int p = 0; p < P; ++p) {
        int bit = 16;
#pragma unroll
        for (int half = G / 2; half >= 1; half >>= 1, bit >>= 1) {
            const bool upper = lane & bit; // keeps the upper half of its rows, sends the lower
#pragma unroll
            for (int i = 0; i < half; ++i) {
                const std::uint32_t send = upper ? packed[i][p] : packed[i + half][p];
                const std::uint32_t keep = upper ? packed[i + half][p] : packed[i][p];
                packed[i][p] = keep + __shfl_xor_sync(0xFFFFFFFFu, send, bit);
            }
        }
        out[p] = packed[0][p];
#pragma unroll
        for (int d = 16 / G; d >= 1; d >>= 1) out[p] += __shfl_xor_sync(0xFFFFFFFFu, out[p], d);
    }
}

/// Channel c of add_row()'s packed warp sums.
template <int C> __device__ __forceinline__ std::uint32_t row_sum(const std::uint32_t (&packed)[(C + 1) / 2], int c) {
    return (packed[c / 2] >> (16 * (c % 2))) & 0xFFFFu;
}

// Kernel 1 for u8 input, the common case, with half the instructions per byte of the generic
// kernel above (which is issue-bound on u8: 129 us under ncu on an H100 for 8192 x 8192 x 3,
// against 107 us for this one). Each thread loads its own C words (4 pixels; the warp's loads
// cover one contiguous span, through L1) without a transpose through shared memory. Column
// sums: two samples per register in 16-bit halves (even bytes and odd bytes of each word; at
// most tile_h * 255 < 2^16). Row sums per channel: __dp4a of each word with a byte mask per
// channel, packed two channels per register (a warp's sum is at most 128 * 255 < 2^16) for the
// warp shuffle reduction. Shared memory: part[32 rows][warps][C].
template <class U, int C>
__global__ void __launch_bounds__(block_threads, 8)
    tile_sums_u8_kernel(ImageView in, U* d_col, U* d_row, bool aligned, int th) {
    static_assert(tile_h * 255 < 65536, "16-bit column sums would overflow");
    static_assert(32 * px_per_thread * 255 < 65536, "16-bit warp row sums would overflow");
    constexpr int K = px_per_thread * C; // bytes = samples of a thread
    constexpr int pairs = (C + 1) / 2;   // registers of packed channel sums
    __shared__ U part[32][warps][C];
    const Tile t(in.width, in.height, C, th);
    if (t.rows <= 0) return; // past the last tile row (whole block)
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int base = threadIdx.x * K;
    const std::size_t seg_offset = std::size_t(t.x0) * C;
    const bool whole = aligned && base + K <= t.valid; // this thread's 4 pixels, as C words

    auto fetch = [&](int y, std::uint32_t(&w)[C]) {
        const std::uint8_t* seg = in.row<std::uint8_t>(y) + seg_offset + base;
        if (whole) {
#pragma unroll
            for (int j = 0; j < C; ++j) w[j] = __ldg(reinterpret_cast<const std::uint32_t*>(seg) + j);
            return;
        }
#pragma unroll
        for (int j = 0; j < C; ++j) w[j] = 0;
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (base + k < t.valid) w[k / 4] |= std::uint32_t(seg[k]) << (8 * (k % 4));
    };

    std::uint32_t even[C] = {}, odd[C] = {}; // column sums of bytes 0, 2 and 1, 3 of word j
    std::uint32_t ring[fetch_depth][C];      // rows r .. r + fetch_depth - 1, in flight
#pragma unroll
    for (int d = 0; d < fetch_depth; ++d)
        if (d < t.rows) fetch(t.y0 + d, ring[d]);
    for (int r0 = 0; r0 < t.rows; r0 += 32) {
        const int n = min(32, t.rows - r0);
        for (int r1 = 0; r1 < n; r1 += fetch_depth) {
#pragma unroll // whole: the ring's index (slot) is then a constant (registers)
            for (int slot = 0; slot < fetch_depth; ++slot) {
                const int r = r1 + slot; // r0 and r1 are multiples of fetch_depth
                if (r >= n) break;
                std::uint32_t w[C];
#pragma unroll
                for (int j = 0; j < C; ++j) w[j] = ring[slot][j];
                if (r0 + r + fetch_depth < t.rows) fetch(t.y0 + r0 + r + fetch_depth, ring[slot]);
                std::uint32_t packed[pairs];
                add_row<C>(w, even, odd, packed);
                if (lane == 0)
#pragma unroll
                    for (int c = 0; c < C; ++c) part[r][warp][c] = U(row_sum<C>(packed, c));
            }
        }
        write_row_sums<U, C>(part, n, d_row, in.height, t.y0 + r0);
    }
    U* dst = d_col + t.ty * std::size_t(in.width) * C + seg_offset + base;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const std::uint32_t pair = k % 2 ? odd[k / 4] : even[k / 4];
        if (base + k < t.valid) dst[k] = U((pair >> (16 * ((k % 4) / 2))) & 0xFFFFu);
    }
}

/// Per-thread inclusive scan of the thread's px_per_thread pixels, per channel; returns the
/// thread's totals.
template <class U, int C> __device__ __forceinline__ Vec<U, C> scan_own(U (&v)[px_per_thread * C]) {
#pragma unroll
    for (int p = 1; p < px_per_thread; ++p)
#pragma unroll
        for (int c = 0; c < C; ++c) v[p * C + c] += v[(p - 1) * C + c];
    Vec<U, C> total;
#pragma unroll
    for (int c = 0; c < C; ++c) total.v[c] = v[(px_per_thread - 1) * C + c];
    return total;
}

template <class U, int C> using BlockScanT = cub::BlockScan<Vec<U, C>, block_threads, cub::BLOCK_SCAN_WARP_SCANS>;

// Kernel 2. Block ty makes row ty of d_col (width * C samples) an inclusive prefix sum per
// channel, in chunks of tile_w pixels, loading the next chunk while it scans the current one:
// per-thread scan of its 4 pixels, block-wide exclusive scan of the thread totals
// (cub::BlockScan over C-vectors: warp shuffles, then the warp totals through shared memory),
// plus the running total of the chunks before. d_col is small (1/64 of the output), so plain
// per-thread loads and stores do.
template <class U, int C> __global__ void __launch_bounds__(block_threads) scan_col_rows_kernel(U* d_col, int width) {
    constexpr int K = px_per_thread * C;
    __shared__ typename BlockScanT<U, C>::TempStorage scan[2];
    U* row = d_col + blockIdx.x * std::size_t(width) * C;
    const int base = threadIdx.x * K;
    auto fetch = [&](int x0, U(&v)[K]) {
        const int valid = min(tile_w, width - x0) * C;
        const U* seg = row + std::size_t(x0) * C;
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = base + k < valid ? seg[base + k] : U(0);
    };
    U next[K];
    fetch(0, next);
    Vec<U, C> carry{};
    int parity = 0;
    for (int x0 = 0; x0 < width; x0 += tile_w, parity ^= 1) {
        const int valid = min(tile_w, width - x0) * C;
        U v[K];
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = next[k];
        if (x0 + tile_w < width) fetch(x0 + tile_w, next);
        Vec<U, C> before, chunk;
        // Two temp storages, alternating: the barrier inside the next scan separates this
        // scan's shared-memory reads from the writes of the scan after it.
        BlockScanT<U, C>(scan[parity]).ExclusiveSum(scan_own<U, C>(v), before, chunk);
        U* seg = row + std::size_t(x0) * C;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            v[k] += carry.v[k % C] + before.v[k % C];
            if (base + k < valid) seg[base + k] = v[k];
        }
        carry = carry + chunk;
    }
}

// Kernel 3. Exclusive prefix sums down the columns of two small row-major arrays: thread i < m_a
// takes column i of a (n_a rows), the next m_b threads the columns of b. Consecutive threads
// touch consecutive words (coalesced); each thread loads 16 rows before it adds and stores
// them, so that the walk costs n / 16 memory latencies rather than n.
template <class U>
__global__ void carry_scan_kernel(U* a, int n_a, std::size_t m_a, U* b, int n_b, std::size_t m_b, const U* a_above) {
    constexpr int batch = 16;
    std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    U* p;
    int n;
    std::size_t m;
    U run = 0;
    if (i < m_a) {
        p = a + i, n = n_a, m = m_a;
        if (a_above) run = a_above[i]; // a band of a larger image: the integral above it
    } else if ((i -= m_a) < m_b) {
        p = b + i, n = n_b, m = m_b;
    } else {
        return;
    }
    for (int r0 = 0; r0 < n; r0 += batch) {
        U v[batch];
#pragma unroll
        for (int j = 0; j < batch; ++j)
            if (r0 + j < n) v[j] = p[(r0 + j) * m];
#pragma unroll
        for (int j = 0; j < batch; ++j)
            if (r0 + j < n) {
                p[(r0 + j) * m] = run;
                run += v[j];
            }
    }
}

// Kernel 4. Block (tx, ty) walks down its tile, prefetching row r + 1 while it works on row r.
// Per row: per-thread scan of its 4 pixels, block-wide exclusive scan of the thread totals
// (cub::BlockScan, two temp storages alternating), plus d_row's "left" of the row: the row's
// inclusive prefix sum. Each thread adds it into its K column sums, which started at d_col's
// "top" of its columns, and those are the output samples. Shared memory: the scan's warp
// totals and a staging area per warp for the transposing loads and stores.
template <class T, class U, int C>
__global__ void __launch_bounds__(block_threads, min_blocks<T, U, C>)
    integral_tiles_kernel(ImageView in, ImageView out, const U* d_top, const U* d_left, bool in_aligned,
                          bool out_aligned, int th) {
    using S = Shape<T, U, C>;
    __shared__ std::uint32_t stage[warps][S::stage_words];
    __shared__ typename BlockScanT<U, C>::TempStorage scan[2];
    const Tile t(in.width, in.height, C, th);
    if (t.rows <= 0) return; // past the last tile row (whole block)
    const int warp = threadIdx.x >> 5;
    const int base = threadIdx.x * S::K;
    const std::size_t seg_offset = std::size_t(t.x0) * C;
    const U* left = d_left + blockIdx.x * std::size_t(in.height) * C;

    U col[S::K];
    const U* top = d_top + t.ty * std::size_t(in.width) * C + seg_offset;
#pragma unroll
    for (int k = 0; k < S::K; ++k) col[k] = base + k < t.valid ? top[base + k] : U(0);

    std::uint32_t raw[fetch_depth][S::in_words]; // rows r .. r + fetch_depth - 1, in flight
    bool striped[fetch_depth];
#pragma unroll
    for (int d = 0; d < fetch_depth; ++d)
        if (d < t.rows)
            striped[d] = start_fetch<T, U, C>(in.row<T>(t.y0 + d) + seg_offset, t.valid, in_aligned, raw[d]);
    for (int r0 = 0; r0 < t.rows; r0 += fetch_depth) {
#pragma unroll // whole: the ring's index d is then a constant (registers)
        for (int d = 0; d < fetch_depth; ++d) {
            if (r0 + d >= t.rows) break;
            const int y = t.y0 + r0 + d;
            U v[S::K];
            finish_fetch<T, U, C>(raw[d], striped[d], stage[warp], v);
            if (r0 + d + fetch_depth < t.rows)
                striped[d] = start_fetch<T, U, C>(in.row<T>(y + fetch_depth) + seg_offset, t.valid, in_aligned, raw[d]);
            U carry[C];
#pragma unroll
            for (int c = 0; c < C; ++c) carry[c] = left[std::size_t(y) * C + c];
            Vec<U, C> before;
            // scan[d & 1] alternates from row to row, across groups too: fetch_depth is even
            BlockScanT<U, C>(scan[d & 1]).ExclusiveSum(scan_own<U, C>(v), before);
#pragma unroll
            for (int k = 0; k < S::K; ++k) col[k] += v[k] + carry[k % C] + before.v[k % C];
            put_row<T, U, C>(out.row<U>(y) + seg_offset, t.valid, out_aligned, stage[warp], col);
        }
    }
}

template <class U> std::size_t scratch_elements(const ImageView& in, int& n_tx, int& n_ty) {
    n_tx = int(cuda::div_up(in.width, tile_w));
    n_ty = int(cuda::div_up(in.height, tiles_rows(in.width, in.height)));
    return std::size_t(n_ty) * in.row_samples() + std::size_t(n_tx) * in.height * in.channels;
}

template <class T, class U, int C>
void launch_tiles(const ImageView& in, const ImageView& out, U* d_scratch, const U* d_above, cudaStream_t s) {
    int n_tx = 0, n_ty = 0;
    scratch_elements<U>(in, n_tx, n_ty);
    const int th = tiles_rows(in.width, in.height);
    const std::size_t row_samples = in.row_samples();
    const std::size_t column_samples = std::size_t(in.height) * C;
    U* d_col = d_scratch;                                   // [n_ty][width * C]
    U* d_row = d_scratch + std::size_t(n_ty) * row_samples; // [n_tx][height * C]
    const dim3 tiles = cuda::grid_rows(unsigned(n_tx), n_ty);

    if constexpr (sizeof(T) == 1)
        tile_sums_u8_kernel<U, C><<<tiles, block_threads, 0, s>>>(in, d_col, d_row, is_aligned(in, 4), th);
    else
        tile_sums_kernel<T, U, C><<<tiles, block_threads, 0, s>>>(in, d_col, d_row, is_aligned(in, 4), th);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    scan_col_rows_kernel<U, C><<<unsigned(n_ty), block_threads, 0, s>>>(d_col, in.width);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    constexpr int carry_threads = 256;
    carry_scan_kernel<U>
        <<<cuda::div_up(static_cast<long long>(row_samples + column_samples), carry_threads), carry_threads, 0, s>>>(
            d_col, n_ty, row_samples, d_row, n_tx, column_samples, d_above);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    integral_tiles_kernel<T, U, C>
        <<<tiles, block_threads, 0, s>>>(in, out, d_col, d_row, is_aligned(in, 4), is_aligned(out, 4), th);
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

// ---- integer outputs from u8 input: one pass, decoupled look-back between tiles -------------
//
// Tile (tx, ty) of tile_w x TH pixels, origin (x0, y0). With local(x, y) the tile's own integral,
// rowcarry(y) = sum of row y left of x0, colcarry(x) = sum of column x above y0 and
// corner = sum of everything left of x0 and above y0:
//     out(x, y) = local(x, y) + sum_{y0 <= j <= y} rowcarry(j) + sum_{x0 <= i <= x} colcarry(i) + corner
// Three look-backs (Merrill & Garland's decoupled look-back, along x, along y, and along x for
// the corner) give the carries; integer sums modulo 2^n, so the order does not matter.

/// What a tile has published for one value of a look-back: nothing yet, its own aggregate, or
/// the inclusive prefix (its aggregate plus everything before it).
enum : unsigned { lb_none = 0, lb_aggregate = 1, lb_inclusive = 2 };

/// The statuses one launch publishes: lb_aggregate or lb_inclusive in the low two bits and the
/// launch's epoch, 1 to 3, above them (so they fit the packed slots' four bits). Any other value
/// in a slot or flag, zero (the memset's) or a status of an earlier launch, reads as lb_none. So
/// scratch that the node keeps between launches (pf_host.persistent) needs no memset when the
/// last launch on it had the same layout: that launch wrote every slot and flag this one can
/// read, all with the previous epoch (launch_lookback).
struct Tags {
    unsigned agg, inc;
    static constexpr Tags of(unsigned epoch) { return {(epoch << 2) | lb_aggregate, (epoch << 2) | lb_inclusive}; }
    __device__ __forceinline__ bool published(unsigned status) const { return status == agg || status == inc; }
};

/// One published u32 value with its status in the high half of a 64-bit word (CUB's tile state
/// does the same for 32-bit values). A slot is stored and loaded whole, a single-copy-atomic
/// access, so a reader that sees a status sees the value stored with it: no fence between the
/// value and its flag. (Before 2026-11-28 the values went to plain arrays and a flag per tile
/// went up after a __threadfence, which under the output's store traffic took microseconds.)
/// A slot holds lb_none (a memset's zero, or an earlier launch's status: Tags) until its tile
/// publishes; it goes to lb_aggregate and then lb_inclusive, or straight to lb_inclusive for a
/// tile that has no predecessors along that look-back.
using Slot = unsigned long long;
__device__ __forceinline__ Slot make_slot(unsigned status, std::uint32_t v) { return (Slot(status) << 32) | v; }
__device__ __forceinline__ unsigned status_of(Slot s) { return unsigned(s >> 32); }
__device__ __forceinline__ void st_slot(Slot* p, Slot a) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(a) : "memory");
}
__device__ __forceinline__ Slot ld_slot(const Slot* p) {
    Slot a;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(a) : "l"(p));
    return a;
}
/// Turns this tile's published aggregate at `own` (stored by this block before a barrier) into
/// its inclusive prefix: the aggregate plus `carry`, everything before the tile.
__device__ __forceinline__ void publish_inclusive(Slot* own, std::uint32_t carry, Tags t) {
    st_slot(own, make_slot(t.inc, carry + std::uint32_t(ld_slot(own))));
}

/// A tile's inclusive column prefixes (tile_w * C u32 values) go to a plain array behind a flag
/// per tile, raised by a release store (its writers' values reach the flag's readers through
/// bar.sync, the release, and the readers' acquire): in slots a look-back
/// reads twice the bytes, and the slots' memset costs more than the fence saves (H200,
/// lookback_harness, 2026-11-28: RGB 0.445 ms with the columns in slots against 0.416, RGBA 0.77
/// against 0.535; 2026-11-29: 0.461 against 0.322 with packed aggregates, below).
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/// A tile's column aggregates (its column sums, each below 2^15: TH * 255 < 32768) go four to a
/// Slot: four 15-bit fields and the status in 64 bits, C slots a thread, published with no
/// fence and no flag. A column look-back loads the packed aggregates and the flags of D
/// predecessors at once (look_back_packed): one round trip for D predecessors, then one for the
/// inclusive prefix where it stops. (Until 2026-11-29 the aggregates went to a plain array behind
/// the flag too: two round trips a predecessor, RGB 6.5 predecessors in 10 us a tile; H200,
/// lookback_harness: RGB 0.343 -> 0.321 ms, RGBA 0.472 -> 0.436, 2 channels 0.245 -> 0.225,
/// gray 0.131 -> 0.128 with them packed and the row look-back moved to the z warp.)
constexpr int pk_bits = 15;

/// Predecessors whose slots a look-back loads at once (rows: lb_window; z: lb_z_window, one a
/// lane; columns: lb_col_depth, whose C packed slots each a thread holds in registers), and the
/// pause before a predecessor that has not published is polled again.
template <int C> constexpr int lb_window() { return C == 1 ? 8 : 1; }
constexpr int lb_z_window = 32;
template <int C> constexpr int lb_col_depth() { return C == 2 ? 4 : 2; } // RGBA: 4 spill
/// Rows whose warp sums the look-back kernel's step 2 takes at once (warp_sums; 1: add_row, a
/// row at a time; 1, 4 and 8 timed in lookback_harness, 2026-11-29: 8 the fastest).
template <int C> constexpr int lb_sum_rows() { return 8; }
/// Rows a warp scans at once in the look-back kernel's output phase (step 5), their stores then
/// issued one after another. H200, lookback_harness, 2026-12-01, against 2: gray 4 rows level to
/// 2% faster (8192^2, and smaller images at their lb_split heights), RGB and 2 channels level,
/// RGBA 16% slower (its 4 rows of 16 values do not fit the registers of 4 blocks an SM); 1 row
/// level to 4% slower.
template <int C> constexpr int lb_out_rows() { return C == 1 ? 4 : 2; }
#ifndef PIXFLOW_INTEGRAL_BACKOFF_NS // test/bench/lookback_harness.cu times other values
#define PIXFLOW_INTEGRAL_BACKOFF_NS 512
#endif
constexpr unsigned lb_backoff_ns = PIXFLOW_INTEGRAL_BACKOFF_NS;

/// One lane's look-back over its N values per tile (the slots at `slots + tile * pitch + n *
/// Step`, only those set in `open`) along the predecessors first, first - stride, .. (avail of
/// them; the last is inclusive by construction), adding into acc. D predecessors' slots are
/// loaded at once; then, in order, a predecessor whose slots (of the values still open) are all
/// published adds each open value, and a value closes at its first inclusive slot. Each value is
/// its own look-back, so a reader that sees some of a predecessor's slots inclusive and others
/// still aggregate (its stores land one by one) adds each correctly. Only tiles with an earlier
/// ticket are waited for, and those have started.
template <int N, int D, int Step>
__device__ __forceinline__ void look_back_slots(const Slot* slots, std::size_t pitch, unsigned first, unsigned stride,
                                                int avail, std::uint32_t (&acc)[N], std::uint32_t open, Tags t) {
    static_assert(N <= 32, "one bit per value");
    for (int done = 0; open && done < avail;) {
        Slot s[D][N];
#pragma unroll
        for (int d = 0; d < D; ++d) {
            if (done + d >= avail) break;
            const Slot* p = slots + std::size_t(first - unsigned(done + d) * stride) * pitch;
#pragma unroll
            for (int n = 0; n < N; ++n) s[d][n] = (open >> n) & 1u ? ld_slot(p + n * Step) : Slot(0);
        }
        bool stalled = false;
#pragma unroll
        for (int d = 0; d < D; ++d) {
            if (!open || done >= avail) break;
            bool ready = true;
#pragma unroll
            for (int n = 0; n < N; ++n) ready &= !((open >> n) & 1u) || t.published(status_of(s[d][n]));
            if (!ready) {
                stalled = true;
                break;
            }
#pragma unroll
            for (int n = 0; n < N; ++n)
                if ((open >> n) & 1u) {
                    acc[n] += std::uint32_t(s[d][n]);
                    if (status_of(s[d][n]) == t.inc) open &= ~(1u << n);
                }
            ++done;
        }
        if (stalled) __nanosleep(lb_backoff_ns);
    }
}

/// A warp-wide look-back over the C z values per tile (`z + tile * C`), W predecessors a window
/// spread over the lanes (lane l < W loads predecessor done + l), as CUB's look-back does: a
/// window is taken when, for every channel still open, every lane up to the channel's first
/// inclusive slot has published; those lanes' values are added, and the channel closes there.
/// The warp's sums end in every lane. The whole warp calls it with the same arguments.
/// With Wait false it does not wait: at the first window that is not ready it gives up and
/// returns false (acc then holds nothing useful); otherwise it returns true.
template <int C, int W, bool Wait = true>
__device__ __forceinline__ bool look_back_z(const Slot* z, unsigned first, int avail, std::uint32_t (&acc)[C], Tags t) {
    const int lane = int(threadIdx.x & 31);
    constexpr unsigned lanes = W == 32 ? 0xFFFFFFFFu : (1u << W) - 1u;
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = 0;
    unsigned open = (1u << C) - 1u; // the same in every lane
    for (int done = 0; open;) {
        const int k = done + lane;
        const bool mine = lane < W && k < avail;
        Slot s[C];
#pragma unroll
        for (int c = 0; c < C; ++c) s[c] = mine ? ld_slot(z + std::size_t(first - unsigned(k)) * C + c) : 0;
        const unsigned valid = __ballot_sync(0xFFFFFFFFu, mine) & lanes;
        bool ready = true;
        unsigned upto[C], closes = 0;
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const unsigned none = __ballot_sync(0xFFFFFFFFu, !t.published(status_of(s[c]))) & valid;
            const unsigned inc = __ballot_sync(0xFFFFFFFFu, status_of(s[c]) == t.inc) & valid;
            upto[c] = inc ? ((inc & (0u - inc)) << 1) - 1u : valid; // the lanes to the first inclusive
            if (inc) closes |= 1u << c;
            if ((open >> c) & 1u) ready &= !(none & upto[c]);
        }
        if (!ready) {
            if constexpr (!Wait) return false;
            __nanosleep(lb_backoff_ns);
            continue;
        }
#pragma unroll
        for (int c = 0; c < C; ++c)
            if (((open >> c) & 1u) && ((upto[c] >> lane) & 1u)) acc[c] += std::uint32_t(s[c]);
        open &= ~closes;
        done += W;
    }
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) acc[c] += __shfl_xor_sync(0xFFFFFFFFu, acc[c], d);
    return true;
}

/// Rows of a look-back tile for u8 input, output U and C channels: as many as let four blocks
/// share an SM's 228 KB of shared memory (per block: 1 KB the system reserves, the staging area
/// of put_row, about 1 KB of scan storage, and per row the tile row of tile_w * C bytes plus
/// `part` and the row carry), and th * C <= block_threads (one thread per value of the row
/// look-back). Gray takes 7/8 of that (89 rows, not 101; 5 blocks an SM): H200,
/// lookback_harness, 2026-11-28, the look-back of that day: 50 rows 0.149-0.152 ms against
/// 0.166-0.169 with 101 and 0.151-0.154 with 75; 2026-11-29, the look-back of packed aggregates:
/// 66 rows 0.126-0.130 against 0.132-0.133 with 50, then 89 rows 0.124-0.130 against 0.127-0.132
/// with 67 (two runs). For 2-4 channels every shorter tile was slower (RGB with 3/4 of the rows
/// 0.42 ms against 0.38).
template <class U, int C> constexpr int lb_rows() {
    constexpr int fixed = 1024 + 4 * Shape<std::uint8_t, U, C>::stage_words * 4 + 1024;
    constexpr int per_row = tile_w * C + (warps + 1) * C * int(sizeof(U));
    constexpr int th = (228 * 1024 / 4 - fixed) / per_row;
    return C == 1 ? th - th / 8 : th * C > block_threads ? block_threads / C : th;
}

/// Where the tiles publish, in the scratch (n_tiles tiles, numbered y-major by ticket): per tile,
/// for columns (tile_w * C values) the column sums over the tile's rows, packed (`pk`, C slots a
/// thread), then the sums over all rows down to the tile's last (`inc_col`, plain u32, behind
/// `col_flags`); for rows (TH * C values, a Slot each) the row sums over the tile's columns, then
/// the sums over all columns up to the tile's last; z (C Slots): the tile's inclusive column sums
/// added over its columns (z of tile (i, ty) is the sum of all the input above row y0 + TH in its
/// columns), then its inclusive prefix along x (the corner of tile (i + 1, ty + 1)). `ticket`
/// hands out tiles (the tile that takes the last ticket sets it back to 0). Everything but inc_col
/// reads as lb_none at the start of a launch (`cleared`: zeroed, or kept from the node's last
/// launch of the same layout; `tag`, Tags), and may live elsewhere than inc_col (a kept block).
template <class U, int C, int TH> struct LookBack {
    static_assert(std::is_same_v<U, std::uint32_t>, "a value and its status share a 64-bit slot");
    static_assert(TH * 255 < (1 << pk_bits), "a tile's column sums fit the packed fields");
    static constexpr int row_n = TH * C;
    static constexpr int col_n = tile_w * C;
    static constexpr int pk_n = C * block_threads; // packed slots per tile
    Slot *pk, *row, *z;
    U* inc_col;
    unsigned *ticket, *col_flags;
    void* cleared;
    int n_tx;
    Tags tag = Tags::of(1);

    static std::size_t plain_bytes(std::size_t n_tiles) { return n_tiles * col_n * sizeof(U); }
    static std::size_t cleared_bytes(std::size_t n_tiles) {
        return n_tiles * (pk_n + row_n + C) * sizeof(Slot) + 8 + n_tiles * 4;
    }
    static std::size_t bytes(std::size_t n_tiles) { return plain_bytes(n_tiles) + cleared_bytes(n_tiles); }
    /// `cleared_part`: where the cleared part lies (cleared_bytes), else after inc_col in `scratch`.
    LookBack(void* scratch, std::size_t n_tiles, int n_tx_, void* cleared_part = nullptr) : n_tx(n_tx_) {
        char* base = static_cast<char*>(scratch);
        inc_col = reinterpret_cast<U*>(base); // 16-byte vectors
        cleared = cleared_part ? cleared_part : base + plain_bytes(n_tiles);
        Slot* p = static_cast<Slot*>(cleared);
        pk = p, p += n_tiles * pk_n;
        row = p, p += n_tiles * row_n;
        z = p, p += n_tiles * C;
        ticket = reinterpret_cast<unsigned*>(p);
        col_flags = ticket + 2;
    }
};

/// Stores thread tid's K u32 values of a tile (`tile` 16-byte aligned) as 16-byte vectors,
/// through L2 only: vector q of thread t at tile + 4 (q * block_threads + t), so each store
/// instruction of a warp covers 512 contiguous bytes.
template <int K> __device__ __forceinline__ void store_vec(std::uint32_t* tile, int tid, const std::uint32_t (&v)[K]) {
    static_assert(K % 4 == 0, "whole vectors");
#pragma unroll
    for (int q = 0; q < K / 4; ++q)
        __stcg(reinterpret_cast<uint4*>(tile) + q * block_threads + tid,
               make_uint4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]));
}
/// Adds thread tid's K u32 values of a tile (store_vec's layout), loaded from L2 (never a stale
/// L1 line), into v.
template <int K> __device__ __forceinline__ void add_vec(std::uint32_t (&v)[K], const std::uint32_t* tile, int tid) {
#pragma unroll
    for (int q = 0; q < K / 4; ++q) {
        const uint4 x = __ldcg(reinterpret_cast<const uint4*>(tile) + q * block_threads + tid);
        v[4 * q] += x.x, v[4 * q + 1] += x.y, v[4 * q + 2] += x.z, v[4 * q + 3] += x.w;
    }
}

/// Four column sums of a tile (each below 2^15) and the status lb_aggregate in one
/// Slot (bits 0-59 the values, 60-63 the status).
constexpr int pk_status_shift = 4 * pk_bits;
__device__ __forceinline__ unsigned packed_status(Slot s) { return unsigned(s >> pk_status_shift); }
__device__ __forceinline__ Slot pack_aggregate(const std::uint32_t* v, Tags t) {
    return (Slot(t.agg) << pk_status_shift) | Slot(v[0]) | (Slot(v[1]) << pk_bits) | (Slot(v[2]) << (2 * pk_bits)) |
           (Slot(v[3]) << (3 * pk_bits));
}
__device__ __forceinline__ void add_packed(std::uint32_t* acc, Slot s) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[j] += std::uint32_t(s >> (pk_bits * j)) & ((1u << pk_bits) - 1u);
}

/// The column look-back, by one warp over its lanes' 4C columns each: predecessor
/// tiles first, first - stride, .. (avail of them; the last, a tile of the first tile row,
/// publishes only its inclusive prefix). A window loads, for D predecessors at once, each
/// thread's C packed aggregates (`pk`: slot s of thread t of tile j at (j * C + s) *
/// block_threads + t, coalesced) and, lane d < D, the flag of predecessor d (acquire): one round
/// trip. The window stops at the first predecessor whose flag is inclusive; the ones before it
/// must all have published their aggregates (every lane: else the window is loaded again), and
/// are added; then the stopping one's inclusive prefix (`inc_col`, after the acquire and
/// __syncwarp) ends the look-back. Returns the predecessors read. The whole warp calls it with the
/// same arguments.
template <int C, int D>
__device__ __forceinline__ int look_back_packed(const Slot* pk, const unsigned* flags, const std::uint32_t* inc_col,
                                                unsigned first, unsigned stride, int avail, std::uint32_t (&acc)[4 * C],
                                                Tags t) {
    static_assert(D >= 1 && D <= 32, "one flag a lane");
    constexpr int K = 4 * C;
    const int tid = int(threadIdx.x), lane = tid & 31;
    for (int done = 0;;) {
        Slot a[D][C];
#pragma unroll
        for (int d = 0; d < D; ++d) {
            const std::size_t j = first - unsigned(done + d) * stride;
#pragma unroll
            for (int s = 0; s < C; ++s)
                a[d][s] = done + d < avail ? ld_slot(pk + (j * C + s) * block_threads + tid) : Slot(0);
        }
        unsigned f = lb_none;
        if (lane < D && done + lane < avail) f = ld_acquire(flags + (first - unsigned(done + lane) * stride));
        const unsigned inc = __ballot_sync(0xFFFFFFFFu, f == t.inc);
        const int stop = inc ? __ffs(int(inc)) - 1 : D; // predecessors done .. done + stop - 1 by aggregate
        bool ok = true;
#pragma unroll
        for (int d = 0; d < D; ++d)
#pragma unroll
            for (int s = 0; s < C; ++s) ok &= d >= stop || done + d >= avail || packed_status(a[d][s]) == t.agg;
        if (!__all_sync(0xFFFFFFFFu, ok)) { // an aggregate not yet published (or the first tile row's)
            __nanosleep(lb_backoff_ns);
            continue;
        }
#pragma unroll
        for (int d = 0; d < D; ++d)
            if (d < stop)
#pragma unroll
                for (int s = 0; s < C; ++s) add_packed(acc + 4 * s, a[d][s]);
        if (inc) {
            __syncwarp();
            add_vec<K>(acc, inc_col + std::size_t(first - unsigned(done + stop) * stride) * (block_threads * K), tid);
            return done + stop + 1; // predecessors read
        }
        done += D;
    }
}

/// This thread's C words (its 4 pixels) of a tile row in shared memory, as wide as C allows.
template <int C> __device__ __forceinline__ void load_words(const unsigned char* row, std::uint32_t (&w)[C]) {
    const std::uint32_t* p = reinterpret_cast<const std::uint32_t*>(row) + threadIdx.x * C;
    if constexpr (C == 4) {
        const uint4 x = *reinterpret_cast<const uint4*>(p);
        w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w;
    } else if constexpr (C == 2) {
        const uint2 x = *reinterpret_cast<const uint2*>(p);
        w[0] = x.x, w[1] = x.y;
    } else {
#pragma unroll
        for (int j = 0; j < C; ++j) w[j] = p[j];
    }
}

/// The compute threads (block_threads of them) copy a look-back tile's input, `rows` rows of
/// `valid` bytes from byte `seg` of rows y0.., into shared memory (rows of tile_w * C bytes,
/// zero-filled past `valid`): 16-byte cp.async copies, all in flight at once, when the input is
/// 16-byte aligned, else byte by byte. The caller joins the compute threads afterwards.
template <int C>
__device__ __forceinline__ void load_tile(const ImageView& in, unsigned char* tile_in, int y0, int rows,
                                          std::size_t seg, int valid, bool in_aligned) {
    constexpr int row_bytes = tile_w * C;
    const int tid = threadIdx.x;
    if (in_aligned) {
        constexpr int chunks = row_bytes / 16;
        const unsigned smem0 = unsigned(__cvta_generic_to_shared(tile_in));
        for (int i = tid; i < rows * chunks; i += block_threads) {
            const int r = i / chunks, off = (i - r * chunks) * 16;
            const int n = max(0, min(16, valid - off)); // bytes to read; the rest is zero-filled
            const std::uint8_t* src = in.row<std::uint8_t>(y0 + r) + seg + (n > 0 ? off : 0);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem0 + r * row_bytes + off), "l"(src),
                         "r"(n)
                         : "memory");
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
    } else {
        for (int i = tid; i < rows * row_bytes; i += block_threads) {
            const int r = i / row_bytes, b = i - r * row_bytes;
            tile_in[i] = b < valid ? in.row<std::uint8_t>(y0 + r)[seg + b] : std::uint8_t(0);
        }
    }
}

/// Named barriers of the look-back kernel: 1 joins the 4 compute warps; 3 and 2 are where they
/// hand the z warp (they arrive, it waits) the tile's row aggregates (for the row look-back) and
/// its z aggregate; at 4 the z warp hands them the row carries (it arrives, they wait).
/// What the compute warps hand the z warp is in global memory (the barrier orders it): a
/// shared-memory variable read by the z warp after bar.sync and written before bar.arrive was
/// reported by racecheck as a race (2026-11-28; the SASS had the store before the BAR.ARV /
/// BAR.SYNC and the load after the z warp's BAR.SYNC). The row carries the other way go through
/// shared memory (row_carry): racecheck reports no hazard there (2026-11-29, lookback_harness's
/// small cases and every integral test), and the compute warps no longer reload them from L2
/// after bar_rows: step 4 ends 3.8 us after step 3, not 5.0 (RGB), though the output phase
/// grew by about as much (H200, lookback_harness against 0fecdf3, three runs: RGB 0.3225-0.3270
/// ms against 0.3224-0.3291, RGBA and 2 channels 0-1% faster, gray level).
enum : int { bar_compute = 1, bar_z = 2, bar_row_aggregates = 3, bar_rows = 4 };
constexpr int lb_threads = block_threads + 32; // 4 compute warps and the z warp
__device__ __forceinline__ void bar_sync(int id, int n) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int n) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}

/// Inclusive prefix sum over the lanes of one warp (shuffles: no barrier, nothing shared).
template <class U, int N> __device__ __forceinline__ Vec<U, N> warp_inclusive(const Vec<U, N>& x) {
    const int lane = threadIdx.x & 31;
    Vec<U, N> inc = x;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1)
#pragma unroll
        for (int c = 0; c < N; ++c) {
            const U y = __shfl_up_sync(0xFFFFFFFFu, inc.v[c], d);
            if (lane >= d) inc.v[c] += y;
        }
    return inc;
}
/// Exclusive prefix sum over the lanes of one warp.
template <class U, int N> __device__ __forceinline__ Vec<U, N> warp_exclusive(const Vec<U, N>& x) {
    Vec<U, N> inc = warp_inclusive<U, N>(x);
#pragma unroll
    for (int c = 0; c < N; ++c) inc.v[c] -= x.v[c]; // modulo 2^n
    return inc;
}

/// warp_exclusive for N values each below 2^16 / 32 (a thread's sum of 4 u8 samples): two per
/// register in 16-bit halves, so the scan shuffles (N + 1) / 2 registers instead of N. Exact: no
/// half's inclusive sum reaches 2^16, and inclusive - own borrows nothing across the halves.
template <class U, int N> __device__ __forceinline__ Vec<U, N> warp_exclusive_u16(const Vec<U, N>& x) {
    constexpr int P = (N + 1) / 2;
    Vec<std::uint32_t, P> own;
#pragma unroll
    for (int p = 0; p < P; ++p)
        own.v[p] = std::uint32_t(x.v[2 * p]) | (2 * p + 1 < N ? std::uint32_t(x.v[2 * p + 1]) << 16 : 0u);
    const Vec<std::uint32_t, P> inc = warp_inclusive<std::uint32_t, P>(own);
    Vec<U, N> r;
#pragma unroll
    for (int i = 0; i < N; ++i) r.v[i] = U(((inc.v[i / 2] - own.v[i / 2]) >> (16 * (i % 2))) & 0xFFFFu);
    return r;
}

/// Warp totals of block_exclusive (two, used alternately: see there).
template <class U, int N> struct ScanTotals { Vec<U, N> warp[warps]; };
/// Exclusive prefix sum over the 128 compute threads (they alone call it), and the total: warp
/// shuffles, then the warp totals through shared memory and one named barrier. Consecutive
/// calls must alternate between two ScanTotals: a warp may start the next scan while another
/// still reads this one's totals, but not the one after (it waits at the next call's barrier).
template <class U, int N>
__device__ __forceinline__ Vec<U, N> block_exclusive(const Vec<U, N>& x, Vec<U, N>& total, ScanTotals<U, N>& st) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const Vec<U, N> inc = warp_inclusive<U, N>(x);
    if (lane == 31) st.warp[warp] = inc;
    bar_sync(bar_compute, block_threads);
    Vec<U, N> before;
#pragma unroll
    for (int c = 0; c < N; ++c) before.v[c] = inc.v[c] - x.v[c], total.v[c] = 0; // modulo 2^n
#pragma unroll
    for (int w = 0; w < warps; ++w) {
        const Vec<U, N> t = st.warp[w];
#pragma unroll
        for (int c = 0; c < N; ++c) {
            if (w < warp) before.v[c] += t.v[c];
            total.v[c] += t.v[c];
        }
    }
    return before;
}

/// Profiling words per tile (Prof, lookback_harness): globaltimer at the start and after steps
/// 1-5, when the inclusive column prefixes' flag went up, after thread 0's column look-back, the
/// predecessors it read, and when the z warp's row look-back and warp 0's corner were done.
constexpr int lb_prof_words = 11;

// The one-pass kernel. Block b takes the next tile from `ticket` (row-major order: every tile it
// waits for has an earlier ticket, so its block has started: no deadlock). 160 threads: 4
// compute warps, thread t < 128 owning pixels 4t .. 4t+3 of each row of the tile (K = 4C
// samples), and a z warp that looks back along x for the row carries while the compute warps
// look back along y, and finishes the tile's z while they write. Every value but the inclusive
// column prefixes is published in a Slot with its status, so nothing waits for a fence there.
// The compute warps:
//   1. copy the tile's input (TH rows of tile_w * C bytes) into shared memory with cp.async,
//      16 bytes a copy, all in flight at once (zero-filled past the image's right edge); the
//      input is read from DRAM once;
//   2. from shared memory: per thread its K column sums (two per register, 16-bit halves) and,
//      per row, the row sums per channel (__dp4a with byte masks; the warp's sums of 8 rows at
//      once by halving exchanges, warp_sums; the 4 warps' sums added through `part`, which then
//      holds each warp's exclusive prefix over the warps); publish them (aggregates, the columns
//      packed; or inclusive at tx = 0 / ty = 0) and arrive at bar_row_aggregates;
//   3. look back along y (look_back_packed, each warp for its threads' K column values:
//      colcarry); publish the inclusive prefixes; one block scan gives the column carries along
//      the tile and z; past its barrier, warp 3 raises the inclusive prefixes' flag (a release
//      store: the barrier orders the other warps' stores before it, as CUTLASS's GenericBarrier
//      does; with a __threadfence before it the flag went up 3.7 us after the scan, not 1.9, and
//      RGB was 0.5% slower; raised by the z warp after bar_z, 2.8 us; H200, 2026-11-29); publish
//      z's aggregate and arrive at bar_z;
//   4. warp 0 looks back along x over z of the tile row above for the corner, 32 tiles a
//      window, through aggregates where no inclusive prefix is published; wait at bar_rows for
//      the row carries (in row_carry, from the z warp);
//   5. walk down the tile in shared memory RPS rows at a time (a warp scan of RPS * C values,
//      two to a register, plus the row sums of the warps to the left, kept in `part` since step
//      2, so no barrier: the row prefix sums, plus rowcarry, go into per-thread column sums that
//      start at the column carries + corner + `above`) and write each output sample once,
//      through the warp's staging area (16-byte vectors where the rows are 16-byte aligned,
//      put_row_vec; coalesced stores).
// The z warp: after bar_row_aggregates, looks back along x (look_back_slots, lane l for row
// values l, l + 32, ..: rowcarry), publishes the rows' inclusive prefixes, stores the carries
// in row_carry and arrives at bar_rows (a row look-back by the compute warps, before the
// columns', was 1-2% slower for RGB, level for the others: H200, lookback_harness,
// 2026-11-29); after bar_z it reads z of the
// tiles to its left (tx - 1, ty), .. once, and publishes z's inclusive prefix if they have
// all published (it never waits there: a waiting z warp kept its block's slot after the compute
// warps were done).
// Shared memory: the tile (dynamic, TH * tile_w * C bytes), the staging area, the scan totals,
// `part`, the row carries and the corner.
template <class U, int C, int TH, int RPS, bool Prof, int W, int CD, int G>
__global__ void __launch_bounds__(lb_threads, 4)
    integral_lookback_kernel(ImageView in, ImageView out, LookBack<U, C, TH> lb, const U* d_above, bool in_aligned,
                             bool out_aligned, bool out_vec, std::uint64_t* d_prof) {
    using S = Shape<std::uint8_t, U, C>;
    using LB = LookBack<U, C, TH>;
    constexpr int K = S::K;
    constexpr int row_bytes = tile_w * C; // a tile row in shared memory
    constexpr int pairs = (C + 1) / 2;
    static_assert(TH * 255 < 65536, "16-bit column sums would overflow");
    static_assert(TH * C <= block_threads, "one thread per row value");
    extern __shared__ __align__(16) unsigned char tile_in[];
    __shared__ __align__(16) std::uint32_t stage[warps][S::stage_words];
    __shared__ ScanTotals<U, 2 * C> scan_cols;
    __shared__ U part[TH][warps][C];
    __shared__ U row_carry[TH * C];
    __shared__ U corner[C];
    __shared__ unsigned tile_id;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid == 0) {
        tile_id = atomicAdd(lb.ticket, 1u);
        if (tile_id == gridDim.x - 1) atomicExch(lb.ticket, 0u); // the last: 0 for the next launch
    }
    __syncthreads();
    const unsigned id = tile_id;
    const int tx = int(id % unsigned(lb.n_tx)), ty = int(id / unsigned(lb.n_tx));
    auto mark = [&](int i, bool who) { // profiling only: when block `id` passed point i (ns)
        if constexpr (Prof)
            if (who) {
                std::uint64_t t;
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
                d_prof[std::size_t(id) * lb_prof_words + i] = t;
            }
    };
    auto stamp = [&](int i) { mark(i, tid == 0); };
    stamp(0);

    if (warp == warps) { // the z warp
        bar_sync(bar_row_aggregates, lb_threads);
        if (tx > 0) { // the row look-back, tiles (tx - 1, ty), (tx - 2, ty), ..; (0, ty) is inclusive
            constexpr int NR = (LB::row_n + 31) / 32;
            std::uint32_t open = 0, rc[NR];
#pragma unroll
            for (int j = 0; j < NR; ++j) {
                rc[j] = 0;
                if (lane + 32 * j < LB::row_n) open |= 1u << j;
            }
            look_back_slots<NR, W, 32>(lb.row + lane, LB::row_n, id - 1, 1, tx, rc, open, lb.tag);
#pragma unroll
            for (int j = 0; j < NR; ++j)
                if ((open >> j) & 1u) { // the aggregate: stored by a compute thread before bar_row_aggregates
                    publish_inclusive(lb.row + std::size_t(id) * LB::row_n + lane + 32 * j, rc[j], lb.tag);
                    row_carry[lane + 32 * j] = rc[j];
                }
        } else {
            for (int i = lane; i < LB::row_n; i += 32) row_carry[i] = 0;
        }
        mark(9, lane == 0); // the row look-back is done
        bar_arrive(bar_rows, lb_threads);
        bar_sync(bar_z, lb_threads);
        // z's inclusive prefix along x (tiles (tx - 1, ty), ..; (0, ty) is inclusive), only if the
        // tiles to the left have published already, so the z warp never waits here (it kept
        // the block alive after its compute warps were done); the corner's look-back walks the
        // aggregates where this gives up.
        if (tx > 0) {
            U acc[C];
            if (look_back_z<C, lb_z_window, false>(lb.z, id - 1, tx, acc, lb.tag) && lane == 0)
#pragma unroll
                for (int c = 0; c < C; ++c) // this tile's z aggregate: stored by compute thread 0 before bar_z
                    publish_inclusive(lb.z + std::size_t(id) * C + c, acc[c], lb.tag);
        }
        return;
    }

    const int x0 = tx * tile_w, y0 = ty * TH;
    const int rows = min(TH, in.height - y0);
    const int valid = min(tile_w, in.width - x0) * C; // samples (bytes) of a tile row
    const int base = tid * K;
    const std::size_t seg = std::size_t(x0) * C;

    // 1. The tile's input into shared memory.
    load_tile<C>(in, tile_in, y0, rows, seg, valid, in_aligned);
    bar_sync(bar_compute, block_threads);
    stamp(1);

    // 2. Column sums and row sums (G rows at a time: warp_sums; G = 1: add_row, a row at a
    // time); publish them.
    std::uint32_t even[C] = {}, odd[C] = {}; // column sums of bytes 0, 2 and 1, 3 of word j
    if constexpr (G == 1) {
#pragma unroll 4
        for (int r = 0; r < rows; ++r) {
            std::uint32_t w[C];
            load_words<C>(tile_in + r * row_bytes, w);
            std::uint32_t packed[pairs];
            add_row<C>(w, even, odd, packed);
            if (lane == 0)
#pragma unroll
                for (int c = 0; c < C; ++c) part[r][warp][c] = U(row_sum<C>(packed, c));
        }
    } else {
        for (int r0 = 0; r0 < rows; r0 += G) {
            std::uint32_t packed[G][pairs];
#pragma unroll
            for (int i = 0; i < G; ++i) {
                std::uint32_t w[C] = {};
                if (r0 + i < rows) load_words<C>(tile_in + (r0 + i) * row_bytes, w);
                add_row_own<C>(w, even, odd, packed[i]);
            }
            std::uint32_t sums[pairs];
            warp_sums<G, pairs>(packed, sums);
            const int r = r0 + lane / (32 / G);
            if (lane % (32 / G) == 0 && r < rows)
#pragma unroll
                for (int c = 0; c < C; ++c) part[r][warp][c] = U(row_sum<C>(sums, c));
        }
    }
    U colsum[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const std::uint32_t pair = k % 2 ? odd[k / 4] : even[k / 4];
        colsum[k] = U((pair >> (16 * ((k % 4) / 2))) & 0xFFFFu);
    }
    bar_sync(bar_compute, block_threads); // part is complete
    const bool row_thread = tid < LB::row_n;
    if (row_thread) { // row value (r, c): the total, and part[r][w][c] becomes the sum of warps < w
        const int r = tid / C, c = tid - r * C;
        U row_total = 0;
        if (r < rows)
#pragma unroll
            for (int w = 0; w < warps; ++w) {
                const U x = part[r][w][c];
                part[r][w][c] = row_total;
                row_total += x;
            }
        st_slot(lb.row + std::size_t(id) * LB::row_n + tid, make_slot(tx == 0 ? lb.tag.inc : lb.tag.agg, row_total));
    }
    bar_arrive(bar_row_aggregates, lb_threads);
    if (ty == 0) { // inclusive prefixes, behind the flag raised after the block scan
        store_vec<K>(lb.inc_col + std::size_t(id) * LB::col_n, tid, colsum);
    } else {
#pragma unroll
        for (int q = 0; q < C; ++q)
            st_slot(lb.pk + (std::size_t(id) * C + q) * block_threads + tid, pack_aggregate(colsum + 4 * q, lb.tag));
    }
    stamp(2);

    // 3. Look back along y (the z warp looks back along x meanwhile); publish the inclusive
    // prefixes.
    U cc[K];
#pragma unroll
    for (int k = 0; k < K; ++k) cc[k] = 0;
    if (ty > 0) { // tiles (tx, ty - 1), (tx, ty - 2), ..; (tx, 0) is inclusive
        const unsigned first = id - unsigned(lb.n_tx), stride = unsigned(lb.n_tx);
        const int walked = look_back_packed<C, CD>(lb.pk, lb.col_flags, lb.inc_col, first, stride, ty, cc, lb.tag);
        if constexpr (Prof)
            if (tid == 0) d_prof[std::size_t(id) * lb_prof_words + 8] = unsigned(walked);
        stamp(7); // thread 0's column look-back is done
        U inc[K];
#pragma unroll
        for (int k = 0; k < K; ++k) inc[k] = cc[k] + colsum[k];
        store_vec<K>(lb.inc_col + std::size_t(id) * LB::col_n, tid, inc);
    }
    // One block scan: the column carries along the tile (first C values) and, from the totals,
    // z = the sum over the tile's columns of carries and column sums (all input above y0 + TH).
    Vec<U, 2 * C> own, total;
    {
        const Vec<U, C> carry_own = scan_own<U, C>(cc);
#pragma unroll
        for (int c = 0; c < C; ++c) own.v[c] = carry_own.v[c], own.v[C + c] = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) own.v[C + k % C] += colsum[k];
    }
    const Vec<U, 2 * C> before = block_exclusive<U, 2 * C>(own, total, scan_cols);
    if (tid == block_threads - 32) { // past the scan's barrier every inclusive prefix is stored: the flag (by
        st_release(lb.col_flags + id, lb.tag.inc); // warp 3, which has no corner to look for)
        mark(6, true);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) cc[k] += before.v[k % C];
    if (tid == 0)
#pragma unroll
        for (int c = 0; c < C; ++c)
            st_slot(lb.z + std::size_t(id) * C + c,
                    make_slot(tx == 0 ? lb.tag.inc : lb.tag.agg, total.v[c] + total.v[C + c]));
    bar_arrive(bar_z, lb_threads);
    stamp(3);

    // 4. The corner: z of tiles (i < tx, ty - 1), looked back along x, lb_z_window at a time (where
    // no z warp of that row published an inclusive prefix, the walk goes back to tile 0).
    if (warp == 0) {
        U cor[C] = {};
        if (tx > 0 && ty > 0) // (tx - 1, ty - 1), ..; (0, ty - 1) is inclusive
            look_back_z<C, lb_z_window>(lb.z, id - unsigned(lb.n_tx) - 1, tx, cor, lb.tag);
        if (lane == 0)
#pragma unroll
            for (int c = 0; c < C; ++c) corner[c] = cor[c];
        mark(10, lane == 0); // the corner is found
    }
    bar_sync(bar_rows, lb_threads); // row_carry from the z warp, the corner from warp 0 (all 160 threads meet here)
    stamp(4);

    // 5. The output, RPS rows at a time.
    U col[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        col[k] = cc[k] + corner[k % C];
        if (d_above && base + k < valid) col[k] += d_above[seg + base + k]; // a band of a larger image
    }
    for (int r0 = 0; r0 < rows; r0 += RPS) {
        U v[RPS][K];
        Vec<U, RPS * C> totals;
#pragma unroll
        for (int q = 0; q < RPS; ++q) {
            std::uint32_t w[C] = {};
            if (RPS == 1 || r0 + q < rows) load_words<C>(tile_in + (r0 + q) * row_bytes, w);
#pragma unroll
            for (int k = 0; k < K; ++k) v[q][k] = U((w[k / 4] >> (8 * (k % 4))) & 0xFFu);
            const Vec<U, C> t = scan_own<U, C>(v[q]);
#pragma unroll
            for (int c = 0; c < C; ++c) totals.v[q * C + c] = t.v[c];
        }
        // The row prefix left of this thread: within its warp by shuffles, and the warps to its
        // left from `part` (the sums of the warps before this one, since step 2): no barrier in
        // this loop, each warp writes its rows at its own pace.
        static_assert(32 * px_per_thread * 255 < 65536, "a warp's row prefix fits 16 bits");
        const Vec<U, RPS* C> row_before = warp_exclusive_u16<U, RPS * C>(totals);
#pragma unroll
        for (int q = 0; q < RPS; ++q) {
            if (RPS > 1 && r0 + q >= rows) break;
            U add[C]; // everything left of this thread's pixels on row r0 + q
#pragma unroll
            for (int c = 0; c < C; ++c)
                add[c] = row_carry[(r0 + q) * C + c] + part[r0 + q][warp][c] + row_before.v[q * C + c];
#pragma unroll
            for (int k = 0; k < K; ++k) col[k] += v[q][k] + add[k % C];
            if (out_vec && (warp + 1) * 32 * K <= valid) // the warp's whole span; the warp decides as one
                put_row_vec<U, C>(out.row<U>(y0 + r0 + q) + seg, stage[warp], col);
            else
                put_row<std::uint8_t, U, C>(out.row<U>(y0 + r0 + q) + seg, valid, out_aligned, stage[warp], col);
        }
    }
    stamp(5);
}

template <class U, int C, int TH = lb_rows<U, C>()> std::size_t lookback_tiles(const ImageView& in, int& n_tx) {
    n_tx = int(cuda::div_up(in.width, tile_w));
    return std::size_t(n_tx) * cuda::div_up(in.height, TH);
}

template <class U, int C, int TH = lb_rows<U, C>()> std::size_t lookback_scratch_bytes(const ImageView& in) {
    int n_tx = 0;
    return LookBack<U, C, TH>::bytes(lookback_tiles<U, C, TH>(in, n_tx));
}
/// The part of lookback_scratch_bytes that may be kept between launches (LookBack's cleared part).
template <class U, int C, int TH = lb_rows<U, C>()> std::size_t lookback_kept_bytes(const ImageView& in) {
    int n_tx = 0;
    return LookBack<U, C, TH>::cleared_bytes(lookback_tiles<U, C, TH>(in, n_tx));
}

/// The layout of a launch's cleared scratch (LookBack), as a key of at most 60 bits; 0 where the
/// tile counts do not fit it (such a launch always clears).
template <int C, int TH> std::uint64_t layout_key(std::size_t n_tiles, int n_tx) {
    const std::uint64_t nx = std::uint64_t(n_tx), ny = std::uint64_t(n_tiles) / nx;
    if (nx >= (1u << 21) || ny >= (1u << 21)) return 0;
    static_assert(C <= 4 && TH < 128, "the key's fields");
    return nx | ny << 21 | std::uint64_t(C) << 42 | std::uint64_t(TH) << 45;
}

/// Integer output from u8 input in one kernel. The slots, flags and ticket (LookBack's cleared
/// part) lie in `kept` when it is given (pf_host.persistent, kept_state its host word; d_scratch
/// then holds inc_col alone, LookBack::plain_bytes), else after inc_col in d_scratch. A memset
/// clears them before the launch unless the launch before on the same memory had the same layout
/// (kept_state says so: the layout's key and that launch's epoch); then this launch takes the
/// next epoch and every status the last one left reads as lb_none (Tags).
template <class U, int C, int TH = lb_rows<U, C>(), int RPS = lb_out_rows<C>(), bool Prof = false,
          int W = lb_window<C>(), int CD = lb_col_depth<C>(), int G = lb_sum_rows<C>()>
void launch_lookback(const ImageView& in, const ImageView& out, void* d_scratch, const U* d_above, cudaStream_t s,
                     std::uint64_t* d_prof = nullptr, void* kept = nullptr, std::uint64_t* kept_state = nullptr) {
    int n_tx = 0;
    const std::size_t n_tiles = lookback_tiles<U, C, TH>(in, n_tx);
    using LB = LookBack<U, C, TH>;
    LB lb(d_scratch, n_tiles, n_tx, kept);
    const std::uint64_t key = kept && kept_state ? layout_key<C, TH>(n_tiles, n_tx) : 0;
    unsigned epoch = 1;
    if (key && *kept_state >> 2 == key && (*kept_state & 3) != 0)
        epoch = unsigned(*kept_state & 3) % 3 + 1; // 1, 2, 3, 1, ..
    else
        PIXFLOW_CUDA_CHECK(cudaMemsetAsync(lb.cleared, 0, LB::cleared_bytes(n_tiles), s)); // lb_none, ticket 0
    lb.tag = Tags::of(epoch);
    if (kept_state) *kept_state = 0; // until the launch below is enqueued
    constexpr int smem = TH * tile_w * C;
    auto kernel = integral_lookback_kernel<U, C, TH, RPS, Prof, W, CD, G>;
    // The kernel's shared-memory attributes, set once per device (a bit each; devices past 64
    // every time): two driver calls a launch otherwise, host time that a small image pays in
    // full while the GPU waits for the memset's successor.
    static std::atomic<std::uint64_t> attributes_set{0};
    int device = 0;
    PIXFLOW_CUDA_CHECK(cudaGetDevice(&device));
    const std::uint64_t bit = device < 64 ? std::uint64_t(1) << device : 0;
    if ((attributes_set.load(std::memory_order_acquire) & bit) == 0) {
        PIXFLOW_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        PIXFLOW_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                int(cudaSharedmemCarveoutMaxShared)));
        attributes_set.fetch_or(bit, std::memory_order_release);
    }
    kernel<<<unsigned(n_tiles), lb_threads, smem, s>>>(in, out, lb, d_above, is_aligned(in, 16), is_aligned(out, 4),
                                                       is_aligned(out, 16), d_prof);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    if (kept_state) *kept_state = key << 2 | epoch;
}

// ---- f64 outputs: the fixed summation order --------------------------------------------------

constexpr int seq_threads = 256;
constexpr int seq_rows = 32; // rows per block
constexpr int seq_px = 32;   // pixels per chunk

// Kernel F1. Block b owns rows 32b .. 32b+31 and walks along them in chunks of 32 pixels
// (32C samples a row). Warp w moves rows w, w+8, w+16 and w+24 of a chunk, lane l samples l,
// l+32, .. of each (coalesced), loading the next chunk into registers while the current one is
// scanned. The chunk goes through shared memory as doubles, where threads 0 .. 32C-1, thread t
// owning row t % 32 and channel t / 32, continue their running sums along it, in place.
// Shared memory: tile[32][32C + 1] doubles (the +1 spreads a column's rows over the banks).
template <class T, int C>
__global__ void __launch_bounds__(seq_threads) row_scan_seq_kernel(ImageView in, ImageView out) {
    constexpr int chunk = seq_px * C;                        // samples of a row per chunk
    constexpr int row_steps = seq_rows / (seq_threads / 32); // rows per warp: 4
    __shared__ double tile[seq_rows][chunk + 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int y0 = blockIdx.x * seq_rows;
    const int own_row = threadIdx.x % seq_rows, own_c = threadIdx.x / seq_rows;
    const bool scans = threadIdx.x < seq_rows * C && y0 + own_row < in.height;
    double acc = 0.0;

    T next[row_steps][C];
    auto fetch = [&](int x0) {
        const int ns = min(seq_px, in.width - x0) * C;
#pragma unroll
        for (int jr = 0; jr < row_steps; ++jr) {
            const int y = y0 + warp + jr * (seq_threads / 32);
            if (y >= in.height) continue;
            const T* src = in.row<T>(y) + std::size_t(x0) * C;
#pragma unroll
            for (int jc = 0; jc < C; ++jc)
                if (lane + 32 * jc < ns) next[jr][jc] = src[lane + 32 * jc];
        }
    };
    fetch(0);
    for (int x0 = 0; x0 < in.width; x0 += seq_px) {
        const int npx = min(seq_px, in.width - x0), ns = npx * C;
#pragma unroll
        for (int jr = 0; jr < row_steps; ++jr)
#pragma unroll
            for (int jc = 0; jc < C; ++jc)
                if (y0 + warp + jr * (seq_threads / 32) < in.height && lane + 32 * jc < ns)
                    tile[warp + jr * (seq_threads / 32)][lane + 32 * jc] = double(next[jr][jc]);
        __syncthreads();
        if (x0 + seq_px < in.width) fetch(x0 + seq_px); // in flight during the scan
        if (scans)
            for (int p = 0; p < npx; ++p) {
                acc += tile[own_row][p * C + own_c];
                tile[own_row][p * C + own_c] = acc;
            }
        __syncthreads();
#pragma unroll
        for (int jr = 0; jr < row_steps; ++jr) {
            const int r = warp + jr * (seq_threads / 32);
            if (y0 + r >= in.height) continue;
            double* dst = out.row<double>(y0 + r) + std::size_t(x0) * C;
#pragma unroll
            for (int jc = 0; jc < C; ++jc)
                if (lane + 32 * jc < ns) dst[lane + 32 * jc] = tile[r][lane + 32 * jc];
        }
        __syncthreads(); // tile is overwritten by the next chunk
    }
}

constexpr int col_threads = 64;
constexpr int col_batch = 16; // rows loaded ahead by each thread

// Kernel F2. Thread i owns sample column i and walks down the rows keeping the running sum:
// out(y) = out(y-1) + out(y), loading 16 rows ahead so that enough loads are in flight.
// Consecutive threads take consecutive samples (coalesced). No shared memory.
__global__ void __launch_bounds__(col_threads) col_scan_seq_kernel(ImageView out, const double* d_above) {
    const std::size_t i = std::size_t(blockIdx.x) * col_threads + threadIdx.x;
    if (i >= out.row_samples()) return;
    double acc = out.row<double>(0)[i];
    if (d_above) { // a band of a larger image: out(0) = above + r(0), the whole image's addition
        acc = d_above[i] + acc;
        out.row<double>(0)[i] = acc;
    }
    for (int y0 = 1; y0 < out.height; y0 += col_batch) {
        double v[col_batch];
#pragma unroll
        for (int j = 0; j < col_batch; ++j)
            if (y0 + j < out.height) v[j] = out.row<double>(y0 + j)[i];
#pragma unroll
        for (int j = 0; j < col_batch; ++j)
            if (y0 + j < out.height) {
                acc = acc + v[j];
                out.row<double>(y0 + j)[i] = acc;
            }
    }
}

template <class T, int C>
void launch_seq(const ImageView& in, const ImageView& out, const double* d_above, cudaStream_t s) {
    row_scan_seq_kernel<T, C><<<cuda::div_up(in.height, seq_rows), seq_threads, 0, s>>>(in, out);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    col_scan_seq_kernel<<<cuda::div_up(static_cast<long long>(out.row_samples()), col_threads), col_threads, 0, s>>>(
        out, d_above);
    PIXFLOW_CUDA_CHECK_LAUNCH();
}

/// The look-back tile's rows for this image, as a divisor of lb_rows: an image of few tiles
/// runs in one wave, where a tile's own life sets the time, and shorter tiles live shorter.
/// H200, lookback_harness `sizes`, best of 3 medians of 200, tiles of TH, TH/2 and TH/4 rows:
/// gray 512 x 512 29.6, 21.3, 17.5 us, 1920 x 1080 31.4, 23.6, 20.7, 2048 x 2048 30.9, 25.1,
/// 24.8, 3840 x 2160 34.5, 28.9, 30.3, 4096 x 4096 40.8, 41.0, 46.7; RGB 512 x 512 22.9, 20.1,
/// 19.6, 1024 x 1024 25.7, 23.5, 27.2, 1920 x 1080 28.2, 28.4, 32.7 (reduce-then-scan: gray
/// 23.4-29.8 us, RGB 31-44 us at those sizes). 2 and 4 channels keep TH (not measured).
template <int C> int lb_split(const ImageView& in) {
    const std::int64_t px = std::int64_t(in.width) * in.height;
    if constexpr (C == 1) return px <= (std::int64_t(1) << 22) ? 4 : px <= (std::int64_t(1) << 23) ? 2 : 1;
    if constexpr (C == 3) return px <= (std::int64_t(1) << 20) ? 2 : 1;
    return 1;
}

/// Calls f(std::integral_constant<int, TH>{}) with lb_split's tile rows for this image: the one
/// place that picks them, so that the scratch asked for and the launch always agree.
template <int C, class F> decltype(auto) with_lookback_rows(const ImageView& in, F&& f) {
    constexpr int TH = lb_rows<std::uint32_t, C>();
    if constexpr (C == 1 || C == 3) {
        const int split = lb_split<C>(in);
        if constexpr (C == 1)
            if (split == 4) return f(std::integral_constant<int, TH / 4>{});
        if (split == 2) return f(std::integral_constant<int, TH / 2>{});
    }
    return f(std::integral_constant<int, TH>{});
}

} // namespace

std::size_t integral_cuda_kept_bytes(const ImageView& in, const ImageView& out) {
    if (in.dtype != DType::u8 || out.dtype != DType::u32 || in.width <= 0 || in.height <= 0) return 0;
    return visit_channels("integral", in.channels, [&](auto channels) {
        constexpr int C = decltype(channels)::value;
        return with_lookback_rows<C>(
            in, [&](auto th) { return lookback_kept_bytes<std::uint32_t, C, decltype(th)::value>(in); });
    });
}

std::size_t integral_cuda_scratch_bytes(const ImageView& in, const ImageView& out) {
    int n_tx = 0, n_ty = 0;
    if (in.dtype == DType::u8 && out.dtype == DType::u32)
        return visit_channels("integral", in.channels, [&](auto channels) {
            constexpr int C = decltype(channels)::value;
            return with_lookback_rows<C>(
                in, [&](auto th) { return lookback_scratch_bytes<std::uint32_t, C, decltype(th)::value>(in); });
        });
    switch (out.dtype) {
    case DType::u32: return scratch_elements<std::uint32_t>(in, n_tx, n_ty) * 4;
    case DType::u64: return scratch_elements<std::uint64_t>(in, n_tx, n_ty) * 8;
    default: return 0; // f64 needs none
    }
}

void integral_cuda(const ImageView& in, const ImageView& out, void* scratch, void* stream, const void* above,
                   void* last, void* kept, std::uint64_t* kept_state) {
    if (in.width <= 0 || in.height <= 0) return;
    const cudaStream_t s = cuda::stream_of(stream);
    visit_dtype<DType::u8, DType::u16, DType::u32, DType::f32>("integral", in.dtype, [&](auto in_tag) {
        using T = decltype(in_tag);
        visit_channels("integral", in.channels, [&](auto channels) {
            constexpr int C = decltype(channels)::value;
            if (out.dtype == DType::f64) return launch_seq<T, C>(in, out, static_cast<const double*>(above), s);
            if constexpr (std::is_same_v<T, std::uint8_t>) // one pass (look-back); u64: see the note
                if (out.dtype == DType::u32)
                    return with_lookback_rows<C>(in, [&](auto th) {
                        launch_lookback<std::uint32_t, C, decltype(th)::value>(
                            in, out, scratch, static_cast<const std::uint32_t*>(above), s, nullptr, kept, kept_state);
                    });
            if constexpr (std::is_integral_v<T>) {
                if (out.dtype == DType::u32)
                    return launch_tiles<T, std::uint32_t, C>(in, out, static_cast<std::uint32_t*>(scratch),
                                                             static_cast<const std::uint32_t*>(above), s);
                if (out.dtype == DType::u64)
                    return launch_tiles<T, std::uint64_t, C>(in, out, static_cast<std::uint64_t*>(scratch),
                                                             static_cast<const std::uint64_t*>(above), s);
            }
            throw UserError(std::string("integral: no CUDA kernel from ") + dtype_name(in.dtype) + " to " +
                                dtype_name(out.dtype),
                            PF_ERR_UNSUPPORTED);
        });
    });
    if (last) // after every kernel that read `above` (it may be the same memory), on the stream
        PIXFLOW_CUDA_CHECK(cudaMemcpyAsync(last, out.row<char>(out.height - 1),
                                           out.row_samples() * dtype_size(out.dtype), cudaMemcpyDeviceToDevice, s));
}

} // namespace pixflow::integral
