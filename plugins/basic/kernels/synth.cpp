// synth.cpp: the synth patterns, CPU only (sources are cheap next to what follows them).
#include "synth.hpp"

#include "sample_math.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace pixflow::basic {
namespace {

constexpr int checker_size = 32;
constexpr int n_shapes = 8;
constexpr double background = 0.08;
constexpr double shape_noise = 0.03;

/// A uniform double in [0, 1) from 53 bits of a hash.
double unit(std::uint64_t h) { return double(h >> 11) * 0x1.0p-53; }

/// Noise straight from the hash bits, so integer noise covers every value of the type.
template <class T> T noise_sample(std::uint64_t h) {
    if constexpr (std::is_same_v<T, float>)
        return float(h >> 40) * 0x1.0p-24f;
    else if constexpr (std::is_same_v<T, double>)
        return unit(h);
    else if constexpr (std::is_signed_v<T>)
        return T(h >> (65 - 8 * sizeof(T))); // 0..max
    else
        return T(h >> (64 - 8 * sizeof(T)));
}

/// A value in [0, 1] as T over the type's natural range.
template <class T> T from_unit(double v) {
    if constexpr (is_float_sample<T>)
        return T(v);
    else
        return to_sample<T>(v * double(SampleTraits<T>::highest));
}

struct Shape {
    bool disc;
    double cx, cy, rx, ry; // centre and half-extents (rx == ry for discs), in pixels
    std::array<double, 4> level;
};

std::array<Shape, n_shapes> make_shapes(std::uint64_t seed, int w, int h) {
    std::array<Shape, n_shapes> shapes{};
    const double m = std::min(w, h);
    for (int k = 0; k < n_shapes; ++k) {
        auto r = [&](int j) {
            return unit(sample_hash(seed ^ 0x5EEDull, std::uint32_t(k), 0xFFFFFFFFu, std::uint32_t(j)));
        };
        Shape& s = shapes[std::size_t(k)];
        s.disc = k % 2 == 0;
        s.cx = (0.1 + 0.8 * r(0)) * w;
        s.cy = (0.1 + 0.8 * r(1)) * h;
        s.rx = (0.05 + 0.12 * r(2)) * m;
        s.ry = s.disc ? s.rx : (0.05 + 0.12 * r(3)) * m;
        for (int c = 0; c < 4; ++c) s.level[std::size_t(c)] = 0.35 + 0.65 * r(4 + c);
    }
    return shapes;
}

template <class T> void fill(const ImageView& out, Pattern pattern, std::uint64_t seed, int row0, int h) {
    const int w = out.width, nc = out.channels;
    const auto shapes = make_shapes(seed, w, h);
    const double gx = w > 1 ? 1.0 / (w - 1) : 0.0;
    const double gy = h > 1 ? 1.0 / (h - 1) : 0.0;
    const double gd = w + h > 2 ? 1.0 / (w + h - 2) : 0.0;

    tbb::parallel_for(tbb::blocked_range<int>(0, out.height), [&](const tbb::blocked_range<int>& range) {
        for (int row_in_band = range.begin(); row_in_band < range.end(); ++row_in_band) {
            T* row = out.row<T>(row_in_band);
            const int y = row0 + row_in_band; // the row of the whole image
            for (int x = 0; x < w; ++x) {
                T* px = row + std::size_t(x) * nc;
                switch (pattern) {
                case Pattern::noise:
                    for (int c = 0; c < nc; ++c)
                        px[c] =
                            noise_sample<T>(sample_hash(seed, std::uint32_t(x), std::uint32_t(y), std::uint32_t(c)));
                    break;
                case Pattern::gradient:
                    for (int c = 0; c < nc; ++c) {
                        double v = c == 0 ? x * gx : c == 1 ? y * gy : c == 2 ? (x + y) * gd : 1.0 - x * gx;
                        px[c] = from_unit<T>(v);
                    }
                    break;
                case Pattern::checker: {
                    double v = ((x / checker_size + y / checker_size) & 1) ? 1.0 : 0.0;
                    for (int c = 0; c < nc; ++c) px[c] = from_unit<T>(v);
                    break;
                }
                case Pattern::shapes: {
                    const Shape* top = nullptr; // the last shape drawn covering this pixel
                    const double fx = x + 0.5, fy = y + 0.5;
                    for (const Shape& s : shapes) {
                        const double dx = (fx - s.cx) / s.rx, dy = (fy - s.cy) / s.ry;
                        if (s.disc ? dx * dx + dy * dy <= 1.0 : std::fabs(dx) <= 1.0 && std::fabs(dy) <= 1.0) top = &s;
                    }
                    for (int c = 0; c < nc; ++c) {
                        double n = unit(sample_hash(seed, std::uint32_t(x), std::uint32_t(y), std::uint32_t(c)));
                        double v = (top ? top->level[std::size_t(c)] : background) + shape_noise * (2.0 * n - 1.0);
                        px[c] = from_unit<T>(std::clamp(v, 0.0, 1.0));
                    }
                    break;
                }
                }
            }
        }
    });
}

} // namespace

void synth(const ImageView& out, Pattern pattern, std::uint64_t seed, int row0, int height) {
    const int h = height > 0 ? height : out.height;
    visit_dtype(out.dtype, [&](auto tag) { fill<decltype(tag)>(out, pattern, seed, row0, h); });
}

} // namespace pixflow::basic
