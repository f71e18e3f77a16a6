// grey_palette.hpp: whether a BMP or PNG file stores indices into an all-grey palette, read from
// its header. OpenImageIO expands every palette to RGB, except a BMP's of 8 bits (made grey
// when its palette is): so a 1-bit BMP loaded as 3 channels while a 1-bit PNG loaded as 1.
// pixflow's rule (docs/guarantees.md): an image whose pixels are grey loads as 1 channel.
#pragma once

#include <string>

namespace pixflow::io::detail {

/// True when `path` is a BMP of 1, 2, 4 or 8 bits per pixel, or a PNG of colour type 3
/// (palette) without transparency, whose palette entries are all grey (R = G = B). Reads the
/// header and palette only; false for any other file, and for one it cannot parse (the decoder
/// then judges the file).
bool has_grey_palette(const std::string& path);

} // namespace pixflow::io::detail
