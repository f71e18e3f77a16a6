// codecs.hpp: reading and writing image files, with no framework types beyond ImageView.
//
// The format is chosen by the file's extension (case-insensitive):
//
//   extension        built in   dtypes                     channels   notes
//   .pgm .ppm .pnm   yes        u8 (maxval <= 255),        1 (P5),    binary P5/P6, big-endian u16,
//                               u16 (maxval <= 65535)      3 (P6)     samples kept as stored
//   .pfm             yes        f32                        1 (Pf),    rows stored bottom-to-top,
//                                                          3 (PF)     scale sign = endianness
//   .npy             yes        all eight                  1..4       format 1.0/2.0/3.0, C order,
//                                                                     shape (H, W) or (H, W, C)
//   anything else    OpenImageIO (when built with PIXFLOW_WITH_OIIO), native dtype kept
//
// Every failure throws pixflow::Error whose message names the file and the problem. Corrupt or
// truncated files are detected from the header and the file size before any pixel is read, so
// `read_header` (used by shape inference) already refuses them.
#pragma once

#include <pixflow/image.hpp>

#include <string>

namespace pixflow::io {

/// What the header of an image file says.
struct Header {
    int width = 0;
    int height = 0;
    int channels = 0;
    DType dtype = DType::u8;
};

/// Lower-case extension including the dot (".png"), or "" when the name has none.
std::string extension_of(const std::string& path);

/// Reads and checks the header of `path` only (plus the file size for the built-in formats).
Header read_header(const std::string& path);

/// Decodes `path` into `dst` (host memory, rows `dst.pitch` bytes apart). dst's shape and dtype
/// must be those read_header reports; a file that changed since then is an error.
void read_image(const std::string& path, const ImageView& dst);

/// Throws unless the format chosen by path's extension can store `dtype` with `channels`
/// samples per pixel without conversion. The message lists what would be accepted.
void check_can_save(const std::string& path, DType dtype, int channels);

/// Writes `src` (host memory) to exactly `path`, creating or truncating that one file.
void write_image(const std::string& path, const ImageView& src);

} // namespace pixflow::io
