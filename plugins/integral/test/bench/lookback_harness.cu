// lookback_harness.cu: standalone check and timing of integral.cu's integer paths from u8 (issue
// 18), not part of the build. It includes the kernel file itself, so it reaches the kernels in
// its anonymous namespace, and the kernel file as of an earlier commit (made from git by
// scripts/bench/frozen_kernel.sh) to time the look-back before and after in one run:
//   mkdir -p build-harness && scripts/bench/frozen_kernel.sh 2f3444b \
//       plugins/integral/kernels/integral.cu before > build-harness/integral_before.cuh
//   nvcc -O3 -arch=sm_90 -std=c++20 -Isdk/include -Iplugins/integral/kernels -Ibuild-harness \
//       plugins/integral/test/bench/lookback_harness.cu -o harness
//   ./harness          every check, then the timings of 8192 x 8192 x 3 (u32 and u64 outputs)
//   ./harness small    the checks of small sizes only (for compute-sanitizer)
//   ./harness ncu      a few launches of two variants, for ncu
//   ./harness sizes    the timings of smaller images alone (look-back and reduce-then-scan)
//   ./harness bench    the timings alone (every variant's output is still checked); built with
//                      -DPIXFLOW_INTEGRAL_BACKOFF_NS=N for another look-back pause than 512 ns
//   ./harness bench3   the same for 3 and 1 channels only (8192 x 8192)
// Checks: integral_cuda (the dispatch the plugin uses) against a CPU reference byte for byte, on
// random inputs of many sizes (tile edges, tall, wide), 1-4 channels, u32 and u64, aligned and
// unaligned views (the fallback loads), and in bands of rows with the carried row (strips), with
// poisoned outputs and scratch. Timings (u8 -> u32, 1-4 channels): the reduce-then-scan kernels,
// the look-back kernel as of the frozen commit and today's with other look-back depths (the
// column look-back's window of 1-4 predecessors, the z warp's row look-back window of 4), taller
// and shorter tiles, a device-to-device copy of the floor's bytes, and the look-back's tiles
// copied with no scan (tile_copy_kernel: what the tile shape alone reaches), the look-back kernel
// with no tile waiting for another's progress (launch_no_waits: a skeleton), in one run, 3 rounds
// of medians; then per-phase globaltimer stamps of the frozen and today's look-back kernel, with
// a timeline (tile rows done, tiles in flight), thread 0's column look-back and the predecessors
// it read, and (today's) when the inclusive column prefixes' flag went up. (Variants measured
// and dropped: rows per block scan RPS, 2026-11-27; the row sums 1 or 4 rows at once, flag
// windows, columns in slots or behind flags, rows looked back by the compute warps, a fence
// before the flag, 2026-11-29: docs/performance.md.)
#include "../../kernels/integral.cu"
#include "../../../../scripts/bench/cuda_harness.cuh"
#include "integral_before.cuh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

using namespace pixflow;
namespace pi = pixflow::integral;

#define CK(x) PIXFLOW_CUDA_CHECK(x)

static int failures = 0;

template <class U>
std::vector<U> reference(const std::vector<std::uint8_t>& in, int w, int h, int c, const std::vector<U>* above) {
    const std::size_t row = std::size_t(w) * c;
    std::vector<std::uint64_t> acc(row, 0);
    if (above)
        for (std::size_t i = 0; i < row; ++i) acc[i] = (*above)[i];
    std::vector<U> out(row * h);
    std::vector<std::uint64_t> rs(c);
    for (int y = 0; y < h; ++y) {
        std::fill(rs.begin(), rs.end(), 0);
        for (std::size_t i = 0; i < row; ++i) {
            rs[i % c] += in[y * row + i];
            acc[i] += rs[i % c];
            out[y * row + i] = U(acc[i]);
        }
    }
    return out;
}

using harness::Dev;

template <class U>
void check_case(int w, int h, int c, bool aligned, bool strips, std::mt19937& rng, const char* label = "") {
    const std::size_t row = std::size_t(w) * c;
    std::vector<std::uint8_t> hin(row * h);
    for (auto& b : hin) b = std::uint8_t(rng());
    const std::size_t in_pitch = aligned ? (row + 255) / 256 * 256 : row;
    const std::size_t out_pitch = aligned ? (row * sizeof(U) + 255) / 256 * 256 : row * sizeof(U);
    Dev din(in_pitch * h + 64), dout(out_pitch * h + 64);
    std::uint8_t* in_base = static_cast<std::uint8_t*>(din.p) + (aligned ? 0 : 1);
    CK(cudaMemcpy2D(in_base, in_pitch, hin.data(), row, row, h, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout.p, 0xAB, out_pitch * h + 64));
    ImageView in, out;
    in.width = out.width = w;
    in.channels = out.channels = c;
    in.dtype = DType::u8;
    out.dtype = sizeof(U) == 4 ? DType::u32 : DType::u64;
    in.device = out.device = 0;
    in.pitch = std::int64_t(in_pitch);
    out.pitch = std::int64_t(out_pitch);
    Dev carry(row * sizeof(U));
    const std::vector<int> bands = harness::random_bands(h, strips, rng);
    int y = 0;
    for (std::size_t k = 0; k < bands.size(); ++k) {
        ImageView bi = in, bo = out;
        bi.height = bo.height = bands[k];
        bi.data = in_base + std::size_t(y) * in_pitch;
        bo.data = static_cast<char*>(dout.p) + std::size_t(y) * out_pitch;
        const std::size_t sb = pi::integral_cuda_scratch_bytes(bi, bo);
        Dev scratch(sb);
        CK(cudaMemset(scratch.p, 0xCD, sb)); // nothing may rely on zeroed scratch
        pi::integral_cuda(bi, bo, scratch.p, nullptr, k ? carry.p : nullptr, strips ? carry.p : nullptr);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        y += bands[k];
    }
    std::vector<U> got(row * h);
    CK(cudaMemcpy2D(got.data(), row * sizeof(U), dout.p, out_pitch, row * sizeof(U), h, cudaMemcpyDeviceToHost));
    const auto ref = reference<U>(hin, w, h, c, nullptr);
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
        if (ref[i] != got[i] && bad++ == 0) first = i;
    if (strips) { // the last band's carry = the last row
        std::vector<U> last(row);
        CK(cudaMemcpy(last.data(), carry.p, row * sizeof(U), cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < row; ++i)
            if (last[i] != ref[(h - 1) * row + i]) ++bad;
    }
    if (bad) {
        ++failures;
        std::printf(
            "FAIL %s %dx%dx%d u%d aligned=%d strips=%zu: %zu bad, first at y=%zu x=%zu c=%zu got %llu want %llu\n",
            label, w, h, c, int(8 * sizeof(U)), aligned, bands.size(), bad, first / row, (first % row) / c, first % c,
            (unsigned long long)got[first], (unsigned long long)ref[first]);
    }
}

// The look-back kernel's memory traffic alone: the same tiles, block shape, shared memory and
// blocks per SM, one tile a block; the tile goes into shared memory by cp.async as there, then
// each compute warp writes its rows widened to u32 through put_row, with no scan and no
// look-back (out(x, y) = in(x, y)). What a single-pass kernel of this tile shape can reach.
template <int C, int TH, bool Vec = false>
__global__ void __launch_bounds__(pi::lb_threads, 4) tile_copy_kernel(ImageView in, ImageView out) {
    using S = pi::Shape<std::uint8_t, std::uint32_t, C>;
    constexpr int row_bytes = pi::tile_w * C, K = S::K;
    extern __shared__ __align__(16) unsigned char tile_in[];
    __shared__ std::uint32_t stage[pi::warps][S::stage_words];
    const int warp = int(threadIdx.x >> 5);
    const int n_tx = (in.width + pi::tile_w - 1) / pi::tile_w;
    const int tx = int(blockIdx.x % unsigned(n_tx)), ty = int(blockIdx.x / unsigned(n_tx));
    const int x0 = tx * pi::tile_w, y0 = ty * TH, rows = min(TH, in.height - y0);
    const int valid = min(pi::tile_w, in.width - x0) * C;
    const std::size_t seg = std::size_t(x0) * C;
    if (warp == pi::warps) return;
    pi::load_tile<C>(in, tile_in, y0, rows, seg, valid, true);
    pi::bar_sync(pi::bar_compute, pi::block_threads);
    for (int r = 0; r < rows; ++r) {
        std::uint32_t w[C];
        pi::load_words<C>(tile_in + r * row_bytes, w);
        std::uint32_t v[K];
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = (w[k / 4] >> (8 * (k % 4))) & 0xFFu;
        if (Vec) // the look-back kernel's path: 16-byte vectors, streaming stores
            pi::put_row_vec<std::uint32_t, C>(out.row<std::uint32_t>(y0 + r) + seg, stage[warp], v);
        else
            pi::put_row<std::uint8_t, std::uint32_t, C>(out.row<std::uint32_t>(y0 + r) + seg, valid, true, stage[warp],
                                                        v);
    }
}

// The floor's mix of traffic without tiles: each thread reads one 4-byte word of u8 samples and
// writes them as one 16-byte vector of u32 (a warp: 128 contiguous bytes in, 512 out), one
// thread a word, no shared memory. What any u8 -> u32 kernel of this output reaches.
template <bool Streaming>
__global__ void __launch_bounds__(256) widen_kernel(const std::uint32_t* in, uint4* out, std::size_t words) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= words) return;
    const std::uint32_t w = __ldcs(in + i);
    const uint4 v = make_uint4(w & 0xFFu, (w >> 8) & 0xFFu, (w >> 16) & 0xFFu, w >> 24);
    if (Streaming)
        __stcs(out + i, v);
    else
        out[i] = v;
}

// The look-back kernel without the chain's waits (a skeleton; its outputs are wrong): the
// scratch is filled before the launch as if every tile had already published, every row and z
// slot and column flag inclusive and every packed column slot an aggregate, so each look-back
// stops at its first predecessor after one round trip (or a few, where a tile has since
// overwritten its slot with its own aggregate) and never waits for a tile's progress. What the
// kernel costs with its look-backs' latency but without the dependencies between tiles.
__global__ void fill_published(unsigned long long* slots, std::size_t n_pk, std::size_t n_other, unsigned* flags,
                               std::size_t n_flags) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    constexpr pi::Tags t = pi::Tags::of(1); // LookBack's tags unless a launch says otherwise
    if (i < n_pk) slots[i] = (unsigned long long)(t.agg) << pi::pk_status_shift;
    if (i < n_other) slots[n_pk + i] = pi::make_slot(t.inc, 0);
    if (i < n_flags) flags[i] = t.inc;
    if (i < 2) flags[std::ptrdiff_t(i) - 2] = 0; // the ticket (and its padding word)
}

template <class U, int C, int TH, bool Prof = false>
void launch_no_waits(const ImageView& in, const ImageView& out, void* d_scratch, std::uint64_t* d_prof = nullptr) {
    int n_tx = 0;
    const std::size_t n_tiles = pi::lookback_tiles<U, C, TH>(in, n_tx);
    using LB = pi::LookBack<U, C, TH>;
    const LB lb(d_scratch, n_tiles, n_tx);
    constexpr int smem = TH * pi::tile_w * C;
    auto kernel = pi::integral_lookback_kernel<U, C, TH, 2, Prof, pi::lb_window<C>(), pi::lb_col_depth<C>(),
                                               pi::lb_sum_rows<C>()>;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                            int(cudaSharedmemCarveoutMaxShared)));
    const std::size_t n_pk = n_tiles * LB::pk_n, n_other = n_tiles * (LB::row_n + C);
    const std::size_t n = std::max({n_pk, n_other, n_tiles, std::size_t(2)});
    fill_published<<<unsigned((n + 255) / 256), 256>>>(lb.pk, n_pk, n_other, lb.col_flags, n_tiles);
    CK(cudaGetLastError());
    kernel<<<unsigned(n_tiles), pi::lb_threads, smem>>>(in, out, lb, nullptr, true, true, true, d_prof);
    CK(cudaGetLastError());
}

using harness::median;
using harness::time_it;

/// A w x h x c u8 input over `din` and its u32 output over `dout`, rows packed.
void u8_u32_views(const Dev& din, const Dev& dout, int w, int h, int c, ImageView& in, ImageView& out) {
    in = out = ImageView{};
    in.width = out.width = w;
    in.height = out.height = h;
    in.channels = out.channels = c;
    in.dtype = DType::u8;
    out.dtype = DType::u32;
    in.device = out.device = 0;
    in.pitch = std::int64_t(w) * c;
    out.pitch = std::int64_t(w) * c * 4;
    in.data = din.p;
    out.data = dout.p;
}

// Smaller images, where the host's calls around the launch and the look-backs' latency count:
// the frozen look-back launch, today's, and reduce-then-scan (launch_tiles), each timed as the
// operator runs them (events around one call), medians of 200, 3 rounds.
template <int C> void small_images() {
    using U = std::uint32_t;
    for (auto [w, h] : {std::pair{512, 512}, std::pair{1024, 1024}, std::pair{1920, 1080}, std::pair{2048, 2048},
                        std::pair{3840, 2160}, std::pair{4096, 4096}}) {
        const std::size_t row = std::size_t(w) * C;
        Dev din(row * h), dout(row * h * 4);
        CK(cudaMemset(din.p, 7, row * h));
        ImageView in, out;
        u8_u32_views(din, dout, w, h, C, in, out);
        constexpr int D = pi::lb_rows<U, C>();
        int ntx = 0, nty = 0;
        Dev scratch(std::max({pi::before::lookback_scratch_bytes<U, C, D>(in), pi::lookback_scratch_bytes<U, C, D>(in),
                              pi::scratch_elements<U>(in, ntx, nty) * sizeof(U),
                              pi::before::scratch_elements<U>(in, ntx, nty) * sizeof(U),
                              pi::lookback_scratch_bytes<U, C, D / 4>(in)}));
        float b = 1e9f, n = 1e9f, t = 1e9f, tb = 1e9f, n4 = 1e9f, n8 = 1e9f, h2 = 1e9f, h4 = 1e9f;
        float r2[3] = {1e9f, 1e9f, 1e9f}; // tiles of TH, TH/2, TH/4 rows with 2 rows a scan (RPS)
        constexpr int W = pi::lb_window<C>();
        for (int round = 0; round < 3; ++round) {
            b = std::min(
                b,
                time_it([&] { pi::before::launch_lookback<U, C, D, 2>(in, out, scratch.p, nullptr, nullptr); }, 200));
            n = std::min(n, time_it([&] { pi::launch_lookback<U, C, D>(in, out, scratch.p, nullptr, nullptr); }, 200));
            n4 = std::min(
                n4, time_it([&] { pi::launch_lookback<U, C, D, 2, false, W, 4>(in, out, scratch.p, nullptr, nullptr); },
                            200));
            h2 = std::min(
                h2, time_it([&] { pi::launch_lookback<U, C, D / 2>(in, out, scratch.p, nullptr, nullptr); }, 200));
            h4 = std::min(
                h4, time_it([&] { pi::launch_lookback<U, C, D / 4>(in, out, scratch.p, nullptr, nullptr); }, 200));
            n8 = std::min(
                n8, time_it([&] { pi::launch_lookback<U, C, D, 2, false, W, 8>(in, out, scratch.p, nullptr, nullptr); },
                            200));
            r2[0] = std::min(
                r2[0], time_it([&] { pi::launch_lookback<U, C, D, 2>(in, out, scratch.p, nullptr, nullptr); }, 200));
            r2[1] = std::min(
                r2[1],
                time_it([&] { pi::launch_lookback<U, C, D / 2, 2>(in, out, scratch.p, nullptr, nullptr); }, 200));
            r2[2] = std::min(
                r2[2],
                time_it([&] { pi::launch_lookback<U, C, D / 4, 2>(in, out, scratch.p, nullptr, nullptr); }, 200));
            t = std::min(t, time_it(
                                [&] {
                                    pi::launch_tiles<std::uint8_t, U, C>(in, out, static_cast<U*>(scratch.p), nullptr,
                                                                         nullptr);
                                },
                                200));
            tb = std::min(tb, time_it(
                                  [&] {
                                      pi::before::launch_tiles<std::uint8_t, U, C>(in, out, static_cast<U*>(scratch.p),
                                                                                   nullptr, nullptr);
                                  },
                                  200));
        }
        std::printf("%dx%dx%d u8 -> u32, best of 3 medians of 200: look-back before %.2f us, now %.2f us "
                    "(column window 4: %.2f, 8: %.2f; tiles of TH/2 rows %.2f, TH/4 %.2f; with 2 rows a scan: TH "
                    "%.2f, TH/2 %.2f, TH/4 %.2f); reduce-then-scan before %.2f us, now %.2f us\n",
                    w, h, C, 1e3 * b, 1e3 * n, 1e3 * n4, 1e3 * n8, 1e3 * h2, 1e3 * h4, 1e3 * r2[0], 1e3 * r2[1],
                    1e3 * r2[2], 1e3 * tb, 1e3 * t);
    }
}

template <int C = 3> void bench(int reps, std::mt19937& rng, bool ncu_mode = false) {
    using U = std::uint32_t; // u64 outputs go by reduce-then-scan only
    const int w = 8192, h = 8192;
    const std::size_t row = std::size_t(w) * C;
    std::vector<std::uint8_t> hin(row * h);
    for (auto& b : hin) b = std::uint8_t(rng());
    Dev din(row * h), dout(row * h * sizeof(U));
    CK(cudaMemcpy(din.p, hin.data(), row * h, cudaMemcpyHostToDevice));
    ImageView in, out;
    u8_u32_views(din, dout, w, h, C, in, out);
    const std::size_t floor_bytes = row * h * (1 + sizeof(U));
    Dev cpy_a(floor_bytes / 2), cpy_b(floor_bytes / 2);
    CK(cudaMemset(cpy_a.p, 1, floor_bytes / 2));
    int ntx = 0, nty = 0;
    Dev old_scratch(pi::scratch_elements<U>(in, ntx, nty) * sizeof(U));
    constexpr int D = pi::lb_rows<U, C>();
    Dev new_scratch(std::max({pi::before::lookback_scratch_bytes<U, C, D>(in), pi::lookback_scratch_bytes<U, C, D>(in),
                              pi::lookback_scratch_bytes<U, C, D * 3 / 4>(in)}));
    const auto ref = reference<U>(hin, w, h, C, nullptr);
    std::vector<U> got(row * h);
    auto verify = [&](const char* name) {
        CK(cudaMemcpy(got.data(), dout.p, row * h * sizeof(U), cudaMemcpyDeviceToHost));
        if (std::memcmp(got.data(), ref.data(), got.size() * sizeof(U)) != 0) {
            ++failures;
            std::printf("FAIL bench output of %s u%d\n", name, int(8 * sizeof(U)));
        }
        CK(cudaMemset(dout.p, 0xAB, row * h * sizeof(U)));
    };
    std::vector<const char*> names;
    std::vector<std::function<void()>> fns;
    auto add = [&](const char* n, std::function<void()> f) {
        names.push_back(n);
        fns.push_back(std::move(f));
    };
    add("d2d copy of floor bytes",
        [&] { CK(cudaMemcpyAsync(cpy_b.p, cpy_a.p, floor_bytes / 2, cudaMemcpyDeviceToDevice)); });
    add("old reduce-then-scan",
        [&] { pi::launch_tiles<std::uint8_t, U, C>(in, out, static_cast<U*>(old_scratch.p), nullptr, nullptr); });
    add("lookback before (" PIXFLOW_FROZEN_REV ")",
        [&] { pi::before::launch_lookback<U, C, D, 2>(in, out, new_scratch.p, nullptr, nullptr); });
    add("now (default)", [&] { pi::launch_lookback<U, C, D>(in, out, new_scratch.p, nullptr, nullptr); });
    constexpr int W = pi::lb_window<C>();
    constexpr int CD = pi::lb_col_depth<C>();
    // the tiles copied with no scan, through put_row or (Vec) the look-back kernel's put_row_vec
    auto tile_copy = [&](auto vec) {
        constexpr bool Vec = decltype(vec)::value;
        int ntx3 = 0;
        const std::size_t tiles = pi::lookback_tiles<U, C, D>(in, ntx3);
        constexpr int smem = D * pi::tile_w * C;
        CK(cudaFuncSetAttribute(tile_copy_kernel<C, D, Vec>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        CK(cudaFuncSetAttribute(tile_copy_kernel<C, D, Vec>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                int(cudaSharedmemCarveoutMaxShared)));
        tile_copy_kernel<C, D, Vec><<<unsigned(tiles), pi::lb_threads, smem>>>(in, out);
        CK(cudaGetLastError());
    };
    add("tile copy, no scan", [&] { tile_copy(std::false_type{}); });
    add("tile copy, put_row_vec", [&] { tile_copy(std::true_type{}); });
    const std::size_t words = row * h / 4; // 8192 * C bytes a row: whole words
    auto widen = [&](auto streaming) {
        widen_kernel<decltype(streaming)::value><<<unsigned((words + 255) / 256), 256>>>(
            static_cast<const std::uint32_t*>(din.p), static_cast<uint4*>(dout.p), words);
        CK(cudaGetLastError());
    };
    add("widen u8->u32, no tiles", [&] { widen(std::false_type{}); });
    add("widen, streaming stores", [&] { widen(std::true_type{}); });
    // the column look-back's window
    add("column window 1",
        [&] { pi::launch_lookback<U, C, D, 2, false, W, 1>(in, out, new_scratch.p, nullptr, nullptr); });
    add("column window 2",
        [&] { pi::launch_lookback<U, C, D, 2, false, W, 2>(in, out, new_scratch.p, nullptr, nullptr); });
    add("column window 3",
        [&] { pi::launch_lookback<U, C, D, 2, false, W, 3>(in, out, new_scratch.p, nullptr, nullptr); });
    add("column window 4",
        [&] { pi::launch_lookback<U, C, D, 2, false, W, 4>(in, out, new_scratch.p, nullptr, nullptr); });
    // taller tiles: fewer tiles and look-backs, 3 blocks an SM; shorter: more tiles in flight
    add("TH 4/3", [&] { pi::launch_lookback<U, C, D * 4 / 3, 2>(in, out, new_scratch.p, nullptr, nullptr); });
    add("TH 3/4", [&] { pi::launch_lookback<U, C, D * 3 / 4, 2>(in, out, new_scratch.p, nullptr, nullptr); });
    // rows a warp scans at once in the output phase (each scan's stores issued together)
    add("RPS 1", [&] { pi::launch_lookback<U, C, D, 1>(in, out, new_scratch.p, nullptr, nullptr); });
    add("RPS 2", [&] { pi::launch_lookback<U, C, D, 2>(in, out, new_scratch.p, nullptr, nullptr); });
    add("RPS 4", [&] { pi::launch_lookback<U, C, D, 4>(in, out, new_scratch.p, nullptr, nullptr); });
    add("row window 4",
        [&] { pi::launch_lookback<U, C, D, 2, false, 4, CD>(in, out, new_scratch.p, nullptr, nullptr); });
    add("no waits (skeleton)", [&] { launch_no_waits<U, C, D>(in, out, new_scratch.p); });
    if (ncu_mode) { // a few launches of two variants for the profiler
        for (int i = 0; i < 3; ++i) fns[2](), fns[3](), fns[1]();
        CK(cudaDeviceSynchronize());
        return;
    }
    const int nv = int(fns.size());
    std::vector<std::vector<float>> t(nv);
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < nv; ++i) {
            t[i].push_back(time_it(fns[i], reps));
            if (i && std::strncmp(names[i], "tile copy", 9) != 0 && std::strncmp(names[i], "widen", 5) != 0 &&
                std::strncmp(names[i], "no waits", 8) != 0)
                verify(names[i]);
        }
    std::printf(
        "8192x8192x%d u8 -> u%d (default TH %d), floor %.3f GB; medians of %d, 3 rounds; x = / copy's first median:\n",
        C, int(8 * sizeof(U)), D, floor_bytes / 1e9, reps);
    for (int i = 0; i < nv; ++i) {
        std::printf("  %-26s", names[i]);
        for (float x : t[i]) std::printf(" %.4f ms (%.3fx)", x, x / t[0][0]);
        std::printf("   [%.2f TB/s eff]\n", floor_bytes / 1e9 / t[i][0]);
    }
    // Where a tile's time goes: per-phase stamps of the default variant with RPS 2 (and of the
    // frozen kernel before it).
    for (int which = 0; which < 3; ++which) { // before, now, now with no waits (the skeleton)
        int ntx2 = 0;
        const std::size_t n_tiles = pi::lookback_tiles<U, C, D>(in, ntx2);
        const int S = which == 0 ? pi::before::lb_prof_words : pi::lb_prof_words; // words a tile
        Dev prof(n_tiles * pi::lb_prof_words * 8);
        for (int rep = 0; rep < 2; ++rep) {
            CK(cudaMemset(prof.p, 0, n_tiles * pi::lb_prof_words * 8));
            auto* pp = static_cast<std::uint64_t*>(prof.p);
            if (which == 0)
                pi::before::launch_lookback<U, C, D, 2, true>(in, out, new_scratch.p, nullptr, nullptr, pp);
            else if (which == 1)
                pi::launch_lookback<U, C, D, pi::lb_out_rows<C>(), true>(in, out, new_scratch.p, nullptr, nullptr, pp);
            else
                launch_no_waits<U, C, D, true>(in, out, new_scratch.p, pp);
        }
        CK(cudaDeviceSynchronize());
        std::printf("  %s:\n", which == 0 ? "before" : which == 1 ? "now" : "no waits (skeleton; outputs not checked)");
        if (which < 2)
            verify("profiled");
        else
            CK(cudaMemset(dout.p, 0xAB, row * h * sizeof(U)));
        std::vector<std::uint64_t> st(n_tiles * S);
        CK(cudaMemcpy(st.data(), prof.p, st.size() * 8, cudaMemcpyDeviceToHost));
        double sum[6] = {}, life = 0;
        std::uint64_t t0 = ~0ull, t1 = 0;
        for (std::size_t i = 0; i < n_tiles; ++i) {
            for (int k = 1; k < 6; ++k) sum[k] += double(st[i * S + k] - st[i * S + k - 1]);
            life += double(st[i * S + 5] - st[i * S]);
            t0 = std::min(t0, st[i * S]);
            t1 = std::max(t1, st[i * S + 5]);
        }
        std::printf("  profile (TH %d, %zu tiles): mean us load %.2f, sums %.2f, look-backs+scan %.2f, corner %.2f,"
                    " output %.2f, life %.2f; span %.1f us, mean tiles in flight %.0f\n",
                    D, n_tiles, sum[1] / n_tiles / 1e3, sum[2] / n_tiles / 1e3, sum[3] / n_tiles / 1e3,
                    sum[4] / n_tiles / 1e3, sum[5] / n_tiles / 1e3, life / n_tiles / 1e3, (t1 - t0) / 1e3,
                    life / double(t1 - t0));
        { // step 3, tiles below the first row. Before: thread 0's row look-back (stamps 2-6), column
            // look-back (6-7), the rest (7-3). Now: the column look-back (2-7), the rest (7-3), and the
            // inclusive column prefixes' flag after step 3 (3-6: warp 3's release store).
            double row_lb = 0, col_lb = 0, rest = 0, flag = 0, walked = 0;
            std::size_t n = 0, hist[5] = {};
            for (std::size_t i = std::size_t(ntx2); i < n_tiles; ++i) {
                const std::uint64_t* p = &st[i * S];
                if (which == 0)
                    row_lb += double(p[6] - p[2]), col_lb += double(p[7] - p[6]);
                else
                    col_lb += double(p[7] - p[2]), flag += double(std::int64_t(p[6] - p[3]));
                rest += double(p[3] - p[7]);
                walked += double(p[8]);
                hist[p[8] <= 1 ? 0 : p[8] == 2 ? 1 : p[8] <= 4 ? 2 : p[8] <= 8 ? 3 : 4]++;
                ++n;
            }
            std::printf("  step 3, thread 0, tiles below row 0: row look-back %.2f us, column look-back %.2f us, then"
                        " publish + block scan %.2f us; column flag %+.2f us after step 3; column predecessors"
                        " read: mean %.2f (1: %zu, 2: %zu, 3-4: %zu, 5-8: %zu, more: %zu)\n",
                        row_lb / n / 1e3, col_lb / n / 1e3, rest / n / 1e3, flag / n / 1e3, walked / n, hist[0],
                        hist[1], hist[2], hist[3], hist[4]);
            if (S > 9) { // step 4, tiles with tx > 0 and ty > 0: when the z warp's row look-back (after step 2)
                         // and warp 0's corner (after step 3) were done, and the step's end (after step 3)
                double rows_done = 0, corner_done = 0, end4 = 0, row_late = 0;
                std::size_t m = 0;
                for (std::size_t i = std::size_t(ntx2); i < n_tiles; ++i) {
                    if (i % std::size_t(ntx2) == 0) continue;
                    const std::uint64_t* p = &st[i * S];
                    rows_done += double(std::int64_t(p[9] - p[2]));
                    corner_done += double(std::int64_t(p[10] - p[3]));
                    end4 += double(p[4] - p[3]);
                    row_late += std::max(0.0, double(std::int64_t(p[9] - p[3])));
                    ++m;
                }
                std::printf("  step 4, tiles with tx, ty > 0: the z warp's row look-back done %.2f us after step 2"
                            " (%.2f us past step 3, mean of the late part), the corner %.2f us after step 3, step 4"
                            " ends %.2f us after step 3\n",
                            rows_done / m / 1e3, row_late / m / 1e3, corner_done / m / 1e3, end4 / m / 1e3);
            }
        }
        // The timeline: when each tile row was done (its last tile's end), the spacing of those
        // times in the middle of the image, the start (until the first tile ends) and the end
        // (after the last tile started), and the tiles in flight in tenths of the span.
        {
            const std::size_t nrows = n_tiles / std::size_t(ntx2);
            std::vector<double> done(nrows, 0);
            double first_end = 1e300, last_start = 0;
            for (std::size_t i = 0; i < n_tiles; ++i) {
                const double b = double(st[i * S] - t0) / 1e3, e = double(st[i * S + 5] - t0) / 1e3;
                done[i / std::size_t(ntx2)] = std::max(done[i / std::size_t(ntx2)], e);
                first_end = std::min(first_end, e), last_start = std::max(last_start, b);
            }
            const std::size_t a = nrows / 5, z = nrows - nrows / 5;
            std::printf("  timeline: first tile done %.1f us, last tile started %.1f us, end %.1f us; tile rows done"
                        " every %.2f us (rows %zu-%zu); row done at",
                        first_end, last_start, (t1 - t0) / 1e3, (done[z] - done[a]) / double(z - a), a, z);
            for (std::size_t r = 0; r < nrows; r += nrows / 8) std::printf(" %zu:%.0f", r, done[r]);
            std::printf(" %zu:%.0f\n  in flight by tenths:", nrows - 1, done[nrows - 1]);
            const double span = (t1 - t0) / 1e3;
            for (int b = 0; b < 10; ++b) {
                const double lo = span * b / 10, hi = span * (b + 1) / 10;
                double busy = 0;
                for (std::size_t i = 0; i < n_tiles; ++i) {
                    const double s0 = double(st[i * S] - t0) / 1e3, e0 = double(st[i * S + 5] - t0) / 1e3;
                    busy += std::max(0.0, std::min(hi, e0) - std::max(lo, s0));
                }
                std::printf(" %.0f", busy / (hi - lo));
            }
            std::printf("\n");
        }
        // the first 6 tiles of the second-to-last tile row, as a sample
        for (std::size_t i = n_tiles - 2 * ntx2; i < n_tiles - 2 * ntx2 + 6; ++i)
            std::printf("    tile %zu: start %+.1f us, phases %.1f %.1f %.1f %.1f %.1f\n", i, (st[i * S] - t0) / 1e3,
                        (st[i * S + 1] - st[i * S]) / 1e3, (st[i * S + 2] - st[i * S + 1]) / 1e3,
                        (st[i * S + 3] - st[i * S + 2]) / 1e3, (st[i * S + 4] - st[i * S + 3]) / 1e3,
                        (st[i * S + 5] - st[i * S + 4]) / 1e3);
    }
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const bool small = argc > 1 && std::strcmp(argv[1], "small") == 0;
    if (argc > 1 && std::strcmp(argv[1], "ncu") == 0) {
        std::mt19937 r(7);
        bench<3>(1, r, true);
        return 0;
    }
    std::mt19937 rng(12345);
    if (argc > 1 && std::strcmp(argv[1], "bench3") == 0) { // RGB and gray timings alone
        bench<3>(25, rng);
        bench<1>(25, rng);
        return failures ? 1 : 0;
    }
    auto benches = [&] { // 1-4 channels, RGB first
        small_images<3>();
        small_images<1>();
        bench<3>(25, rng);
        bench<1>(25, rng);
        bench<4>(25, rng);
        bench<2>(25, rng);
    };
    if (argc > 1 && std::strcmp(argv[1], "sizes") == 0) { // the smaller images alone
        small_images<3>();
        small_images<1>();
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "bench") == 0) { // the timings alone (each checks its outputs)
        std::printf("look-back pause %u ns\n", pi::lb_backoff_ns);
        benches();
        std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
        return failures ? 1 : 0;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    const std::pair<int, int> sizes[] = {{1, 1},     {2, 2},      {511, 1},    {512, 1},   {513, 1},
                                         {1, 23},    {1, 24},     {1, 25},     {1, 31},    {1, 32},
                                         {1, 33},    {511, 31},   {512, 32},   {513, 33},  {7, 9},
                                         {513, 131}, {1024, 258}, {1023, 769}, {1537, 97}, {3000, 100}};
    int cases = 0;
    for (auto [w, h] : sizes)
        for (int c = 1; c <= 4; ++c) {
            const bool big = std::size_t(w) * h > 200000;
            if (small && big) continue;
            check_case<std::uint32_t>(w, h, c, true, false, rng);
            check_case<std::uint64_t>(w, h, c, true, false, rng);
            check_case<std::uint32_t>(w, h, c, false, false, rng, "unaligned");
            check_case<std::uint32_t>(w, h, c, true, true, rng, "strips");
            check_case<std::uint64_t>(w, h, c, false, true, rng, "strips unaligned");
            cases += 5;
        }
    if (!small) {
        for (int c = 1; c <= 4; ++c) {
            check_case<std::uint32_t>(64, 70000, c, true, false, rng, "tall");
            check_case<std::uint64_t>(70000, 3, c, true, false, rng, "wide");
            check_case<std::uint32_t>(64, 70000, c, true, true, rng, "tall strips");
            cases += 3;
        }
        check_case<std::uint32_t>(8192, 8192, 3, true, false, rng, "8192");
        check_case<std::uint64_t>(4097, 4099, 4, true, true, rng, "4097 strips");
        cases += 2;
    }
    std::printf("correctness: %d cases, %d failures\n", cases, failures);
    if (!small) benches();
    std::printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
