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
//   item i-C  rows y0-16 .. y0-1  ##########################.......   `done` columns of its
//   item i    rows y0   .. y0+15  ####################...............   last row are final;
//                                                      ^ item i's row 0 may compute column x
//                                                        once done >= x + 2
//
// Inside an item one thread runs its kRows = 16 rows in lockstep, row r trailing row r-1 by two
// columns (step j computes row r at column j - 2r), one row per 16-bit lane of two SSE2 vectors:
// a step is one pass of the per-pixel rule over 16 pixels, and the row above a lane's row is the
// next lane up, so its errors arrive by a one-lane shift. The scan is latency-bound (each step
// waits for the last through about fifteen dependent vector operations), and 16 rows share that
// chain. Each chunk of kChunk steps is staged first (the rows' inputs, skewed, into one small
// array: int16, kOutside off the row) so that the hot loop addresses everything with one index
// and tests no edge; then scanned; then its outputs are scattered to the rows. With one channel
// the staging and the scatter of the steps where all 16 rows are inside the image are 16 x 16
// byte transposes; elsewhere (edges, several channels) one sample at a time.
//
// Between items, errors travel through int16 hand-off lines (e(y, x) at line_at(line, x), zero
// outside the row). After each chunk an item publishes, with a release store to its own cache
// line, how many columns of its last row are final; before a chunk its successor
// acquire-loads that counter and spins (pause, then yield) until the columns it will read, up
// to one past its own last, are there. Lines come from a ring; before reusing one, an item
// waits until the line's last reader has finished (in practice it long has).
//
// Strips (the carried error row, floyd_steinberg.hpp): each channel's first group reads the row
// above it from a line of its own, zeros or the carried errors; each channel's last group, whose
// line no group reads, writes into it the errors of its last image row (row (h - 1) % 16 of the
// group: a lane picked from the vectors, in that group only) instead of its lane 15's, and they
// are copied out once every group has finished.
//
// Measured on this project's 2-core AMD EPYC (Zen 5, KVM), 8192 x 2048 gray noise, one worker,
// CPU time per pixel (so that other work on the machine does not count): six rows interleaved in
// scalar code (the design before) 2.65 ns; 16 rows in SSE2 lanes 1.3 ns; with the transposes
// 0.79 ns. Two workers, 8192 x 8192: docs/performance.md.
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

void dither_sequential(const ImageView& in, const ImageView& out, void* scratch, const std::int16_t* above,
                       std::int16_t* last) {
    const int w = in.width, h = in.height, ch = in.channels;
    int* line = static_cast<int*>(scratch); // line[x + 1] = e(y - 1, x); line[0] = line[w + 1] = 0
    for (int c = 0; c < ch; ++c) {
        std::fill(line, line + w + 2, 0);
        if (above) std::copy(above + std::size_t(c) * w, above + std::size_t(c + 1) * w, line + 1);
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
        if (last) std::copy(line + 1, line + w + 1, last + std::size_t(c) * w); // e(h - 1, x)
    }
}

// ---- the wavefront ----------------------------------------------------------------------------

namespace {

constexpr int kRows = 16;                // rows per item, one per 16-bit SIMD lane, in one thread
constexpr int kSkew = 2;                 // columns row r+1 trails row r by, inside an item
constexpr int kChunk = 256;              // steps between two progress publications
constexpr int kSpins = 64;               // pause instructions before a waiting thread starts yielding
constexpr int kPad = 32;                 // hand-off line entries before column -1 (>= kSkew * (kRows - 1))
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
    int ring;                // hand-off lines
    std::size_t line_len;    // int16 per line
    Progress* progress;      // one per item
    std::atomic<int>* next;  // the next item to claim
    std::atomic<bool>* stop; // set on cancellation: waiting threads give up
    std::int16_t* lines;     // ring lines, zeroed; see line_at
    std::int16_t* top;       // per channel, the line above row 0: zeros, or the carried errors
    bool simd;               // the SSE2 scan and the transposes (CpuLevel::best on x86-64)
    int pick;                // row of a channel's last group whose errors go to its line

    /// Entry of e(., x) in a hand-off line: lines hold x = -kPad - 1 .. w, then zeros. Entries
    /// past column w - 1 are never written, so the border e(., w) stays 0.
    std::int16_t* line_at(std::int16_t* line, int x) const { return line + kPad + 1 + x; }
};

struct Layout {
    std::size_t progress, counters, lines, top, total;
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
    l.top = l.lines + std::size_t(ring) * line_len * sizeof(std::int16_t);
    l.total = l.top + std::size_t(in.channels) * line_len * sizeof(std::int16_t);
    return l;
}

/// Waits until item `item` has published at least `need` columns; false if stopped meanwhile.
bool wait_for(const Wave& p, int item, int need) {
    const std::atomic<int>& done = p.progress[item].done;
    for (int spin = 0; done.load(std::memory_order_acquire) < need; ++spin) {
        if (p.stop->load(std::memory_order_relaxed)) return false;
        if (spin < kSpins)
            cpu_relax();
        else
            std::this_thread::yield();
    }
    return true;
}

#if defined(__x86_64__) || defined(_M_X64)
/// Transposes 16 x 16 bytes: t[i] byte j becomes t[j] byte i (four rounds of pairing rows i and
/// i + 8 byte by byte).
inline void transpose16(__m128i (&t)[16]) {
    for (int round = 0; round < 4; ++round) {
        __m128i u[16];
        for (int i = 0; i < 8; ++i) {
            u[2 * i] = _mm_unpacklo_epi8(t[i], t[i + 8]);
            u[2 * i + 1] = _mm_unpackhi_epi8(t[i], t[i + 8]);
        }
        for (int i = 0; i < 16; ++i) t[i] = u[i];
    }
}
#endif

/// The scan's state between chunks: the errors of the last step and the row-above errors
/// e(r - 1, x + 1) of the last two (the lanes of UL and U of later steps).
struct ScanState {
    alignas(16) std::int16_t e1[kRows] = {}, ur1[kRows] = {}, ur2[kRows] = {};
};

/// The hot loop: n steps of the kRows rows, all operands staged so that one index addresses
/// them. in_s[k][r]: input of row r at step k (kOutside off the row); out_s[k][r]: its output;
/// above[k + i]: e(row above row 0, x - 1 + i) for row 0's column x = j0 + k; below[k]: where the
/// last row's error of step k goes (the hand-off line). Row r at step k needs e(r, x - 1), made
/// at step k - 1, and e(r - 1, x - 1 .. x + 1), made at steps k - 3 .. k - 1; e(r - 1, x + 1) is
/// the error of step k - 1 one row up, then it serves as e(r - 1, x) at step k + 1 and as
/// e(r - 1, x - 1) at k + 2, so only that one is shifted in per step. Row `pick`'s error of step k
/// goes to below[k]: the last row's (kRows - 1) for the next group, or, in a channel's last group
/// when it has fewer rows, its last image row's for the carried state (strips).
#if defined(__x86_64__) || defined(_M_X64)
// SSE2 (every x86-64): 16 rows in two vectors of 8 int16 lanes, rows 0-7 and 8-15; "one row up"
// is a shift by one lane, the top lane taking the row above the item or lane 7 of rows 0-7.
// All values fit in int16: |sum| <= 16 * 128, inputs 0..255 or kOutside.
constexpr bool kHaveSse2 = true;

template <bool kAnyRow>
inline void scan_sse2(int n, const std::int16_t (*in_s)[kRows], std::uint8_t (*out_s)[kRows], const std::int16_t* above,
                      std::int16_t* below, int pick, ScanState& st) {
    auto ld = [](const std::int16_t* p) { return _mm_load_si128(reinterpret_cast<const __m128i*>(p)); };
    __m128i e1[2] = {ld(st.e1), ld(st.e1 + 8)}, ur1[2] = {ld(st.ur1), ld(st.ur1 + 8)},
            ur2[2] = {ld(st.ur2), ld(st.ur2 + 8)};
    const __m128i zero = _mm_setzero_si128(), c15 = _mm_set1_epi16(15), c255 = _mm_set1_epi16(255),
                  c128 = _mm_set1_epi16(128);
    for (int k = 0; k < n; ++k) {
        // e(r - 1, x + 1): the last step's errors one lane down, the row above the item into lane 0
        const __m128i ur[2] = {_mm_insert_epi16(_mm_slli_si128(e1[0], 2), above[k + 2], 0),
                               _mm_or_si128(_mm_slli_si128(e1[1], 2), _mm_srli_si128(e1[0], 14))};
        __m128i o[2];
        for (int h = 0; h < 2; ++h) {
            // 7 e(x-1) + e(r-1, x-1) + 5 e(r-1, x) + 3 e(r-1, x+1)
            const __m128i sum = _mm_add_epi16(_mm_add_epi16(_mm_sub_epi16(_mm_slli_epi16(e1[h], 3), e1[h]),
                                                            _mm_add_epi16(_mm_slli_epi16(ur[h], 1), ur[h])),
                                              _mm_add_epi16(ur2[h], _mm_add_epi16(_mm_slli_epi16(ur1[h], 2), ur1[h])));
            // diffuse(): sum / 16 toward zero, clamp, threshold
            const __m128i q = _mm_srai_epi16(_mm_add_epi16(sum, _mm_and_si128(_mm_srai_epi16(sum, 15), c15)), 4);
            const __m128i in = _mm_load_si128(reinterpret_cast<const __m128i*>(&in_s[k][8 * h]));
            const __m128i v = _mm_min_epi16(_mm_max_epi16(_mm_add_epi16(in, q), zero), c255);
            o[h] = _mm_and_si128(_mm_cmpgt_epi16(v, c128), c255);
            ur2[h] = ur1[h];
            ur1[h] = ur[h];
            e1[h] = _mm_sub_epi16(v, o[h]);
        }
        _mm_store_si128(reinterpret_cast<__m128i*>(out_s[k]), _mm_packus_epi16(o[0], o[1]));
        if constexpr (kAnyRow) {
            alignas(16) std::int16_t e[kRows];
            _mm_store_si128(reinterpret_cast<__m128i*>(e), e1[0]);
            _mm_store_si128(reinterpret_cast<__m128i*>(e + 8), e1[1]);
            below[k] = e[pick];
        } else {
            below[k] = std::int16_t(_mm_extract_epi16(e1[1], 7));
        }
    }
    auto st16 = [](std::int16_t* p, __m128i x) { _mm_store_si128(reinterpret_cast<__m128i*>(p), x); };
    st16(st.e1, e1[0]), st16(st.e1 + 8, e1[1]), st16(st.ur1, ur1[0]), st16(st.ur1 + 8, ur1[1]);
    st16(st.ur2, ur2[0]), st16(st.ur2 + 8, ur2[1]);
}
/// The scan with any row's errors to `below` (a channel's last group, in strips only): kept out
/// of line so that the hot loop of every other group is compiled as before.
[[gnu::noinline]] void scan_sse2_any_row(int n, const std::int16_t (*in_s)[kRows], std::uint8_t (*out_s)[kRows],
                                         const std::int16_t* above, std::int16_t* below, int pick, ScanState& st) {
    scan_sse2<true>(n, in_s, out_s, above, below, pick, st);
}
#else
constexpr bool kHaveSse2 = false;
#endif
// Portable: the same recurrence, lane by lane (the rows' independent chains fill the pipelines);
// the only scan off x86-64, and CpuLevel::portable's on it.
inline void scan_portable(int n, const std::int16_t (*in_s)[kRows], std::uint8_t (*out_s)[kRows],
                          const std::int16_t* above, std::int16_t* below, int pick, ScanState& st) {
    for (int k = 0; k < n; ++k) {
        std::int16_t ur[kRows];
        ur[0] = above[k + 2];
        for (int r = 1; r < kRows; ++r) ur[r] = st.e1[r - 1];
        for (int r = 0; r < kRows; ++r) {
            int o;
            const int e = diffuse(in_s[k][r], 7 * st.e1[r] + st.ur2[r] + 5 * st.ur1[r] + 3 * ur[r], o);
            out_s[k][r] = std::uint8_t(o);
            st.ur2[r] = st.ur1[r];
            st.ur1[r] = ur[r];
            st.e1[r] = std::int16_t(e);
        }
        below[k] = st.e1[pick];
    }
}

/// Runs item `item`, whose group has `rows` rows (kRows, or fewer for a channel's last group:
/// the missing rows are staged as outside the image). No group reads the line of a channel's
/// last group: it receives row p.pick's errors, the carried state (strips).
template <bool kSimd> bool run_item(const Wave& p, int item, int rows) {
    const int w = p.w, ch = p.ch;
    const int c = item % ch, y0 = item / ch * kRows;
    const int prev = item - ch; // the group above, same channel; negative: none
    // The ring line was last written by item - ring and last read by its successor.
    if (const int reader = item - p.ring + ch; reader >= 0 && !wait_for(p, reader, w)) return false;
    std::int16_t* above =
        prev >= 0 ? p.lines + std::size_t(prev % p.ring) * p.line_len : p.top + std::size_t(c) * p.line_len;
    const bool last_group = item + ch >= p.items;
    const int pick = last_group ? p.pick : kRows - 1; // the row whose errors go to `below`
    std::int16_t* below = p.lines + std::size_t(item % p.ring) * p.line_len;

    // Step j: row r at column j - 2r. Columns outside the row compute e = 0 (their staged input
    // clamps to 0), which is exactly the border the rows below must read there.
    alignas(64) std::int16_t in_s[kChunk][kRows];
    alignas(64) std::uint8_t out_s[kChunk][kRows];
    ScanState st;

    const std::size_t cs = std::size_t(ch);
    constexpr int lag = kSkew * (kRows - 1); // the last row's delay
    const int span = w + lag;                // steps
    for (int j0 = 0; j0 < span; j0 += kChunk) {
        const int n = std::min(kChunk, span - j0);
        // Steps a..b-1 (whole groups of 16) have every row inside the image; with one channel and
        // a full group their inputs and outputs move by 16 x 16 byte transposes, the rest one by one.
        int a = 0, b = 0;
#if defined(__x86_64__) || defined(_M_X64)
        if (kSimd && ch == 1 && rows == kRows) {
            a = std::clamp(lag - j0, 0, n);
            b = a + std::max(0, std::min(n, w - j0) - a) / 16 * 16;
            for (int k = a; k < b; k += 16) {
                __m128i t[16];
                for (int r = 0; r < kRows; ++r)
                    t[r] = _mm_loadu_si128(
                        reinterpret_cast<const __m128i*>(p.in.row<std::uint8_t>(y0 + r) + j0 + k - kSkew * r));
                transpose16(t);
                for (int i = 0; i < 16; ++i) {
                    _mm_store_si128(reinterpret_cast<__m128i*>(&in_s[k + i][0]),
                                    _mm_unpacklo_epi8(t[i], _mm_setzero_si128()));
                    _mm_store_si128(reinterpret_cast<__m128i*>(&in_s[k + i][8]),
                                    _mm_unpackhi_epi8(t[i], _mm_setzero_si128()));
                }
            }
        }
#endif
        for (int r = 0; r < kRows; ++r) {
            // columns j0 - 2r .. j0 + n - 1 - 2r; those in 0..w-1 are steps k0..k1-1
            const int k0 = std::clamp(kSkew * r - j0, 0, n), k1 = std::clamp(w + kSkew * r - j0, k0, n);
            if (r >= rows) {
                for (int k = 0; k < n; ++k) in_s[k][r] = kOutside;
                continue;
            }
            const std::uint8_t* src = p.in.row<std::uint8_t>(y0 + r) + c;
            for (int k = 0; k < k0; ++k) in_s[k][r] = kOutside;
            for (int k = k0; k < k1; ++k) {
                if (k == a) k = b; // done above
                if (k >= k1) break;
                in_s[k][r] = std::int16_t(src[std::size_t(j0 + k - kSkew * r) * cs]);
            }
            for (int k = k1; k < n; ++k) in_s[k][r] = kOutside;
        }
        // Row 0 computes columns up to j0 + n - 1, reading the row above up to column j0 + n.
        if (prev >= 0 && !wait_for(p, prev, std::min(j0 + n + 1, w))) return false;
        if (j0 == 0) { // e(row above, x + 1) of the steps before the first, x = -1 and -2: the
                       // row above at column 0, now final, and at column -1 (outside: 0)
            st.ur1[0] = p.line_at(above, 0)[0];
            st.ur2[0] = p.line_at(above, -1)[0];
        }
        // row `pick` is at column j0 + k - kSkew * pick at step k
        const std::int16_t* up = p.line_at(above, j0 - 1);
        std::int16_t* down = p.line_at(below, j0 - kSkew * pick);
#if defined(__x86_64__) || defined(_M_X64)
        if constexpr (kSimd) {
            if (pick == kRows - 1)
                scan_sse2<false>(n, in_s, out_s, up, down, pick, st);
            else
                scan_sse2_any_row(n, in_s, out_s, up, down, pick, st);
        } else {
            scan_portable(n, in_s, out_s, up, down, pick, st);
        }
#else
        scan_portable(n, in_s, out_s, up, down, pick, st);
#endif
        p.progress[item].done.store(std::clamp(j0 + n - lag, 0, w), std::memory_order_release);
#if defined(__x86_64__) || defined(_M_X64)
        for (int k = a; k < b; k += 16) { // (a == b unless kSimd)
            __m128i t[16];
            for (int i = 0; i < 16; ++i) t[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(out_s[k + i]));
            transpose16(t);
            for (int r = 0; r < kRows; ++r)
                _mm_storeu_si128(reinterpret_cast<__m128i*>(p.out.row<std::uint8_t>(y0 + r) + j0 + k - kSkew * r),
                                 t[r]);
        }
#endif
        for (int r = 0; r < rows; ++r) {
            std::uint8_t* dst = p.out.row<std::uint8_t>(y0 + r) + c;
            const int k0 = std::max(0, kSkew * r - j0), k1 = std::min(n, w + kSkew * r - j0);
            for (int k = k0; k < k1; ++k) {
                if (k == a) k = b; // done above
                if (k >= k1) break;
                dst[std::size_t(j0 + k - kSkew * r) * cs] = out_s[k][r];
            }
        }
    }
    return true;
}

} // namespace

std::size_t wavefront_scratch_bytes(const ImageView& in, int workers) {
    int items, ring;
    std::size_t line_len;
    return layout(in, workers, items, ring, line_len).total;
}

bool dither_wavefront(const ImageView& in, const ImageView& out, int workers, void* scratch,
                      const std::function<bool()>& cancelled, const std::int16_t* above, std::int16_t* last,
                      CpuLevel level) {
    const std::size_t carry = std::size_t(in.width) * std::size_t(in.channels); // samples of the state
    if (in.width == 0 || in.height == 0) { // no rows: the state goes through unchanged
        if (last && !above)
            std::fill(last, last + carry, std::int16_t(0));
        else if (last && last != above)
            std::copy(above, above + carry, last);
        return true;
    }
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
    p.top = reinterpret_cast<std::int16_t*>(base + l.top);
    // the ring, and each channel's line above row 0: zeros, or the carried errors
    std::fill(p.lines, p.top + std::size_t(p.ch) * p.line_len, std::int16_t(0));
    if (above)
        for (int c = 0; c < p.ch; ++c)
            std::copy(above + std::size_t(c) * p.w, above + std::size_t(c + 1) * p.w,
                      p.line_at(p.top + std::size_t(c) * p.line_len, 0));
    p.simd = kHaveSse2 && level == CpuLevel::best;
    // a channel's last group has this many rows; its last one is the state (strips)
    p.pick = last ? (p.h - 1) % kRows : kRows - 1;

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
                if (!(p.simd ? run_item<kHaveSse2>(p, item, rows) : run_item<false>(p, item, rows))) return;
            }
        },
        tbb::simple_partitioner());
    if (p.stop->load(std::memory_order_relaxed)) return false;
    if (last) // each channel's last group left its last row's errors in its line, read by no group
        for (int c = 0; c < p.ch; ++c) {
            const int item = p.items - p.ch + c;
            std::int16_t* line = p.lines + std::size_t(item % p.ring) * p.line_len;
            std::copy(p.line_at(line, 0), p.line_at(line, p.w), last + std::size_t(c) * p.w);
        }
    return true;
}

} // namespace pixflow::floyd_steinberg
