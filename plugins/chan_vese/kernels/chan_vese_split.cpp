// chan_vese_split.cpp: chan_vese over a band of rows, one band per cooperating process (an
// mpirun's ranks: docs/mpi.md, "chan_vese over the ranks"); the scheme is chan_vese_cpu's
// (chan_vese.hpp), row for row the CPU kernel's own code (update_row_cpu), on the band's rows.
//
// phi lives, as in chan_vese_cpu, in two f32 buffers of (width + 2) columns per row, ping-ponged,
// here of (rows + 2) rows: row -1 and row `rows` are the halo, the neighbouring bands' edge rows
// (or, at the image's top and bottom, copies of the band's own edge row: edge replication).
// Per iteration:
//
//   1. halo: the band's first row goes up, its last row down, and the neighbours' come back
//      (Band::exchange_rows: two rows of width + 2 floats each way)
//   2. the update of the band's rows, TBB over fixed blocks of 8 rows, each block's sums (I and
//      the count where phi' > 0, (phi' - phi)^2) in its own slot, added in block order
//   3. the three sums over the processes (Band::sum): every process gets the same bits, so
//      every process computes the same c1, c2 and RMS change, and stops at the same iteration
//
// and once at the start the normalisation's min and max (Band::min, Band::max) and the first
// region sums. The results are those of one process up to the order of the double sums (a
// band's blocks are not the whole image's), which moves c1, c2 in their last bits: the same
// tolerance as CUDA against the CPU (plugins/chan_vese/test, tests/mpi/mpi_image_test.cpp).
#include "chan_vese.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace pixflow::chan_vese {
namespace {

constexpr int block_rows = 8;

/// phi of a band: rows -1 .. rows, each width + 2 floats; element (x, y) at [(y + 1) * stride + x + 1].
struct BandPhi {
    float* base;
    std::size_t stride;
    float* row(int y) const { return base + std::size_t(y + 1) * stride + 1; }
    float* padded(int y) const { return row(y) - 1; } ///< the row with its two edge columns
};

template <class T>
bool run(const ImageView& in, const ImageView& mask, const ImageView& phi_out, const Settings& s, const Band& band,
         void* scratch, Outcome& outcome, const std::function<bool()>& cancelled) {
    const int w = in.width, h = in.height, y0 = band.row0, nb = band.row1 - band.row0;
    const std::size_t stride = std::size_t(w) + 2, plane = stride * std::size_t(nb + 2);
    BandPhi buf[2] = {{static_cast<float*>(scratch), stride}, {static_cast<float*>(scratch) + plane, stride}};
    const int blocks = (nb + block_rows - 1) / block_rows;
    std::vector<std::array<double, 3>> parts(static_cast<std::size_t>(blocks));
    auto for_blocks = [&](auto&& body) { // body(band row, sums)
        tbb::parallel_for(tbb::blocked_range<int>(0, blocks, 1), [&](const tbb::blocked_range<int>& r) {
            for (int b = r.begin(); b < r.end(); ++b) {
                std::array<double, 3> sums{0, 0, 0};
                for (int i = b * block_rows; i < std::min(nb, (b + 1) * block_rows); ++i) body(i, sums);
                parts[std::size_t(b)] = sums;
            }
        });
    };
    auto total = [&] { // this band's sums in block order, then over the bands
        std::array<double, 3> t{0, 0, 0};
        for (const auto& p : parts)
            for (int k = 0; k < 3; ++k) t[std::size_t(k)] += p[std::size_t(k)];
        band.sum(t.data(), 3);
        return t;
    };

    // Normalisation over the whole image: the band's min and max, then over the bands (NaNs are
    // skipped, as chan_vese_cpu does).
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int i = 0; i < nb; ++i) {
        const T* row = in.row<T>(y0 + i);
        for (int x = 0; x < w; ++x) {
            const double v = double(row[x]);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    band.min(&lo, 1);
    band.max(&hi, 1);
    const double range = hi - lo;
    const float scale = float(range != 0 ? 1.0 / range : 1.0);
    const float offset = float(-lo) * scale;

    // phi0 of the band's rows, and the sums for the first c1, c2 ([2]: the sum of I)
    std::vector<double> sin_x;
    const double sf = 3.141592653589793 / 5.0;
    if (s.init == Init::checkerboard) {
        sin_x.resize(std::size_t(w));
        for (int x = 0; x < w; ++x) sin_x[std::size_t(x)] = std::sin(double(x) * sf);
    }
    for_blocks([&](int i, std::array<double, 3>& sums) {
        const int y = y0 + i;
        float* row = buf[0].row(i);
        const T* img = in.row<T>(y);
        const double sin_y = std::sin(double(y) * sf);
        for (int x = 0; x < w; ++x) {
            const double p0 =
                s.init == Init::checkerboard ? sin_y * sin_x[std::size_t(x)] : initial_phi(s.init, x, y, w, h);
            row[x] = float(p0);
            const float v = float(img[x]) * scale + offset;
            if (row[x] > 0.0f) {
                sums[0] += v;
                sums[1] += 1;
            }
            sums[2] += v;
        }
        row[-1] = row[0];
        row[w] = row[w - 1];
    });
    std::array<double, 3> t = total();
    const double n = double(w) * double(h), sum_all = t[2];

    int it = 0, cur = 0;
    double rms = 0;
    const std::size_t row_bytes = stride * sizeof(float);
    do {
        if (cancelled && cancelled()) return false;
        const float m1 = float(t[1] > 0 ? t[0] / t[1] : 0.0);
        const float m2 = float(n - t[1] > 0 ? (sum_all - t[0]) / (n - t[1]) : 0.0);
        const BandPhi src = buf[cur], dst = buf[cur ^ 1];
        // 1. the halo: the neighbours' edge rows; at the image's edges, the band's own (replication)
        std::memcpy(src.padded(-1), src.padded(0), row_bytes);
        std::memcpy(src.padded(nb), src.padded(nb - 1), row_bytes);
        band.exchange_rows(src.padded(0), src.padded(nb - 1), src.padded(-1), src.padded(nb), row_bytes);
        // 2. the update
        for_blocks([&](int i, std::array<double, 3>& sums) {
            double row[3] = {0, 0, 0};
            update_row_cpu<T>(src.row(i - 1), src.row(i), src.row(i + 1), in.row<T>(y0 + i), dst.row(i), w, s, scale,
                              offset, m1, m2, row);
            for (int j = 0; j < 3; ++j) sums[std::size_t(j)] += row[j];
        });
        // 3. the sums over the bands
        t = total();
        rms = std::sqrt(t[2] / n);
        cur ^= 1;
        ++it;
    } while (rms > s.tol && it < s.max_iter);

    const BandPhi fin = buf[cur];
    tbb::parallel_for(tbb::blocked_range<int>(0, nb), [&](const tbb::blocked_range<int>& r) {
        for (int i = r.begin(); i < r.end(); ++i) {
            const float* src = fin.row(i);
            float* po = phi_out.row<float>(y0 + i);
            std::uint8_t* mo = mask.row<std::uint8_t>(y0 + i);
            for (int x = 0; x < w; ++x) {
                po[x] = src[x];
                mo[x] = src[x] > 0.0f ? 255 : 0;
            }
        }
    });
    outcome.iterations = it;
    outcome.rms_change = rms;
    return true;
}

} // namespace

std::size_t split_scratch_bytes(int width, int rows) {
    return 2 * (std::size_t(width) + 2) * (std::size_t(rows) + 2) * sizeof(float);
}

bool chan_vese_split(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s,
                     const Band& band, void* scratch, Outcome& outcome, const std::function<bool()>& cancelled) {
    if (in.width <= 0 || band.row1 <= band.row0) return true;
    return visit_dtype<DType::u8, DType::u16, DType::f32>("chan_vese", in.dtype, [&](auto tag) {
        return run<decltype(tag)>(in, mask, phi, s, band, scratch, outcome, cancelled);
    });
}

} // namespace pixflow::chan_vese
