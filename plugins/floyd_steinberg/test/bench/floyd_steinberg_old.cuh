// floyd_steinberg_old.cuh: the CUDA kernel of floyd_steinberg as of commit 47752b3 (one band of 32 rows per
// block, every hand-off through L2), in namespace pixflow::floyd_steinberg::old, for
// dither_harness.cu to check and time beside today's kernel in one run. Not part of the build.

// floyd_steinberg.cu: the CUDA kernel of floyd_steinberg (the rule: floyd_steinberg.hpp).
//
// Pixel (y,x) can only be computed after (y,x-1) and (y-1,x+1): at best at step x + 2y, so an
// H x W channel takes about W + 2H dependent steps however many threads run (24,600 for 8192^2).
// The design is about the latency of one step and of the hand-offs, not about throughput:
//
//  - One warp (one block of 32 threads) owns a band of 32 consecutive rows, lane i row
//    32 b + i. Lane i computes column x at step t = x + 2i, so it trails lane i-1 by two
//    columns, and each step every lane computes one pixel:
//
//        step t:   lane 0  row y0    column t
//                  lane 1  row y0+1  column t-2
//                  lane i  row y0+i  column t-2i       (lanes left of column 0 or right of the
//                                                       last column compute an error of 0)
//
//  - Errors stay in registers. Lane i-1's error of step t-1 is e(y-1, x+1) for lane i at step
//    t: one __shfl_up_sync per step. e(y-1, x) and e(y-1, x-1) are the values received in the
//    two previous steps, and e(y, x-1) is the lane's own previous result. A step's dependency
//    chain is the shuffle, two IMADs (forced in that order: the shuffled value enters last),
//    the rounding toward zero, a shift, one DPX clamp and a subtraction; everything else (input
//    bytes, the weighted errors of the row above, output bytes) is off it. No shared memory.
//  - Pixels move as 16-byte vectors, 16 steps (a chunk) at a time: a lane's 16 columns
//    straddle two aligned 16-byte blocks of its row (lane i's columns start at 16k - 2i); it
//    loads each block once, a chunk ahead (and into L2 eight chunks ahead), and extracts its
//    window with a per-lane funnel shift. Outputs are assembled the same way and written as
//    one aligned 16-byte store per lane and chunk. Channels other than 1, or rows not 16-byte
//    aligned, gather and scatter bytes instead (correct, but 4.5x slower on RGB).
//  - Bands hand their last row to the next band through global memory. Lane 31 writes
//    e + 127 (always 1..255) per column, 16 columns per store, into a zeroed hand-off row; the
//    next band's lane 0 reads the 16 columns of its next chunk in the middle of the current
//    one and, at the chunk's start, re-reads until none of the bytes it needs is 0. Each byte
//    is written once, from 0 to its final value, so a non-zero byte is final: the data is its
//    own progress flag and no fence orders anything (a 16-byte access observed half done only
//    costs another poll). Loads and stores are ld/st.relaxed.gpu: they go to L2, which is
//    coherent, and the compiler can neither cache nor drop them. A band thus trails the one
//    above by about 90 steps plus an L2 round trip, instead of the 64 steps the dependencies
//    require.
//  - A band only waits on the band above. Blocks take their band from an atomic ticket in
//    launch order, so the band a block waits on belongs to a block that is already running
//    (it drew its ticket earlier) and waits only on earlier tickets: no deadlock, whatever
//    the number of resident blocks. Channels are independent bands of their own (ticket t:
//    band t / C, channel t % C).
//  - Lanes part only around lane 0's polls and at row ends; __syncwarp() joins them before
//    the steps. Without it the warp ran each step twice, once per part (3x slower bands).
//  - Strips (a band of rows of a larger image, the carried error row of floyd_steinberg.hpp):
//    carry_in_kernel writes the carried errors as one more hand-off row per channel, complete
//    before the main kernel starts, which band 0's lane 0 reads like any band's (every byte is
//    already non-zero: it never waits). The lane of the image's last row, in the last band, also
//    writes its errors as a hand-off row (byte x + 2 lane: one aligned 16-byte store per chunk, as
//    lane 31 does), which carry_out_kernel turns back into the carried int16 errors. Two small
//    kernels per strip; the scan itself is the whole image's.
//
// Arithmetic: T = 16 in + t (+ 15 if t < 0), with t the weighted error sum, equals
// 16 (in + trunc(t / 16)) + fraction, so T >> 4 is in + trunc(t / 16), the pixel is white
// when T >= 16 * 129, and e = clamp(T >> 4, 0, 255) - out: the CPU's arithmetic, bit for bit.
//
// Measured on an H100 80GB HBM3 (SXM, 1980 MHz), median of 9, bit-exact with the CPU:
//   8192x8192 gray: 1.85 ms (24,600 dependent steps: 75 ns each, 150 cycles; one band alone
//   runs at 41 ns per step and each further band starts about 6 us after the one above);
//   4096x4096 gray 0.91 ms, 1920x1080 gray 0.30 ms, 8192x8192 RGB (byte path) 8.6 ms.
// Tried and measured slower: a skew of 3 columns (the shuffle off the chain: 13% faster
// steps, but 50% more steps per band: 2.43 ms); DPX-free min/max (3% slower).
#include "../../kernels/floyd_steinberg.hpp"

#include <pixflow/cuda.hpp>

#include <cstdint>

namespace pixflow::floyd_steinberg::old {
namespace {

constexpr int kLanes = 32;
constexpr int kSkew = 2;                       // columns lane i trails lane i-1 by
constexpr int kChunk = 16;                     // steps per chunk: one 16-byte vector per lane
constexpr int kHandIndex = kSkew * (kLanes - 1); // hand-off byte of column x: x + kHandIndex
constexpr int kHandNeed = kHandIndex + 1;      // lane 0's first hand-off byte of a chunk, less 16k
constexpr int kHandBlock = kHandNeed / kChunk; // ... lies in block k + kHandBlock,
constexpr int kHandByte = kHandNeed % kChunk;  // at this byte; the window ends in the next block
constexpr int kLastLag = (kHandIndex + kChunk - 1) / kChunk * kChunk; // lane 31's first block: -kLastLag
constexpr int kPrefetchChunks = 8;             // L2 prefetch distance of the input
constexpr int kHandPrefetchStep = 12;          // step of a chunk that reads the next chunk's hand-off
static_assert(kHandByte > 0, "the hand-off window straddles two blocks");
constexpr int kOutside = -16384;               // error sum of columns outside the row: e = 0
constexpr int kWhiteT = 16 * 129;              // T >= kWhiteT: white
constexpr unsigned kFull = 0xffffffffu;
constexpr unsigned kZeroError = 0x7f7f7f7fu;   // four hand-off bytes of e = 0

/// Chunks per band: lane 31 must cover every aligned output block of its row, and write every
/// hand-off block the next band reads (up to block (w - 1) / 16 + 4). Even, for the loop.
constexpr int chunks_for(int width) {
    const int cover = kLastLag / kChunk + 1, hand = kHandBlock + 2;
    return ((width - 1) / kChunk + (cover > hand ? cover : hand) + 1) & ~1;
}

struct Args {
    const std::uint8_t* in;
    std::uint8_t* out;
    long long in_pitch, out_pitch;
    int width, height, channels;
    int bands;              // per channel
    int chunks;             // per band
    long long hand_stride;  // bytes per hand-off row
    std::uint8_t* hand;     // (bands - 1) * channels hand-off rows, zeroed
    unsigned* ticket;       // zeroed
    const std::uint8_t* top; // channels hand-off rows above band 0 (the carried errors), or null
    std::uint8_t* last;     // channels rows for the last row's errors (byte x + 2 carry_lane), or null
    int carry_lane;         // the lane of the image's last row in the last band
};

// Strips. Thread i makes byte i of the hand-off rows above band 0, channel by channel: column x
// = byte - kHandIndex gets e + 127 from the carried row, every other byte e = 0 (127; a hand-off
// byte is never 0, see above). One pass over a few KiB per strip.
__global__ void carry_in_kernel(const std::int16_t* above, std::uint8_t* top, int width, int channels,
                                long long stride) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= stride * channels) return;
    const int c = int(i / stride), x = int(i % stride) - kHandIndex;
    top[i] = std::uint8_t(x >= 0 && x < width ? above[(long long)c * width + x] + 127 : 127);
}

// Thread i makes carried error i (channel i / width, column i % width) from the row that the
// last row's lane wrote: byte x + 2 lane.
__global__ void carry_out_kernel(const std::uint8_t* rows, std::int16_t* last, int width, int channels,
                                 long long stride, int lane) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)width * channels) return;
    const int c = int(i / width), x = int(i % width);
    last[i] = std::int16_t(int(rows[c * stride + x + kSkew * lane]) - 127);
}

__device__ __forceinline__ uint4 load_relaxed(const std::uint8_t* p) {
    uint4 v;
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ void store_relaxed(std::uint8_t* p, uint4 v) {
    asm volatile("st.relaxed.gpu.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}

__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/// a * b + c as one IMAD, in this order: keeps NVVM from reassociating the step's sum so that
/// the late operand (the shuffled error) enters last.
__device__ __forceinline__ int mad(int a, int b, int c) {
    int r;
    asm("mad.lo.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

__device__ __forceinline__ bool has_zero_byte(unsigned w) { return ((w - 0x01010101u) & ~w & 0x80808080u) != 0; }

/// Bytes [off, off + 16) of the 32 bytes a:b (a first), for off in [0, 16).
__device__ __forceinline__ uint4 window(uint4 a, uint4 b, unsigned off) {
    const bool s8 = off & 8, s4 = off & 4;
    const unsigned sh = (off & 3) * 8;
    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    unsigned c[6], d[5];
#pragma unroll
    for (int j = 0; j < 6; ++j) c[j] = s8 ? w[j + 2] : w[j];
#pragma unroll
    for (int j = 0; j < 5; ++j) d[j] = s4 ? c[j + 1] : c[j];
    return make_uint4(__funnelshift_r(d[0], d[1], sh), __funnelshift_r(d[1], d[2], sh),
                      __funnelshift_r(d[2], d[3], sh), __funnelshift_r(d[3], d[4], sh));
}

__device__ __forceinline__ unsigned word_of(const uint4& v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// 16 pixels of channel sample `row[x * cs]` for x = xb .. xb + 15 (xb a multiple of 16); 0
/// outside 0 .. w-1 or for a missing row. kVec: one vector load when the block is whole.
/// kWhole: the caller knows the row exists and the block lies inside it.
template <bool kVec, bool kWhole>
__device__ __forceinline__ uint4 load_block(const std::uint8_t* row, int xb, int w, int cs) {
    if constexpr (kVec && kWhole) {
        return __ldg(reinterpret_cast<const uint4*>(row + xb));
    } else {
        if (!kWhole && (row == nullptr || xb < 0 || xb >= w)) return make_uint4(0, 0, 0, 0);
        if (kVec && xb + kChunk <= w) return __ldg(reinterpret_cast<const uint4*>(row + xb));
        unsigned b[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < kChunk; ++i)
            if (kWhole || xb + i < w) b[i / 4] |= unsigned(row[std::size_t(xb + i) * cs]) << (8 * (i % 4));
        return make_uint4(b[0], b[1], b[2], b[3]);
    }
}

/// Stores the pixels of block xb that lie in 0 .. w-1 (kWhole: all of them).
template <bool kVec, bool kWhole>
__device__ __forceinline__ void store_block(std::uint8_t* row, int xb, int w, int cs, uint4 v) {
    if constexpr (kVec && kWhole) {
        *reinterpret_cast<uint4*>(row + xb) = v;
    } else {
        if (!kWhole && (row == nullptr || xb < 0 || xb >= w)) return;
        if (kVec && xb + kChunk <= w) {
            *reinterpret_cast<uint4*>(row + xb) = v;
            return;
        }
#pragma unroll
        for (int i = 0; i < kChunk; ++i)
            if (kWhole || xb + i < w) row[std::size_t(xb + i) * cs] = std::uint8_t(word_of(v, i / 4) >> (8 * (i % 4)));
    }
}

/// Per-lane state carried from chunk to chunk.
struct Lane {
    int lane;
    int e;       // e(y, x-1): this lane's last error
    int ul, u;   // e(y-1, x-1), e(y-1, x)
    int ke;      // 7, or 4 on lane 0 (whose shuffle returns its own e: see the step)
    unsigned off, out_off; // input window offset; output block offset within (prev, cur)
    int lag;     // 2 * lane + off: the lane's first aligned block is at -lag
    const std::uint8_t* src;
    std::uint8_t* dst;
    const std::uint8_t* hand_in; // lane 0 of a band below another; else null
    std::uint8_t* hand_out;      // lane 31 of a band above another; else null
    uint4 out_prev;              // outputs of the previous chunk
    uint4 hand_a, hand_b;        // lane 0: hand-off blocks k + kHandBlock and the next, for chunk k
};

/// One chunk: steps 16k .. 16k+15 of the band. `cur` and `next` hold the input blocks at
/// 16k - lag and 16k - lag + 16; `cur` is refilled with the block a chunk ahead. kInner: every
/// lane's row exists and its columns, input blocks and output block lie inside the row, so
/// the chunk needs no bounds (most chunks of a large image).
template <bool kVec, bool kInner>
__device__ __forceinline__ void run_chunk(const Args& a, Lane& s, int k, uint4& cur, const uint4& next) {
    const int w = a.width, cs = a.channels;
    const int x0 = kChunk * k - kSkew * s.lane; // this lane's first column
    const int xb = kChunk * k - s.lag;          // aligned block holding x0
    const uint4 in = window(cur, next, s.off);
    cur = load_block<kVec, kInner>(s.src, xb + 2 * kChunk, w, cs);
    if (s.src != nullptr && xb + kPrefetchChunks * kChunk < w)
        prefetch_l2(s.src + std::size_t(xb + kPrefetchChunks * kChunk) * cs);

    // Lane 0 below another band: e(y-1, x+1) for x = x0 .. x0+15 are hand-off bytes
    // 16k + kHandNeed .. 16k + kHandNeed + 15, in blocks k + kHandBlock and the next.
    uint4 hand = make_uint4(kZeroError, kZeroError, kZeroError, kZeroError);
    if (s.hand_in != nullptr && x0 < w) {
        for (;;) {
            hand = window(s.hand_a, s.hand_b, kHandByte);
            if (!(has_zero_byte(hand.x) | has_zero_byte(hand.y) | has_zero_byte(hand.z) | has_zero_byte(hand.w)))
                break;
            s.hand_a = load_relaxed(s.hand_in + kChunk * (k + kHandBlock));
            s.hand_b = load_relaxed(s.hand_in + kChunk * (k + kHandBlock + 1));
        }
    }
    // Lanes parted at the edges of their rows (load_block) and around lane 0's poll: join them
    // before the steps, or the warp runs every step twice, once per part, meeting at each shuffle.
    __syncwarp();

    unsigned ow[4] = {0, 0, 0, 0}, hw[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
        if (i == kHandPrefetchStep && s.hand_in != nullptr && x0 + kChunk < w) { // for chunk k+1
            s.hand_a = s.hand_b;
            s.hand_b = load_relaxed(s.hand_in + kChunk * (k + kHandBlock + 2));
        }
        const int x = x0 + i;
        const unsigned sh = 8 * (i % 4);
        const int in16 = int((word_of(in, i / 4) >> sh) & 0xffu) << 4;
        const int h = int((word_of(hand, i / 4) >> sh) & 0xffu) - 127; // lane 0: e(y-1, x+1); else 0
        const bool inside = kInner || unsigned(x) < unsigned(w);
        // Everything but this lane's and lane i-1's last errors: 16 in + e(y-1,x-1) +
        // 5 e(y-1,x) (+ 3 e(y-1,x+1) on lane 0), or kOutside off the row.
        const int p = inside ? in16 + s.ul + 5 * s.u + 3 * h : kOutside;
        // Lane i-1's previous error is e(y-1, x+1). Lane 0 gets its own back (shfl_up keeps
        // lanes below delta), which ke = 4 turns into the 7 e(y, x-1) it needs, so no lane
        // selects on the chain; lane 0's e(y-1, x+1) came in through p.
        const int ur = __shfl_up_sync(kFull, s.e, 1);
        const int t0 = mad(3, ur, mad(s.ke, s.e, p));                 // 16 in + t
        const int t = t0 + int(unsigned((t0 - in16) >> 31) >> 28);   // + 15 when t < 0
        const bool white = t >= kWhiteT;
        const int v = __vimin_s32_relu(t >> 4, 255); // clamp(in + trunc(t / 16), 0, 255)
        s.e = v - (white ? 255 : 0);
        s.ul = s.u;
        s.u = s.lane == 0 ? h : ur;
        ow[i / 4] |= (white ? 0xffu : 0u) << sh;
        hw[i / 4] |= unsigned(s.e + 127) << sh;
    }

    // The aligned block at xb: the last `off` outputs of the previous chunk, then this one's.
    const uint4 out = make_uint4(ow[0], ow[1], ow[2], ow[3]);
    store_block<kVec, kInner>(s.dst, xb, w, cs, window(s.off == 0 ? out : s.out_prev, out, s.out_off));
    s.out_prev = out;
    // Lane 31's columns 16k-62 .. 16k-47 are hand-off bytes 16k .. 16k+15: an aligned block.
    if (s.hand_out != nullptr) store_relaxed(s.hand_out + kChunk * k, make_uint4(hw[0], hw[1], hw[2], hw[3]));
    __syncwarp();
}

template <bool kVec> __global__ void __launch_bounds__(kLanes) dither_kernel(Args a) {
    Lane s;
    s.lane = int(threadIdx.x);
    unsigned ticket = 0;
    if (s.lane == 0) ticket = atomicAdd(a.ticket, 1u);
    ticket = __shfl_sync(kFull, ticket, 0);
    const int band = int(ticket) / a.channels, c = int(ticket) % a.channels;
    const int y = band * kLanes + s.lane;

    s.e = s.ul = s.u = 0;
    s.ke = s.lane == 0 ? 4 : 7;
    s.off = unsigned(-kSkew * s.lane) & (kChunk - 1);
    s.out_off = (kChunk - s.off) & (kChunk - 1);
    s.lag = kSkew * s.lane + int(s.off);
    s.src = y < a.height ? a.in + y * a.in_pitch + c : nullptr;
    s.dst = y < a.height ? a.out + y * a.out_pitch + c : nullptr;
    s.hand_in = s.lane != 0   ? nullptr
                : band > 0    ? a.hand + ((band - 1) * a.channels + c) * a.hand_stride
                : a.top       ? a.top + c * a.hand_stride // strips: the carried errors
                              : nullptr;
    s.hand_out = band + 1 < a.bands && s.lane == kLanes - 1 ? a.hand + (band * a.channels + c) * a.hand_stride
                 : band + 1 == a.bands && s.lane == a.carry_lane && a.last ? a.last + c * a.hand_stride
                                                                           : nullptr;
    s.out_prev = make_uint4(0, 0, 0, 0);
    s.hand_a = s.hand_b = make_uint4(0, 0, 0, 0);
    // Start the row's input on its way before waiting: the first two blocks, and the next
    // ones into L2 (run_chunk keeps kPrefetchChunks ahead from then on).
    uint4 in_a = load_block<kVec, false>(s.src, -s.lag, a.width, a.channels);
    uint4 in_b = load_block<kVec, false>(s.src, -s.lag + kChunk, a.width, a.channels);
    if (s.src != nullptr)
#pragma unroll
        for (int j = 2; j < kPrefetchChunks + 2; ++j)
            if (-s.lag + j * kChunk >= 0 && -s.lag + j * kChunk < a.width)
                prefetch_l2(s.src + std::size_t(-s.lag + j * kChunk) * a.channels);
    // Wait for the band above: chunk 0's hand-off blocks, and in the first of them e(y-1, 0)
    // (hand-off byte kHandIndex).
    static_assert(kHandIndex / kChunk == kHandBlock);
    if (s.hand_in != nullptr) {
        for (;;) {
            s.hand_a = load_relaxed(s.hand_in + kHandBlock * kChunk);
            s.hand_b = load_relaxed(s.hand_in + (kHandBlock + 1) * kChunk);
            const unsigned b = (word_of(s.hand_a, kHandIndex % kChunk / 4) >> (8 * (kHandIndex % 4))) & 0xffu;
            const uint4 h = window(s.hand_a, s.hand_b, kHandByte);
            if (b != 0 && !(has_zero_byte(h.x) | has_zero_byte(h.y) | has_zero_byte(h.z) | has_zero_byte(h.w))) {
                s.u = int(b) - 127;
                break;
            }
        }
    }
    __syncwarp();
    // Chunk k is inner when lane 31's first column 16k - kHandIndex is >= 0 and lane 0's last
    // block read, 16k + 32 .. 16k + 47, ends inside the row.
    const bool full = (band + 1) * kLanes <= a.height;
    for (int k = 0; k < a.chunks; k += 2) {
        if (full && k >= kLastLag / kChunk && kChunk * (k + 1) + 3 * kChunk <= a.width) {
            run_chunk<kVec, true>(a, s, k, in_a, in_b);
            run_chunk<kVec, true>(a, s, k + 1, in_b, in_a);
        } else {
            run_chunk<kVec, false>(a, s, k, in_a, in_b);
            run_chunk<kVec, false>(a, s, k + 1, in_b, in_a);
        }
    }
}

/// Bytes of the ticket and the hand-off rows between bands, which the kernel needs zeroed; the
/// rows of the carried state (strips) come after them.
std::size_t zeroed_bytes(const ImageView& in) {
    const std::size_t bands = std::size_t(in.height + kLanes - 1) / kLanes;
    return 256 + (bands - 1) * std::size_t(in.channels) * std::size_t(chunks_for(in.width)) * kChunk;
}

} // namespace

std::size_t cuda_scratch_bytes(const ImageView& in) {
    if (in.width <= 0 || in.height <= 0) return 0;
    return zeroed_bytes(in) + 2 * std::size_t(in.channels) * std::size_t(chunks_for(in.width)) * kChunk;
}

void dither_cuda(const ImageView& in, const ImageView& out, void* scratch, void* stream, const std::int16_t* above,
                 std::int16_t* last) {
    cudaStream_t s = cuda::stream_of(stream);
    if (in.width <= 0) return;
    if (in.height <= 0) { // no rows: the state goes through unchanged
        if (last && last != above) {
            const std::size_t bytes = carry_bytes(in.width, in.channels);
            if (above) PIXFLOW_CUDA_CHECK(cudaMemcpyAsync(last, above, bytes, cudaMemcpyDeviceToDevice, s));
            else PIXFLOW_CUDA_CHECK(cudaMemsetAsync(last, 0, bytes, s));
        }
        return;
    }
    Args a;
    a.in = static_cast<const std::uint8_t*>(in.data);
    a.out = static_cast<std::uint8_t*>(out.data);
    a.in_pitch = in.pitch;
    a.out_pitch = out.pitch;
    a.width = in.width;
    a.height = in.height;
    a.channels = in.channels;
    a.bands = (in.height + kLanes - 1) / kLanes;
    a.chunks = chunks_for(in.width);
    a.hand_stride = (long long)a.chunks * kChunk;
    a.ticket = static_cast<unsigned*>(scratch);
    a.hand = static_cast<std::uint8_t*>(scratch) + 256;
    std::uint8_t* carry_rows = static_cast<std::uint8_t*>(scratch) + zeroed_bytes(in); // 2 x channels rows
    a.top = above ? carry_rows : nullptr;
    a.last = last ? carry_rows + std::size_t(a.channels) * std::size_t(a.hand_stride) : nullptr;
    a.carry_lane = (in.height - 1) % kLanes;
    PIXFLOW_CUDA_CHECK(cudaMemsetAsync(scratch, 0, zeroed_bytes(in), s));
    constexpr int carry_threads = 256;
    if (above) {
        const long long n = a.hand_stride * a.channels;
        carry_in_kernel<<<unsigned((n + carry_threads - 1) / carry_threads), carry_threads, 0, s>>>(
            above, carry_rows, a.width, a.channels, a.hand_stride);
        PIXFLOW_CUDA_CHECK_LAUNCH();
    }
    const bool vec = in.channels == 1 && is_aligned(in, 16) && is_aligned(out, 16);
    const unsigned blocks = unsigned(a.bands) * unsigned(a.channels);
    if (vec) dither_kernel<true><<<blocks, kLanes, 0, s>>>(a);
    else dither_kernel<false><<<blocks, kLanes, 0, s>>>(a);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    if (last) { // after the kernel that read `above` (it may be the same memory), on the stream
        const long long n = (long long)a.width * a.channels;
        carry_out_kernel<<<unsigned((n + carry_threads - 1) / carry_threads), carry_threads, 0, s>>>(
            a.last, last, a.width, a.channels, a.hand_stride, a.carry_lane);
        PIXFLOW_CUDA_CHECK_LAUNCH();
    }
}

} // namespace pixflow::floyd_steinberg::old
