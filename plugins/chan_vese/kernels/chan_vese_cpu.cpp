// chan_vese_cpu.cpp: CPU kernel of chan_vese.
//
// phi lives in two f32 buffers of (width + 2) columns per row, ping-ponged: columns -1 and width
// hold copies of columns 0 and width - 1 (edge replication), so the inner loop over a row is the
// same for every pixel. One fused pass per iteration: TBB over fixed blocks of rows; for each
// row, one vectorised loop reads the rows y-1, y, y+1 of phi and the input row (converted and
// normalised on the fly), writes phi', and adds up, in double, the sums the next iteration
// needs: I and the pixel count where phi' > 0 (for c1, c2) and (phi' - phi)^2 (the RMS change).
// Each block writes its sums to its own slot and the slots are added in block order, so a
// result does not depend on the thread count or the schedule. No full-size temporary besides
// the two phi buffers. The hot loop is compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA)
// and the baseline, picked at load time (GCC target_clones); see CMakeLists.txt for the flags
// that let it vectorise at full width.
//
// Measured: 1000x1000 u8 (pipelines/bench/chan_vese-1k.toml, tol = 0, 500 iterations) in
// 468-477 ms, 0.94 ms per iteration, on the 2 cores of the shared AMD EPYC build machine (load
// average about 2.3 from other work; x86-64-v4 clone). In a standalone harness one core runs
// update_row over 1000x1000 in 0.9 ms (0.64 ms without the sums).
#include "chan_vese.hpp"

#include <pixflow/dispatch.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define CHAN_VESE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CHAN_VESE_CLONES
#endif

namespace pixflow::chan_vese {
namespace {

/// Rows per block of the fused pass: fixed, so the order of the additions is fixed too.
constexpr int block_rows = 8;

/// What one block of rows adds up.
struct Sums {
    double sum_in = 0;   // sum of I where phi > 0
    double count_in = 0; // pixels where phi > 0 (exact in double)
    double sq = 0;       // sum of (phi' - phi)^2, or of I over all pixels in the first pass
};

/// Per-iteration constants of the update, in f32.
struct Coeffs {
    float mu, dt, lambda1, lambda2, c1, c2, scale, offset;
};

/// phi buffer of height rows, each width + 2 floats: element (x, y) is at [y * stride + x + 1].
struct Phi {
    float* base;
    std::size_t stride;
    float* row(int y) const { return base + std::size_t(y) * stride + 1; }
};

/// One row of the update: phi' of row y from rows up, mid, down of phi; adds the row's sums.
template <class T>
CHAN_VESE_CLONES void update_row(const float* __restrict up, const float* __restrict mid, const float* __restrict down,
                                 const T* __restrict img, float* __restrict out, int width, Coeffs k, Sums& sums) {
    const float eta = 1e-16f;
    const float mu_dt = k.mu * k.dt;
    double sum_in = 0, count_in = 0, sq = 0;
    // Auto-vectorised (reductions allowed by -fassociative-math, see CMakeLists.txt) rather than
    // `omp simd reduction`: under target_clones GCC gives the latter the baseline's 16-byte
    // vectors in every clone, 3.5x slower here.
    for (int x = 0; x < width; ++x) {
        const float p = mid[x], l = mid[x - 1], r = mid[x + 1], u = up[x], d = down[x];
        const float xp = r - p, xn = p - l, x0 = (r - l) * 0.5f;
        const float yp = d - p, yn = p - u, y0 = (d - u) * 0.5f;
        const float c1 = 1.0f / std::sqrt(eta + xp * xp + y0 * y0);
        const float c2 = 1.0f / std::sqrt(eta + xn * xn + y0 * y0);
        const float c3 = 1.0f / std::sqrt(eta + x0 * x0 + yp * yp);
        const float c4 = 1.0f / std::sqrt(eta + x0 * x0 + yn * yn);
        const float curv = r * c1 + l * c2 + d * c3 + u * c4;
        const float v = float(img[x]) * k.scale + k.offset;
        const float a = v - k.c1, b = v - k.c2;
        const float data = k.lambda2 * (b * b) - k.lambda1 * (a * a);
        const float q = 1.0f + p * p; // 1 / delta
        const float np = (p * q + k.dt * (k.mu * curv + data)) / (q + mu_dt * (c1 + c2 + c3 + c4));
        out[x] = np;
        const float diff = np - p;
        sq += double(diff * diff);
        const bool inside = np > 0.0f;
        sum_in += inside ? double(v) : 0.0;
        count_in += inside ? 1.0 : 0.0;
    }
    out[-1] = out[0];
    out[width] = out[width - 1];
    sums.sum_in += sum_in;
    sums.count_in += count_in;
    sums.sq += sq;
}

struct MinMax {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
};

/// Smallest and largest sample (NaNs are skipped, as CUDA's fminf/fmaxf do).
template <class T> MinMax min_max(const ImageView& in) {
    return tbb::parallel_reduce(
        tbb::blocked_range<int>(0, in.height), MinMax{},
        [&](const tbb::blocked_range<int>& r, MinMax m) {
            for (int y = r.begin(); y < r.end(); ++y) {
                const T* row = in.row<T>(y);
                for (int x = 0; x < in.width; ++x) {
                    const double v = double(row[x]);
                    m.lo = v < m.lo ? v : m.lo;
                    m.hi = v > m.hi ? v : m.hi;
                }
            }
            return m;
        },
        [](MinMax a, const MinMax& b) {
            a.lo = std::min(a.lo, b.lo);
            a.hi = std::max(a.hi, b.hi);
            return a;
        });
}

/// Adds the blocks' sums in block order.
Sums total(const std::vector<Sums>& parts) {
    Sums t;
    for (const Sums& s : parts) {
        t.sum_in += s.sum_in;
        t.count_in += s.count_in;
        t.sq += s.sq;
    }
    return t;
}

template <class T>
bool run(const ImageView& in, const ImageView& mask, const ImageView& phi_out, const Settings& s, void* scratch,
         Outcome& outcome, const std::function<bool()>& cancelled) {
    const int w = in.width, h = in.height;
    const std::size_t stride = std::size_t(w) + 2;
    Phi buf[2] = {{static_cast<float*>(scratch), stride},
                  {static_cast<float*>(scratch) + stride * std::size_t(h), stride}};
    const int blocks = (h + block_rows - 1) / block_rows;
    std::vector<Sums> parts(static_cast<std::size_t>(blocks));
    auto for_blocks = [&](auto&& body) {
        tbb::parallel_for(tbb::blocked_range<int>(0, blocks, 1), [&](const tbb::blocked_range<int>& r) {
            for (int b = r.begin(); b < r.end(); ++b) {
                Sums sums;
                for (int y = b * block_rows; y < std::min(h, (b + 1) * block_rows); ++y) body(y, sums);
                parts[std::size_t(b)] = sums;
            }
        });
    };

    // Normalisation: I = (v - min) / (max - min), or v - min when max == min.
    const MinMax mm = min_max<T>(in);
    const double range = mm.hi - mm.lo;
    const float scale = float(range != 0 ? 1.0 / range : 1.0);
    const float offset = float(-mm.lo) * scale;

    // phi0, and the sums for the first c1, c2 (sq holds the sum of I over all pixels).
    std::vector<double> sin_x, sin_y;
    if (s.init == Init::checkerboard) {
        sin_x.resize(std::size_t(w));
        sin_y.resize(std::size_t(h));
        // initial_phi's two factors, tabulated: the same product, W + H sines instead of 2 W H
        const double sf = 3.141592653589793 / 5.0;
        for (int x = 0; x < w; ++x) sin_x[std::size_t(x)] = std::sin(double(x) * sf);
        for (int y = 0; y < h; ++y) sin_y[std::size_t(y)] = std::sin(double(y) * sf);
    }
    for_blocks([&](int y, Sums& sums) {
        float* row = buf[0].row(y);
        const T* img = in.row<T>(y);
        for (int x = 0; x < w; ++x) {
            const double p0 = s.init == Init::checkerboard ? sin_y[std::size_t(y)] * sin_x[std::size_t(x)]
                                                           : initial_phi(s.init, x, y, w, h);
            row[x] = float(p0);
            const float v = float(img[x]) * scale + offset;
            if (row[x] > 0.0f) {
                sums.sum_in += v;
                sums.count_in += 1;
            }
            sums.sq += v;
        }
        row[-1] = row[0];
        row[w] = row[w - 1];
    });
    Sums t = total(parts);
    const double n = double(w) * double(h), sum_all = t.sq;

    Coeffs k{float(s.mu), float(s.dt), float(s.lambda1), float(s.lambda2), 0, 0, scale, offset};
    int it = 0, cur = 0;
    double rms = 0;
    do {
        if (cancelled && cancelled()) return false;
        k.c1 = float(t.count_in > 0 ? t.sum_in / t.count_in : 0.0);
        k.c2 = float(n - t.count_in > 0 ? (sum_all - t.sum_in) / (n - t.count_in) : 0.0);
        const Phi src = buf[cur], dst = buf[cur ^ 1];
        for_blocks([&](int y, Sums& sums) {
            update_row<T>(src.row(y > 0 ? y - 1 : 0), src.row(y), src.row(y + 1 < h ? y + 1 : h - 1), in.row<T>(y),
                          dst.row(y), w, k, sums);
        });
        t = total(parts);
        rms = std::sqrt(t.sq / n);
        cur ^= 1;
        ++it;
    } while (rms > s.tol && it < s.max_iter);

    // Outputs: phi and mask = phi > 0.
    const Phi fin = buf[cur];
    tbb::parallel_for(tbb::blocked_range<int>(0, h), [&](const tbb::blocked_range<int>& r) {
        for (int y = r.begin(); y < r.end(); ++y) {
            const float* src = fin.row(y);
            float* po = phi_out.row<float>(y);
            std::uint8_t* mo = mask.row<std::uint8_t>(y);
#pragma omp simd
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

template <class T>
void update_row_cpu(const float* up, const float* mid, const float* down, const T* img, float* out, int width,
                    const Settings& s, float scale, float offset, float m1, float m2, double (&sums)[3]) {
    const Coeffs k{float(s.mu), float(s.dt), float(s.lambda1), float(s.lambda2), m1, m2, scale, offset};
    Sums row;
    update_row<T>(up, mid, down, img, out, width, k, row);
    sums[0] += row.sum_in;
    sums[1] += row.count_in;
    sums[2] += row.sq;
}
template void update_row_cpu<std::uint8_t>(const float*, const float*, const float*, const std::uint8_t*, float*, int,
                                           const Settings&, float, float, float, float, double (&)[3]);
template void update_row_cpu<std::uint16_t>(const float*, const float*, const float*, const std::uint16_t*, float*, int,
                                            const Settings&, float, float, float, float, double (&)[3]);
template void update_row_cpu<float>(const float*, const float*, const float*, const float*, float*, int,
                                    const Settings&, float, float, float, float, double (&)[3]);

std::size_t cpu_scratch_bytes(int width, int height) {
    return 2 * (std::size_t(width) + 2) * std::size_t(height) * sizeof(float);
}

bool chan_vese_cpu(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s, void* scratch,
                   Outcome& outcome, const std::function<bool()>& cancelled) {
    if (in.width <= 0 || in.height <= 0) return true;
    return visit_dtype<DType::u8, DType::u16, DType::f32>("chan_vese", in.dtype, [&](auto tag) {
        return run<decltype(tag)>(in, mask, phi, s, scratch, outcome, cancelled);
    });
}

} // namespace pixflow::chan_vese
