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
//   .png             libpng     u8, u16 (palettes and      1..4       as OpenImageIO read them: palette
//                               1/2/4-bit gray: u8)                   -> RGB(A), or 1 channel when its
//                                                                     entries are grey; tRNS -> alpha
//   .jpg .jpeg ...   libjpeg    u8                         1 (gray),  CMYK/YCCK files go to
//                                                          3 (RGB)    OpenImageIO (it makes them RGB)
//   anything else    OpenImageIO (when built with PIXFLOW_WITH_OIIO), native dtype kept; through
//                    the module pixflow_io_oiio.so, loaded on the first such file (oiio_lazy.cpp)
// (.png and .jpg are built in when CMake finds libpng and libjpeg: PIXFLOW_IO_PNG, PIXFLOW_IO_JPEG;
// else they go through OpenImageIO too.)
//
// Every failure throws pixflow::Error whose one-line message names the file and the problem.
// Two checks guard reading, both from the header, before any pixel memory exists:
//  - the pixel limit (ReadOptions::max_pixels): width x height above it is refused;
//  - the built-in formats' size check: a file shorter than its header implies is refused, with
//    the bytes expected and present.
// So `read_header` (used by shape inference, i.e. `pixflow validate`) already refuses both.
// What only a full decode finds (a truncated or corrupt JPEG, TIFF or PNG stream) is found by
// read_image, and ReadOptions::fail_on says which of the decoder's complaints (libpng's,
// libjpeg's, OpenImageIO's) fail the read.
#pragma once

#include <pixflow/image.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace pixflow::io {

/// The default pixel limit: 2^28 = 16384 x 16384 pixels (1 GiB as u8 RGBA, 8 GiB as f64 RGBA).
/// Larger than any camera's image (the largest sensors give about 2 x 10^8 pixels), and close to
/// sharp's default (16383^2); Pillow warns above 89,478,485 pixels and refuses above twice that.
constexpr std::int64_t default_max_pixels = std::int64_t(1) << 28;

/// Which complaints of a decoder (OpenImageIO's: libjpeg, libtiff, libpng...) fail a read, after
/// libvips' fail_on. The built-in formats have no warnings: whatever they find is an error.
enum class FailOn {
    warning, ///< any complaint: a warning (libjpeg's "Corrupt JPEG data", "Premature end of
             ///< JPEG file", libtiff's missing strips) or an error
    error,   ///< only an error, where the decoder gives up (a truncated PNG); warnings are
             ///< reported through ReadOptions::warn and the image is used as decoded
    none,    ///< nothing: errors and warnings are reported through warn, and the image is used
             ///< as far as it was decoded
    // Under error and none, what the decoder did not produce is 0 (the image is cleared first),
    // or what it filled in (libjpeg: grey).
};

/// How to read a file.
struct ReadOptions {
    /// Largest width x height accepted, checked from the header; 0: no limit.
    std::int64_t max_pixels = default_max_pixels;
    FailOn fail_on = FailOn::warning;
    /// Receives, as one line naming the file, each decoder complaint that fail_on lets pass;
    /// null: they are dropped.
    std::function<void(const std::string&)> warn;
};

/// What the header of an image file says.
struct Header {
    int width = 0;
    int height = 0;
    int channels = 0;
    DType dtype = DType::u8;
};

/// Lower-case extension including the dot (".png"), or "" when the name has none.
std::string extension_of(const std::string& path);

/// Reads and checks the header of `path` only (plus the file size for the built-in formats),
/// refusing an image of more than options.max_pixels pixels. With fail_on = warning, a complaint
/// of the decoder while it reads the header is an error too.
Header read_header(const std::string& path, const ReadOptions& options = {});

/// Decodes `path` into `dst` (host memory, rows `dst.pitch` bytes apart). dst's shape and dtype
/// must be those read_header reports; a file that changed since then is an error. The pixel
/// limit is checked again first, then the decoder's complaints are judged by options.fail_on.
void read_image(const std::string& path, const ImageView& dst, const ReadOptions& options = {});

/// Throws unless the format chosen by path's extension can store `dtype` with `channels`
/// samples per pixel without conversion. The message lists what would be accepted.
void check_can_save(const std::string& path, DType dtype, int channels);

/// Writes `src` (host memory) to exactly `path`, creating or truncating that one file.
void write_image(const std::string& path, const ImageView& src);

// ---- by rows (issue 16: images larger than memory) ----------------------------------------------
//
// .npy, binary PGM/PPM and PFM are read and written by bands of full-width rows; PNG (libpng) is
// read by bands unless interlaced (through a decoder kept open between bands) and written by
// bands (through an encoder kept open between bands); through OpenImageIO, TIFF is read and
// written by bands (and PNG as libpng's, in a build without libpng);
// other formats only whole. A band read checks the header against the whole image (and the file's size against
// the header: a file shorter than its rows is an error naming the bytes, never rows of zeros);
// bytes after the last row are ignored, as by NumPy and Netpbm readers (a Netpbm file may hold
// several images), the same whole or by rows. Bands are written in order from the top; the first
// creates the file.

/// "" when `path`'s format is read by rows; else why not ("reads .png files whole").
std::string whole_read_reason(const std::string& path);
/// "" when `path`'s format is written by rows; else why not.
std::string whole_write_reason(const std::string& path);

/// Reads rows [row0, row0 + dst.height) of `path`, whose whole image is `height` rows of dst's
/// width, channels and dtype, into dst (host memory).
void read_rows(const std::string& path, int height, int row0, const ImageView& dst, const ReadOptions& options = {});

/// Writes `src` as rows [row0, row0 + src.height) of an image of `height` rows; row0 == 0
/// creates or truncates the file, later bands follow it in order.
void write_rows(const std::string& path, int height, int row0, const ImageView& src);

} // namespace pixflow::io
