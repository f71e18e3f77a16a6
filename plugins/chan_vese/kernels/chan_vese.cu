// chan_vese.cu: CUDA kernel of chan_vese: the whole loop in one persistent cooperative kernel.
//
// Launched with cudaLaunchCooperativeKernel on the node's stream, with as many 512-thread blocks
// as fit on the device at once (2 per SM at <= 64 registers; fewer for a small image; at most
// 512), so that every block is resident: cooperative_groups' grid.sync() separates the first
// phases, and the loop's own barrier can spin. The work unit is a quad: 4 pixels x0..x0+3 of one
// row. Thread g of the grid owns quads g, g + G, g + 2G, ... (G = grid threads), the same ones in
// every phase, so a warp reads 512 consecutive bytes of a phi row (float4).
//
//   A. copy the input into a padded buffer of T (rows of `pitch` samples, a multiple of 32:
//      aligned uchar4/ushort4/float4 loads), per-block min and max      -> grid.sync
//   B. every block reduces the min/max slots (normalisation), writes phi0 and adds up, per
//      block, the I and the count where phi0 > 0 and I over all pixels  -> grid.sync
//   loop: every block adds up the block sums of the previous pass in block order (the same
//      additions in every block, so every block gets the same c1, c2 and RMS change, bit for
//      bit, and all leave the loop at the same iteration: the convergence test is on the
//      device); then one fused sweep: stencil, update phi -> phi', and the sums for the next
//      c1, c2 and the squared change, reduced per block (cub::BlockReduce: warp shuffles, then
//      the 16 warp totals in order) into its slot               -> arrival barrier
//   C. write phi and the mask from the final buffer; block 0 writes the outcome.
//
// One barrier per iteration, fused with the reduction: thread 0 of each block stores its block's
// sums, adds 1 to an arrival count (atom.add.acq_rel.gpu) and spins (ld.acquire.gpu) until all
// blocks of this iteration have arrived; then one __syncthreads, then thread i < grid reads
// block i's sums (__ldcg) and the block adds them up with one more barrier (load_total: the
// additions of cub::BlockReduce, so the bits of c1, c2 and the RMS change are those of the
// kernel before). That is grid.sync's own protocol without its second __syncthreads, and with
// one block reduction barrier fewer on each side of it (3 barriers per iteration instead of 6). The block sums alternate between two slot arrays (see the loop). The acquire orders
// the sweep's ordinary loads of phi' written by other blocks (the rows above and below mostly
// hit L1/L2). phi is double-buffered; per iteration the sweep reads phi (4 B/pixel, the rows
// above and below again from cache), the input copy (sizeof(T) B) and writes phi' (4 B). Sums
// are double, added in a fixed order; the only atomic is the arrival count, so a run is
// deterministic. The math uses the hardware's approximate reciprocal square root and reciprocal
// (rsqrtf's and __fdividef's values, a few ulp; see rsqrt_normal and divide_by_normal), so CUDA
// and the CPU agree to rounding, not bit for bit (where phi is locally flat the scheme
// amplifies f32 rounding on either backend).
//
// The operator reads the outcome (iterations, final RMS change) back for the run report: one
// cudaMemcpyAsync of 16 bytes and one cudaStreamSynchronize of the node's own stream at the end
// of the call, once per run, never per iteration.
//
// Measured on an H100 80GB HBM3 (test/bench/cv_harness.cu, 2026-11-27: u8 shapes, tol = 0, 500
// iterations, the whole call timed with events, median of 9 divided by 500, min over 5 rounds;
// the kernel before, with grid.sync, in the same run; outputs byte for byte the same):
//                  before (grid.sync)      now
//   512 x 512      4.11 us/iteration       3.82 us   (128 blocks; barrier and reductions
//                                                     dominate: the image is 1.3 MB)
//   1000 x 1000    8.19 us                 7.67 us   (264 blocks; 9 MB per sweep, all in L2)
//   4096 x 4096   69.5 us                 66.7 us    (151 MB per sweep at 9 B/pixel: 1.28x the
//                                                     52 us of the 2.9 TB/s copy bandwidth
//                                                     measured before)
// globaltimer stamps of block 0 at 1000 x 1000 (this barrier, an instrumented build): its sweep
// 2.5 us, its block reduction and arrival 1.1 us, its wait 2.3 us (the last block arrives 5.2 us
// into the iteration; the sweep's loads all come from L2, the acquire having emptied L1), the
// grid total 1.4 us (a barrier, one L2 round trip for the slots, a barrier); 7.9 us in all. So
// about 3 us of each iteration is the barrier and the two reductions, the rest the sweep.
// Tried and slower (same harness, same card): every block polling all blocks' sums tagged with
// the iteration (two 16-byte words per block, each with the tag, st/ld.relaxed.gpu as CUB's
// look-back does; no count and no second read): 6.9 / 11.8 / 70.4 us at the three sizes, 6.3 /
// 10.6 / 70 with __nanosleep backoff (.b128 accesses instead: the same); block 0 saw the last
// sums 4.6 us after the last block published them at 512 x 512 (stamps), against 0.7 us for
// the count; one leader block polling and publishing the total: 7.5 /
// 11 / 70 us; loading two quads per thread before computing either (to overlap their L2
// latency): 64 registers then spill, 4.2 / 8.5 / 77 us; loading each thread's first quad of the
// next sweep right after the arrival barrier, to overlap it with the grid total: spills again,
// 4.4 / 9.0 / 74.7 us (against 3.9 / 7.7 / 66.4 without, same run). Before that, a variant
// where each warp walks down a 128-pixel strip (phi read once, neighbours by warp shuffles,
// 384-thread blocks to stay below 80 registers) was slower at every size: 5.3, 9.1 and 82 us
// per iteration.
// 2026-11-28, on an H200 (same harness against fe140a7's kernel, the grid the same, outputs bit
// for bit the same in every check; before: 3.7 / 7.6 / 64.1 us), both slower and not kept:
//  - the sweep's loads copied into shared memory with cp.async 1 or 2 quads ahead of the quad
//    being updated (no registers held by loads in flight; 3 stages 90-108 KB a block): 4.6 /
//    9.3-9.8 / 73.6-74.9 us, at 512 x 512 (one quad per thread, nothing to overlap) too;
//  - the update split in two, the half that needs only phi (the four rsqrtf and the curvature)
//    of the next iteration computed into shared memory while the other blocks arrive, each
//    block waiting only for the blocks whose rows its stencil reads (a flag per block), then
//    the data term and the division once c1 and c2 are in: 4.6 / 8.4 / 70.9 us. globaltimer
//    stamps at 1000 x 1000: the stencil took a block 2.0 us on average after its neighbours'
//    flags, while the grid's total reached the blocks 1.1-2.9 us after the last arrival, so it
//    lengthened the iteration instead of hiding behind the barrier; and in both kernels a group
//    of blocks (about 144 to 230 at 264 blocks) finishes its sweep 1.5 us after the others in
//    every iteration, which sets the pace whatever the barrier does. Those are the second blocks
//    of their SMs (%smid stamps): the scheduler favours the older block's warps, so what counts
//    is an SM's whole work per iteration, and ncu showed that to be instruction issue (57% of
//    issue slots busy, 144 instructions per pixel and iteration, all phases together).
// So the instructions went instead, each change keeping every bit (same harness, 257 checks):
//  - rsqrt.approx.ftz for rsqrtf (its argument, eta plus squares, is never subnormal, so
//    rsqrtf's test and scaling for subnormals never act), the division as the product with the
//    .ftz reciprocal (a denominator >= 1 when mu dt >= 0, which launch checks, so __fdividef's
//    test for a subnormal denominator never acts), and quads wholly inside their row without
//    the per-lane edge tests;
//  - one 64-bit offset per quad for its six loads and an int count of the thread's quads (with
//    the changes above, a quad's pass through the loop went from 306 to 258 instructions, SASS);
//  - the region means and the RMS change made once per block by thread 0 (two double
//    divisions and a square root) instead of by every thread: no more spills.
//   H200, us per iteration       fe140a7 (before)    now
//   512 x 512                    3.69                3.42
//   1000 x 1000                  7.59                6.34
//   4096 x 4096                 64.5                52.7
//  Also tried then and slower: loading a thread's next quad before updating the current one
//  (registers then spill: 6.82 against 6.30 us at 1000 x 1000, 59.1 against 53.5 at 4096), and
//  loading the next sweep's first quad while the block reads the grid's total (7.30 against
//  6.37, 58.3 against 52.8).
// 2026-11-30, H200: Nsight Compute at 4096 x 4096 (500 iterations): DRAM 60.5% of peak, issue
//  64.8%, XU 54%, FMA 41%, 50% occupancy (registers), 46% of the stalls on global loads: no pipe
//  saturated, latency-bound. The next quad's lines prefetched into L2 (prefetch.global.L2, no
//  registers): 54.1 us an iteration against 52.1 (with the row below too 55.9; two quads ahead
//  56.8); not kept.
// 2026-11-30 (later), H200, cv_harness against 1c25a09's kernel, every output bit-identical, not
//  kept (branches next/cv-staged and next/cv-1024; docs/performance.md, twenty-fifth session):
//  - the loads out of the registers: where rows hold whole 512-quad segments, one thread copied
//    each block's next 2-4 steps (the segment, the rows above and below, the input bytes) into
//    shared memory with TMA bulk copies on an mbarrier pipeline: 4096^2 59.0 against 53.9-54.3 us
//    an iteration, 2048^2 17.5 against 15.2, at any depth; the warps then wait for the stages
//    (ncu: 15% of the stall samples) and move at the pace of the block's slowest warp;
//  - one 1024-thread block an SM (each half reducing its sums as a 512-thread block): 4096^2
//    level (52.88 against 53.02), 1000^2 -2.8%, 512^2 +30% (half the SMs).
//  At 4096^2 the sweep's 35.2 M warp instructions an iteration are 33.6 us at full issue; the
//  1.15x target (41.6 us) needs over 81% of the issue slots busy, the kernel holds 65%.
#include "chan_vese.hpp"

#include <pixflow/cuda.hpp>
#include <pixflow/dispatch.hpp>

#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <string>

namespace cg = cooperative_groups;

namespace pixflow::chan_vese {
namespace {

constexpr int threads = 512;

/// One block's sums: I where phi > 0, the pixel count there, and (phi' - phi)^2 (in the first
/// pass: I over all pixels).
struct Sums {
    double in, count, sq;
};

template <class T> struct Quad;
template <> struct Quad<std::uint8_t> { using type = uchar4; };
template <> struct Quad<std::uint16_t> { using type = ushort4; };
template <> struct Quad<float> { using type = float4; };

/// Sizes and offsets of the scratch regions, from the image and the device.
struct Layout {
    int width = 0, height = 0, quads_per_row = 0, pitch = 0; // pitch: samples per padded row
    long long quads = 0;
    int grid = 0;
    std::size_t phi_bytes = 0, img_bytes = 0, parts_bytes = 0, minmax_bytes = 0, total = 0;
};

template <class T> struct Args {
    ImageView in, mask, phi_out;
    float* phi[2];     // [height][pitch]
    T* img;            // [height][pitch]
    Sums* parts;       // [3][grid]: phase B's block sums, then the loop's by the parity of the iteration
    unsigned* arrived; // blocks arrived in the loop, over all iterations (wraps)
    float2* minmax;    // [grid]
    Outcome* outcome;  // device
    int width, height, quads_per_row, pitch;
    long long quads;
    int step_rows, step_quads; // the grid's stride in quads (gridDim.x * threads), as rows + quads
    float mu, dt, lambda1, lambda2;
    double tol;
    int max_iter;
    Init init;
};

/// Adds two blocks' (or threads') sums, field by field.
struct AddSums {
    __device__ __forceinline__ Sums operator()(const Sums& a, const Sums& b) const {
        return {a.in + b.in, a.count + b.count, a.sq + b.sq};
    }
};

/// The smaller x and the larger y (NaNs skipped, as fminf and fmaxf do).
struct MinMax {
    __device__ __forceinline__ float2 operator()(const float2& a, const float2& b) const {
        return make_float2(fminf(a.x, b.x), fmaxf(a.y, b.y));
    }
};

/// The shared memory of a block reduction: CUB's temporary storage and the slot that hands the
/// result to every thread.
template <class T> struct BlockShared {
    typename cub::BlockReduce<T, threads>::TempStorage tmp;
    T result;
};

/// `op` over the block, in a fixed order (cub::BlockReduce's warp reductions, then the warps'
/// totals in warp order), so every block that reduces the same values gets the same bits; every
/// thread gets the result. No trailing barrier is needed: `result` is written again only after
/// the barrier inside the next reduction, which every thread reaches after reading it.
template <class T, class Op> __device__ __forceinline__ T block_reduce(T v, Op op, BlockShared<T>& sh) {
    const T r = cub::BlockReduce<T, threads>(sh.tmp).Reduce(v, op);
    if (threadIdx.x == 0) sh.result = r;
    __syncthreads();
    return sh.result;
}

/// Sum of the n block slots, added in the same order by every block. The slots were written by
/// other blocks before the last grid.sync; read through L2 (__ldcg).
__device__ Sums grid_total(const Sums* parts, int n, BlockShared<Sums>& sh) {
    Sums v{0, 0, 0};
    for (int i = threadIdx.x; i < n; i += threads) {
        v.in += __ldcg(&parts[i].in);
        v.count += __ldcg(&parts[i].count);
        v.sq += __ldcg(&parts[i].sq);
    }
    return block_reduce(v, AddSums{}, sh);
}

/// What a block takes from the grid's sums: the region means c1, c2 of the next iteration and
/// the RMS change of the last one.
struct Means {
    float c1, c2;
    double rms;
};

/// The means and RMS change from the grid's total t over n pixels whose input adds up to sum_all.
__device__ __forceinline__ Means means_of(const Sums& t, double n, double sum_all) {
    return {float(t.count > 0 ? t.in / t.count : 0.0), float(n - t.count > 0 ? (sum_all - t.in) / (n - t.count) : 0.0),
            sqrt(t.sq / n)};
}

/// The shared memory of the loop's grid total: the warps' totals, and the means made from them.
struct TotalShared {
    typename cub::WarpReduce<Sums>::TempStorage tmp[threads / 32];
    Sums warp[threads / 32];
    Means means;
};

/// grid_total and means_of with the additions of grid_total, so the same bits: thread i < n
/// reads block i's slot, each warp adds its 32 with cub::WarpReduce (the shuffle tree of
/// cub::BlockReduce's warp reductions), then thread 0 adds the warps' totals in warp order and
/// makes the means (two double divisions and a square root) once for the block, which the
/// other threads read after a barrier (every thread making them took more issue slots than the
/// barrier costs). The warps past slot n hold only zeros and are skipped: x + 0 = x, and no sum
/// is -0 (each starts at +0). n <= threads (layout_for). The slots were written by other blocks
/// before the arrival that the caller has waited for; read through L2 (__ldcg).
__device__ __forceinline__ Means load_means(const Sums* parts, int n, TotalShared& sh, double pixels, double sum_all) {
    const int warp = threadIdx.x / 32, warps = (n + 31) / 32;
    if (warp < warps) {
        Sums v{0, 0, 0};
        if (int(threadIdx.x) < n)
            v = {__ldcg(&parts[threadIdx.x].in), __ldcg(&parts[threadIdx.x].count), __ldcg(&parts[threadIdx.x].sq)};
        v = cub::WarpReduce<Sums>(sh.tmp[warp]).Reduce(v, AddSums{});
        if (threadIdx.x % 32 == 0) sh.warp[warp] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        Sums t = sh.warp[0];
        for (int i = 1; i < warps; ++i) t = AddSums{}(t, sh.warp[i]);
        sh.means = means_of(t, pixels, sum_all);
    }
    __syncthreads();
    return sh.means;
}

__device__ __forceinline__ void to_floats(uchar4 q, float v[4]) { v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w; }
__device__ __forceinline__ void to_floats(ushort4 q, float v[4]) { v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w; }
__device__ __forceinline__ void to_floats(float4 q, float v[4]) { v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w; }

/// The constants of one iteration's update.
struct Step {
    float mu, dt, mu_dt, lambda1, lambda2, c1, c2, scale, offset;
};

/// One thread's running sums over its pixels.
struct Acc {
    double in = 0, sq = 0;
    int count = 0;
};

/// rsqrtf for an argument that is never subnormal (each is eta + squares >= 1e-16, or NaN): the
/// .ftz form of the same approximation, which differs from rsqrtf's only for subnormal inputs
/// (where rsqrtf scales them first), so the same bits without rsqrtf's extra instructions that
/// test for them.
__device__ __forceinline__ float rsqrt_normal(float x) {
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

/// x / y as __fdividef(x, y) computes it, for y >= 2^-126 (or NaN): x times the reciprocal of y,
/// the multiplication rounded to nearest. __fdividef first tests y against 2^-126 to scale both
/// operands; with the update's denominator, 1 + phi^2 + mu dt (C1 + ... + C4) >= 1 when
/// mu dt >= 0 (launch checks it), that test never passes, and the .ftz reciprocal equals the one
/// __fdividef takes for every such y (for y >= 2^126 both give 0).
__device__ __forceinline__ float divide_by_normal(float x, float y) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
    return __fmul_rn(x, r);
}

/// phi' of the quad x0..x0+3 of one row: its phi `c`, the rows above (`u`) and below (`d`),
/// the pixels left of x0 and right of x0 + 3, the input samples `v`; adds to the sums. Lanes
/// at x >= w (the padding of the last quad) give 0 and add nothing. Full: x0 + 4 <= w, the
/// whole quad inside the row (every quad but the last of a row whose width is not a multiple
/// of 4), so that none of the per-lane tests is compiled in.
template <bool Full>
__device__ __forceinline__ float4 update_quad(float4 c, float4 u4, float4 d4, float left, float right, const float v[4],
                                              int x0, int w, const Step& st, Acc& acc) {
    const float eta = 1e-16f;
    const float p[4] = {c.x, c.y, c.z, c.w};
    const float u[4] = {u4.x, u4.y, u4.z, u4.w};
    const float d[4] = {d4.x, d4.y, d4.z, d4.w};
    float o[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const int x = x0 + k;
        const float l = k == 0 ? left : p[k - 1];
        const float r = (Full && k < 3) || x + 1 < w ? (k == 3 ? right : p[k + 1]) : p[k];
        const float xp = r - p[k], xn = p[k] - l, xc = (r - l) * 0.5f;
        const float yp = d[k] - p[k], yn = p[k] - u[k], yc = (d[k] - u[k]) * 0.5f;
        const float k1 = rsqrt_normal(eta + xp * xp + yc * yc);
        const float k2 = rsqrt_normal(eta + xn * xn + yc * yc);
        const float k3 = rsqrt_normal(eta + xc * xc + yp * yp);
        const float k4 = rsqrt_normal(eta + xc * xc + yn * yn);
        const float curv = r * k1 + l * k2 + d[k] * k3 + u[k] * k4;
        const float i = v[k] * st.scale + st.offset;
        const float da = i - st.c1, db = i - st.c2;
        const float data = st.lambda2 * (db * db) - st.lambda1 * (da * da);
        const float q = 1.0f + p[k] * p[k]; // 1 / delta
        const float np = divide_by_normal(p[k] * q + st.dt * (st.mu * curv + data), q + st.mu_dt * (k1 + k2 + k3 + k4));
        o[k] = 0.0f;
        if (Full || x < w) {
            o[k] = np;
            const float diff = np - p[k];
            acc.sq += double(diff * diff);
            if (np > 0.0f) acc.in += double(i), ++acc.count;
        }
    }
    return make_float4(o[0], o[1], o[2], o[3]);
}

template <class T> __global__ void __launch_bounds__(threads, 2) chan_vese_kernel(const Args<T> a) {
    using Q = typename Quad<T>::type;
    cg::grid_group grid = cg::this_grid();
    __shared__ BlockShared<Sums> s_sums;
    __shared__ BlockShared<float2> s_mm;
    __shared__ TotalShared s_total;
    const long long first = (long long)blockIdx.x * threads + threadIdx.x;
    const long long step = (long long)gridDim.x * threads;
    const int w = a.width, h = a.height, pitch = a.pitch;

    // A. padded copy of the input, min and max.
    float2 mm = make_float2(INFINITY, -INFINITY);
    for (long long q = first; q < a.quads; q += step) {
        const int y = int(q / a.quads_per_row), x0 = int(q - (long long)y * a.quads_per_row) * 4;
        const T* src = a.in.template row<T>(y);
        T v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            v[k] = x0 + k < w ? src[x0 + k] : T(0);
            if (x0 + k < w) {
                mm.x = fminf(mm.x, float(v[k]));
                mm.y = fmaxf(mm.y, float(v[k]));
            }
        }
        Q out;
        out.x = v[0], out.y = v[1], out.z = v[2], out.w = v[3];
        *reinterpret_cast<Q*>(a.img + std::size_t(y) * pitch + x0) = out;
    }
    mm = block_reduce(mm, MinMax{}, s_mm);
    if (threadIdx.x == 0) a.minmax[blockIdx.x] = mm;
    if (blockIdx.x == 0 && threadIdx.x == 0) *a.arrived = 0; // read only after two grid.syncs
    grid.sync();

    // B. normalisation, phi0 and the sums for the first c1, c2.
    mm = make_float2(INFINITY, -INFINITY);
    for (int i = threadIdx.x; i < gridDim.x; i += threads) {
        const float2 b = __ldcg(&a.minmax[i]);
        mm.x = fminf(mm.x, b.x);
        mm.y = fmaxf(mm.y, b.y);
    }
    mm = block_reduce(mm, MinMax{}, s_mm);
    const double range = double(mm.y) - double(mm.x);
    const float scale = float(range != 0 ? 1.0 / range : 1.0);
    const float offset = float(-double(mm.x)) * scale;

    Sums acc{0, 0, 0};
    for (long long q = first; q < a.quads; q += step) {
        const int y = int(q / a.quads_per_row), x0 = int(q - (long long)y * a.quads_per_row) * 4;
        float v[4], p[4];
        to_floats(*reinterpret_cast<const Q*>(a.img + std::size_t(y) * pitch + x0), v);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            p[k] = 0.0f;
            if (x0 + k < w) {
                p[k] = float(initial_phi(a.init, x0 + k, y, w, h));
                const float i = v[k] * scale + offset;
                if (p[k] > 0.0f) acc.in += i, acc.count += 1;
                acc.sq += i;
            }
        }
        *reinterpret_cast<float4*>(a.phi[0] + std::size_t(y) * pitch + x0) = make_float4(p[0], p[1], p[2], p[3]);
    }
    acc = block_reduce(acc, AddSums{}, s_sums);
    if (threadIdx.x == 0) a.parts[blockIdx.x] = acc;
    grid.sync();

    const Sums t = grid_total(a.parts, gridDim.x, s_sums);
    const double n = double(w) * double(h), sum_all = t.sq;
    Means m = means_of(t, n, sum_all);
    int it = 0, cur = 0;
    // This thread's first quad as (row, quad in the row); the grid's stride is step_rows rows
    // plus step_quads quads (no 64-bit division per quad).
    const int y_first = int(first / a.quads_per_row);
    const int xq_first = int(first - (long long)y_first * a.quads_per_row);
    const int my_quads = first < a.quads ? int((a.quads - 1 - first) / step) + 1 : 0; // quads first, first + step, ...
    for (;;) {
        const Step st{a.mu, a.dt, a.mu * a.dt, a.lambda1, a.lambda2, m.c1, m.c2, scale, offset};
        const float* src = a.phi[cur];
        float* dst = a.phi[cur ^ 1];
        Acc acc_t;
        int y = y_first, xq = xq_first;
        for (int j = 0; j < my_quads; ++j) {
            const int x0 = xq * 4;
            // One 64-bit offset per quad; the neighbours are small steps from it.
            const std::size_t at = std::size_t(y) * pitch + x0;
            const float* mid = src + at;
            const float4 c4 = *reinterpret_cast<const float4*>(mid);
            const float4 u4 = *reinterpret_cast<const float4*>(mid - (y > 0 ? pitch : 0));
            const float4 d4 = *reinterpret_cast<const float4*>(mid + (y + 1 < h ? pitch : 0));
            const float left = mid[x0 > 0 ? -1 : 0];
            const float right = mid[x0 + 4 < w ? 4 : w - 1 - x0];
            float v[4];
            to_floats(*reinterpret_cast<const Q*>(a.img + at), v);
            *reinterpret_cast<float4*>(dst + at) =
                x0 + 4 <= w ? update_quad<true>(c4, u4, d4, left, right, v, x0, w, st, acc_t)
                            : update_quad<false>(c4, u4, d4, left, right, v, x0, w, st, acc_t);
            y += a.step_rows;
            xq += a.step_quads;
            if (xq >= a.quads_per_row) xq -= a.quads_per_row, ++y;
        }
        // The block's sums into its slot of this iteration's parity, then the arrival: a slot
        // written in iteration k is read once every block has arrived in k, and written again in
        // k + 2, after its writer saw every block arrive in k + 1, which each does after its
        // reads of k. The release (after the barrier inside Reduce) publishes the block's phi'
        // and slot; the acquire of the last arrival, then the barrier, make every block's
        // visible to this one (cooperative_groups' grid.sync does the same, with one more
        // barrier and a separate slot reduction).
        const Sums b = cub::BlockReduce<Sums, threads>(s_sums.tmp)
                           .Reduce(Sums{acc_t.in, double(acc_t.count), acc_t.sq}, AddSums{});
        Sums* slot = a.parts + std::size_t(1 + (it & 1)) * gridDim.x;
        if (threadIdx.x == 0) {
            slot[blockIdx.x] = b;
            const unsigned target = unsigned(it + 1) * gridDim.x; // wraps, as the count does
            unsigned seen;
            // acq_rel, not release: the last block to arrive reads no flag after its add, so its
            // add is its acquire (without it that block's L1 could keep phi' lines of two
            // iterations ago, when this buffer was the one read).
            asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(seen) : "l"(a.arrived) : "memory");
            ++seen;
            while (int(seen - target) < 0) // blocks already in k + 1 may have added too
                asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(seen) : "l"(a.arrived) : "memory");
        }
        __syncthreads();
        m = load_means(slot, gridDim.x, s_total, n, sum_all);
        ++it;
        cur ^= 1;
        if (!(m.rms > a.tol) || it >= a.max_iter) break; // the same decision in every block
    }

    // C. outputs.
    const float* fin = a.phi[cur];
    for (long long q = first; q < a.quads; q += step) {
        const int y = int(q / a.quads_per_row), x0 = int(q - (long long)y * a.quads_per_row) * 4;
        const float4 f = *reinterpret_cast<const float4*>(fin + std::size_t(y) * pitch + x0);
        const float p[4] = {f.x, f.y, f.z, f.w};
        float* po = a.phi_out.template row<float>(y);
        std::uint8_t* mo = a.mask.template row<std::uint8_t>(y);
#pragma unroll
        for (int k = 0; k < 4; ++k)
            if (x0 + k < w) {
                po[x0 + k] = p[k];
                mo[x0 + k] = p[k] > 0.0f ? 255 : 0;
            }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        a.outcome->iterations = it;
        a.outcome->rms_change = m.rms; // the last iteration's: at least one runs
    }
}

constexpr std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

template <class T> Layout layout_for(const ImageView& in) {
    Layout l;
    l.width = in.width;
    l.height = in.height;
    l.quads_per_row = (in.width + 3) / 4;
    l.pitch = int(align_up(std::size_t(l.quads_per_row) * 4, 32)); // 128-byte phi rows
    l.quads = (long long)l.quads_per_row * in.height;
    // The image's device, or for a shape (the planner's scratch estimate: no data, device
    // PF_HOST) the current one, where the node's call will run.
    int device = in.device, sms = 0, per_sm = 0, coop = 0;
    if (device < 0) PIXFLOW_CUDA_CHECK(cudaGetDevice(&device));
    PIXFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
    if (!coop)
        throw UserError("chan_vese: CUDA device " + std::to_string(device) +
                            " does not support cooperative launches; run this node on the CPU",
                        PF_ERR_UNSUPPORTED);
    PIXFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    PIXFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chan_vese_kernel<T>, threads, 0));
    PIXFLOW_INTERNAL_CHECK(per_sm >= 1, "chan_vese: the CUDA kernel does not fit on an SM");
    const long long wanted = std::max<long long>(1, (l.quads + threads - 1) / threads);
    // At most one block per thread of a block: load_total gives each block's slot a thread
    // (264 blocks on an H100).
    l.grid = int(std::min<long long>({wanted, (long long)per_sm * sms, (long long)threads}));
    l.phi_bytes = align_up(std::size_t(l.pitch) * in.height * sizeof(float), 256);
    l.img_bytes = align_up(std::size_t(l.pitch) * in.height * sizeof(T), 256);
    l.parts_bytes = align_up(3 * std::size_t(l.grid) * sizeof(Sums), 256);
    l.minmax_bytes = align_up(std::size_t(l.grid) * sizeof(float2), 256);
    l.total = 2 * l.phi_bytes + l.img_bytes + l.parts_bytes + l.minmax_bytes + 256 + 256;
    return l;
}

template <class T>
void launch(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s, void* scratch,
            cudaStream_t stream, Outcome& outcome) {
    // divide_by_normal relies on a denominator >= 1, so on mu dt >= 0 in f32, as the kernel
    // forms it (the operator's schema takes mu and dt in [0, 1e6]; this is for direct callers).
    // Checked before any CUDA call.
    if (!(float(s.mu) * float(s.dt) >= 0.0f))
        throw UserError("chan_vese: the CUDA kernel needs mu * dt >= 0 (mu = " + std::to_string(s.mu) +
                            ", dt = " + std::to_string(s.dt) + "); run it on the CPU for other values",
                        PF_ERR_UNSUPPORTED);
    const Layout l = layout_for<T>(in);
    char* p = static_cast<char*>(scratch);
    Args<T> a;
    a.in = in;
    a.mask = mask;
    a.phi_out = phi;
    a.phi[0] = reinterpret_cast<float*>(p);
    a.phi[1] = reinterpret_cast<float*>(p + l.phi_bytes);
    a.img = reinterpret_cast<T*>(p + 2 * l.phi_bytes);
    a.parts = reinterpret_cast<Sums*>(p + 2 * l.phi_bytes + l.img_bytes);
    a.minmax = reinterpret_cast<float2*>(p + 2 * l.phi_bytes + l.img_bytes + l.parts_bytes);
    a.outcome = reinterpret_cast<Outcome*>(p + 2 * l.phi_bytes + l.img_bytes + l.parts_bytes + l.minmax_bytes);
    a.arrived = reinterpret_cast<unsigned*>(reinterpret_cast<char*>(a.outcome) + 256);
    a.width = l.width;
    a.height = l.height;
    a.quads_per_row = l.quads_per_row;
    a.pitch = l.pitch;
    a.quads = l.quads;
    const long long stride = (long long)l.grid * threads;
    a.step_rows = int(stride / l.quads_per_row);
    a.step_quads = int(stride % l.quads_per_row);
    a.mu = float(s.mu);
    a.dt = float(s.dt);
    a.lambda1 = float(s.lambda1);
    a.lambda2 = float(s.lambda2);
    a.tol = s.tol;
    a.max_iter = s.max_iter;
    a.init = s.init;
    void* args[] = {&a};
    PIXFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(chan_vese_kernel<T>), dim3(unsigned(l.grid)),
                                                   dim3(threads), args, 0, stream));
    PIXFLOW_CUDA_CHECK_LAUNCH();
    // The run report needs the outcome on the host: copy 16 bytes and wait for this node's
    // stream, once per run (the loop itself never returns to the host).
    Outcome h;
    PIXFLOW_CUDA_CHECK(cudaMemcpyAsync(&h, a.outcome, sizeof h, cudaMemcpyDeviceToHost, stream));
    PIXFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
    outcome = h;
}

} // namespace

std::size_t cuda_scratch_bytes(const ImageView& in) {
    if (in.width <= 0 || in.height <= 0) return 0;
    return visit_dtype<DType::u8, DType::u16, DType::f32>(
        "chan_vese", in.dtype, [&](auto tag) { return layout_for<decltype(tag)>(in).total; });
}

void chan_vese_cuda(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s, void* scratch,
                    void* stream, Outcome& outcome) {
    if (in.width <= 0 || in.height <= 0) return;
    visit_dtype<DType::u8, DType::u16, DType::f32>("chan_vese", in.dtype, [&](auto tag) {
        launch<decltype(tag)>(in, mask, phi, s, scratch, cuda::stream_of(stream), outcome);
    });
}

} // namespace pixflow::chan_vese
