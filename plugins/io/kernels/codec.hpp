// codec.hpp: one row of the io plugin's codec table. Each format file declares its row: the
// extensions it handles, what each can store (dtypes and channels), and its header reader,
// reader and writer. codecs.cpp holds the table and does the rest (choosing a codec by
// extension, save's check and its messages), so adding a format is one file and one row:
//
//   kernels/tga.cpp:    const Codec tga_codec{"TGA", kTgaFormats, true, &tga_header, &tga_read, &tga_write};
//   (a format that can be read or written by bands of rows also sets read_rows / write_rows)
//   kernels/codec.hpp:  extern const Codec tga_codec;
//   kernels/codecs.cpp: constexpr const Codec* k_codecs[] = {..., &tga_codec};
//
// The format files depend on file.hpp only; codecs.cpp depends on the rows only.
#pragma once

#include "file.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace pixflow::io::detail {

/// What a format stores under some extensions: save accepts an image exactly when its dtype and
/// channel count are in these masks (no conversion is ever made).
struct Format {
    const char* exts;       ///< space-separated, each with its dot: ".tif .tiff"
    std::uint32_t dtypes;   ///< PF_DTYPE_BIT mask
    std::uint32_t channels; ///< PF_CHANNELS_BIT mask
    bool suggested = true;  ///< named in "or save as ..." hints (.pnm is not: .pgm and .ppm are)
};

/// A row of the codec table.
struct Codec {
    const char* name;                ///< in messages: "OpenImageIO's (.png, .jpg...)"
    std::span<const Format> formats; ///< the extensions it handles, with what each stores
    /// The fallback: it also reads every extension no other row lists, and writes those for
    /// which writes() is true, storing what `other` says (OpenImageIO). At most one row.
    bool fallback;
    /// The header; codecs.cpp checks the pixel limit on what it returns. A codec that could
    /// allocate or decode before returning (OpenImageIO) checks options.max_pixels itself first.
    Header (*read_header)(const std::string& path, const ReadOptions& options);
    /// Reads the file into dst (host memory, the shape and dtype of `want`, within the pixel
    /// limit: codecs.cpp checked it); fails when the header no longer says `want`.
    void (*read)(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions& options);
    void (*write)(const std::string& path, const ImageView& src);
    /// Optional: false for a file of a listed extension that this codec does not read, which
    /// the fallback then gets (Netpbm P1..P4). Without a fallback the codec reads it anyway, and
    /// its reader says what is wrong.
    bool (*reads)(const std::string& path) = nullptr;
    /// The fallback only: whether it writes a file of this name, and what an extension it does
    /// not list stores.
    bool (*writes)(const std::string& path) = nullptr;
    Format other{"", 0, 0};
    /// Streaming (issue 16), both optional; a codec without them reads or writes whole images.
    /// read_rows reads rows [row0, row0 + dst.height) of the file, whose whole image is `want`
    /// (the pixel limit checked, as for read), having checked that the file holds every row its
    /// header claims (a truncated file is an error, never rows of zeros). write_rows writes src
    /// as rows [row0, row0 + src.height) of an image of `height` rows; the bands come in order,
    /// and row0 == 0 creates the file.
    void (*read_rows)(const std::string& path, const Header& want, int row0, const ImageView& dst,
                      const ReadOptions& options) = nullptr;
    void (*write_rows)(const std::string& path, int height, int row0, const ImageView& src) = nullptr;
    /// Optional, with read_rows: whether this file is read by rows (OpenImageIO: TIFF, and PNG
    /// unless interlaced).
    bool (*reads_rows)(const std::string& path) = nullptr;
    /// Optional, with write_rows: whether this file is written by rows (OpenImageIO: TIFF, PNG).
    bool (*writes_rows)(const std::string& path) = nullptr;
    /// Optional, with reads_rows: why this file is read whole when reads_rows says so, where the
    /// format has a reason of its own ("" otherwise: OpenImageIO's interlaced PNG).
    std::string (*whole_why)(const std::string& path) = nullptr;
    /// Optional: called by save's check (check_can_save, at validation) after the format accepted
    /// the image; fails when this codec cannot write `path` at all (OpenImageIO's module missing),
    /// so that the run stops before computing what it could not save.
    void (*check_writer)(const std::string& path) = nullptr;
};

// The rows, one per format file; codecs.cpp orders them into the table.
extern const Codec pnm_codec; // netpbm.cpp: binary PGM/PPM
extern const Codec pfm_codec; // netpbm.cpp: PFM
extern const Codec npy_codec; // npy.cpp
#ifdef PIXFLOW_IO_PNG
extern const Codec png_codec; // png.cpp: libpng
#endif
#ifdef PIXFLOW_IO_JPEG
extern const Codec jpeg_codec; // jpeg.cpp: libjpeg(-turbo)
#endif
#ifdef PIXFLOW_WITH_OIIO
/// Every other format. In the plugin: oiio_lazy.cpp's row, which loads the module
/// pixflow_io_oiio.so (oiio_module.h) on first use and forwards to the module's row,
/// oiio_direct_codec (oiio.cpp, compiled with PIXFLOW_IO_OIIO_MODULE). Without
/// PIXFLOW_IO_OIIO_MODULE, oiio.cpp defines this row itself (OpenImageIO linked in).
extern const Codec oiio_codec;
extern const Codec oiio_direct_codec;
#endif

} // namespace pixflow::io::detail
