// floyd_steinberg.cu: the CUDA kernel of floyd_steinberg (the rule: floyd_steinberg.hpp).
//
// Pixel (y,x) can only be computed after (y,x-1) and (y-1,x+1): at best at step x + 2y, so an
// H x W channel takes about W + 2H dependent steps however many threads run (24,600 for 8192^2).
// The design is about the latency of one step and of the hand-offs, not about throughput:
//
//  - One warp owns a band of 32 consecutive rows, lane i row 32 b + i, and a block of 2 warps
//    (kWarpsPerBlock) owns 2 consecutive bands. Lane i computes column x at step t = x + 2i, so
//    it trails lane i-1 by two columns, and each step every lane computes one pixel:
//
//        step t:   lane 0  row y0    column t
//                  lane 1  row y0+1  column t-2
//                  lane i  row y0+i  column t-2i       (lanes left of column 0 or right of the
//                                                       last column compute an error of 0)
//
//  - Errors stay in registers. Lane i-1's error of step t-1 is e(y-1, x+1) for lane i at step
//    t: one __shfl_up_sync per step. e(y-1, x) and e(y-1, x-1) are the values received in the
//    two previous steps, and e(y, x-1) is the lane's own previous result. A step's dependency
//    chain is the shuffle, one IMAD (forced in that order: the shuffled value enters last), the
//    rounding toward zero (one LEA.HI: + the sum's top 4 bits), a shift, one DPX clamp and a
//    subtraction; everything else (input bytes, the weighted errors of the row above, output
//    bytes) is off it.
//  - Pixels move as 16-byte vectors, 16 steps (a chunk) at a time: a lane's 16 columns
//    straddle two aligned 16-byte blocks of its row (lane i's columns start at 16k - 2i); it
//    loads each block once, a chunk ahead (and into L2 eight chunks ahead), and extracts its
//    window with a per-lane funnel shift. Outputs are assembled the same way and written as
//    one aligned 16-byte store per lane and chunk. Images of 2 to 4 channels are copied into
//    planes in scratch (16-byte rows), dithered there in place and copied back (planes_kernel:
//    8192^2 RGB 2.48 ms against 7.87 when the kernel gathered and scattered each channel's
//    bytes); so is one channel whose rows are not 16-byte aligned (cudaMemcpy2DAsync both ways:
//    a caller's packed rows, e.g. a torch tensor 1000 wide), which until 2026-11-30 took that
//    byte path (figures below). Only a row's last, partial block is read and written byte by byte.
//  - Bands hand their last row to the next band through a hand-off row: in the block's shared
//    memory between the warps of a block (K - 1 rows of about W + 64 bytes: 8.3 KB at 8192
//    wide), in global memory from the block's last warp to the next block, where one more warp,
//    the receiver, polls it (a lane per 16-byte block, 32 at a time) and copies each block into
//    a last shared row once whole, which the block's first warp reads: every band's chunks then
//    run at one speed (read from L2 inside the steps, they took 120 cycles more). Lane 31 writes
//    e + 127 (always 1..255) per column, 16 columns per store, into a zeroed hand-off row; the
//    next band reads the two blocks holding the 16 columns of its next chunk at step 12 of the
//    current one (every lane, the same bytes: one access per warp, and no branch: a band with
//    nothing above reads a zeroed block of shared memory) and, at the chunk's start, re-reads
//    until none of the bytes lane 0 needs is 0, leaving the poll together (__all_sync). Each byte
//    goes once from 0 to its final value (a store may repeat final values: to the next warp,
//    lane 31 stores its block after step 14 too, byte 15 still 0), so a non-zero byte is final:
//    the data is its own progress flag and no fence orders anything (a 16-byte access observed
//    half done only costs another poll). Loads and stores are strong relaxed accesses, which
//    the compiler can neither cache nor drop: generic ld/st.relaxed.gpu where a row may be in
//    global memory (they go to L2, which is coherent), ld/st.volatile.shared (relaxed.sys in
//    the PTX memory model: LDS/STS) where it is known to be in shared memory, where the block's
//    warps see each other's stores (the shared rows are zeroed before a __syncthreads). Lane
//    31's value for lane 0's last column of chunk k is computed at step 14 of the band above's
//    chunk k + 4, so a band trails the one above by at least 5 chunks (80 steps, not the 64 of
//    the dependencies): it does so through shared memory, and 1.1 to 1.6 chunks more through L2
//    (test/bench/dither_trace.cu, figures below).
//  - A band only waits on the band above. Blocks take their 2 bands from an atomic ticket in
//    launch order, so the band a block's first warp waits on belongs to a block that is
//    already running (it drew its ticket earlier) and waits only on earlier tickets, and the
//    other warps (and the receiver) wait on a warp of their own block or an earlier ticket: no
//    deadlock, whatever the number of resident blocks. Channels are independent bands of their
//    own (ticket t: bands 2 (t / C) and 2 (t / C) + 1, channel t % C). Rows too wide for the
//    shared rows (kMaxShared: over about 100,000 columns) keep one warp per block and no
//    receiver, every hand-off read from L2.
//  - Lanes part only at row ends; __syncwarp() joins them before the steps. A warp that parts
//    runs each step twice, once per part (3x slower bands); when lane 0 alone polled, every
//    chunk whose first poll failed ran its 16 steps in 2370 cycles instead of 1000
//    (dither_trace, 2026-11-28), and such a band fell back a chunk every 9 or 10 chunks.
//  - Strips (a band of rows of a larger image, the carried error row of floyd_steinberg.hpp):
//    carry_in_kernel writes the carried errors as one more hand-off row per channel, complete
//    before the main kernel starts, which band 0's lane 0 reads like any band's (every byte is
//    already non-zero: it never waits). The lane of the image's last row, in the last band, also
//    writes its errors as a hand-off row (byte x + 2 lane: one aligned 16-byte store per chunk, as
//    lane 31 does), which carry_out_kernel turns back into the carried int16 errors. Two small
//    kernels per strip; the scan itself is the whole image's.
//  - A band's chunks run in up to three loops, one kind of chunk each: padded on the left (the
//    inner code, columns left of 0 padded), padded on both sides (a whole band's last chunks,
//    columns at and right of the width padded, where a row's 16-byte blocks may be read and
//    written whole), bounded (the rest: a partial band, or a band's last chunks over a caller's
//    rows of a width not a multiple of 16). See the band loop in dither_kernel.
//
// 2026-11-30 (later), on an H200 (same harness, 3212 cases bit-exact, beside the kernel before):
//   8192x8192 gray        1.1613-1.1628 ms (1.1734-1.1771 before the hand-off bytes took one LEA a
//                         step instead of an add and an OR); a band alone 0.2884 ms, 34.9 ns a step
//   8192x8192 RGB         2.122-2.127 ms (2.30 before both changes: several channels run their
//                         inner chunks without the test of x < 0, kSplit, issue-bound there)
//   Two rows a lane (Shape<2, S>): 1.30 ms with S = 2, 1.57 with S = 3 (44-46 ns a two-row step,
//   but a band's lag twice as many steps). This design's floor with hand-offs of no latency, one
//   band + 255 x 79 steps of 34.9 ns: 0.99 ms; each further band takes 98 such steps.
//   Then measured and left out (docs/performance.md, twenty-fourth session): blocks in clusters
//   of 2-16 whose last warp stores its hand-off into the next block's receiver row through
//   distributed shared memory (branch next/floyd-clusters): 1.24-1.44 ms; through DSMEM the
//   hand-offs gained 1.5-3% over the same cluster kernel's L2 path, the cluster kernel itself lost
//   7-19%. The chunk's poll made speculative (the vote's result used after the steps, which run
//   again when the window was not whole): 1.43 ms; leaving at step 1 or 4 instead, 1.48-1.49.
//   The receiver sleeping 100 or 400 ns after a failed poll: 1.205 / 1.228 ms (its spinning
//   costs the bands nothing; the detection delay does).
//   2026-12-01: 3 bands a block (4 warps with the receiver, two of three hand-offs in shared
//   memory): 8192^2 level (1.1603-1.1620 ms), 1920x1080 -1%, RGB -1.7%; not kept.
//   2026-12-01 (later): S = 3 with three instructions fewer a step (lane 0's value selected in
//   place of the shuffled one, inner chunks without the test of x < 0): 1.32 ms against 1.23 for
//   S = 3 as it is, each change slower alone (ptxas's schedule, not the count, sets the step).
//   2026-12-01 (thirty-second session): the leanest step, measured (test/bench/step_probe.cu: a
//   band alone with the chain and its bytes and nothing else, no band above, no test of x): 63
//   cycles at S = 2 (the shuffle's 24 plus the ALU chain's 43.5), 43 at S = 3, against this
//   kernel's 69 and 57. By the model in docs/performance.md that is 1.11 / 1.00 ms before a band
//   reads the band above: 1.0 ms is at the edge of this design even for a step doing nothing else.
//   With lane 0 reading the band above as this kernel does, the probe's step takes 76 / 56 cycles:
//   this kernel's steps (69 / 57) are at the floor of a step that does its job.
// 2026-11-30, on an H200 (test/bench/dither_harness.cu, 2628 cases bit-exact; medians of 15
// beside 9a25d5a's kernel in the same run, 3 rounds each):
//   8192x8192 gray        1.2956-1.2979 ms, before 1.4535-1.4618 (-11%; 1.248 with the early
//                         hand-off to the next warp, below)
//   4096x4096 gray        0.6514-0.6524,    before 0.7307-0.7310 (-11%)
//   1920x1080 gray        0.2295-0.2305,    before 0.2441-0.2450 (-6%)
//   8192x8192 RGB         2.412-2.425,      before 2.539-2.551 (-5%; planar)
//   8191x8192 gray rows   1.493-1.496,      before 2.024-2.027 (-26%; planar, unaligned)
//   1000x1000 gray rows   0.188-0.191,      before 0.2295-0.2301 (-18%)
// A band's last five chunks, which ran the bounded code (about 350 cycles more a chunk), lie
// on the critical path of every band below: band b+1's chunk k waits for band b's chunk k + 4,
// so the longest path down the image runs along the right edge and passes about 5 x 255 such
// chunks at 8192^2. Two changes: the loops split by kind (the one loop switching between two
// kinds of chunk ran 3-5% slower; the split alone: 8192^2 1.455 -> 1.399 ms), and those last
// chunks padded on the right (1.399 -> 1.296 ms); then no __syncwarp in the padded code (1.296
// -> 1.284 ms; 4096^2 0.646, 1920 x 1080 0.2285, RGB 2.39, 8191 wide 1.473, 1000^2 0.184).
// Their errors beyond the width are whatever the input there makes of them; no pixel of the row
// reads them (run_chunk, k3). Measured on the way and slower: the width tested in every step of
// the one inner code (an error sum of kOutside beyond it: +3 to +6%, a select on lane 0's
// hand-off value as well: +3.5%), a branch per chunk setting lane 0's hand-off byte at the width
// (+3%), and a fourth loop of unpadded chunks between the left-padded and the right-padded ones
// (no test of x < 0 in most steps: 1.67 ms, +15%; the left-padded code's schedule is the faster
// one).
//
// Arithmetic: T = 16 in + t (+ 15 if t < 0), with t the weighted error sum, equals
// 16 (in + trunc(t / 16)) + fraction, so T >> 4 is in + trunc(t / 16), the pixel is white
// when T >= 16 * 129, and e = clamp(T >> 4, 0, 255) - out: the CPU's arithmetic, bit for bit.
// t and 16 in + t are two IMADs side by side from the late errors, so the sign of t needs no
// subtraction after them (one op less on the chain: a band alone 41 -> 38 ns per step).
//
// 2026-11-29, on an H200 (test/bench/dither_harness.cu, 2336 cases bit-exact; medians of 15
// beside the kernel of commit 4c7ce32 in the same run, 3 rounds, four runs):
//   8192x8192 gray   1.439-1.457 ms, before 1.499-1.521 (-4%; pixflow bench 1.4435 ms)
//   4096x4096 gray   0.723-0.737,    before 0.758-0.773 (-5%)
//   1920x1080 gray   0.244-0.248,    before 0.268-0.274 (-9%)
//   8192x8192 RGB    7.73-7.81,      before 7.85-7.87 (-1%; byte path); then planar (one run):
//                    2.48 ms against 7.87 (the planes' copies included; 4 warps a block, 2.63
//                    with one)
// Two changes. (1) A band's first 4 chunks (lanes left of column 0) ran the bounded code, about
// 1350 cycles of steps against 1000 (dither_trace's stamps), while the band above, already past
// them, ran inner chunks; every band so fell about 2000 cycles behind in its first chunks and
// never caught up: in steady state a band started its chunks about 2800 cycles after the band
// above had written what they need (255 bands: about 0.36 ms). On the vector path those chunks
// now run the inner code with the row padded on the left (kLeftPad: zero input blocks from
// scratch, outputs left of 0 into a sink, e(y-1, x+1) left out left of 0, so every error there
// is 0 as before); the start-up slack fell to about 700 cycles. (2) One chunk per loop pass
// instead of two (the two input blocks swapped in registers): with two, the chunk after the
// back-edge took 200-280 cycles more than the other; with four a pass, 1.80 ms. The loop body
// is what the instruction cache holds: the smaller, the faster.
// Tried on the way and slower (same harness): the next chunk's hand-off polled and voted on at
// step 15 of the current one, with no __syncwarp and no branch in the inner chunk (1.52 against
// 1.455 ms with one chunk a pass, 1.61 against 1.50 with two); band 0 held to a fixed pace
// (clock64) so that the bands below could catch up after a delay (1350-1600 cycles a chunk:
// level to 2% slower); the padded first chunks as a third copy of the chunk code (level); the
// next hand-off's window and test made at step 14 from loads at step 12 or 8 (ptxas had sunk
// the step-12 loads below the last shuffle; 0.5 and 1.8% slower all the same); hand-offs every 8
// columns (two 8-byte stores by lane 31, a second poll at step 8, the receiver copying halves:
// minimum lag 72 steps instead of 80; 1.52-1.53 against 1.46 ms).
// With the start-up slack gone, the bands run close behind one another and a band's delays
// add up down the image (dither_trace: the last bands take about 1.5 times band 0's time for
// their row), so the time is now the fed bands' chunk period, about 1590 cycles traced against
// 1520 for band 0 (its poll of the band above: about 75 cycles when the bytes are there).
// 2026-11-28, on an H100 80GB HBM3, bit-exact on every case of test/bench/dither_harness.cu,
// medians of 15 beside the kernel of commit 62e9adf (lane 0 alone polled, behind a branch, read
// one new block at step 12, and the first band of a block read L2) in the same run, 3 rounds:
//   8192x8192 gray   1.500-1.505 ms, before 1.727-1.732 (-13%)
//   4096x4096 gray   0.759-0.765,    before 0.857-0.863
//   1920x1080 gray   0.269-0.270,    before 0.273-0.275
//   8192x8192 RGB    7.94-8.01,      before 8.65-8.70 (byte path: one warp per block)
// Step by step, 8192^2 gray: every lane polls and the warp leaves the poll together: 1.636 ms;
// the step-12 read without a branch (the zeroed shared block): 1.575; both blocks read at step
// 12 rather than keeping the second of the previous read (ptxas had put a copy of the fresh
// block right after its load, which waited the load out): 1.550; the receiver: 1.501.
// Where the time goes now (test/bench/dither_trace.cu, 8192^2 gray, cycles at 1.98 GHz): every
// band's chunk takes about 1340 cycles (1000 for the 16 steps); a band trails the one above by
// 4.3-5.7 us, set when it starts: it starts once the band above has finished its chunk 4, whose
// first 4 chunks (columns left of 0, the bounded code) took 1200-1350 cycles each, and, all
// bands running at one pace, it never catches up. The minimum is 5 chunks, about 3.4 us; 1.0 ms
// would need 255 hand-offs of 2.6 us (66 steps), below what 16-column hand-offs allow.
// Tried and slower: lane 0 alone reading at step 12 (predicated) with a __shfl_sync of its
// verdict: 1.65 ms; the read at step 8 or 4: level with 12; a third, branch-free copy of the
// chunk for those first chunks: their 16 steps stayed at 1200-1300 cycles (cold instruction
// cache, presumably) and the kernel took 1.60 ms; the first chunks through the inner code with a
// test of column 0 in every step: the steps got 20% slower, 1.79 ms.
// Measured 2026-11-27 on an H100 80GB HBM3 (SXM, 1980 MHz), bit-exact with a serial CPU reference on every
// case of test/bench/dither_harness.cu, medians of 15 in one run beside the previous kernel
// (commit 47752b3, one band per block, all hand-offs in L2; 3 rounds each, two benches):
//   8192x8192 gray   1.722-1.732 ms, before 1.834-1.878 ms (-6 to -8%)
//   4096x4096 gray   0.863-0.864 ms, before 0.883-0.885
//   1920x1080 gray   0.2725-0.2731,  before 0.2928-0.2936
//   8192x8192 RGB    8.57-8.65 ms,   before 8.62-8.68 (byte path, one band per block: unchanged)
// 8192 wide (`harness shapes`, ms by bands): one band alone 0.313 (8254 steps, 38 ns each);
// 2 bands in one block 0.341, 4 bands 0.352, 8 bands (2 blocks) 0.444, 32 bands 0.567, 256
// bands 1.742: about 5.3 us per further band. With one band per block (every hand-off in L2):
// 0.313, 0.408, 0.419, 0.439, 0.575, 1.831: 5.6 us per band, and a second band alone costs
// 95 us instead of 28: a band fed through L2 runs about 4 steps per chunk slower, presumably
// waiting at each chunk's start for the hand-off load issued at step 12 (an L2 load takes about
// 8 steps; not confirmed: reading it earlier made the chunk's schedule slower, below). Most of
// the gain of the shared rows is that the last band (a block's 4th warp) runs at full speed,
// not a shorter gap. The issue's 1.0 ms needs about 64 + a few steps per hand-off.
// Tried and measured slower (same harness, same card, 8192x8192 gray unless said):
//  - a skew of 3 columns (the shuffle off the chain: 13% faster steps, but 50% more steps per
//    band: 2.43 ms); DPX-free min/max (3% slower);
//  - R rows per lane (the Shape template: lane j row r is band row R j + r, in-lane rows 2
//    columns apart, bands of 32 R rows, half or a quarter of the hand-offs): 2 rows per lane run
//    63 ns per step alone (41 with 1; ptxas issues the two rows' chains largely one after the
//    other) and 8192^2 took 2.44-2.56 ms; 4 rows 111 ns per step, 6.5-6.6 ms (255 registers,
//    spills; with S = 3, 7.2-7.3); a skew of 3 between lanes (S = 3) with 2 rows per lane 3.0 ms;
//  - one row per lane with S = 3 and 4 warps per block: 32 ns per step alone (0.265 ms a band)
//    but 2.00-2.01 ms (a longer hand-off: 93 + steps instead of 62 +); on 2026-11-30, after the
//    one-LEA rounding, 27.5 ns a step alone and 1.211-1.216 ms, but RGB 2.72-2.77 ms against
//    2.33 and 1000^2 2-3% slower: S = 2 stays. This design's floor, with hand-offs of no
//    latency: one band + 255 x (79 steps at S = 2, 111 at S = 3): 1.057 / 1.006 ms;
//  - both roundings side by side, the sum's sign choosing at the end (one dependent instruction
//    less on paper): 29 -> 40 instructions a step, interleaved into the chain: +13%;
//  - warps per block: 1 (all hand-offs in L2) 1.79-1.82 ms, 2: 1.72-1.75, 4: 1.72-1.73, 8:
//    1.95-1.96 (two warps share an SM sub-partition's issue);
//  - the next chunk's hand-off read earlier in the chunk (step 8, 5 or 2 instead of 12: the L2
//    load takes about 8 steps): 1.94-2.10 ms with one warp per block (a band alone got 11%
//    slower: the branch at another step parts ptxas's schedule of the chunk); read by every
//    lane without a branch, 4 warps per block: 1.76-1.81; the shared rows through LDS/STS
//    instead of generic strong loads and stores: 1.81-1.86 (on 2026-11-30, the polls and the
//    early and receiver's stores through them made 8192^2 4% faster: load_shared; with them,
//    the next chunk's blocks read at step 13, 14 or 15 instead of 12: level, +1.5%, +4.4%;
//    the early store through L2 too, the receiver copying bytes 0..14 first: +11%);
//  - the byte path with 4 warps per block: 8192x8192 RGB 10.5-10.65 ms (its byte loads and
//    stores crowd one SM), hence one band per block there.
#include "floyd_steinberg.hpp"

#include <pixflow/cuda.hpp>

#include <algorithm>
#include <cstdint>

// Stamps of each band's chunks for test/bench/dither_trace.cu, which defines it; none here.
#ifndef PIXFLOW_FS_TRACE
#define PIXFLOW_FS_TRACE(phase)
#endif

namespace pixflow::floyd_steinberg {
namespace {

constexpr int kLanes = 32;
constexpr int kSkew = 2;           // columns a row trails the row above it in one lane
constexpr int kChunk = 16;         // steps per chunk: one 16-byte vector per row
constexpr int kPrefetchChunks = 8; // L2 prefetch distance of the input
constexpr int kOutside = -16384;   // error sum of columns outside the row: e = 0
constexpr int kWhiteT = 16 * 129;  // T >= kWhiteT: white
constexpr unsigned kFull = 0xffffffffu;
constexpr unsigned kZeroError = 0x7f7f7f7fu;   // four hand-off bytes of e = 0
constexpr int kHandPrefetchStep = 12;          // step of a chunk that reads the next chunk's hand-off
constexpr std::size_t kMaxShared = 200 * 1024; // the most shared memory a block's hand-off rows take

/// The shape of a band: R rows per lane (32 R rows per band), row r of lane j is band row
/// v = R j + r and trails the band's first row by offset(v) columns: kSkew per row within a
/// lane, S between the last row of lane j and the first of lane j+1 (S = 2: row v trails by 2 v;
/// S = 3: the shuffled error arrives a step before it is needed).
template <int R, int S> struct Shape {
    static_assert(R >= 1 && (S == 2 || S == 3));
    static constexpr int kRows = kLanes * R;
    static constexpr int kLaneSkew = kSkew * (R - 1) + S; // columns lane j+1 trails lane j
    __host__ __device__ static constexpr int offset(int v) { return kSkew * (v % R) + kLaneSkew * (v / R); }
    static constexpr int kHandIndex = offset(kRows - 1);  // hand-off byte of column x: x + kHandIndex
    static constexpr int kHandNeed = kHandIndex + 1;      // row 0's first hand-off byte of a chunk, less 16k
    static constexpr int kHandBlock = kHandNeed / kChunk; // ... lies in block k + kHandBlock,
    static constexpr int kHandByte = kHandNeed % kChunk;  // at this byte; the window ends in the next block
    static_assert(kHandByte > 0, "the hand-off window straddles two blocks");
    static constexpr int kLastLag = (kHandIndex + kChunk - 1) / kChunk * kChunk; // last row's first block: -kLastLag
    /// Chunks per band: the last row must cover every aligned output block of its row, and write
    /// every hand-off block the next band reads. Even, for the loop.
    static constexpr int chunks_for(int width) {
        const int cover = kLastLag / kChunk + 1, hand = kHandBlock + 2;
        return ((width - 1) / kChunk + (cover > hand ? cover : hand) + 1) & ~1;
    }
};

struct Args {
    const std::uint8_t* in;
    std::uint8_t* out;
    long long in_pitch, out_pitch;
    int width, height, channels;
    int bands;                // per channel
    int chunks;               // per band
    long long hand_stride;    // bytes per hand-off row
    std::uint8_t* hand;       // (bands - 1) * channels hand-off rows, zeroed
    unsigned* ticket;         // zeroed
    const std::uint8_t* top;  // channels hand-off rows above band 0 (the carried errors), or null
    std::uint8_t* last;       // channels rows for the last row's errors (byte x + carry_offset), or null
    int carry_row;            // the band row (0 .. 32 R - 1) of the image's last row in the last band
    int carry_offset;         // its offset(carry_row)
    const std::uint8_t* zero; // 16 zero bytes (scratch, never written): input blocks left of the row
    std::uint8_t* sink;       // 16 bytes nobody reads (scratch): output blocks outside the row
    bool whole_blocks;        // a row's last 16-byte block may be read and written whole: the width is
                              // a multiple of 16, or the rows are planes in scratch (16-byte pitch)
};

// Strips. Thread i makes byte i of the hand-off rows above band 0, channel by channel: column x
// = byte - hand_index gets e + 127 from the carried row, every other byte e = 0 (127; a hand-off
// byte is never 0, see above). One pass over a few KiB per strip.
__global__ void carry_in_kernel(const std::int16_t* above, std::uint8_t* top, int width, int channels, long long stride,
                                int hand_index) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= stride * channels) return;
    const int c = int(i / stride), x = int(i % stride) - hand_index;
    top[i] = std::uint8_t(x >= 0 && x < width ? above[(long long)c * width + x] + 127 : 127);
}

// Thread i makes carried error i (channel i / width, column i % width) from the row that the
// last row wrote: byte x + offset.
__global__ void carry_out_kernel(const std::uint8_t* rows, std::int16_t* last, int width, int channels,
                                 long long stride, int offset) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)width * channels) return;
    const int c = int(i / width), x = int(i % width);
    last[i] = std::int16_t(int(rows[c * stride + x + offset]) - 127);
}

// Images of several channels run planar: planes_kernel<true> copies channel c of row y of the
// interleaved image (rows of `pitch` bytes) to plane c, row y (rows of `ppitch` bytes, a multiple
// of 16), planes_kernel<false> copies the dithered planes back. Thread x of block (bx, by) does
// pixel bx * blockDim.x + x of rows by, by + gridDim.y, ...
template <bool kToPlanes>
__global__ void planes_kernel(const std::uint8_t* from, std::uint8_t* to, long long pitch, long long ppitch, int w,
                              int h, int channels) {
    const int x = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (x >= w) return;
    const long long plane = (long long)h * ppitch;
    for (int y = int(blockIdx.y); y < h; y += int(gridDim.y))
        for (int c = 0; c < channels; ++c) {
            const long long i = y * pitch + (long long)x * channels + c, p = c * plane + y * ppitch + x;
            to[kToPlanes ? p : i] = from[kToPlanes ? i : p];
        }
}

__device__ __forceinline__ uint4 load_relaxed(const std::uint8_t* p) {
    uint4 v;
    asm volatile("ld.relaxed.gpu.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ void store_relaxed(std::uint8_t* p, uint4 v) {
    asm volatile("st.relaxed.gpu.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/// The same on a hand-off row known to be in shared memory (a band's hand_in in a block with a
/// receiver, the early hand-off, the receiver's copies): ld/st.volatile.shared, strong (relaxed
/// at system scope) but LDS/STS instead of generic strong accesses, which take the longer generic
/// path: 8192^2 1.2215 -> 1.1739 ms (2026-11-30; .cta scope with generic addresses: no change).
__device__ __forceinline__ uint4 load_shared(const std::uint8_t* p) {
    uint4 v;
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(unsigned(__cvta_generic_to_shared(p)))
                 : "memory");
    return v;
}

__device__ __forceinline__ void store_shared(std::uint8_t* p, uint4 v) {
    asm volatile("st.volatile.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(unsigned(__cvta_generic_to_shared(p))),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/// A hand-off load: from shared memory (kShared) or from wherever `p` points.
template <bool kShared> __device__ __forceinline__ uint4 load_hand(const std::uint8_t* p) {
    if constexpr (kShared)
        return load_shared(p);
    else
        return load_relaxed(p);
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

/// a * b + c as one IMAD, in this order: keeps NVVM from reassociating the step's sum so that
/// the late operand (the error of the row above) enters last.
__device__ __forceinline__ int mad(int a, int b, int c) {
    int r;
    asm("mad.lo.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

__device__ __forceinline__ bool has_zero_byte(unsigned w) { return ((w - 0x01010101u) & ~w & 0x80808080u) != 0; }

/// Whether a block of hand-off bytes is all written: none of its bytes is 0.
__device__ __forceinline__ bool whole(uint4 v) {
    return !(has_zero_byte(v.x) | has_zero_byte(v.y) | has_zero_byte(v.z) | has_zero_byte(v.w));
}

__device__ __forceinline__ unsigned word_of(const uint4& v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// 16 pixels `row[x]` for x = xb .. xb + 15 (xb a multiple of 16, rows 16-byte aligned); 0
/// outside 0 .. w-1 or for a missing row: one vector load when the block is whole, else byte by
/// byte (a row's last block, which may end the buffer). The bounded code's loads; inner chunks
/// load with an address select instead (run_chunk).
__device__ __forceinline__ uint4 load_block(const std::uint8_t* row, int xb, int w) {
    if (row == nullptr || xb < 0 || xb >= w) return make_uint4(0, 0, 0, 0);
    if (xb + kChunk <= w) return __ldg(reinterpret_cast<const uint4*>(row + xb));
    unsigned b[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
        if (xb + i < w) b[i / 4] |= unsigned(row[xb + i]) << (8 * (i % 4));
    return make_uint4(b[0], b[1], b[2], b[3]);
}

/// Stores the pixels of block xb that lie in 0 .. w-1 (the bounded code's stores).
__device__ __forceinline__ void store_block(std::uint8_t* row, int xb, int w, uint4 v) {
    if (row == nullptr || xb < 0 || xb >= w) return;
    if (xb + kChunk <= w) {
        *reinterpret_cast<uint4*>(row + xb) = v;
        return;
    }
#pragma unroll
    for (int i = 0; i < kChunk; ++i)
        if (xb + i < w) row[xb + i] = std::uint8_t(word_of(v, i / 4) >> (8 * (i % 4)));
}

/// The state of one row of a lane, carried from chunk to chunk.
struct Row {
    int col;               // offset(v): the row computes column 16k + i - col at step i of chunk k
    int e;                 // e(y, x-1): this row's last error
    int ul, u;             // e(y-1, x-1), e(y-1, x)
    unsigned off, out_off; // input window offset; output block offset within (prev, cur)
    int lag;               // col + off: the row's first aligned block is at -lag
    const std::uint8_t* src;
    std::uint8_t* dst;
    std::uint8_t* hand_out;   // the band's last row below another band, or the carried row; else null
    std::uint8_t* hand_early; // hand_out when it is the next warp's shared row, else null (run_chunk)
    uint4 out_prev;           // outputs of the previous chunk
};

/// What row 0 of a lane has besides: lane 0 reads the band above's hand-off row.
struct Top {
    int k3;                       // 3, or 0 on lane 0 (whose shuffle returns its own last row's e)
    int pend;                     // S = 3: the error shuffled in the previous step, used in this one
    const std::uint8_t* hand_in;  // every lane of a band below another (or of a strip's band 0); else null
    uint4 hand_a, hand_b;         // hand-off blocks k + kHandBlock and the next, for chunk k
    int id;                       // band * channels + channel (PIXFLOW_FS_TRACE's index)
    const std::uint8_t* hand_pre; // hand_in, or a zeroed block of shared memory
    int pre_step;                 // kChunk, or 0 with no hand_in
};

/// The kinds of chunk code (run_chunk): no padding (bounded, or inner chunks with no column left
/// of 0: no test of x < 0), columns left of 0 padded, columns on both sides padded.
enum Pad { kNoPad, kPadLeft, kPadBoth };

/// One chunk: steps 16k .. 16k+15 of the band. `cur` and `next` hold each row's input blocks at
/// 16k - lag and 16k - lag + 16; `cur` is refilled with the block a chunk ahead. kInner: every
/// row exists and its columns, input blocks and output block lie inside the row, so the chunk
/// needs no bounds (most chunks of a large image), except for columns outside the row, with
/// kPadLeft (left of 0: a band's first chunks) or kPadBoth (also at and right of the width: a
/// band's last chunks, where Args::whole_blocks): input blocks wholly outside read Args::zero,
/// output blocks wholly outside go to Args::sink, a block straddling the width (kPadBoth) is read
/// and written whole, and e(y-1, x+1) is left out (k3 = 0; see there). kSharedIn: the band's
/// hand-off row above is in shared memory (a block with a receiver).
template <int R, int S, bool kInner, Pad kPad = kNoPad, bool kSharedIn = false>
__device__ __forceinline__ void run_chunk(const Args& a, Row (&s)[R], Top& top, int k, uint4 (&cur)[R],
                                          const uint4 (&next)[R]) {
    using G = Shape<R, S>;
    static_assert(kInner || kPad == kNoPad, "padded chunks are inner chunks");
    const int w = a.width;
    uint4 in[R];
    int x0[R], xb[R];
    unsigned k3_steps[R]; // kPadBoth: bit i set when step i's column x has 0 <= x < w - 1
#pragma unroll
    for (int r = 0; r < R; ++r) {
        x0[r] = kChunk * k - s[r].col; // this row's first column
        if constexpr (kPad == kPadBoth) {
            const int lo = min(max(-x0[r], 0), kChunk), hi = min(max(w - 1 - x0[r], 0), kChunk);
            k3_steps[r] = ((1u << hi) - 1u) & ~((1u << lo) - 1u);
        }
        xb[r] = kChunk * k - s[r].lag; // aligned block holding x0
        in[r] = cuda::byte_window(cur[r], next[r], s[r].off);
        // Outside the row (padded chunks): zeros. Unpadded inner chunks load this way too, their
        // blocks all inside: with __ldg(row + xb) ptxas loaded into a spare register and copied it
        // into `cur` right after the load, so each chunk waited for it (8192^2 +38%; 2026-11-30).
        if constexpr (kInner) {
            const int xn = xb[r] + 2 * kChunk;
            cur[r] = __ldg(reinterpret_cast<const uint4*>(unsigned(xn) < unsigned(w) ? s[r].src + xn : a.zero));
        } else {
            cur[r] = load_block(s[r].src, xb[r] + 2 * kChunk, w);
        }
        if (s[r].src != nullptr && xb[r] + kPrefetchChunks * kChunk < w)
            prefetch_l2(s[r].src + xb[r] + kPrefetchChunks * kChunk);
    }

    // Lane 0 below another band: e(y-1, x+1) for x = x0 .. x0+15 are hand-off bytes
    // 16k + kHandNeed .. 16k + kHandNeed + 15, in blocks k + kHandBlock and the next. Every lane
    // reads and polls them (the same bytes: one access per warp), so the warp leaves the poll
    // together; only lane 0 uses them.
    const uint4 zero = make_uint4(kZeroError, kZeroError, kZeroError, kZeroError);
    uint4 hand = zero;
    PIXFLOW_FS_TRACE(0);
    if (top.hand_in != nullptr && kChunk * k < w) { // lane 0's first column, x0[0], is 16k
        for (;;) {
            hand = cuda::byte_window(top.hand_a, top.hand_b, G::kHandByte);
            if (__all_sync(kFull, whole(hand))) break;
            top.hand_a = load_hand<kSharedIn>(top.hand_in + kChunk * (k + G::kHandBlock));
            top.hand_b = load_hand<kSharedIn>(top.hand_in + kChunk * (k + G::kHandBlock + 1));
        }
        if (top.k3 != 0) hand = zero;
    }
    // Lanes part at the edges of their rows (load_block): join them before the steps, or the
    // warp runs every step twice, once per part, meeting at each shuffle. Inner chunks have no
    // such branch (and the poll is left together): no __syncwarp there, 1% faster (2026-11-30).
    if constexpr (!kInner) __syncwarp();
    PIXFLOW_FS_TRACE(1);

    unsigned ow[R][4], hw[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            ow[r][j] = 0;
            // The hand-off bytes e + 127 start as 127 and take e << 8 j: one LEA or IMAD a step
            // where OR-ing e + 127 in was two (exact: the bytes end in 1..255, so no carry crosses
            // them in the end, whatever the partial sums borrowed). Byte 15 starts 0 and takes
            // e + 127 at step 15: the early store after step 14 must see it 0 (see below).
            hw[r][j] = j < 3 ? kZeroError : kZeroError >> 8;
        }
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
        if (i == kHandPrefetchStep) { // chunk k+1's two hand-off blocks (see the header)
            top.hand_a = load_hand<kSharedIn>(top.hand_pre + top.pre_step * min(k + G::kHandBlock + 1, a.chunks - 1));
            top.hand_b = load_hand<kSharedIn>(top.hand_pre + top.pre_step * min(k + G::kHandBlock + 2, a.chunks - 1));
        }
        const unsigned sh = 8 * (i % 4);
        // The error of the previous lane's last row that this lane's row 0 needs, e(y-1, x+1):
        // that row's previous error (S = 2), or the one before it (S = 3: shuffled a step ago).
        int ur0;
        if constexpr (S == kSkew) {
            ur0 = __shfl_up_sync(kFull, s[R - 1].e, 1);
        } else {
            ur0 = top.pend;
            top.pend = __shfl_up_sync(kFull, s[R - 1].e, 1);
        }
        const int h = int((word_of(hand, i / 4) >> sh) & 0xffu) - 127; // lane 0: e(y-1, x+1); else 0
        // Rows from the last to the first, so that row r reads row r-1's error of the previous
        // step (its e(y-1, x+1)) before row r-1 replaces it.
#pragma unroll
        for (int r = R - 1; r >= 0; --r) {
            const int x = x0[r] + i;
            const int in16 = int((word_of(in[r], i / 4) >> sh) & 0xffu) << 4;
            const bool inside = kInner || unsigned(x) < unsigned(w);
            // Everything but this row's and the row above's last errors: 16 in + e(y-1,x-1) +
            // 5 e(y-1,x) (+ 3 e(y-1,x+1) on lane 0's row 0), or kOutside off the row.
            const int ur = r == 0 ? ur0 : s[r - 1].e; // e(y-1, x+1)
            // Padded: left of the row (x < 0) the input is 0 and e(y-1, x+1) is left out (k3 = 0),
            // so every error there is 0, as with kOutside (lane 0's row 0 starts at column 16k >=
            // 0; by induction e(y, x-1), e(y-1, x-1) and e(y-1, x) are 0 left of the row). At and
            // right of the width (kPadBoth) the errors are whatever the input beyond the row makes
            // of them (in -126..128, so a hand-off byte is still never 0), and no pixel of the row
            // reads them: x = w - 1 leaves e(y-1, w) out, through k3 and lane 0's hand-off value
            // (so does the bounded code, which may run below such a band), and outputs there go
            // to the sink or to a plane's padding. Every such test is one more instruction a step:
            // kPadLeft, which runs most chunks, has only the one of x < 0 (each added test cost
            // 3-9% at 8192^2, 2026-11-30).
            const int k3_in = r == 0 ? top.k3 : 3;
            const bool in_k3 = kPad == kPadBoth ? ((k3_steps[r] >> i) & 1u) != 0 : !(kPad == kPadLeft && x < 0);
            const int k3 = in_k3 ? k3_in : 0;
            const int hr = kPad == kPadBoth ? (in_k3 ? h : 0) : !kInner && x + 1 >= w ? 0 : h;
            // The weighted sum and 16 in + sum side by side from the two late errors, so that
            // the sign of the sum (the rounding toward zero) waits for no subtraction.
            const int q = r == 0 ? (inside ? s[r].ul + 5 * s[r].u + 3 * hr : kOutside)
                                 : (inside ? s[r].ul + 5 * s[r].u : kOutside);
            const int q16 = inside ? q + in16 : kOutside;
            int sum, t0;
            if (S == 3 && r == 0) { // ur came a step early: the own error enters last
                sum = mad(7, s[r].e, mad(k3, ur, q));
                t0 = mad(7, s[r].e, mad(k3, ur, q16));
            } else {
                sum = mad(k3, ur, mad(7, s[r].e, q));
                t0 = mad(k3, ur, mad(7, s[r].e, q16));
            }
            // 16 in + sum, + 15 when sum < 0: the sum's top 4 bits (|sum| < 2^15), one LEA.HI;
            // (sum >> 31) first was one more instruction on the chain (2026-11-30, 8192^2:
            // 1.2465 -> 1.2433 ms; with S = 3, 1.64 -> 1.21 ms: see the figures above).
            const int t = t0 + int(unsigned(sum) >> 28);
            const bool white = t >= kWhiteT;
            const int v = __vimin_s32_relu(t >> 4, 255); // clamp(in + trunc(sum / 16), 0, 255)
            s[r].e = v - (white ? 255 : 0);
            s[r].ul = s[r].u;
            s[r].u = r == 0 ? (top.k3 == 0 ? h : ur) : ur;
            ow[r][i / 4] |= (white ? 0xffu : 0u) << sh;
            hw[r][i / 4] += i == kChunk - 1 ? unsigned(s[r].e + 127) << sh : unsigned(s[r].e) << sh; // see above
        }
        // The hand-off block to the next warp once more after step 14: its bytes 0..14, all the
        // next band's lane 0 needs of it for its chunk k - 4, are final, byte 15 still 0 (not
        // final; the full block follows after the steps). The next band starts its chunk a step
        // and this chunk's stores earlier: 8192^2 1.284 -> 1.248 ms (2026-11-30). Not through
        // L2 (the receiver copying bytes 0..14 first, then the whole block: +11%).
        if (i == kChunk - 2)
#pragma unroll
            for (int r = 0; r < R; ++r)
                if (s[r].hand_early != nullptr)
                    store_shared(s[r].hand_early + kChunk * k, make_uint4(hw[r][0], hw[r][1], hw[r][2], hw[r][3]));
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
        // The aligned block at xb: the last `off` outputs of the previous chunk, then this one's.
        const uint4 out = make_uint4(ow[r][0], ow[r][1], ow[r][2], ow[r][3]);
        const uint4 ob = cuda::byte_window(s[r].off == 0 ? out : s[r].out_prev, out, s[r].out_off);
        if constexpr (kInner) // outside the row (padded chunks): into the sink
            *reinterpret_cast<uint4*>(unsigned(xb[r]) < unsigned(w) ? s[r].dst + xb[r] : a.sink) = ob;
        else
            store_block(s[r].dst, xb[r], w, ob);
        s[r].out_prev = out;
        // The hand-off row: step 16k + i is byte 16k + i (column 16k + i - col): an aligned block.
        if (s[r].hand_out != nullptr) {
            const uint4 hv = make_uint4(hw[r][0], hw[r][1], hw[r][2], hw[r][3]);
            store_relaxed(s[r].hand_out + kChunk * k, hv);
        }
    }
    if constexpr (!kInner) __syncwarp();
    PIXFLOW_FS_TRACE(2);
}

/// Warp `K` of a block with a receiver (kRecv): copies the hand-off row that the block's first
/// band reads from global memory (the last band of the block before, or a strip's carried row)
/// into shared row `to`, each 16-byte block once it is whole (no byte 0). Lane l polls block
/// j0 + l, 32 blocks at a time.
__device__ __forceinline__ void receive(const std::uint8_t* from, std::uint8_t* to, int blocks, int lane) {
    for (int j0 = 0; j0 < blocks; j0 += kLanes) {
        const int j = j0 + lane;
        bool done = j >= blocks;
        while (!__all_sync(kFull, done)) {
            if (!done) {
                const uint4 v = load_relaxed(from + std::size_t(j) * kChunk);
                if (whole(v)) {
                    store_shared(to + std::size_t(j) * kChunk, v);
                    done = true;
                }
            }
        }
    }
}

/// A block of K bands (and the receiver): its threads, and its hand-off rows in shared memory
/// (between its warps, and the receiver's).
template <int K, bool kRecv> constexpr int kBlockThreads = kLanes*(K + kRecv);
template <int K, bool kRecv> constexpr int kSharedRows = K - 1 + kRecv;

/// kSplit: the inner chunks with no column left of 0 run without the test of x < 0 (see the band
/// loop); launch takes it for several channels.
template <int R, int S, int K, bool kRecv, bool kSplit>
__global__ void __launch_bounds__(kBlockThreads<K, kRecv>) dither_kernel(Args a) {
    using G = Shape<R, S>;
    static_assert(!kRecv || K > 1);
    constexpr int kRows = kSharedRows<K, kRecv>;
    extern __shared__ uint4 shared_hand[];
    __shared__ unsigned block_ticket;
    __shared__ uint4 no_hand;
    const int lane = int(threadIdx.x) % kLanes, warp = int(threadIdx.x) / kLanes;
    if (threadIdx.x == 0) {
        block_ticket = atomicAdd(a.ticket, 1u);
        no_hand = make_uint4(0, 0, 0, 0);
    }
    if constexpr (kRows > 0)
        for (long long i = threadIdx.x; i < kRows * a.hand_stride / kChunk; i += kBlockThreads<K, kRecv>)
            shared_hand[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    const unsigned ticket = block_ticket;
    const int band0 = int(ticket) / a.channels * K, c = int(ticket) % a.channels;
    std::uint8_t* const shared_rows = reinterpret_cast<std::uint8_t*>(shared_hand);
    // The first band's hand-off row in global memory: the block before's, or the carried errors
    const std::uint8_t* const hand_global = band0 > 0 ? a.hand + ((band0 - 1) * a.channels + c) * a.hand_stride
                                            : a.top   ? a.top + c * a.hand_stride
                                                      : nullptr;
    if constexpr (kRecv) {
        if (warp == K) {
            if (band0 < a.bands && hand_global != nullptr)
                receive(hand_global, shared_rows + (K - 1) * a.hand_stride, a.chunks, lane);
            return;
        }
    }
    const int band = band0 + warp;
    if (band >= a.bands) return;

    Row s[R];
    uint4 in_a[R], in_b[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int v = R * lane + r, y = band * G::kRows + v;
        s[r].col = G::offset(v);
        s[r].e = s[r].ul = s[r].u = 0;
        s[r].off = unsigned(-s[r].col) & (kChunk - 1);
        s[r].out_off = (kChunk - s[r].off) & (kChunk - 1);
        s[r].lag = s[r].col + int(s[r].off);
        // channel c's row y: row c * height + y (planes one under the other; c = 0 for one channel)
        const long long row = (long long)c * a.height + y;
        s[r].src = y < a.height ? a.in + row * a.in_pitch : nullptr;
        s[r].dst = y < a.height ? a.out + row * a.out_pitch : nullptr;
        s[r].hand_out = band + 1 < a.bands && v == G::kRows - 1
                            ? (warp + 1 < K ? shared_rows + warp * a.hand_stride // the next warp of the block
                                            : a.hand + (band * a.channels + c) * a.hand_stride)
                        : band + 1 == a.bands && v == a.carry_row && a.last ? a.last + c * a.hand_stride
                                                                            : nullptr;
        s[r].hand_early = band + 1 < a.bands && v == G::kRows - 1 && warp + 1 < K ? s[r].hand_out : nullptr;
        s[r].out_prev = make_uint4(0, 0, 0, 0);
        // Start the row's input on its way before waiting: the first two blocks, and the next
        // ones into L2 (run_chunk keeps kPrefetchChunks ahead from then on).
        in_a[r] = load_block(s[r].src, -s[r].lag, a.width);
        in_b[r] = load_block(s[r].src, -s[r].lag + kChunk, a.width);
        if (s[r].src != nullptr)
#pragma unroll
            for (int j = 2; j < kPrefetchChunks + 2; ++j)
                if (-s[r].lag + j * kChunk >= 0 && -s[r].lag + j * kChunk < a.width)
                    prefetch_l2(s[r].src + (-s[r].lag + j * kChunk));
    }
    Top top;
    top.k3 = lane == 0 ? 0 : 3;
    top.pend = 0;
    top.hand_in = warp > 0                 ? shared_rows + (warp - 1) * a.hand_stride // the block's previous warp
                  : hand_global == nullptr ? nullptr
                  : kRecv                  ? shared_rows + (K - 1) * a.hand_stride // the receiver's copy
                                           : hand_global;
    top.hand_a = top.hand_b = make_uint4(0, 0, 0, 0);
    top.id = band * a.channels + c;
    top.hand_pre = top.hand_in != nullptr ? top.hand_in : reinterpret_cast<const std::uint8_t*>(&no_hand);
    top.pre_step = top.hand_in != nullptr ? kChunk : 0;
    // Wait for the band above: chunk 0's hand-off blocks, and in the first of them e(y-1, 0)
    // (hand-off byte kHandIndex).
    static_assert(G::kHandIndex / kChunk == G::kHandBlock);
    if (top.hand_in != nullptr) {
        for (;;) {
            top.hand_a = load_hand<kRecv>(top.hand_in + G::kHandBlock * kChunk);
            top.hand_b = load_hand<kRecv>(top.hand_in + (G::kHandBlock + 1) * kChunk);
            const unsigned b = (word_of(top.hand_a, G::kHandIndex % kChunk / 4) >> (8 * (G::kHandIndex % 4))) & 0xffu;
            const uint4 h = cuda::byte_window(top.hand_a, top.hand_b, G::kHandByte);
            if (__all_sync(kFull, b != 0 && whole(h))) {
                if (lane == 0) s[0].u = int(b) - 127;
                break;
            }
        }
    }
    __syncwarp();
    const bool full = (band + 1) * G::kRows <= a.height;
    // Chunk k needs no bounds when the band is whole and row 0's last block read, 16k + 32 ..
    // 16k + 47, ends inside the row; that includes the first chunks, whose columns left of 0 are
    // padded (kPadLeft). A whole band's last chunks are padded on the right too where a row's
    // blocks may be read and written whole (kPadBoth): the bounded code takes about 350 cycles
    // more a chunk, and a band's last five chunks lie on the critical path of every band below
    // (each waits for the band above's last chunks), so they count about 1280 times at 8192^2.
    // A loop for each kind of chunk, in order: one chunk a loop pass, the smallest loop body,
    // runs fastest (below), and a loop that switched between two kinds of chunk ran 3-5% slower.
    auto run = [&]<bool kInner, Pad kPad>(int end, int& k) {
        for (; k < end; ++k) {
            run_chunk<R, S, kInner, kPad, kRecv>(a, s, top, k, in_a, in_b);
#pragma unroll
            for (int r = 0; r < R; ++r) { // chunk k+1's first block is the one chunk k read second
                const uint4 t = in_a[r];
                in_a[r] = in_b[r];
                in_b[r] = t;
            }
        }
    };
    int k = 0;
    if (full) {
        const int inner = a.width >= 3 * kChunk ? (a.width - 3 * kChunk) / kChunk + 1 : 0; // 16k + 48 <= w
        // kSplit (several channels): only the chunks with a column left of 0 run the left-padded
        // code, the rest of the inner chunks no test of x < 0 (one ISETP and one SEL a step
        // less). Their bands share SMs and issue slots (8192^2 RGB: about 3 blocks an SM), so the
        // steps are issue-bound: 8192^2 RGB 2.227-2.236 -> 2.126-2.128 ms (2026-11-30). One
        // channel keeps the left-padded code for every inner chunk, in a kernel without the other
        // loop: one band a sub-partition, steps bound by the chain's latency, and there the split
        // was 0.6% slower (1.1721 against 1.1654 ms), and 0.5% even unused, in the same kernel
        // (ptxas schedules the whole kernel at once). See run_chunk for why the split chunks load
        // as the padded code does.
        constexpr int kLeftChunks = (G::kHandIndex + kChunk - 1) / kChunk; // chunks with a column < 0
        run.template operator()<true, kPadLeft>(min(a.chunks, kSplit ? min(inner, kLeftChunks) : inner), k);
        if constexpr (kSplit) run.template operator()<true, kNoPad>(min(a.chunks, inner), k);
        if (a.whole_blocks) run.template operator()<true, kPadBoth>(a.chunks, k);
    }
    run.template operator()<false, kNoPad>(a.chunks, k);
}

/// Bytes of the ticket and the hand-off rows between bands, which the kernel needs zeroed; the
/// rows of the carried state (strips) come after them. Of the first 256 bytes, the ticket takes
/// 0..3, Args::zero reads 128..143 (never written) and Args::sink takes the writes of 192..207.
template <int R, int S> std::size_t zeroed_bytes(const ImageView& in) {
    using G = Shape<R, S>;
    const std::size_t bands = std::size_t(in.height + G::kRows - 1) / G::kRows;
    return 256 + (bands - 1) * std::size_t(in.channels) * std::size_t(G::chunks_for(in.width)) * kChunk;
}

/// Bytes per row of a channel plane (images that run planar: see launch).
inline long long plane_pitch(int width) { return (long long)(width + kChunk - 1) / kChunk * kChunk; }

/// Whether the kernel runs on planes in scratch: several channels, or rows of the input or the
/// output that do not start on 16-byte boundaries (a caller's packed buffer, e.g. 1000 bytes a
/// row; pixflow's own buffers are aligned, and a shape with no data and no pitch counts as such).
inline bool runs_planar(const ImageView& in, const ImageView& out) {
    return in.channels > 1 || !is_aligned(in, 16) || !is_aligned(out, 16);
}

/// The ticket and hand-off rows (zeroed_bytes), the carried rows, and the planes when it runs
/// planar (from a 256-byte boundary).
template <int R, int S> std::size_t planes_offset(const ImageView& in) {
    const std::size_t end =
        zeroed_bytes<R, S>(in) + 2 * std::size_t(in.channels) * std::size_t(Shape<R, S>::chunks_for(in.width)) * kChunk;
    return (end + 255) / 256 * 256;
}

template <int R, int S> std::size_t scratch_bytes(const ImageView& in, const ImageView& out) {
    if (in.width <= 0 || in.height <= 0) return 0;
    return planes_offset<R, S>(in) + (runs_planar(in, out) ? std::size_t(in.channels) * std::size_t(in.height) *
                                                                 std::size_t(plane_pitch(in.width))
                                                           : 0);
}

/// kPadEnds false: a band's last chunks run the bounded code (test/bench/dither_harness.cu times it).
template <int R, int S, int K, bool kRecv = (K > 1), bool kPadEnds = true>
void launch(const ImageView& in, const ImageView& out, void* scratch, void* stream, const std::int16_t* above,
            std::int16_t* last) {
    using G = Shape<R, S>;
    cudaStream_t s = cuda::stream_of(stream);
    if (in.width <= 0) return;
    if (in.height <= 0) { // no rows: the state goes through unchanged
        if (last && last != above) {
            const std::size_t bytes = carry_bytes(in.width, in.channels);
            if (above)
                PIXFLOW_CUDA_CHECK(cudaMemcpyAsync(last, above, bytes, cudaMemcpyDeviceToDevice, s));
            else
                PIXFLOW_CUDA_CHECK(cudaMemsetAsync(last, 0, bytes, s));
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
    a.bands = (in.height + G::kRows - 1) / G::kRows;
    a.chunks = G::chunks_for(in.width);
    a.hand_stride = (long long)a.chunks * kChunk;
    // The kernel reads and writes 16-byte blocks of rows that start on 16-byte boundaries. One
    // aligned channel runs in place. Several channels, or rows not so aligned, run planar: each
    // channel a plane in scratch with 16-byte rows, dithered in place (a row's blocks are written
    // only after the lane has read them), copied in before and back after (8192^2 RGB: 7.8 ms
    // through the byte path that gathered and scattered each channel's bytes, 2.5 ms planar).
    const bool planar = runs_planar(in, out);
    a.whole_blocks = kPadEnds && (planar || a.width % kChunk == 0);
    const std::size_t shared = std::size_t(kSharedRows<K, kRecv>) * std::size_t(a.hand_stride);
    if constexpr (K > 1) {
        // One band per block where the block's rows in shared memory would be too wide.
        if (shared > kMaxShared) {
            launch<R, S, 1, false, kPadEnds>(in, out, scratch, stream, above, last);
            return;
        }
    }
    a.ticket = static_cast<unsigned*>(scratch);
    a.hand = static_cast<std::uint8_t*>(scratch) + 256;
    std::uint8_t* carry_rows = static_cast<std::uint8_t*>(scratch) + zeroed_bytes<R, S>(in); // 2 x channels rows
    a.top = above ? carry_rows : nullptr;
    a.last = last ? carry_rows + std::size_t(a.channels) * std::size_t(a.hand_stride) : nullptr;
    a.carry_row = (in.height - 1) % G::kRows;
    a.carry_offset = G::offset(a.carry_row);
    a.zero = static_cast<const std::uint8_t*>(scratch) + 128; // the ticket takes bytes 0..3
    a.sink = static_cast<std::uint8_t*>(scratch) + 192;
    PIXFLOW_CUDA_CHECK(cudaMemsetAsync(scratch, 0, zeroed_bytes<R, S>(in), s));
    constexpr int carry_threads = 256;
    const dim3 plane_grid(unsigned((a.width + carry_threads - 1) / carry_threads), unsigned(std::min(a.height, 65535)));
    if (planar) {
        std::uint8_t* planes = static_cast<std::uint8_t*>(scratch) + planes_offset<R, S>(in);
        if (a.channels == 1) { // a pitched copy (the runtime's, for any alignment)
            PIXFLOW_CUDA_CHECK(cudaMemcpy2DAsync(planes, std::size_t(plane_pitch(a.width)), a.in,
                                                 std::size_t(a.in_pitch), std::size_t(a.width), std::size_t(a.height),
                                                 cudaMemcpyDeviceToDevice, s));
        } else {
            planes_kernel<true><<<plane_grid, carry_threads, 0, s>>>(a.in, planes, a.in_pitch, plane_pitch(a.width),
                                                                     a.width, a.height, a.channels);
            PIXFLOW_CUDA_CHECK_LAUNCH();
        }
        a.in = a.out = planes;
        a.in_pitch = a.out_pitch = plane_pitch(a.width);
    }
    if (above) {
        const long long n = a.hand_stride * a.channels;
        carry_in_kernel<<<unsigned((n + carry_threads - 1) / carry_threads), carry_threads, 0, s>>>(
            above, carry_rows, a.width, a.channels, a.hand_stride, G::kHandIndex);
        PIXFLOW_CUDA_CHECK_LAUNCH();
    }
    const unsigned blocks = unsigned((a.bands + K - 1) / K) * unsigned(a.channels);
    auto kernel = a.channels > 1 ? dither_kernel<R, S, K, kRecv, true> : dither_kernel<R, S, K, kRecv, false>;
    if (shared > 48 * 1024)
        PIXFLOW_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    kernel<<<blocks, kBlockThreads<K, kRecv>, shared, s>>>(a);
    PIXFLOW_CUDA_CHECK_LAUNCH();
    if (planar && a.channels == 1) {
        PIXFLOW_CUDA_CHECK(cudaMemcpy2DAsync(out.data, std::size_t(out.pitch), a.out, std::size_t(a.out_pitch),
                                             std::size_t(a.width), std::size_t(a.height), cudaMemcpyDeviceToDevice, s));
    } else if (planar) {
        planes_kernel<false><<<plane_grid, carry_threads, 0, s>>>(
            a.out, static_cast<std::uint8_t*>(out.data), out.pitch, a.out_pitch, a.width, a.height, a.channels);
        PIXFLOW_CUDA_CHECK_LAUNCH();
    }
    if (last) { // after the kernel that read `above` (it may be the same memory), on the stream
        const long long n = (long long)a.width * a.channels;
        carry_out_kernel<<<unsigned((n + carry_threads - 1) / carry_threads), carry_threads, 0, s>>>(
            a.last, last, a.width, a.channels, a.hand_stride, a.carry_offset);
        PIXFLOW_CUDA_CHECK_LAUNCH();
    }
}

constexpr int kRowsPerLane = 1; // the operator's shape (see the figures above)
constexpr int kLaneSkewS = 2;
constexpr int kWarpsPerBlock = 2; // 4 until 2026-11-30 (8192^2: 1.2433 against 1.2197 ms)

} // namespace

std::size_t cuda_scratch_bytes(const ImageView& in, const ImageView& out) {
    return scratch_bytes<kRowsPerLane, kLaneSkewS>(in, out);
}

void dither_cuda(const ImageView& in, const ImageView& out, void* scratch, void* stream, const std::int16_t* above,
                 std::int16_t* last) {
    launch<kRowsPerLane, kLaneSkewS, kWarpsPerBlock>(in, out, scratch, stream, above, last);
}

} // namespace pixflow::floyd_steinberg
