// synth.hpp: deterministic test images.
//
// Values span the dtype's natural range: 0..max for integers (0..max also for signed ones),
// [0, 1] for floats. Every sample is a pure function of (pattern, seed, x, y, c, size), so the
// result is the same whatever the number of threads.
//   noise     uniform, from a splitmix64 hash of (seed, x, y, c); integers use the hash's top bits
//   gradient  channel 0: left-to-right ramp, 1: top-to-bottom, 2: diagonal, 3: right-to-left
//   checker   32-pixel squares, 0 and max, the top-left square dark
//   shapes    8 filled discs and rectangles placed from the seed, each with its own intensity per
//             channel, on a dark background (0.08), plus noise of +-0.03
#pragma once

#include <pixflow/image.hpp>

#include <array>
#include <cstdint>

namespace pixflow::basic {

enum class Pattern { noise, gradient, checker, shapes };
/// The patterns' names, in the enum's order: the choices of synth's `pattern` parameter.
constexpr std::array<const char*, 4> pixflow_choices(Pattern) { return {"noise", "gradient", "checker", "shapes"}; }

/// Fills `out` (host memory, any dtype, 1..4 channels), in parallel over rows, with rows row0 ..
/// row0 + out.height - 1 of the image of `height` rows (0: out.height), so that any band of rows
/// can be made on its own, bit for bit as in the whole image.
void synth(const ImageView& out, Pattern pattern, std::uint64_t seed, int row0 = 0, int height = 0);

/// splitmix64's finaliser: a bijective 64-bit mix.
constexpr std::uint64_t mix64(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// Hash of a sample's coordinates under a seed.
constexpr std::uint64_t sample_hash(std::uint64_t seed, std::uint32_t x, std::uint32_t y, std::uint32_t c) {
    return mix64(mix64(mix64(seed) ^ (std::uint64_t(y) << 32 | x)) ^ c);
}

} // namespace pixflow::basic
