// step_probe.cu: how fast can one floyd_steinberg step go when the warp that runs the error chain
// does little else? A standalone probe, not part of the build (issue 18: 1.0 ms needs a step of
// 58 cycles where floyd_steinberg.cu's takes 69). One warp runs a band of 32 rows alone, lane i
// row i trailing lane i-1 by S = 2 or 3 columns, with the step's arithmetic as floyd_steinberg.cu
// has it (the shuffle, the sum and 16 in + sum as two IMAD pairs, the LEA.HI, the shift, the DPX
// clamp, e = v - 255 w) and, around it, as little as each mode says:
//   chain   in16 (16 x the input) arrives as int32, four steps a 16-byte load, with columns
//           outside the row poisoned (in16 = kPoison makes e = 0 there: no test of x in any
//           step); v goes out as int32, four steps a 16-byte store. What a warp would run if a
//           helper warp expanded the input bytes and packed the outputs.
//   bytes   as chain, but in the steady chunks (every lane's columns inside the row) the input
//           as bytes (a byte taken out of a word, << 4, each step) and the outputs packed as
//           floyd_steinberg.cu does (output bytes and hand-off bytes e + 127 built up by one
//           instruction each a step, two 16-byte stores a chunk); rows laid out skewed by lane,
//           so that no funnel shift is needed (floyd_steinberg.cu pays one a chunk), no band
//           above (no hand-off bytes read, no poll), no test of x.
//   band    bytes below a band: lane 0 takes e(y-1, x+1) from the band above's hand-off bytes
//           (e + 127; one 16-byte load a chunk, the byte taken out and unbiased each step, added
//           into the off-chain part of the sum, as floyd_steinberg.cu does; no poll).
//   relay   (S = 3) band with errors carried biased (e + 127, the hand-off bytes' code), lane 31
//           sending lane 0 the band above's byte through the shuffle every lane makes.
//   noshfl  (S = 2) chain with the shuffle replaced by the lane's own error (a wrong result,
//           timed only): the chain's ALU part alone.
// It includes floyd_steinberg.cu, as dither_harness.cu does, for the kernel's own constants and
// helpers. Loads go a chunk ahead into the other of two buffers (two chunks a loop pass): with a
// `cur = next` copy ptxas waited for each chunk's load at the chunk's end (25 cycles a step).
// Every mode but noshfl is compared byte for byte with a serial CPU reference (diffuse(),
// floyd_steinberg_pixel.hpp). Timed: clock64 of lane 0 over the steady chunks (cycles a step)
// and CUDA events over the launch (median of 15), 3 rounds. `step_probe lat`: dependent chains of
// one instruction kind (or of a kind and an IMAD, which ptxas cannot fold) in 1 and 5 warps.
// H200, 2026-12-01 (thirty-second session), cycles a step over the steady chunks:
//   S = 2: chain 63.7-63.9, bytes 63.4, band 76.2, noshfl 43.5-43.7; S = 3: chain 47.5, bytes
//   42.7-43.2, band 56.4, relay 58.8. floyd_steinberg.cu's band alone: 69 cycles (S = 2), 57
//   (S = 3): its step is at the floor of a step that reads the band above. See
//   docs/performance.md.
// From the repository root:
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include plugins/floyd_steinberg/test/bench/step_probe.cu \
//       -o build-harness/step_probe && build-harness/step_probe && build-harness/step_probe lat
#include "../../kernels/floyd_steinberg.cu" // its constants, mad() and word_of()
#include "../../../../scripts/bench/cuda_harness.cuh"

#include "../../kernels/floyd_steinberg_pixel.hpp"

#include <cstdio>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace pixflow;
namespace fs = pixflow::floyd_steinberg;

namespace {

// floyd_steinberg.cu's own: the chunk, the warp mask, the white threshold, the IMAD kept in its
// order, a word of a vector, the hand-off bytes of e = 0, and the sum of columns outside the row,
// which as an input term (kPoison) makes v = 0 and e = 0 whatever the errors around.
using fs::kChunk;
using fs::kFull;
using fs::kWhiteT;
using fs::kZeroError;
using fs::mad;
using fs::word_of;
constexpr int kPoison = fs::kOutside;

enum Mode { kChain, kBytes, kNoShfl, kBand, kRelay };

/// The step after the sum's off-chain parts q (the sum's) and q16 (16 in + the sum's): v =
/// clamp(in + trunc(sum / 16), 0, 255) from the two IMAD pairs, the late error entering last (the
/// lane's own e when kOwnLast, else the shuffled ur), and whether the pixel is white.
template <bool kOwnLast> __device__ __forceinline__ int quantize(int e, int ur, int k3, int q, int q16, bool& white) {
    const int sum = kOwnLast ? mad(7, e, mad(k3, ur, q)) : mad(k3, ur, mad(7, e, q));
    const int t0 = kOwnLast ? mad(7, e, mad(k3, ur, q16)) : mad(k3, ur, mad(7, e, q16));
    const int t = t0 + int(unsigned(sum) >> 28); // + 15 when sum < 0 (|sum| < 2^15)
    white = t >= kWhiteT;
    return __vimin_s32_relu(t >> 4, 255);
}

/// The error chain's state of one lane.
struct Lane {
    int e = 0, u = 0, ul = 0; // e(y, x-1), e(y-1, x), e(y-1, x-1)
    int pend = 0;             // S = 3: the error shuffled in the previous step, used in this one
    int k;                    // 1, or 0 on lane 0 (no row above: its shuffle returns its own e)
};

/// One step: returns v, updates the state; in16 = 16 in(y, x) or kPoison; h (kBand) = e(y-1, x+1)
/// of the band above, which lane 0 takes in place of the shuffled error.
template <Mode M, int S = 2> __device__ __forceinline__ int step(Lane& s, int in16, bool& white, int h = 0) {
    const int shf = __shfl_up_sync(kFull, s.e, 1);
    int ur = M == kNoShfl ? s.e : shf;
    if constexpr (S == 3) { // lane i-1's error of two steps ago: the shuffle is off the chain
        ur = s.pend;
        s.pend = shf;
    }
    // Lane 0's error from the band above enters the off-chain part of the sum, as in
    // floyd_steinberg.cu (its shuffled error is weighted by k3 = 0): no select on the chain.
    const int q = M == kBand ? mad(3, s.k ? 0 : h, mad(5, s.u, s.ul)) : mad(5, s.u, s.ul);
    // The late error enters last (floyd_steinberg.cu's order): the shuffled one for S = 2, the
    // lane's own for S = 3, whose shuffled error is a step old.
    const int v = quantize<S == 3>(s.e, ur, 3 * s.k, q, q + in16, white);
    s.e = v - (white ? 255 : 0);
    s.ul = s.u;
    s.u = M == kBand ? (s.k ? ur : h) : ur * s.k;
    return v;
}

/// kRelay (S = 3): errors carried biased, e' = e + 127 (1..255, the hand-off bytes' own code), so
/// that lane 31 can send lane 0 the band above's byte hb through the shuffle every lane makes (a
/// shuffle from lane - 1, lane 0 from lane 31): lane 0 needs no select and no term of its own.
/// in16b = 16 in - 16 * 127 (the bias of the sum's 16 weights) or kPoison.
__device__ __forceinline__ int step_relay(Lane& s, int in16b, int hb, int from, bool last_lane, bool& white) {
    const int shf = __shfl_sync(kFull, last_lane ? hb : s.e, from);
    const int ur = s.pend; // lane i-1's error of two steps ago (S = 3)
    s.pend = shf;
    const int q = mad(5, s.u, s.ul);
    const int v = quantize<true>(s.e, ur, 3, q - 16 * 127, q + in16b, white); // the sum unbiased: its sign rounds
    s.e = v + (white ? 127 - 255 : 127);
    s.ul = s.u;
    s.u = ur;
    return v;
}

/// One warp: rows [32][n_steps] of in16 (element t of row i is column t - S i) and of bytes (same
/// layout), v out as int32 and output bytes and hand-off bytes as u8, clock64 stamps of lane 0.
/// kBand: a band above, whose last row's errors e(y-1, x+1) for lane 0 at step t (column t) come
/// as bytes e + 127 (above8, byte t) and as int32 (above16), and lane 0 starts with u = u0.
/// kRelay: the same rows give lane 31 at step t e(y-1, t+2) + 127 (lane 0's at step t+1), and
/// lane 0 starts with u = u0 and the pending e(y-1, 1) = p0, biased.
template <Mode M, int S>
__global__ void probe_kernel(const uint4* in16, const uint4* in8, int4* vout, uint4* out8, uint4* hand8,
                             const uint4* above16, const uint4* above8, int u0, int p0, int n_steps, int c_lo, int c_hi,
                             long long* stamps) {
    const int i = threadIdx.x;
    Lane s;
    s.k = i == 0 ? 0 : 1;
    if (M == kBand && i == 0) s.u = u0;
    if constexpr (M == kRelay) { // biased; lane 0: e(y-1, 0) and e(y-1, 1) of the band above
        s.e = s.u = s.ul = s.pend = 127;
        if (i == 0) {
            s.u = u0 + 127;
            s.pend = p0 + 127;
        }
    }
    const int from = (i + 31) % 32;
    const bool last_lane = i == 31;
    const int n4 = n_steps / 4, n16 = n_steps / 16;
    const uint4* src = in16 + std::size_t(i) * n4;
    int4* dst = vout + std::size_t(i) * n4;
    long long t_lo = 0, t_hi = 0;
    const int n_chunks = n_steps / kChunk; // even
    // Each chunk's loads are issued a chunk ahead into the other of two buffers (the loop runs two
    // chunks a pass, so that no register copy makes a step wait for L2: ptxas turned a
    // `cur = next` copy into a wait for the load at each chunk's end, 25 cycles a step); in bytes
    // mode the int32 rows only where a chunk is not steady.
    constexpr bool kAbove = M == kBand || M == kRelay;
    auto bytes_chunk = [&](int c) { return (M == kBytes || kAbove) && c >= c_lo && c < c_hi; };
    struct Buf {
        uint4 v[4], h[4]; // int32 inputs and (kBand, kRelay) errors above, four steps each
        uint4 v8, h8;     // the same as bytes
    };
    auto load = [&](int c, Buf& b) {
        if (c >= n_chunks) return;
        if (bytes_chunk(c)) {
            b.v8 = __ldg(in8 + std::size_t(i) * n16 + c);
            if (kAbove) b.h8 = __ldg(above8 + c);
        } else {
#pragma unroll
            for (int g = 0; g < 4; ++g) {
                b.v[g] = __ldg(src + 4 * c + g);
                if (kAbove) b.h[g] = __ldg(above16 + 4 * c + g);
            }
        }
    };
    auto run = [&](int c, const Buf& b) {
        const uint4& v8 = b.v8;
        if (bytes_chunk(c)) {
            // The hand-off bytes e + 127: as floyd_steinberg.cu builds them (from 127, adding e), or
            // (kRelay) OR-ed in, the errors being biased already.
            constexpr unsigned kH0 = M == kRelay ? 0u : kZeroError;
            unsigned ow[4] = {0, 0, 0, 0}, hw[4] = {kH0, kH0, kH0, kH0};
#pragma unroll
            for (int j = 0; j < kChunk; ++j) {
                const unsigned sh = 8 * (j % 4);
                bool white;
                if constexpr (M == kRelay) {
                    const int in_16b = int((word_of(v8, j / 4) >> sh) & 0xffu) * 16 - 16 * 127;
                    const int hb = int(__byte_perm(word_of(b.h8, j / 4), 0, 0x4440 | (j % 4)));
                    step_relay(s, in_16b, hb, from, last_lane, white);
                    hw[j / 4] |= unsigned(s.e) << sh;
                } else {
                    const int in_16 = int((word_of(v8, j / 4) >> sh) & 0xffu) << 4;
                    const int h = M == kBand ? int((word_of(b.h8, j / 4) >> sh) & 0xffu) - 127 : 0;
                    step<M, S>(s, in_16, white, h);
                    hw[j / 4] += unsigned(s.e) << sh;
                }
                ow[j / 4] |= (white ? 0xffu : 0u) << sh;
            }
            out8[std::size_t(i) * n16 + c] = make_uint4(ow[0], ow[1], ow[2], ow[3]);
            hand8[std::size_t(i) * n16 + c] = make_uint4(hw[0], hw[1], hw[2], hw[3]);
        } else {
#pragma unroll
            for (int g = 0; g < kChunk / 4; ++g) {
                int o[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    bool white;
                    const int in_16 = int(word_of(b.v[g], j)), h = int(word_of(b.h[g], j));
                    if constexpr (M == kRelay)
                        o[j] = step_relay(s, in_16 - 16 * 127, h, from, last_lane, white);
                    else
                        o[j] = step<M, S>(s, in_16, white, M == kBand ? h : 0);
                }
                dst[4 * c + g] = make_int4(o[0], o[1], o[2], o[3]);
            }
        }
    };
    Buf a{}, b{};
    load(0, a);
    for (int c = 0; c < n_chunks; c += 2) {
        if (c == c_lo) t_lo = clock64();
        if (c == c_hi) t_hi = clock64();
        load(c + 1, b);
        run(c, a);
        load(c + 2, a);
        run(c + 1, b);
    }
    if (i == 0) {
        stamps[0] = t_lo;
        stamps[1] = t_hi;
    }
}

/// Dependent-latency chains (`step_probe lat`): n ops, each using the previous one's result,
/// in every thread; clock64 of each warp around them.
enum LatOp { kImad, kShf, kShfl, kLeaHiImad, kVimnmxImad, kLopImad, kStep };
template <LatOp O> __global__ void lat_kernel(int* out, int a, int b, int n, long long* cyc) {
    int x = int(threadIdx.x) + a;
    Lane s;
    s.k = threadIdx.x % 32 == 0 ? 0 : 1;
    s.e = x & 63;
    __syncwarp();
    const long long t0 = clock64();
    for (int i = 0; i < n; i += 16) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            // Pairs with an IMAD: ptxas folds chains of one kind (adds into one IMAD, minima into
            // VIMNMX3), not an op and a multiply-add.
            if constexpr (O == kImad) asm volatile("mad.lo.s32 %0, %0, %1, %2;" : "+r"(x) : "r"(b), "r"(a));
            if constexpr (O == kShf) asm volatile("shr.s32 %0, %0, %1;" : "+r"(x) : "r"(b));
            if constexpr (O == kShfl) x = __shfl_up_sync(kFull, x, 1);
            if constexpr (O == kLeaHiImad) x = mad(x + int(unsigned(x) >> 28), b, a);
            if constexpr (O == kVimnmxImad) x = mad(__vimin_s32_relu(x, 255), b, a);
            if constexpr (O == kLopImad) x = mad(x ^ 0x5a, b, a);
            if constexpr (O == kStep) {
                bool white;
                x += step<kChain>(s, (x & 255) << 4, white);
            }
        }
    }
    const long long t1 = clock64();
    out[threadIdx.x + blockIdx.x * blockDim.x] = x;
    if (threadIdx.x % 32 == 0) cyc[threadIdx.x / 32] = t1 - t0;
}

int failures = 0;

} // namespace

static int lat_main() {
    using harness::Dev;
    const int n = 4096;
    Dev dout(4096 * 4), dcyc(64 * 8);
    struct L {
        const char* name;
        void (*k)(int*, int, int, int, long long*);
    };
    const L ls[] = {{"IMAD", lat_kernel<kImad>},
                    {"SHF", lat_kernel<kShf>},
                    {"SHFL", lat_kernel<kShfl>},
                    {"LEA.HI + IMAD", lat_kernel<kLeaHiImad>},
                    {"VIMNMX.RELU + IMAD", lat_kernel<kVimnmxImad>},
                    {"LOP3 + IMAD", lat_kernel<kLopImad>},
                    {"step, S = 2", lat_kernel<kStep>}};
    for (int warps : {1, 5}) { // 5: warps 0 and 4 share a scheduler
        for (const L& l : ls) {
            for (int rep = 0; rep < 3; ++rep)
                l.k<<<1, 32 * warps>>>(static_cast<int*>(dout.p), 3, 1, n, static_cast<long long*>(dcyc.p));
            PIXFLOW_CUDA_CHECK(cudaGetLastError());
            PIXFLOW_CUDA_CHECK(cudaDeviceSynchronize());
            long long c[64];
            PIXFLOW_CUDA_CHECK(cudaMemcpy(c, dcyc.p, sizeof(long long) * warps, cudaMemcpyDeviceToHost));
            std::printf("lat %d warp(s) %-20s", warps, l.name);
            for (int w = 0; w < warps; ++w) std::printf(" %.2f", double(c[w]) / n);
            std::printf(" cycles a link of the chain (by warp)\n");
        }
    }
    return 0;
}

/// Floyd-Steinberg over w x h pixels, row by row (diffuse()): the outputs, and the first row's
/// errors when asked.
static void reference(const std::vector<std::uint8_t>& img, int w, int h, std::vector<std::uint8_t>& out,
                      std::vector<int>* first_errors) {
    out.assign(img.size(), 0);
    std::vector<int> prev(w + 2, 0), cur(w + 2, 0); // errors, index x + 1
    for (int y = 0; y < h; ++y) {
        std::fill(cur.begin(), cur.end(), 0);
        for (int x = 0; x < w; ++x) {
            const int sum = 7 * cur[x] + prev[x] + 5 * prev[x + 1] + (x + 1 < w ? 3 * prev[x + 2] : 0);
            int o;
            cur[x + 1] = fs::diffuse(img[std::size_t(y) * w + x], sum, o);
            out[std::size_t(y) * w + x] = std::uint8_t(o);
        }
        if (y == 0 && first_errors) first_errors->assign(cur.begin() + 1, cur.begin() + 1 + w);
        std::swap(prev, cur);
    }
}

/// A band of 8192 x 32 at lane skew S: every mode checked against the serial reference, then timed.
static void probe_skew(int S) {
    using harness::Dev;
    const int W = 8192, H = 32;
    const int n_steps = S == 2 ? W + 64 : W + 96; // lane 31 ends column W-1 at step W - 1 + 31 S; whole pairs of chunks
    const int c_lo = S == 2 ? 4 : 6, c_hi = W / 16; // steady chunks (even): every lane's columns inside the row
    std::mt19937 rng(7);
    std::vector<std::uint8_t> img(std::size_t(W) * H);
    for (auto& b : img) b = std::uint8_t(rng());
    // The serial reference: the band alone, and (kBand, kRelay) the band below one more row, whose errors
    // are the band above's hand-off.
    std::vector<std::uint8_t> ref, img33(std::size_t(W) * (H + 1)), ref33;
    for (int x = 0; x < W; ++x) img33[x] = std::uint8_t(rng());
    std::copy(img.begin(), img.end(), img33.begin() + W);
    std::vector<int> e0;
    reference(img, W, H, ref, nullptr);
    reference(img33, W, H + 1, ref33, &e0);
    std::vector<int> above16(n_steps);
    std::vector<std::uint8_t> above8(n_steps);
    std::vector<int> relay16(n_steps);
    std::vector<std::uint8_t> relay8(n_steps);
    for (int t = 0; t < n_steps; ++t) { // lane 0 at step t: column t, e(y-1, t+1)
        above16[t] = t + 1 < W ? e0[t + 1] : 0;
        above8[t] = std::uint8_t(above16[t] + 127);
        // kRelay: lane 31 sends at step t e(y-1, t + 2), biased, which lane 0 uses at step t + 1.
        relay16[t] = (t + 2 < W ? e0[t + 2] : 0) + 127;
        relay8[t] = std::uint8_t(relay16[t]);
    }
    // Skewed rows: element t of row i is column t - S i.
    std::vector<int> h16(std::size_t(H) * n_steps);
    std::vector<std::uint8_t> h8(std::size_t(H) * n_steps, 0);
    for (int i = 0; i < H; ++i)
        for (int t = 0; t < n_steps; ++t) {
            const int x = t - S * i;
            const bool in = x >= 0 && x < W;
            h16[std::size_t(i) * n_steps + t] = in ? 16 * img[std::size_t(i) * W + x] : kPoison;
            h8[std::size_t(i) * n_steps + t] = in ? img[std::size_t(i) * W + x] : 0;
        }
    Dev d16(h16.size() * 4), d8(h8.size()), dv(h16.size() * 4), do8(h8.size()), dh8(h8.size()), dst(16);
    Dev da16(above16.size() * 4), da8(above8.size()), dr16(relay16.size() * 4), dr8(relay8.size());
    PIXFLOW_CUDA_CHECK(cudaMemcpy(d16.p, h16.data(), h16.size() * 4, cudaMemcpyHostToDevice));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(d8.p, h8.data(), h8.size(), cudaMemcpyHostToDevice));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(da16.p, above16.data(), above16.size() * 4, cudaMemcpyHostToDevice));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(da8.p, above8.data(), above8.size(), cudaMemcpyHostToDevice));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(dr16.p, relay16.data(), relay16.size() * 4, cudaMemcpyHostToDevice));
    PIXFLOW_CUDA_CHECK(cudaMemcpy(dr8.p, relay8.data(), relay8.size(), cudaMemcpyHostToDevice));

    struct Run {
        const char* name;
        Mode mode;
        void (*kernel)(const uint4*, const uint4*, int4*, uint4*, uint4*, const uint4*, const uint4*, int, int, int,
                       int, int, long long*);
    };
    const Run runs2[] = {{"chain", kChain, probe_kernel<kChain, 2>},
                         {"bytes", kBytes, probe_kernel<kBytes, 2>},
                         {"band", kBand, probe_kernel<kBand, 2>},
                         {"noshfl", kNoShfl, probe_kernel<kNoShfl, 2>}};
    const Run runs3[] = {{"chain", kChain, probe_kernel<kChain, 3>},
                         {"bytes", kBytes, probe_kernel<kBytes, 3>},
                         {"band", kBand, probe_kernel<kBand, 3>},
                         {"relay", kRelay, probe_kernel<kRelay, 3>}};
    // No noshfl for S = 3: its shuffle is off the chain already.
    const std::vector<Run> runs = S == 2 ? std::vector<Run>(runs2, runs2 + 4) : std::vector<Run>(runs3, runs3 + 4);
    auto launch = [&](const Run& r) {
        r.kernel<<<1, 32>>>(static_cast<const uint4*>(d16.p), static_cast<const uint4*>(d8.p), static_cast<int4*>(dv.p),
                            static_cast<uint4*>(do8.p), static_cast<uint4*>(dh8.p),
                            static_cast<const uint4*>(r.mode == kRelay ? dr16.p : da16.p),
                            static_cast<const uint4*>(r.mode == kRelay ? dr8.p : da8.p), e0[0], e0[1], n_steps, c_lo,
                            c_hi, static_cast<long long*>(dst.p));
        PIXFLOW_CUDA_CHECK(cudaGetLastError());
    };
    // Checks.
    for (const Run& r : runs) {
        if (r.mode == kNoShfl) continue;
        PIXFLOW_CUDA_CHECK(cudaMemset(dv.p, 0x55, h16.size() * 4));
        PIXFLOW_CUDA_CHECK(cudaMemset(do8.p, 0x55, h8.size()));
        launch(r);
        PIXFLOW_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<int> v(h16.size());
        std::vector<std::uint8_t> o8(h8.size());
        PIXFLOW_CUDA_CHECK(cudaMemcpy(v.data(), dv.p, v.size() * 4, cudaMemcpyDeviceToHost));
        PIXFLOW_CUDA_CHECK(cudaMemcpy(o8.data(), do8.p, o8.size(), cudaMemcpyDeviceToHost));
        long bad = 0;
        for (int i = 0; i < H; ++i)
            for (int x = 0; x < W; ++x) {
                const int t = x + S * i, c = t / kChunk;
                const std::size_t k = std::size_t(i) * n_steps + t;
                const bool above = r.mode == kBand || r.mode == kRelay;
                const bool bytes = (r.mode == kBytes || above) && c >= c_lo && c < c_hi;
                const int got = bytes ? o8[k] : (v[k] > 128 ? 255 : 0);
                bad += got != (above ? ref33[std::size_t(i + 1) * W + x] : ref[std::size_t(i) * W + x]);
            }
        std::printf("S=%d check %-7s %s (%ld of %d pixels differ)\n", S, r.name, bad ? "FAILED" : "PASSED", bad, W * H);
        failures += bad != 0;
    }
    // Timings.
    int dev = 0, clock_khz = 0;
    PIXFLOW_CUDA_CHECK(cudaGetDevice(&dev));
    PIXFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
    const int steady = (c_hi - c_lo) * kChunk;
    for (int round = 0; round < 3; ++round)
        for (const Run& r : runs) {
            const float ms = harness::time_it([&] { launch(r); }, 15);
            long long st[2];
            PIXFLOW_CUDA_CHECK(cudaMemcpy(st, dst.p, sizeof st, cudaMemcpyDeviceToHost));
            const double cyc = double(st[1] - st[0]) / steady;
            std::printf("S=%d round %d %-7s launch %.4f ms, %.2f ns a step over all %d; steady %.1f cycles a step "
                        "(clock64, last launch; %.2f GHz max clock)\n",
                        S, round, r.name, ms, 1e6 * ms / n_steps, n_steps, cyc, clock_khz / 1e6);
            std::fflush(stdout);
        }
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "lat") return lat_main();
    probe_skew(2);
    probe_skew(3);
    std::printf("%s\n", failures ? "step_probe: FAILED" : "step_probe: PASSED");
    return failures ? 1 : 0;
}
