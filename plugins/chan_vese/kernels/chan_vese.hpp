// chan_vese.hpp: Chan-Vese level-set segmentation, the scheme of scikit-image's
// segmentation.chan_vese (after Getreuer, IPOL 2012), on the CPU and on CUDA.
//
// Conventions: x runs along a row (columns), y down the rows; phi is padded by edge replication.
// The image I is one channel (u8, u16 or f32) normalised to [0, 1]: the minimum is subtracted,
// then the result is divided by its maximum when that is not 0. One iteration, eta = 1e-16:
//
//     phi_x+ = phi(x+1) - phi(x)    phi_x- = phi(x) - phi(x-1)    phi_x0 = (phi(x+1) - phi(x-1)) / 2
//     phi_y+, phi_y-, phi_y0 the same along y
//     C1 = 1/sqrt(eta + phi_x+^2 + phi_y0^2)   C2 = 1/sqrt(eta + phi_x-^2 + phi_y0^2)
//     C3 = 1/sqrt(eta + phi_x0^2 + phi_y+^2)   C4 = 1/sqrt(eta + phi_x0^2 + phi_y-^2)
//     K  = phi(x+1) C1 + phi(x-1) C2 + phi(y+1) C3 + phi(y-1) C4
//     c1 = mean of I where phi > 0, c2 = mean of I where phi <= 0 (0 over no pixels)
//     delta = 1 / (1 + phi^2)
//     phi' = (phi + dt delta (mu K - lambda1 (I - c1)^2 + lambda2 (I - c2)^2))
//            / (1 + mu dt delta (C1 + C2 + C3 + C4))
//
// c1 and c2 are those of the phi the iteration starts from. The kernels multiply numerator and
// denominator by 1 + phi^2 (one division fewer, the same value up to rounding):
//     phi' = (phi (1 + phi^2) + dt (mu K + data)) / (1 + phi^2 + mu dt (C1 + C2 + C3 + C4))
// The loop stops once sqrt(mean((phi' - phi)^2)) <= tol, or after max_iter iterations (at least
// one runs). Both backends keep phi in f32 and every sum (for c1, c2 and the RMS change) in
// double; they agree to rounding, not bit for bit (see chan_vese.cu).
//
// Initial level sets, W x H image, in double, then rounded to f32 (scikit-image's shapes):
//     checkerboard  sin(pi/5 * y) * sin(pi/5 * x)
//     disk          (r - d) / r,        r = min(cx, cy),     d = distance to (cx, cy)
//     small_disk    (r - d) / (3 r),    r = min(cx, cy) / 2
// with cx = (W - 1) / 2 and cy = (H - 1) / 2 rounded down. Where scikit-image divides by zero
// (an image under 3 pixels along a side: min(cx, cy) = 0), min(cx, cy) is taken as 1.
#pragma once

#include <pixflow/image.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <functional>

namespace pixflow::chan_vese {

/// The initial level set (see above); the choices of the operator's `init` parameter, in order.
enum class Init { checkerboard, disk, small_disk };
constexpr std::array<const char*, 3> pixflow_choices(Init) { return {"checkerboard", "disk", "small_disk"}; }

/// The parameters of the scheme, with their defaults: also the operator's parameter struct.
struct Settings {
    double mu = 0.25, lambda1 = 1.0, lambda2 = 1.0, tol = 1e-3, dt = 0.5;
    int max_iter = 500;
    Init init = Init::checkerboard;
};

/// What the loop did: iterations run and the RMS change of phi in the last one.
struct Outcome {
    int iterations = 0;
    double rms_change = 0.0;
};

/// phi0 at pixel (x, y) of a width x height image, in double (see the top of this file).
PIXFLOW_HD inline double initial_phi(Init init, int x, int y, int width, int height) {
    if (init == Init::checkerboard) {
        const double sf = 3.141592653589793 / 5.0; // numpy: np.pi / square_size
        return sin(double(y) * sf) * sin(double(x) * sf);
    }
    const int cx = (width - 1) / 2, cy = (height - 1) / 2;
    const double r0 = double(cx < cy ? cx : cy) > 0 ? double(cx < cy ? cx : cy) : 1.0;
    const double dx = double(x - cx), dy = double(y - cy);
    const double d = sqrt(dx * dx + dy * dy);
    if (init == Init::disk) return (r0 - d) / r0;
    const double r = r0 / 2.0;
    return (r - d) / (r * 3.0);
}

/// Host scratch for chan_vese_cpu, in bytes.
std::size_t cpu_scratch_bytes(int width, int height);

/// in: one channel, u8, u16 or f32, host memory. mask: u8, same size (0 or 255: phi > 0).
/// phi: f32, same size. `scratch` holds cpu_scratch_bytes() bytes of host memory.
/// `cancelled` is polled once per iteration; returns false when it said so (outputs undefined).
bool chan_vese_cpu(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s, void* scratch,
                   Outcome& outcome, const std::function<bool()>& cancelled);

/// One row of the CPU kernel's update, for chan_vese_split (the same vectorised code as
/// chan_vese_cpu's own rows): phi' of a row into out[0, width) from the rows up, mid and down of
/// phi (each readable at [-1, width]: edges replicated), and out[-1], out[width] set to its
/// edges; m1 and m2 are the iteration's region means. Adds to sums, in this order: I where
/// phi' > 0, the count of those pixels, (phi' - phi)^2. T: u8, u16 or f32.
template <class T>
void update_row_cpu(const float* up, const float* mid, const float* down, const T* img, float* out, int width,
                    const Settings& s, float scale, float offset, float m1, float m2, double (&sums)[3]);

/// A run split over cooperating processes (chan_vese_split.cpp): this one computes the rows
/// [row0, row1) of the whole image (never empty); the callbacks reach the others, each
/// collective (every process makes the same calls in the same order).
struct Band {
    int row0 = 0, row1 = 0;
    /// values[0 .. n) reduced over the processes, the same bits on each (sums in a fixed order).
    std::function<void(double*values, int n)> sum, min, max;
    /// Sends `first` to the band above and `last` to the band below (`bytes` each); fills
    /// `above` and `below` with theirs, and leaves them as they are at the image's top and bottom.
    std::function<void(const void* first, const void* last, void* above, void* below, std::size_t bytes)> exchange_rows;
};

/// Host scratch for chan_vese_split over a band of `rows` rows, in bytes.
std::size_t split_scratch_bytes(int width, int rows);

/// chan_vese_cpu on the band's rows only: `in` is the whole image, of which rows [row0, row1)
/// are read; rows [row0, row1) of mask and phi are written. Per iteration: the band's halo rows
/// of phi from its neighbours (exchange_rows), and one sum over the processes of the region
/// sums and the RMS change (3 values); the normalisation's min and max once at the start. Every
/// process ends with the same outcome. The segmentation is the single process's to rounding
/// (the sums are added in another order), as CUDA's is.
bool chan_vese_split(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s,
                     const Band& band, void* scratch, Outcome& outcome, const std::function<bool()>& cancelled);

#ifdef PIXFLOW_WITH_CUDA
/// Device scratch for chan_vese_cuda, in bytes (including what the loop's reductions need).
std::size_t cuda_scratch_bytes(const ImageView& in);

/// The same on device memory: the whole loop in one persistent cooperative kernel on `stream`.
/// Reads the outcome (two numbers) back at the end, which synchronises `stream` once per call.
/// Needs mu * dt >= 0 (UserError otherwise; the operator takes both in [0, 1e6]): the kernel's
/// division relies on a denominator of at least 1.
void chan_vese_cuda(const ImageView& in, const ImageView& mask, const ImageView& phi, const Settings& s, void* scratch,
                    void* stream, Outcome& outcome);
#endif

} // namespace pixflow::chan_vese
