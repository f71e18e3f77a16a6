// compare.hpp: the pure kernel of the compare operator: how far apart two images are.
#pragma once

#include <pixflow/image.hpp>

namespace pixflow::compare {

struct Stats {
    double max_abs_diff = 0;  ///< largest |a - b| over every sample
    double mean_abs_diff = 0; ///< mean of |a - b|
    double mse = 0;           ///< mean of (a - b)^2
    double peak = 0;          ///< the PSNR peak of the dtype: 255, 65535, or 1 for floats
    double psnr = 0;          ///< 10 log10(peak^2 / mse) dB; +inf when the images are equal
};

/// The PSNR peak of a dtype: 255 for u8, 65535 for u16, 1.0 for f32 and f64 (images in [0, 1]).
double psnr_peak(DType d);

/// Throws UserError unless a and b have one size, channel count and dtype: "compare: a is
/// 64x64x1 u8 and b is 32x32x1 u8; they need the same size, channels and dtype".
void check_same_shape(const ImageView& a, const ImageView& b);

/// Compares two host images of one shape (u8, u16, f32 or f64; 1 to 4 channels; any pitches).
/// Integer differences are summed exactly (64-bit integers), float ones in double in a fixed
/// order, so the result does not depend on the thread count. A NaN sample makes every statistic
/// NaN. Throws as check_same_shape when the views differ in shape or dtype.
Stats compare_cpu(const ImageView& a, const ImageView& b);

} // namespace pixflow::compare
