// jpeg.cpp: JPEG through libjpeg(-turbo)'s libjpeg API (compiled when CMake finds it:
// PIXFLOW_IO_JPEG), so that a .jpg never loads OpenImageIO's module and its ~260 libraries.
//
// Read as OpenImageIO 2.4 reads it, so that a file loads to the same bytes (plugins/io/test
// checks it against the module): 8-bit gray as 1 channel, YCbCr (or RGB) as 3 channels of RGB,
// libjpeg's default decoding (the accurate integer IDCT, JDCT_ISLOW, and fancy upsampling). A
// CMYK or YCCK file (4 components), which OpenImageIO converts to RGB itself, is left to
// OpenImageIO when the build has it (the row's `reads`), else it is an error saying so. A
// JPEG is read whole.
// Written as OpenImageIO 2.4 writes it, so that files are byte for byte those written before:
// quality 98, libjpeg's default chroma subsampling (4:2:0) and Huffman tables, a JFIF APP0 of
// density 1:1, an empty Exif APP1.
//
// libjpeg reports through our error manager, never on stderr: error_exit longjmps back into the
// one small function that called libjpeg (a `step`, which holds nothing that needs destroying),
// which returns false; the decoder or encoder is destroyed as usual. A warning (libjpeg's
// "Premature end of JPEG file", "Corrupt JPEG data": it goes on, filling what is missing with
// grey) is kept, the first one as libjpeg's default handler keeps it, and judged by fail_on as
// OpenImageIO's were.
#include "codec.hpp"

#include <cstdio>
// jpeglib.h needs size_t and FILE declared before it
#include <jpeglib.h>

#include <cerrno>
#include <csetjmp>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

namespace pixflow::io::detail {
namespace {

/// libjpeg's error manager, with where to jump and what it said.
struct Errors {
    jpeg_error_mgr mgr{};
    std::jmp_buf jump{};
    std::string error;   ///< the error that stopped it
    std::string warning; ///< the first warning
    int warnings = 0;
};

std::string message_of(j_common_ptr c) {
    char text[JMSG_LENGTH_MAX] = {};
    c->err->format_message(c, text);
    return text;
}

void on_error_exit(j_common_ptr c) {
    Errors* e = static_cast<Errors*>(c->client_data);
    e->error = message_of(c);
    std::longjmp(e->jump, 1);
}

void on_message(j_common_ptr c, int level) {
    if (level >= 0) return; // trace messages
    Errors* e = static_cast<Errors*>(c->client_data);
    if (e->warnings++ == 0) e->warning = message_of(c);
    c->err->num_warnings++;
}

void on_output(j_common_ptr) {} // nothing is printed

void set_errors(Errors& e) {
    jpeg_std_error(&e.mgr);
    e.mgr.error_exit = &on_error_exit;
    e.mgr.emit_message = &on_message;
    e.mgr.output_message = &on_output;
}

// ---- reading --------------------------------------------------------------------------------

struct Decoder {
    Errors errors; ///< reached from libjpeg's callbacks through client_data
    jpeg_decompress_struct c{};
    std::FILE* fp = nullptr;
    Header header;
    ~Decoder() {
        jpeg_destroy_decompress(&c); // safe on a struct never created (c.mem is null)
        if (fp) std::fclose(fp);
    }
};

// The steps that call libjpeg: each returns false when its error longjmps back, with the error
// in errors.error. Nothing in them has a destructor for the longjmp to skip.
bool step_header(Decoder& d) {
    if (setjmp(d.errors.jump)) return false;
    jpeg_create_decompress(&d.c);
    jpeg_stdio_src(&d.c, d.fp);
    jpeg_read_header(&d.c, TRUE);
    return true;
}

bool step_start(Decoder& d) {
    if (setjmp(d.errors.jump)) return false;
    d.c.out_color_space = d.c.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    d.c.dct_method = JDCT_ISLOW; // libjpeg's defaults, which OpenImageIO keeps: the same bytes
    d.c.do_fancy_upsampling = TRUE;
    jpeg_start_decompress(&d.c);
    return true;
}

/// Every row into dst, then the end of the file (where libjpeg finds extraneous bytes).
bool step_rows(Decoder& d, const ImageView& dst) {
    if (setjmp(d.errors.jump)) return false;
    while (d.c.output_scanline < d.c.output_height) {
        JSAMPROW row = dst.row<JSAMPLE>(int(d.c.output_scanline));
        jpeg_read_scanlines(&d.c, &row, 1);
    }
    jpeg_finish_decompress(&d.c);
    return true;
}

/// Whether the header has 4 components (CMYK, YCCK).
bool four_components(const Decoder& d) { return d.c.num_components == 4; }

/// `path` open with its header read, or a read error.
std::unique_ptr<Decoder> open_decoder(const std::string& path) {
    auto d = std::make_unique<Decoder>();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail_read(path, "no such file");
    if (std::filesystem::is_directory(path, ec)) fail_read(path, "it is a directory");
    d->fp = std::fopen(path.c_str(), "rb");
    if (!d->fp) fail_read(path, std::generic_category().message(errno));
    set_errors(d->errors);
    d->c.err = &d->errors.mgr;
    d->c.client_data = &d->errors; // kept by jpeg_create_decompress
    if (!step_header(*d)) fail_read(path, "JPEG error: " + d->errors.error);
    return d;
}

/// The header of an open decoder, refused unless load can give it as libjpeg decodes it.
Header header_of(const std::string& path, Decoder& d) {
    if (four_components(d))
        fail_read(path, "a CMYK or YCCK JPEG (4 components) needs OpenImageIO, and this build has none; the "
                        "built-in reader takes 8-bit gray and YCbCr/RGB JPEGs");
    if (d.c.num_components != 1 && d.c.num_components != 3)
        fail_read(path, "a JPEG of " + std::to_string(d.c.num_components) +
                            " components; the built-in reader takes 8-bit gray (1) and YCbCr/RGB (3)");
    if (d.c.data_precision != 8)
        fail_read(path, "a " + std::to_string(d.c.data_precision) + "-bit JPEG; the built-in reader takes 8-bit ones");
    Header h;
    h.width = int(d.c.image_width);
    h.height = int(d.c.image_height);
    h.channels = d.c.num_components;
    h.dtype = DType::u8;
    return h;
}

/// libjpeg's warnings so far, as one line.
std::string warnings_of(const Decoder& d) {
    if (d.errors.warnings == 0) return "";
    return "JPEG warning: " + d.errors.warning +
           (d.errors.warnings > 1 ? " (and " + std::to_string(d.errors.warnings - 1) + " more)" : "");
}

Header jpeg_read_header(const std::string& path, const ReadOptions& options) {
    std::unique_ptr<Decoder> d = open_decoder(path);
    const Header h = header_of(path, *d);
    check_pixel_limit(path, h.width, h.height, options.max_pixels);
    const std::string w = warnings_of(*d);
    if (!w.empty() && options.fail_on == FailOn::warning) judge_complaints(path, w, false, options);
    return h;
}

void jpeg_read(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions& options) {
    std::unique_ptr<Decoder> d = open_decoder(path);
    const Header h = header_of(path, *d);
    check_pixel_limit(path, h.width, h.height, options.max_pixels);
    expect_header(path, want, h);
    // unless any complaint fails the read, what the decoder does not give reads as 0
    if (options.fail_on != FailOn::warning)
        for (int y = 0; y < dst.height; ++y) std::memset(dst.row<unsigned char>(y), 0, dst.row_bytes());
    const bool ok = step_start(*d) && step_rows(*d, dst);
    std::string complaints = ok ? "" : "JPEG error: " + d->errors.error;
    const std::string w = warnings_of(*d);
    if (!w.empty()) complaints += (complaints.empty() ? "" : "; ") + w;
    judge_complaints(path, one_line(complaints, path), !ok, options);
}

/// A CMYK or YCCK file goes to OpenImageIO, which converts it to RGB (as before); a file whose
/// header libjpeg cannot read stays here, and its error says why.
bool jpeg_reads(const std::string& path) {
    try {
        const std::unique_ptr<Decoder> d = open_decoder(path);
        return !four_components(*d);
    } catch (const std::exception&) { return true; }
}

// ---- writing --------------------------------------------------------------------------------

struct Encoder {
    Errors errors; ///< reached from libjpeg's callbacks through client_data
    jpeg_compress_struct c{};
    std::FILE* fp = nullptr;
    ~Encoder() {
        jpeg_destroy_compress(&c);
        if (fp) std::fclose(fp);
    }
};

/// The empty Exif block OpenImageIO 2.4 wrote into every JPEG ("Exif\0\0", a little-endian TIFF
/// header, an IFD of no entries): written too, so that files stay byte for byte the same.
constexpr unsigned char k_empty_exif[] = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0};

bool step_write(Encoder& e, const ImageView& src) {
    if (setjmp(e.errors.jump)) return false;
    jpeg_create_compress(&e.c);
    jpeg_stdio_dest(&e.c, e.fp);
    e.c.image_width = JDIMENSION(src.width);
    e.c.image_height = JDIMENSION(src.height);
    e.c.input_components = src.channels;
    e.c.in_color_space = src.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&e.c);          // 4:2:0, standard Huffman tables, JFIF 1.01 of density 1:1
    jpeg_set_quality(&e.c, 98, TRUE); // OpenImageIO's default quality
    jpeg_start_compress(&e.c, TRUE);
    jpeg_write_marker(&e.c, JPEG_APP0 + 1, k_empty_exif, sizeof k_empty_exif);
    while (e.c.next_scanline < e.c.image_height) {
        JSAMPROW row = src.row<JSAMPLE>(int(e.c.next_scanline));
        jpeg_write_scanlines(&e.c, &row, 1);
    }
    jpeg_finish_compress(&e.c);
    return true;
}

void jpeg_write(const std::string& path, const ImageView& src) {
    auto e = std::make_unique<Encoder>();
    set_errors(e->errors);
    e->c.err = &e->errors.mgr;
    e->c.client_data = &e->errors; // kept by jpeg_create_compress
    e->fp = std::fopen(path.c_str(), "wb");
    if (!e->fp) fail_write(path, std::generic_category().message(errno));
    if (!step_write(*e, src)) fail_write(path, "JPEG error: " + e->errors.error);
    std::FILE* fp = e->fp;
    e->fp = nullptr;
    if (std::fclose(fp) != 0) fail_write(path, std::generic_category().message(errno));
}

constexpr Format kJpegFormats[] = {
    {".jpg .jpeg .jpe .jif .jfif .jfi", PF_DTYPE_BIT(PF_U8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3)}};

} // namespace

constexpr Codec jpeg_codec{.name = "libjpeg",
                           .formats = kJpegFormats,
                           .fallback = false,
                           .read_header = &jpeg_read_header,
                           .read = &jpeg_read,
                           .write = &jpeg_write,
                           .reads = &jpeg_reads};

} // namespace pixflow::io::detail
