// strip_harness.cu: a probe of issue 18's last untried integral design, not part of the build:
// u8 -> u32 RGB in column strips that walk down the whole image (one block a strip of 32 pixels),
// timed beside today's look-back kernel (integral.cu, included), a copy of the floor's bytes, and
// widening copies with the strips' access pattern (what the pattern alone reaches):
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include -Iplugins/integral/kernels \
//       plugins/integral/test/bench/strip_harness.cu -o strip_harness
//   ./strip_harness          the checks (byte for byte against a CPU reference), then the timings
//   ./strip_harness small    the checks alone
// The design: I(x, y) = sum over y' <= y of (P(y', s) + lp(x, y')), where lp is x's prefix along
// its row inside strip s and P(y, s) the row's sum left of the strip (per channel). A block keeps
// its strip's column carries from chunk to chunk of 32 rows (no look-back along y, no corner, no
// column scratch); P goes from strip to strip by a decoupled look-back along x a row: 64-bit
// slots of three 21-bit channel values (w * 255 < 2^21) with the status in the top bits (bit 63
// inclusive, bit 62 aggregate, 0 none), a window of W predecessors a read (FIRST1: the nearest
// one first). Warps: 0 loads chunks into a ring of NS chunks in shared memory (cp.async),
// publishes each row's aggregate and the chunk's column carries; NLB look-back warps resolve P
// for a chunk's 32 rows (lane = row) and chain its running sum Q down the strip; NOUT output
// warps write the rows. Correct (every check passes) and 4.0-5.6x the copy; the verdict comes
// from the pattern copies: a walk of 32-pixel strips alone, with nothing to compute, is
// 1.30-1.37x, kept within 2 iterations of the slowest strip 1.15-1.17x, and of 64-pixel strips
// 1.19-1.20x, where row-major tiles of the same width copy at 1.05-1.07x (H200, 2026-12-01; docs/performance.md, thirty-first session). Also timed:
// today's tile path (a tile into shared memory, rows widened out) with tiles of 64 x 248 to
// 1024 x 15 pixels: all within 1% of 512 x 31 (1.09-1.12x).
#include "../../kernels/integral.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

using namespace pixflow;
namespace pi = pixflow::integral;
using harness::Dev;
#define CK(x) PIXFLOW_CUDA_CHECK(x)

namespace strip {

constexpr int C = 3, SW = 32, RB = SW * C, WORDS = RB / 4, PIECES = RB / 16, CR = 32;
constexpr unsigned long long INC = 1ull << 63, AGG = 1ull << 62, M21 = (1u << 21) - 1;

__device__ __forceinline__ unsigned long long pack3(unsigned a, unsigned b, unsigned c) {
    return (unsigned long long)a | ((unsigned long long)b << 21) | ((unsigned long long)c << 42);
}
using pi::ld_slot; // integral.cu's single-copy-atomic slot accesses (relaxed, GPU scope)
using pi::st_slot;
__device__ __forceinline__ int ld_flag(const volatile int* p) { return *p; }
__device__ __forceinline__ void signal(volatile int* p, int v) {
    __threadfence_block();
    __syncwarp();
    if ((threadIdx.x & 31) == 0) *p = v;
}
__device__ __forceinline__ void wait_ge(const volatile int* p, int v) {
    while (ld_flag(p) < v) __nanosleep(64);
    __threadfence_block();
}
// channel sums of a lane's 4 values (value 4l's channel is l % 3) into channel order, and back
__device__ __forceinline__ void unrotate(int o, unsigned r0, unsigned r1, unsigned r2, unsigned& c0, unsigned& c1,
                                         unsigned& c2) {
    c0 = o == 0 ? r0 : o == 1 ? r2 : r1;
    c1 = o == 0 ? r1 : o == 1 ? r0 : r2;
    c2 = o == 0 ? r2 : o == 1 ? r1 : r0;
}
__device__ __forceinline__ void rotate(int o, unsigned c0, unsigned c1, unsigned c2, unsigned& r0, unsigned& r1,
                                       unsigned& r2) {
    r0 = o == 0 ? c0 : o == 1 ? c1 : c2;
    r1 = o == 0 ? c1 : o == 1 ? c2 : c0;
    r2 = o == 0 ? c2 : o == 1 ? c0 : c1;
}

struct Shared { // per ring slot: input rows, row sums, P, column carries, Q
    static constexpr int in_bytes = CR * RB, rs_bytes = CR * 8, p_bytes = CR * 16, cc_bytes = WORDS * 16, q_bytes = 16;
    static constexpr int slot_bytes = in_bytes + rs_bytes + p_bytes + cc_bytes + q_bytes;
};

template <int NS, int NLB, int NOUT, int W, bool COPY, bool FIRST1 = false>
__global__ void __launch_bounds__(32 * (1 + NLB + NOUT))
    strip_kernel(const std::uint8_t* in, std::int64_t in_pitch, std::uint32_t* out, std::int64_t out_pitch, int h,
                 int n_strips, unsigned long long* slots, int hpad, unsigned* ticket, unsigned long long* prof) {
    extern __shared__ __align__(16) unsigned char sm[];
    __shared__ int agg_seq, q_seq, p_seq[NS], out_seq[NS], strip_s;
    __shared__ unsigned qval[3];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        strip_s = int(atomicAdd(ticket, 1u));
        agg_seq = q_seq = 0;
        qval[0] = qval[1] = qval[2] = 0;
        for (int i = 0; i < NS; ++i) p_seq[i] = out_seq[i] = 0;
    }
    __syncthreads();
    const int s = strip_s;
    const int n_chunks = (h + CR - 1) / CR;
    const int o = lane % 3;
    auto in_s = [&](int slot) { return sm + slot * Shared::slot_bytes; };
    auto rs_s = [&](int slot) {
        return reinterpret_cast<unsigned long long*>(sm + slot * Shared::slot_bytes + Shared::in_bytes);
    };
    auto p_s = [&](int slot) {
        return reinterpret_cast<uint4*>(sm + slot * Shared::slot_bytes + Shared::in_bytes + Shared::rs_bytes);
    };
    auto cc_s = [&](int slot) {
        return reinterpret_cast<uint4*>(sm + slot * Shared::slot_bytes + Shared::in_bytes + Shared::rs_bytes +
                                        Shared::p_bytes);
    };
    auto q_s = [&](int slot) {
        return reinterpret_cast<unsigned*>(sm + slot * Shared::slot_bytes + Shared::in_bytes + Shared::rs_bytes +
                                           Shared::p_bytes + Shared::cc_bytes);
    };
    unsigned long long* my_slots = slots + std::size_t(s) * hpad;
    auto stamp = [&](int i) {
        if (prof && threadIdx.x % 32 == 0) {
            unsigned long long t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
            prof[std::size_t(s) * 4 + i] = t;
        }
    };
    if (threadIdx.x == 0) stamp(0);

    if (warp == 0) {               // loader and aggregator
        constexpr int PD = NS / 2; // chunks loaded ahead
        auto issue = [&](int k) {
            if (k < n_chunks) {
                const int slot = k % NS;
                if (k >= NS) wait_ge(&out_seq[slot], k - NS + 1);
                const unsigned dst0 = unsigned(__cvta_generic_to_shared(in_s(slot)));
#pragma unroll
                for (int i = 0; i < CR * PIECES / 32; ++i) {
                    const int p = lane + 32 * i, r = p / PIECES, part = p % PIECES, y = k * CR + r;
                    const std::uint8_t* src =
                        in + std::int64_t(y < h ? y : 0) * in_pitch + std::int64_t(s) * RB + part * 16;
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst0 + r * RB + part * 16),
                                 "l"(src), "r"(y < h ? 16 : 0)
                                 : "memory");
                }
            }
            asm volatile("cp.async.commit_group;" ::: "memory");
        };
        for (int k = 0; k < PD; ++k) issue(k);
        unsigned carry[4] = {0, 0, 0, 0};
        for (int k = 0; k < n_chunks; ++k) {
            issue(k + PD);
            asm volatile("cp.async.wait_group %0;" ::"n"(PD) : "memory");
            __syncwarp();
            const int slot = k % NS;
            const unsigned* words = reinterpret_cast<const unsigned*>(in_s(slot));
            if (!COPY) {
                unsigned cs[4] = {0, 0, 0, 0};
                unsigned long long mine = 0;
#pragma unroll 8
                for (int r = 0; r < CR; ++r) {
                    const unsigned wv = lane < WORDS ? words[r * WORDS + lane] : 0u;
                    const unsigned v0 = wv & 255, v1 = (wv >> 8) & 255, v2 = (wv >> 16) & 255, v3 = wv >> 24;
                    cs[0] += v0, cs[1] += v1, cs[2] += v2, cs[3] += v3;
                    unsigned c0, c1, c2;
                    unrotate(o, v0 + v3, v1, v2, c0, c1, c2);
                    unsigned a = c0 | (c1 << 16), b = c2;
#pragma unroll
                    for (int d = 16; d; d >>= 1) a += __shfl_xor_sync(~0u, a, d), b += __shfl_xor_sync(~0u, b, d);
                    if (lane == r) mine = pack3(a & 0xffff, a >> 16, b);
                }
                rs_s(slot)[lane] = mine;
                const int y = k * CR + lane;
                if (y < h) st_slot(my_slots + y, mine | (s == 0 ? INC : AGG));
                // the chunk's column carries: the prefix along x of its column sums
                unsigned c0, c1, c2;
                unrotate(o, cs[0] + cs[3], cs[1], cs[2], c0, c1, c2);
                unsigned i0 = c0, i1 = c1, i2 = c2;
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const unsigned t0 = __shfl_up_sync(~0u, i0, d), t1 = __shfl_up_sync(~0u, i1, d),
                                   t2 = __shfl_up_sync(~0u, i2, d);
                    if (lane >= d) i0 += t0, i1 += t1, i2 += t2;
                }
                unsigned e0, e1, e2;
                rotate(o, i0 - c0, i1 - c1, i2 - c2, e0, e1, e2);
                if (lane < WORDS) cc_s(slot)[lane] = make_uint4(carry[0], carry[1], carry[2], carry[3]);
                carry[0] += e0 + cs[0];
                carry[1] += e1 + cs[1];
                carry[2] += e2 + cs[2];
                carry[3] += e0 + cs[0] + cs[3];
            }
            signal(&agg_seq, k + 1);
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
        stamp(2);
    } else if (warp <= NLB) { // look-back along x, lane = row of the chunk
        if (COPY) return;
        for (int k = warp - 1; k < n_chunks; k += NLB) {
            const int slot = k % NS;
            wait_ge(&agg_seq, k + 1);
            const unsigned long long rs = rs_s(slot)[lane];
            const int y = k * CR + lane;
            unsigned long long acc = 0;
            if (s > 0 && y < h) {
                int pos = s - 1, win = FIRST1 ? 1 : W;
                bool done = false;
                while (!done) {
                    unsigned long long v[W];
#pragma unroll
                    for (int j = 0; j < W; ++j)
                        v[j] = j < win && pos - j >= 0 ? ld_slot(slots + std::size_t(pos - j) * hpad + y) : 0;
                    bool stop = false;
                    const int pos0 = pos;
#pragma unroll
                    for (int j = 0; j < W; ++j) {
                        if (stop) continue;
                        if (v[j] & INC) {
                            acc += v[j] & ~INC;
                            done = stop = true;
                        } else if (v[j] & AGG) {
                            acc += v[j] & ~AGG;
                            --pos;
                        } else
                            stop = true;
                    }
                    if (!done && pos == pos0) __nanosleep(128);
                    if (pos != pos0) win = W;
                }
                st_slot(my_slots + y, (acc + rs) | INC);
            }
            const unsigned p0 = unsigned(acc & M21), p1 = unsigned((acc >> 21) & M21), p2 = unsigned((acc >> 42) & M21);
            p_s(slot)[lane] = make_uint4(p0, p1, p2, 0);
            unsigned t0 = p0, t1 = p1, t2 = p2;
#pragma unroll
            for (int d = 16; d; d >>= 1)
                t0 += __shfl_xor_sync(~0u, t0, d), t1 += __shfl_xor_sync(~0u, t1, d), t2 += __shfl_xor_sync(~0u, t2, d);
            wait_ge(&q_seq, k);
            const unsigned q0 = qval[0], q1 = qval[1], q2 = qval[2];
            if (lane == 0) {
                q_s(slot)[0] = q0, q_s(slot)[1] = q1, q_s(slot)[2] = q2;
                qval[0] = q0 + t0, qval[1] = q1 + t1, qval[2] = q2 + t2;
            }
            signal(&q_seq, k + 1);
            signal(&p_seq[slot], k + 1);
            if (k == 0) stamp(1);
        }
    } else { // output
        const int ow = warp - 1 - NLB;
        for (int k = ow; k < n_chunks; k += NOUT) {
            const int slot = k % NS;
            if (COPY)
                wait_ge(&agg_seq, k + 1);
            else
                wait_ge(&p_seq[slot], k + 1);
            const unsigned* words = reinterpret_cast<const unsigned*>(in_s(slot));
            unsigned acc[4] = {0, 0, 0, 0};
            if (!COPY) {
                const uint4 cc = lane < WORDS ? cc_s(slot)[lane] : make_uint4(0, 0, 0, 0);
                unsigned q0, q1, q2;
                rotate(o, q_s(slot)[0], q_s(slot)[1], q_s(slot)[2], q0, q1, q2);
                acc[0] = cc.x + q0, acc[1] = cc.y + q1, acc[2] = cc.z + q2, acc[3] = cc.w + q0;
            }
#pragma unroll 4
            for (int r = 0; r < CR; ++r) {
                const int y = k * CR + r;
                const unsigned wv = lane < WORDS ? words[r * WORDS + lane] : 0u;
                const unsigned v0 = wv & 255, v1 = (wv >> 8) & 255, v2 = (wv >> 16) & 255, v3 = wv >> 24;
                uint4 res;
                if (COPY) {
                    res = make_uint4(v0, v1, v2, v3);
                } else {
                    unsigned c0, c1, c2;
                    unrotate(o, v0 + v3, v1, v2, c0, c1, c2);
                    unsigned a = c0 | (c1 << 16), b = c2;
#pragma unroll
                    for (int d = 1; d < 32; d <<= 1) {
                        const unsigned ta = __shfl_up_sync(~0u, a, d), tb = __shfl_up_sync(~0u, b, d);
                        if (lane >= d) a += ta, b += tb;
                    }
                    a -= c0 | (c1 << 16), b -= c2;
                    unsigned e0, e1, e2, p0, p1, p2;
                    rotate(o, a & 0xffff, a >> 16, b, e0, e1, e2);
                    const uint4 P = p_s(slot)[r];
                    rotate(o, P.x, P.y, P.z, p0, p1, p2);
                    acc[0] += e0 + v0 + p0;
                    acc[1] += e1 + v1 + p1;
                    acc[2] += e2 + v2 + p2;
                    acc[3] += e0 + v0 + v3 + p0;
                    res = make_uint4(acc[0], acc[1], acc[2], acc[3]);
                }
                if (lane < WORDS && y < h)
                    __stcs(reinterpret_cast<uint4*>(reinterpret_cast<char*>(out) + std::int64_t(y) * out_pitch +
                                                    std::int64_t(s) * RB * 4) +
                               lane,
                           res);
            }
            signal(&out_seq[slot], k + 1);
        }
        if (ow == 0) stamp(3);
    }
}

/// Lets `kernel` take `bytes` of dynamic shared memory with the carveout at its largest, once per
/// kernel (the harness runs on one device; a driver call inside a timed launch would count).
template <class K> void max_shared(K kernel, int bytes) {
    static std::vector<K> done;
    if (std::find(done.begin(), done.end(), kernel) != done.end()) return;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                            int(cudaSharedmemCarveoutMaxShared)));
    done.push_back(kernel);
}

/// The slots (a strip's rows, padded to whole chunks) and the ticket.
std::size_t scratch_bytes(int w, int h) { return std::size_t(w / SW) * ((h + CR - 1) / CR * CR) * 8 + 256; }

template <int NS, int NLB, int NOUT, int W, bool COPY = false, bool FIRST1 = false>
void launch(const std::uint8_t* in, std::uint32_t* out, int w, int h, void* scratch,
            unsigned long long* prof = nullptr) {
    const int n_strips = w / SW, hpad = (h + CR - 1) / CR * CR;
    auto* slots = static_cast<unsigned long long*>(scratch);
    auto* ticket = reinterpret_cast<unsigned*>(slots + std::size_t(n_strips) * hpad);
    auto kernel = strip_kernel<NS, NLB, NOUT, W, COPY, FIRST1>;
    const int smem = NS * Shared::slot_bytes;
    max_shared(kernel, smem);
    CK(cudaMemsetAsync(scratch, 0, COPY ? 256 : scratch_bytes(w, h)));
    if (COPY) ticket = static_cast<unsigned*>(scratch);
    kernel<<<n_strips, 32 * (1 + NLB + NOUT), smem>>>(in, std::int64_t(w) * C, out, std::int64_t(w) * C * 4, h,
                                                      n_strips, slots, hpad, ticket, prof);
    CK(cudaGetLastError());
}

// The access pattern alone: u8 -> u32 widening copies of the image in pieces of SWB input bytes
// a row. widen: a word of 4 samples as 4 u32. copy_rows: RPW rows of one piece (WD words), rows
// y_first + u * step below y_end, all loads before the stores.
__device__ __forceinline__ uint4 widen(unsigned v) {
    return make_uint4(v & 255, (v >> 8) & 255, (v >> 16) & 255, v >> 24);
}
template <int WD, int RPW>
__device__ __forceinline__ void copy_rows(const unsigned* src, uint4* dst, int rw, int y_first, int step, int y_end,
                                          int lane) {
    constexpr int NI = (WD + 31) / 32;
    unsigned v[RPW][NI];
#pragma unroll
    for (int u = 0; u < RPW; ++u)
#pragma unroll
        for (int i = 0; i < NI; ++i) {
            const int wi = lane + 32 * i, yy = y_first + u * step;
            v[u][i] = wi < WD && yy < y_end ? __ldg(src + std::size_t(yy) * rw + wi) : 0u;
        }
#pragma unroll
    for (int u = 0; u < RPW; ++u)
#pragma unroll
        for (int i = 0; i < NI; ++i) {
            const int wi = lane + 32 * i, yy = y_first + u * step;
            if (wi < WD && yy < y_end) __stcs(dst + std::size_t(yy) * rw + wi, widen(v[u][i]));
        }
}

// Tiles of SWB bytes x 32 rows in row-major order, a block each (the whole GPU on the same rows
// at once); each warp 4 rows at a time.
template <int SWB, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
    pattern_copy(const std::uint8_t* in, std::uint32_t* out, int row_bytes, int h, int tiles_per_row) {
    constexpr int WD = SWB / 4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int strip = blockIdx.x % tiles_per_row, y0 = (blockIdx.x / tiles_per_row) * 32, y1 = min(y0 + 32, h);
    const unsigned* src = reinterpret_cast<const unsigned*>(in + std::size_t(strip) * SWB);
    uint4* dst = reinterpret_cast<uint4*>(out) + std::size_t(strip) * WD;
    for (int y = y0 + warp; y < y1; y += WARPS * 4) copy_rows<WD, 4>(src, dst, row_bytes / 4, y, WARPS, y1, lane);
}
template <int SWB, int WARPS> void pattern(const std::uint8_t* in, std::uint32_t* out, int w, int h) {
    const int row_bytes = w * C, tpr = row_bytes / SWB;
    pattern_copy<SWB, WARPS><<<tpr*((h + 31) / 32), 32 * WARPS>>>(in, out, row_bytes, h, tpr);
    CK(cudaGetLastError());
}

// The strip walk kept in step: a block's warps take WARPS * RPW rows an iteration (each warp RPW
// rows, loads then stores); after an iteration a block counts itself in done[it], and with GATE
// it starts iteration it only once every block has counted itself in done[it - LAG] (strips at
// most LAG iterations apart); without GATE the same kernel walks freely.
template <int SWB, int WARPS, int RPW, int LAG, bool GATE>
__global__ void __launch_bounds__(32 * WARPS)
    pattern_lockstep(const std::uint8_t* in, std::uint32_t* out, int row_bytes, int h, unsigned* done) {
    constexpr int WD = SWB / 4, RI = WARPS * RPW;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, strip = blockIdx.x, nb = gridDim.x;
    const unsigned* src = reinterpret_cast<const unsigned*>(in + std::size_t(strip) * SWB);
    uint4* dst = reinterpret_cast<uint4*>(out) + std::size_t(strip) * WD;
    const int rw = row_bytes / 4, iters = (h + RI - 1) / RI;
    for (int it = 0; it < iters; ++it) {
        if (GATE && it >= LAG) {
            if (threadIdx.x == 0) {
                unsigned v;
                do {
                    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(done + it - LAG) : "memory");
                } while (v < unsigned(nb));
            }
            __syncthreads();
        }
        copy_rows<WD, RPW>(src, dst, rw, it * RI + warp, WARPS, h, lane);
        if (GATE) {
            __syncthreads();
            if (threadIdx.x == 0) atomicAdd(done + it, 1u);
        }
    }
}
template <int SWB, int WARPS, int RPW, int LAG, bool GATE = true>
void lockstep(const std::uint8_t* in, std::uint32_t* out, int w, int h, void* scratch) {
    const int row_bytes = w * C;
    if (GATE) CK(cudaMemsetAsync(scratch, 0, std::size_t(h) * 4));
    pattern_lockstep<SWB, WARPS, RPW, LAG, GATE>
        <<<row_bytes / SWB, 32 * WARPS>>>(in, out, row_bytes, h, static_cast<unsigned*>(scratch));
    CK(cudaGetLastError());
}

// Today's tile path with other tile shapes: a block a tile of TWP x TH pixels (row-major order),
// its input into shared memory by cp.async (as the look-back kernel's load), then each warp
// writes rows widened to u32 (16-byte streaming stores, 512 contiguous bytes a warp
// instruction); 4 blocks an SM by shared memory for every shape of 512 x 31's size.
template <int TWP, int TH>
__global__ void __launch_bounds__(128, 4) smem_tile_copy(const std::uint8_t* in, std::uint32_t* out, int w, int h) {
    constexpr int TB = TWP * C, PC = TB / 16, WDS = TB / 4;
    extern __shared__ __align__(16) unsigned char tile[];
    const int n_tx = w / TWP, tx = int(blockIdx.x) % n_tx, ty = int(blockIdx.x) / n_tx;
    const int y0 = ty * TH, rows = min(TH, h - y0), lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const std::int64_t in_pitch = std::int64_t(w) * C, out_pitch = in_pitch / 4; // out_pitch in uint4
    const unsigned dst0 = unsigned(__cvta_generic_to_shared(tile));
    for (int p = threadIdx.x; p < rows * PC; p += 128) {
        const int r = p / PC, q = p % PC;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst0 + r * TB + q * 16),
                     "l"(in + (y0 + r) * in_pitch + std::int64_t(tx) * TB + q * 16)
                     : "memory");
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    const unsigned* words = reinterpret_cast<const unsigned*>(tile);
    for (int r = warp; r < rows; r += 4) {
        uint4* dst = reinterpret_cast<uint4*>(out) + (y0 + r) * out_pitch + std::int64_t(tx) * WDS;
#pragma unroll 4
        for (int i = lane; i < WDS; i += 32) { __stcs(dst + i, widen(words[r * WDS + i])); }
    }
}
template <int TWP, int TH> void tile_shape(const std::uint8_t* in, std::uint32_t* out, int w, int h) {
    const int smem = TWP * C * TH;
    max_shared(smem_tile_copy<TWP, TH>, smem);
    smem_tile_copy<TWP, TH><<<(w / TWP) * ((h + TH - 1) / TH), 128, smem>>>(in, out, w, h);
    CK(cudaGetLastError());
}

} // namespace strip

static int failures = 0;

std::vector<std::uint32_t> reference(const std::vector<std::uint8_t>& in, int w, int h) {
    const std::size_t row = std::size_t(w) * 3;
    std::vector<std::uint32_t> acc(row, 0), out(row * h);
    for (int y = 0; y < h; ++y) {
        std::uint32_t rs[3] = {0, 0, 0};
        for (std::size_t i = 0; i < row; ++i) {
            rs[i % 3] += in[y * row + i];
            acc[i] += rs[i % 3];
            out[y * row + i] = acc[i];
        }
    }
    return out;
}

template <int NS, int NLB, int NOUT, int W> bool check(int w, int h, std::mt19937& rng, bool ones = false) {
    const std::size_t row = std::size_t(w) * 3;
    std::vector<std::uint8_t> hin(row * h);
    for (auto& b : hin) b = ones ? 255 : std::uint8_t(rng());
    Dev din(row * h), dout(row * h * 4), scratch(strip::scratch_bytes(w, h));
    CK(cudaMemcpy(din.p, hin.data(), row * h, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout.p, 0xAB, row * h * 4));
    CK(cudaMemset(scratch.p, 0xCD, strip::scratch_bytes(w, h)));
    strip::launch<NS, NLB, NOUT, W>(static_cast<const std::uint8_t*>(din.p), static_cast<std::uint32_t*>(dout.p), w, h,
                                    scratch.p);
    CK(cudaDeviceSynchronize());
    std::vector<std::uint32_t> got(row * h);
    CK(cudaMemcpy(got.data(), dout.p, got.size() * 4, cudaMemcpyDeviceToHost));
    const auto ref = reference(hin, w, h);
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
        if (ref[i] != got[i] && bad++ == 0) first = i;
    if (bad) {
        ++failures;
        std::printf("FAIL strips NS%d LB%d OUT%d W%d %dx%d: %zu bad, first y=%zu x=%zu c=%zu got %u want %u\n", NS, NLB,
                    NOUT, W, w, h, bad, first / row, (first % row) / 3, first % 3, got[first], ref[first]);
    }
    return bad == 0;
}

template <int NS, int NLB, int NOUT, int W> void checks(std::mt19937& rng) {
    for (auto [w, h] : {std::pair{32, 1}, std::pair{32, 33}, std::pair{64, 100}, std::pair{1024, 32},
                        std::pair{1024, 517}, std::pair{4096, 300}, std::pair{8192, 64}, std::pair{8192, 1000}})
        check<NS, NLB, NOUT, W>(w, h, rng);
    check<NS, NLB, NOUT, W>(8192, 96, rng, true); // the largest row sums
}

int main(int argc, char** argv) {
    std::mt19937 rng(42);
    const bool small = argc > 1 && std::strcmp(argv[1], "small") == 0;
    checks<16, 2, 4, 16>(rng);
    checks<8, 1, 2, 8>(rng);
    std::printf("checks: %s\n", failures ? "FAILED" : "PASSED");
    std::fflush(stdout);
    if (small || failures) return failures ? 1 : 0;

    const int w = 8192, h = 8192, reps = 25;
    const std::size_t row = std::size_t(w) * 3, floor_bytes = row * h * 5;
    std::vector<std::uint8_t> hin(row * h);
    for (auto& b : hin) b = std::uint8_t(rng());
    Dev din(row * h), dout(row * h * 4), cpy_a(floor_bytes / 2), cpy_b(floor_bytes / 2);
    CK(cudaMemcpy(din.p, hin.data(), row * h, cudaMemcpyHostToDevice));
    CK(cudaMemset(cpy_a.p, 1, floor_bytes / 2));
    ImageView iv, ov;
    iv.width = ov.width = w;
    iv.height = ov.height = h;
    iv.channels = ov.channels = 3;
    iv.dtype = DType::u8;
    ov.dtype = DType::u32;
    iv.device = ov.device = 0;
    iv.pitch = std::int64_t(row);
    ov.pitch = std::int64_t(row * 4);
    iv.data = din.p;
    ov.data = dout.p;
    using U = std::uint32_t;
    constexpr int D = pi::lb_rows<U, 3>();
    Dev lb_scratch(pi::lookback_scratch_bytes<U, 3, D>(iv));
    Dev st_scratch(strip::scratch_bytes(w, h));
    const auto ref = reference(hin, w, h);
    std::vector<std::uint32_t> got(row * h);
    auto verify = [&](const char* name) {
        CK(cudaMemcpy(got.data(), dout.p, got.size() * 4, cudaMemcpyDeviceToHost));
        if (std::memcmp(got.data(), ref.data(), got.size() * 4) != 0) {
            ++failures;
            std::printf("FAIL bench output of %s\n", name);
        }
        CK(cudaMemset(dout.p, 0xAB, got.size() * 4));
    };
    const auto* in8 = static_cast<const std::uint8_t*>(din.p);
    auto* o32 = static_cast<std::uint32_t*>(dout.p);
    auto check_widened = [&](const char* name, const std::function<void()>& f) { // the shape copies do copy
        CK(cudaMemset(dout.p, 0xAB, got.size() * 4));
        f();
        CK(cudaMemcpy(got.data(), dout.p, got.size() * 4, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < got.size(); ++i)
            if (got[i] != hin[i]) {
                ++failures;
                std::printf("FAIL %s: not the input widened at %zu\n", name, i);
                break;
            }
    };
    const std::vector<std::pair<const char*, std::function<void()>>> shapes = {
        {"smem tiles 512 x 31", [&] { strip::tile_shape<512, 31>(in8, o32, w, h); }},
        {"smem tiles 256 x 62", [&] { strip::tile_shape<256, 62>(in8, o32, w, h); }},
        {"smem tiles 128 x 124", [&] { strip::tile_shape<128, 124>(in8, o32, w, h); }},
        {"smem tiles 64 x 248", [&] { strip::tile_shape<64, 248>(in8, o32, w, h); }},
        {"smem tiles 1024 x 15", [&] { strip::tile_shape<1024, 15>(in8, o32, w, h); }}};
    for (const auto& [name, f] : shapes) check_widened(name, f);
    std::fflush(stdout);
    std::vector<const char*> names;
    std::vector<std::function<void()>> fns;
    std::vector<bool> checked;
    auto add = [&](const char* n, std::function<void()> f, bool chk = true) {
        names.push_back(n), fns.push_back(std::move(f)), checked.push_back(chk);
    };
    add(
        "d2d copy of floor bytes",
        [&] { CK(cudaMemcpyAsync(cpy_b.p, cpy_a.p, floor_bytes / 2, cudaMemcpyDeviceToDevice)); }, false);
    add("today's look-back", [&] { pi::launch_lookback<U, 3, D>(iv, ov, lb_scratch.p, nullptr, nullptr); });
    add(
        "memset of the strip slots", [&] { CK(cudaMemsetAsync(st_scratch.p, 0, strip::scratch_bytes(w, h))); }, false);
    add(
        "row-major tiles 32px", [&] { strip::pattern<96, 8>(in8, o32, w, h); }, false);
    add(
        "free walk 32px 8w x4 rows", [&] { strip::lockstep<96, 8, 4, 1, false>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "free walk 64px 16w x4 rows", [&] { strip::lockstep<192, 16, 4, 1, false>(in8, o32, w, h, st_scratch.p); },
        false);
    add(
        "free walk 32px 16w x4 rows", [&] { strip::lockstep<96, 16, 4, 1, false>(in8, o32, w, h, st_scratch.p); },
        false);
    add(
        "free walk 32px 16w x8 rows", [&] { strip::lockstep<96, 16, 8, 1, false>(in8, o32, w, h, st_scratch.p); },
        false);
    add(
        "free walk 32px 32w x4 rows", [&] { strip::lockstep<96, 32, 4, 1, false>(in8, o32, w, h, st_scratch.p); },
        false);
    add(
        "free walk 32px 16w x16 rows", [&] { strip::lockstep<96, 16, 16, 1, false>(in8, o32, w, h, st_scratch.p); },
        false);
    add(
        "gated 32px 16w x4 lag 4", [&] { strip::lockstep<96, 16, 4, 4>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x4 lag 16", [&] { strip::lockstep<96, 16, 4, 16>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x8 lag 4", [&] { strip::lockstep<96, 16, 8, 4>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x8 lag 16", [&] { strip::lockstep<96, 16, 8, 16>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 32w x4 lag 8", [&] { strip::lockstep<96, 32, 4, 8>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x8 lag 2", [&] { strip::lockstep<96, 16, 8, 2>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x16 lag 2", [&] { strip::lockstep<96, 16, 16, 2>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x16 lag 4", [&] { strip::lockstep<96, 16, 16, 4>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 64px 16w x8 lag 4", [&] { strip::lockstep<192, 16, 8, 4>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "gated 32px 16w x16 lag 8", [&] { strip::lockstep<96, 16, 16, 8>(in8, o32, w, h, st_scratch.p); }, false);
    for (const auto& [name, f] : shapes) add(name, f, false);
    add(
        "row-major tiles 64px", [&] { strip::pattern<192, 8>(in8, o32, w, h); }, false);
    add(
        "row-major tiles 512px", [&] { strip::pattern<1536, 8>(in8, o32, w, h); }, false);
    add(
        "strip copy NS16 OUT4", [&] { strip::launch<16, 2, 4, 16, true>(in8, o32, w, h, st_scratch.p); }, false);
    add(
        "strip copy NS16 OUT8", [&] { strip::launch<16, 2, 8, 16, true>(in8, o32, w, h, st_scratch.p); }, false);
    add("strips first1 NS16 LB2 OUT4 W16",
        [&] { strip::launch<16, 2, 4, 16, false, true>(in8, o32, w, h, st_scratch.p); });
    add("strips first1 NS16 LB4 OUT4 W16",
        [&] { strip::launch<16, 4, 4, 16, false, true>(in8, o32, w, h, st_scratch.p); });
    add("strips first1 NS16 LB4 OUT4 W32",
        [&] { strip::launch<16, 4, 4, 32, false, true>(in8, o32, w, h, st_scratch.p); });
    add("strips NS16 LB2 OUT4 W16", [&] { strip::launch<16, 2, 4, 16>(in8, o32, w, h, st_scratch.p); });
    add("strips NS16 LB2 OUT4 W32", [&] { strip::launch<16, 2, 4, 32>(in8, o32, w, h, st_scratch.p); });
    add("strips NS16 LB2 OUT4 W8", [&] { strip::launch<16, 2, 4, 8>(in8, o32, w, h, st_scratch.p); });
    add("strips NS16 LB4 OUT4 W16", [&] { strip::launch<16, 4, 4, 16>(in8, o32, w, h, st_scratch.p); });
    add("strips NS16 LB2 OUT8 W16", [&] { strip::launch<16, 2, 8, 16>(in8, o32, w, h, st_scratch.p); });
    add("strips NS24 LB4 OUT8 W16", [&] { strip::launch<24, 4, 8, 16>(in8, o32, w, h, st_scratch.p); });
    add("strips NS8 LB2 OUT4 W16", [&] { strip::launch<8, 2, 4, 16>(in8, o32, w, h, st_scratch.p); });
    const int nv = int(fns.size());
    std::vector<std::vector<float>> t(nv);
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < nv; ++i) {
            t[i].push_back(harness::time_it(fns[i], reps));
            if (checked[i]) verify(names[i]);
        }
    std::printf("8192x8192x3 u8 -> u32, floor %.3f GB; medians of %d, 3 rounds; x = / copy's median that round:\n",
                floor_bytes / 1e9, reps);
    for (int i = 0; i < nv; ++i) {
        std::printf("  %-28s", names[i]);
        for (int r = 0; r < 3; ++r) std::printf(" %.4f ms (%.3fx)", t[i][r], t[i][r] / t[0][r]);
        std::printf("\n");
    }
    // when strips start, resolve their first chunk, finish loading and finish writing
    Dev prof(std::size_t(w / strip::SW) * 4 * 8);
    for (int rep = 0; rep < 2; ++rep) {
        CK(cudaMemset(prof.p, 0, std::size_t(w / strip::SW) * 4 * 8));
        strip::launch<16, 2, 4, 16>(in8, o32, w, h, st_scratch.p, static_cast<unsigned long long*>(prof.p));
    }
    CK(cudaDeviceSynchronize());
    verify("profiled");
    std::vector<unsigned long long> pr(std::size_t(w / strip::SW) * 4);
    CK(cudaMemcpy(pr.data(), prof.p, pr.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (std::size_t i = 0; i < pr.size(); i += 4) t0 = std::min(t0, pr[i]);
    std::printf("stamps (NS16 LB2 OUT4 W16), us from the first start, by strip: start / first chunk's P / loads done / "
                "output done\n");
    for (int s = 0; s < w / strip::SW; s += 15)
        std::printf("  strip %3d: %7.2f %7.2f %7.2f %7.2f\n", s, (pr[4 * s] - t0) / 1e3, (pr[4 * s + 1] - t0) / 1e3,
                    (pr[4 * s + 2] - t0) / 1e3, (pr[4 * s + 3] - t0) / 1e3);
    std::printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
