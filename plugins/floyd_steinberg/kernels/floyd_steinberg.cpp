// floyd_steinberg.cpp: CPU kernels of floyd_steinberg: the sequential reference and the wavefront.
//
// The wavefront. A work item is a group of kRows consecutive rows of one channel; item i is
// channel i % C, group i / C, so it depends only on item i - C (the group above, same channel),
// and channels run side by side. TBB runs one task per worker; each task claims the next
// unstarted item from an atomic counter and runs it to the end. An item only ever waits on an
// item claimed before it, and a claimed item is being run by a live thread that itself only
// waits on earlier items, so the chain ends at an item that waits on nothing: no deadlock,
// however few workers TBB actually starts (with one, the items simply run in order).
//
//   item i-C  rows y0-6 .. y0-1   ##########################.......   `done` columns of its
//   item i    rows y0   .. y0+5   ####################...............   last row are final;
//                                                      ^ item i's row 0 may compute column x
//                                                        once done >= x + 2
//
// Inside an item one thread runs its kRows rows interleaved, row r trailing row r-1 by two
// columns (step j computes row r at column j - 2r). The scan is latency-bound: each pixel
// waits for its left neighbour's error through a chain of about a dozen dependent integer
// operations, so the rows' independent chains fill the core's pipelines: one thread running
// six rows this way is 1.8x faster than the plain scan. Each chunk of kChunk steps is staged
// first (the rows' inputs, skewed, into one small array: int16, kOutside off the row) so that
// the hot loop addresses everything with one index and tests no edge; then scanned; then its
// outputs are scattered to the rows.
//
// Between items, errors travel through int16 hand-off lines (e(y, x) at line_at(line, x), zero
// outside the row). After each chunk an item publishes, with a release store to its own cache
// line, how many columns of its last row are final; before a chunk its successor
// acquire-loads that counter and spins (pause, then yield) until the columns it will read, up
// to one past its own last, are there. Lines come from a ring; before reusing one, an item
// waits until the line's last reader has finished (in practice it long has).
//
// Measured with `pixflow bench pipelines/bench/floyd_steinberg-8k.toml --backend cpu` on this
// project's 2-core AMD EPYC (Zen 5, KVM), 8192x8192, 1 channel, g++ -O3, median of 5:
//   cpu_schedule = sequential   312 ms
//   cpu_schedule = wavefront    123 ms (2.5x; one worker alone: 176 ms, 1.8x)
#include "floyd_steinberg.hpp"

#include "floyd_steinberg_pixel.hpp"

#include <pixflow/error.hpp>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace pixflow::floyd_steinberg {

void check_views(const ImageView& in, const ImageView& out, bool on_host) {
    if (in.dtype != DType::u8)
        throw UserError(std::string("floyd_steinberg: dtype ") + dtype_name(in.dtype) + " is not u8",
                        PF_ERR_UNSUPPORTED);
    if (in.channels < 1 || in.channels > 4)
        throw UserError("floyd_steinberg: " + std::to_string(in.channels) + " channels (1 to 4 supported)",
                        PF_ERR_UNSUPPORTED);
    PIXFLOW_INTERNAL_CHECK(out.width == in.width && out.height == in.height && out.channels == in.channels &&
                               out.dtype == DType::u8,
                           "floyd_steinberg: output shape or dtype differs from the input's");
    PIXFLOW_INTERNAL_CHECK(in.width >= 0 && in.height >= 0, "floyd_steinberg: negative image size");
    PIXFLOW_INTERNAL_CHECK(in.width <= std::numeric_limits<int>::max() / 8,
                           "floyd_steinberg: rows of " + std::to_string(in.width) + " pixels are too wide");
    PIXFLOW_INTERNAL_CHECK(in.on_host() == on_host && out.on_host() == on_host && in.device == out.device,
                           on_host ? "floyd_steinberg: images must be in host memory"
                                   : "floyd_steinberg: images must be on one CUDA device");
}

// ---- the reference ----------------------------------------------------------------------------

std::size_t sequential_scratch_bytes(const ImageView& in) { return (std::size_t(in.width) + 2) * sizeof(int); }

void dither_sequential(const ImageView& in, const ImageView& out, void* scratch) {
    const int w = in.width, h = in.height, ch = in.channels;
    int* line = static_cast<int*>(scratch); // line[x + 1] = e(y - 1, x); line[0] = line[w + 1] = 0
    for (int c = 0; c < ch; ++c) {
        std::fill(line, line + w + 2, 0);
        for (int y = 0; y < h; ++y) {
            const std::uint8_t* src = in.row<std::uint8_t>(y) + c;
            std::uint8_t* dst = out.row<std::uint8_t>(y) + c;
            int left = 0; // e(y, x - 1)
            for (int x = 0; x < w; ++x) {
                const int sum = 7 * left + line[x] + 5 * line[x + 1] + 3 * line[x + 2];
                int o;
                const int e = diffuse(src[std::size_t(x) * ch], sum, o);
                dst[std::size_t(x) * ch] = std::uint8_t(o);
                line[x] = left; // e(y, x - 1) replaces e(y - 1, x - 1), which no pixel needs any more
                left = e;
            }
            line[w] = left;
        }
    }
}

// ---- the wavefront ----------------------------------------------------------------------------

namespace {

constexpr int kRows = 6;     // rows per item, interleaved in one thread
constexpr int kSkew = 2;     // columns row r+1 trails row r by, inside an item
constexpr int kChunk = 256;  // steps between two progress publications
constexpr int kSpins = 64;   // pause instructions before a waiting thread starts yielding
constexpr int kPad = 16;     // hand-off line entries before column -1 (>= kSkew * (kRows - 1))
constexpr std::int16_t kOutside = -4096; // staged input outside the row: v clamps to 0, e = 0
static_assert(kPad >= kSkew * (kRows - 1));

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

/// Columns of an item's last row that are final; its own cache line (one writer, one reader).
struct alignas(64) Progress {
    std::atomic<int> done;
};

struct Wave {
    ImageView in, out;
    int w, h, ch;
    int items;
    int ring;                  // hand-off lines
    std::size_t line_len;      // int16 per line
    Progress* progress;        // one per item
    std::atomic<int>* next;    // the next item to claim
    std::atomic<bool>* stop;   // set on cancellation: waiting threads give up
    std::int16_t* lines;       // ring lines, zeroed; see line_at
    std::int16_t* zero;        // the line above row 0: all zeros

    /// Entry of e(., x) in a hand-off line: lines hold x = -kPad - 1 .. w, then zeros. Entries
    /// past column w - 1 are never written, so the border e(., w) stays 0.
    std::int16_t* line_at(std::int16_t* line, int x) const { return line + kPad + 1 + x; }
};

struct Layout {
    std::size_t progress, counters, lines, zero, total;
};

Layout layout(const ImageView& in, int workers, int& items, int& ring, std::size_t& line_len) {
    items = in.channels * ((in.height + kRows - 1) / kRows);
    ring = in.channels * (std::max(workers, 1) + 1);
    // row 0 reads up to column w + kSkew * (kRows - 1) + 1 (outputs past w - 1 are discarded)
    line_len = (std::size_t(in.width) + kPad + 2 * kSkew * kRows + 4 + 31) / 32 * 32;
    Layout l;
    l.progress = 0;
    l.counters = l.progress + std::size_t(items) * sizeof(Progress);
    l.lines = l.counters + 64;
    l.zero = l.lines + std::size_t(ring) * line_len * sizeof(std::int16_t);
    l.total = l.zero + line_len * sizeof(std::int16_t);
    return l;
}

/// Waits until item `item` has published at least `need` columns; false if stopped meanwhile.
bool wait_for(const Wave& p, int item, int need) {
    const std::atomic<int>& done = p.progress[item].done;
    for (int spin = 0; done.load(std::memory_order_acquire) < need; ++spin) {
        if (p.stop->load(std::memory_order_relaxed)) return false;
        if (spin < kSpins) cpu_relax();
        else std::this_thread::yield();
    }
    return true;
}

/// The hot loop: n steps of R rows, all operands staged so that one index addresses them.
/// in_s[k][r]: input of row r at step k (kOutside off the row); out_s[k][r]: its output;
/// err_s[k + 3][r]: its error (err_s[0..2] hold the previous chunk's last three steps);
/// above[k + i]: e(row above row 0, x - 1 + i) for row 0's column x = j0 + k;
/// below[k]: where row R-1's error of step k goes (the hand-off line).
template <int R>
inline __attribute__((always_inline)) void scan(int n, const std::int16_t (*in_s)[R],
                                                std::uint8_t (*out_s)[R], std::int16_t (*err_s)[R],
                                                const std::int16_t* above, std::int16_t* below,
                                                int (&left)[R]) {
    int l[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) l[r] = left[r];
    for (int k = 0; k < n; ++k) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            // row r at column x needs e(row r-1, x-1 .. x+1), made at steps k-3 .. k-1
            const int ul = r == 0 ? above[k] : err_s[k][r - 1];
            const int u = r == 0 ? above[k + 1] : err_s[k + 1][r - 1];
            const int ur = r == 0 ? above[k + 2] : err_s[k + 2][r - 1];
            int o;
            const int e = diffuse(in_s[k][r], 7 * l[r] + ul + 5 * u + 3 * ur, o);
            out_s[k][r] = std::uint8_t(o);
            err_s[k + 3][r] = std::int16_t(e);
            l[r] = e;
            if (r == R - 1) below[k] = std::int16_t(e);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) left[r] = l[r];
}

/// Runs item `item`, whose group has R rows (kRows, or fewer for a channel's last group).
template <int R> bool run_item(const Wave& p, int item) {
    const int w = p.w, ch = p.ch;
    const int c = item % ch, y0 = item / ch * kRows;
    const int prev = item - ch; // the group above, same channel; negative: none
    // The ring line was last written by item - ring and last read by its successor.
    if (const int reader = item - p.ring + ch; reader >= 0 && !wait_for(p, reader, w)) return false;
    std::int16_t* above = prev >= 0 ? p.lines + std::size_t(prev % p.ring) * p.line_len : p.zero;
    std::int16_t* below = p.lines + std::size_t(item % p.ring) * p.line_len;

    // Step j: row r at column j - 2r. Columns outside the row compute e = 0 (their staged input
    // clamps to 0), which is exactly the border the rows below must read there.
    alignas(64) std::int16_t in_s[kChunk][R];
    alignas(64) std::uint8_t out_s[kChunk][R];
    alignas(64) std::int16_t err_s[kChunk + 3][R];
    int left[R];
    for (int r = 0; r < R; ++r) left[r] = 0;
    std::fill(&err_s[0][0], &err_s[3][0], std::int16_t(0));

    const std::size_t cs = std::size_t(ch);
    const int lag = kSkew * (R - 1); // the last row's delay
    const int span = w + lag;        // steps
    for (int j0 = 0; j0 < span; j0 += kChunk) {
        const int n = std::min(kChunk, span - j0);
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* src = p.in.row<std::uint8_t>(y0 + r) + c;
            for (int k = 0; k < n; ++k) {
                const int x = j0 + k - kSkew * r;
                in_s[k][r] = x >= 0 && x < w ? std::int16_t(src[std::size_t(x) * cs]) : kOutside;
            }
        }
        // Row 0 computes columns up to j0 + n - 1, reading the row above up to column j0 + n.
        if (prev >= 0 && !wait_for(p, prev, std::min(j0 + n + 1, w))) return false;
        scan<R>(n, in_s, out_s, err_s, p.line_at(above, j0 - 1), p.line_at(below, j0 - lag), left);
        p.progress[item].done.store(std::clamp(j0 + n - lag, 0, w), std::memory_order_release);
        for (int r = 0; r < R; ++r) {
            std::uint8_t* dst = p.out.row<std::uint8_t>(y0 + r) + c;
            const int k0 = std::max(0, kSkew * r - j0), k1 = std::min(n, w + kSkew * r - j0);
            for (int k = k0; k < k1; ++k) dst[std::size_t(j0 + k - kSkew * r) * cs] = out_s[k][r];
        }
        std::copy(&err_s[n][0], &err_s[n + 3][0], &err_s[0][0]);
    }
    return true;
}

template <int R> bool run_rows(const Wave& p, int item, int rows) {
    if constexpr (R > 1)
        if (rows < R) return run_rows<R - 1>(p, item, rows);
    return run_item<R>(p, item);
}

} // namespace

std::size_t wavefront_scratch_bytes(const ImageView& in, int workers) {
    int items, ring;
    std::size_t line_len;
    return layout(in, workers, items, ring, line_len).total;
}

bool dither_wavefront(const ImageView& in, const ImageView& out, int workers, void* scratch,
                      const std::function<bool()>& cancelled) {
    if (in.width == 0 || in.height == 0) return true;
    workers = std::max(workers, 1);
    Wave p;
    const Layout l = layout(in, workers, p.items, p.ring, p.line_len);
    auto* base = static_cast<unsigned char*>(scratch);
    p.in = in;
    p.out = out;
    p.w = in.width;
    p.h = in.height;
    p.ch = in.channels;
    p.progress = reinterpret_cast<Progress*>(base + l.progress);
    for (int i = 0; i < p.items; ++i) new (&p.progress[i]) Progress{0};
    p.next = new (base + l.counters) std::atomic<int>(0);
    p.stop = new (base + l.counters + sizeof(std::atomic<int>)) std::atomic<bool>(false);
    p.lines = reinterpret_cast<std::int16_t*>(base + l.lines);
    p.zero = reinterpret_cast<std::int16_t*>(base + l.zero);
    std::fill(p.lines, p.zero + p.line_len, std::int16_t(0)); // the ring and the zero line

    const int tasks = std::min(workers, p.items);
    tbb::parallel_for(
        0, tasks,
        [&](int) {
            for (;;) {
                if (p.stop->load(std::memory_order_relaxed)) return;
                const int item = p.next->fetch_add(1, std::memory_order_relaxed);
                if (item >= p.items) return;
                if (cancelled && cancelled()) {
                    p.stop->store(true, std::memory_order_relaxed);
                    return;
                }
                const int rows = std::min(kRows, p.h - item / p.ch * kRows);
                if (!run_rows<kRows>(p, item, rows)) return;
            }
        },
        tbb::simple_partitioner());
    return !p.stop->load(std::memory_order_relaxed);
}

} // namespace pixflow::floyd_steinberg
