// png.cpp: PNG through libpng (compiled when CMake finds it: PIXFLOW_IO_PNG), so that a .png
// never loads OpenImageIO's module and its ~260 libraries (plugins/io/CMakeLists.txt).
//
// Read as OpenImageIO 2.4 reads it, so that a file loads to the same bytes as it did through
// OpenImageIO (plugins/io/test checks it against the module): png_set_expand (a palette becomes
// RGB, gray of 1, 2 or 4 bits becomes 8-bit gray scaled to 0..255, a tRNS chunk becomes an alpha
// channel), 16-bit samples in the host's byte order, no gamma or colour conversion, alpha as
// stored (unassociated). A palette of greys without tRNS loads as 1 channel (grey_palette.hpp),
// the first of the expanded RGB. An interlaced (Adam7) file is read whole.
// Written as OpenImageIO 2.4 writes it, so that files are byte for byte those written before:
// zlib level 6, default strategy, libpng's default (adaptive) filters, an oFFs chunk of 0, 0.
//
// libpng reports through our callbacks, never on stderr: an error longjmps back into the one
// small function that called libpng (a `step`, which holds nothing that needs destroying), which
// returns false; the decoder or encoder, owned by a unique_ptr, is destroyed as usual. Warnings
// (a bad ancillary chunk's CRC) are kept and judged by fail_on as OpenImageIO's were.
//
// By rows (issue 16, docs/strips.md): a PNG's rows decode in order only (one zlib stream, each
// row filtered against the one above), so a band read from a file opened again would decode
// every row above it. A decoder is kept open between bands in a cursor, with the last rows it
// gave (a stencil's next band starts a few rows above where the previous one ended: its halo). A
// band takes, from the idle cursors of the same file (same path, inode, size and modification
// time, same header), one whose kept rows reach down to the band's first row, or opens a new one
// at row 0; it gives the cursor back after its rows, and the band that reaches the last row
// closes it. Any cursor of the file serves any band at or below its kept rows, so correctness
// never depends on which node or run took it: bands out of order, or of two runs at once, only
// cost a decode from the top. Cursors left by a run that failed between bands are closed when
// more than k_idle_cursors wait (the oldest first). Writing keeps an encoder open the same way,
// keyed by the path (a run's temporary has a name of its own).
#include "codec.hpp"
#include "grey_palette.hpp"

#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <tuple>
#include <vector>

namespace pixflow::io::detail {
namespace {

/// What libpng said through our callbacks.
struct Said {
    std::string error;    ///< the error that stopped it
    std::string warnings; ///< every warning, one a line
};

void on_error(png_structp png, png_const_charp msg) {
    static_cast<Said*>(png_get_error_ptr(png))->error = msg && *msg ? msg : "unknown error";
    png_longjmp(png, 1);
}

void on_warning(png_structp png, png_const_charp msg) {
    std::string& w = static_cast<Said*>(png_get_error_ptr(png))->warnings;
    w += std::string(w.empty() ? "" : "\n") + "PNG warning: " + (msg ? msg : "");
}

/// libpng's reads, with a message that says the file ended (libpng's own says "Read Error").
void read_data(png_structp png, png_bytep data, std::size_t n) {
    std::FILE* fp = static_cast<std::FILE*>(png_get_io_ptr(png));
    if (std::fread(data, 1, n, fp) != n)
        png_error(png, std::ferror(fp) ? "read error" : "the file ends early (truncated)");
}

// ---- reading --------------------------------------------------------------------------------

struct Decoder {
    Said said;
    std::string path;
    std::FILE* fp = nullptr;
    png_structp png = nullptr;
    png_infop info = nullptr;
    Header header;         ///< what load gives
    int file_channels = 0; ///< of a decoded row: 3 for a grey palette, of which load keeps the first
    bool interlaced = false;
    std::size_t row_bytes = 0; ///< of a decoded row
    std::size_t warned = 0;    ///< of said.warnings, already judged
    ~Decoder() {
        if (png) png_destroy_read_struct(&png, &info, nullptr);
        if (fp) std::fclose(fp);
    }
};

// The steps that call libpng: each returns false when libpng's error longjmps back, with the
// error in said.error. Nothing in them has a destructor for the longjmp to skip.
bool step_info(Decoder& d) {
    if (setjmp(png_jmpbuf(d.png))) return false;
    png_set_read_fn(d.png, d.fp, &read_data);
    png_set_sig_bytes(d.png, 8);
    // pixflow's max_pixels decides (checked before any row buffer exists), not libpng's default
    // limit of 10^6 columns and rows
    png_set_user_limits(d.png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
    png_read_info(d.png, d.info);
    return true;
}

bool step_transforms(Decoder& d) {
    if (setjmp(png_jmpbuf(d.png))) return false;
    png_set_expand(d.png);
    if (host_is_little_endian) png_set_swap(d.png);
    if (d.interlaced) png_set_interlace_handling(d.png);
    png_read_update_info(d.png, d.info);
    return true;
}

bool step_row(Decoder& d, unsigned char* row) {
    if (setjmp(png_jmpbuf(d.png))) return false;
    png_read_row(d.png, row, nullptr);
    return true;
}

bool is_png_signature(const unsigned char* b) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    return std::memcmp(b, sig, 8) == 0;
}

/// `path` open at its first row, its header read and checked against the pixel limit before
/// libpng allocates anything of the image's size.
std::unique_ptr<Decoder> open_decoder(const std::string& path, const ReadOptions& options) {
    auto d = std::make_unique<Decoder>();
    d->path = path;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail_read(path, "no such file");
    if (std::filesystem::is_directory(path, ec)) fail_read(path, "it is a directory");
    d->fp = std::fopen(path.c_str(), "rb");
    if (!d->fp) fail_read(path, std::generic_category().message(errno));
    unsigned char sig[8] = {};
    if (std::fread(sig, 1, 8, d->fp) != 8 || !is_png_signature(sig))
        fail_read(path, "not a PNG file (it does not start with the PNG signature)");
    d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d->said, &on_error, &on_warning);
    if (d->png) d->info = png_create_info_struct(d->png);
    if (!d->png || !d->info) fail_read(path, "libpng cannot start (out of memory)");
    if (!step_info(*d)) fail_read(path, "PNG read error: " + one_line(d->said.error, path));
    png_uint_32 w = 0, h = 0;
    int depth = 0, colour = 0, interlace = 0;
    png_get_IHDR(d->png, d->info, &w, &h, &depth, &colour, &interlace, nullptr, nullptr);
    check_pixel_limit(path, std::int64_t(w), std::int64_t(h), options.max_pixels);
    d->interlaced = interlace != PNG_INTERLACE_NONE;
    if (!step_transforms(*d)) fail_read(path, "PNG read error: " + one_line(d->said.error, path));
    d->file_channels = png_get_channels(d->png, d->info);
    d->row_bytes = png_get_rowbytes(d->png, d->info);
    d->header.width = int(w);
    d->header.height = int(h);
    d->header.dtype = png_get_bit_depth(d->png, d->info) == 16 ? DType::u16 : DType::u8;
    d->header.channels =
        d->file_channels == 3 && colour == PNG_COLOR_TYPE_PALETTE && has_grey_palette(path) ? 1 : d->file_channels;
    return d;
}

/// The warnings libpng gave since the last call, as one line.
std::string new_warnings(Decoder& d) {
    const std::string w = d.said.warnings.substr(std::min(d.warned, d.said.warnings.size()));
    d.warned = d.said.warnings.size();
    return one_line(w, d.path);
}

/// Copies sample 0 of each of `width` pixels of `n` samples (a grey palette expanded to RGB).
void keep_first(const unsigned char* from, unsigned char* to, int width, int n) {
    for (int x = 0; x < width; ++x) to[x] = from[std::size_t(x) * std::size_t(n)];
}

/// Decodes the next row into `row` (the header's channels); false after libpng's error.
bool next_row(Decoder& d, unsigned char* row, std::vector<unsigned char>& scratch) {
    if (d.file_channels == d.header.channels) return step_row(d, row);
    scratch.resize(d.row_bytes);
    if (!step_row(d, scratch.data())) return false;
    keep_first(scratch.data(), row, d.header.width, d.file_channels);
    return true;
}

/// Every row of an open decoder into dst (the whole image); false after libpng's error, the rows
/// it could not give left as they were.
bool decode_all(Decoder& d, const ImageView& dst) {
    const int h = d.header.height;
    if (!d.interlaced) {
        std::vector<unsigned char> scratch;
        for (int y = 0; y < h; ++y)
            if (!next_row(d, dst.row<unsigned char>(y), scratch)) return false;
        return true;
    }
    // Adam7: each pass adds pixels to rows that must keep the earlier passes' pixels; with a grey
    // palette those rows are RGB, so they are a whole image of their own
    const bool direct = d.file_channels == d.header.channels;
    std::vector<unsigned char> rgb(direct ? 0 : d.row_bytes * std::size_t(h));
    auto row = [&](int y) { return direct ? dst.row<unsigned char>(y) : rgb.data() + d.row_bytes * std::size_t(y); };
    const int passes = PNG_INTERLACE_ADAM7_PASSES;
    bool ok = true;
    for (int p = 0; p < passes && ok; ++p)
        for (int y = 0; y < h && ok; ++y) ok = step_row(d, row(y));
    if (!direct)
        for (int y = 0; y < h; ++y) keep_first(row(y), dst.row<unsigned char>(y), d.header.width, d.file_channels);
    return ok;
}

Header png_read_header(const std::string& path, const ReadOptions& options) {
    std::unique_ptr<Decoder> d = open_decoder(path, options);
    // a warning before the first row (a bad iCCP chunk) is judged as the decode's would be
    const std::string w = new_warnings(*d);
    if (!w.empty() && options.fail_on == FailOn::warning) judge_complaints(path, w, false, options);
    return d->header;
}

void png_read(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions& options) {
    std::unique_ptr<Decoder> d = open_decoder(path, options);
    expect_header(path, want, d->header);
    // unless any complaint fails the read, what the decoder does not give reads as 0
    if (options.fail_on != FailOn::warning)
        for (int y = 0; y < dst.height; ++y) std::memset(dst.row<unsigned char>(y), 0, dst.row_bytes());
    const bool ok = decode_all(*d, dst);
    std::string complaints = ok ? "" : "PNG read error: " + one_line(d->said.error, path);
    const std::string w = new_warnings(*d);
    if (!w.empty()) complaints += (complaints.empty() ? "" : "; ") + w;
    judge_complaints(path, complaints, !ok, options);
}

/// Whether `path` is a PNG whose IHDR says interlaced (Adam7): byte 28 of the file.
bool png_is_interlaced(const std::string& path) {
    std::FILE* fp = std::fopen(path.c_str(), "rb");
    if (!fp) return false;
    unsigned char b[29] = {};
    const std::size_t n = std::fread(b, 1, sizeof b, fp);
    std::fclose(fp);
    return n == sizeof b && is_png_signature(b) && std::memcmp(b + 12, "IHDR", 4) == 0 && b[28] == 1;
}

bool png_reads_rows(const std::string& path) { return !png_is_interlaced(path); }

std::string png_whole_why(const std::string& path) {
    return png_is_interlaced(path) ? "reads interlaced (Adam7) .png files whole: their rows do not decode in order"
                                   : "";
}

// -- by rows: cursors (see the top of the file)

struct Cursor {
    FileId id;
    std::unique_ptr<Decoder> d;
    int next = 0;                    ///< the row the decoder gives next
    int kept0 = 0;                   ///< kept holds rows [kept0, next)
    std::vector<unsigned char> kept; ///< the last rows given (k_kept_rows or k_kept_bytes: file.hpp)
    int failed_at = -1;              ///< under fail_on = none: the row the decoder gave up at
    std::uint64_t used = 0;          ///< for closing the oldest idle one
    const std::string& file_path() const { return d->path; }
    const Header& file_header() const { return d->header; }
};
using Cursors = IdleCursors<Cursor>;

Cursors& cursors() {
    static Cursors c;
    return c;
}

/// Rows [row0, row0 + dst.height) of a PNG, through a cursor. A row the decoder cannot give (a
/// truncated or corrupt stream) is an error naming it, unless fail_on = none: then it and the
/// rows below are 0, and the complaint is reported once per band that has such rows.
void png_read_rows(const std::string& path, const Header& want, int row0, const ImageView& dst,
                   const ReadOptions& options) {
    const std::size_t rb = dst.row_bytes();
    if (png_is_interlaced(path)) { // planned when it was not (the file changed): read whole, keep the band
        std::vector<unsigned char> all(rb * std::size_t(want.height));
        ImageView v = dst;
        v.height = want.height;
        v.pitch = std::int64_t(rb);
        v.data = all.data();
        png_read(path, want, v, options);
        for (int y = 0; y < dst.height; ++y)
            std::memcpy(dst.row<unsigned char>(y), all.data() + rb * std::size_t(row0 + y), rb);
        return;
    }
    const FileId id = file_id(path);
    std::unique_ptr<Cursor> c = cursors().take(path, id, want, row0);
    if (!c) {
        c = std::make_unique<Cursor>();
        c->id = id;
        c->d = open_decoder(path, options);
        expect_header(path, want, c->d->header);
    }
    const int end = row0 + dst.height;
    if (options.fail_on != FailOn::warning)
        for (int y = 0; y < dst.height; ++y) std::memset(dst.row<unsigned char>(y), 0, rb);
    // 1. the rows the cursor kept (the halo above the previous band's end)
    copy_kept_rows(*c, row0, dst);
    // 2. the rest from the decoder; rows above the band (a cursor opened for a band that does not
    //    start at 0) go through a scratch row
    std::vector<unsigned char> above(c->next < row0 ? rb : 0), scratch;
    std::string gave_up;
    for (int y = c->next; y < end && c->failed_at < 0; ++y) {
        unsigned char* row = y >= row0 ? dst.row<unsigned char>(y - row0) : above.data();
        if (next_row(*c->d, row, scratch)) continue;
        gave_up = "PNG read error: " + one_line(c->d->said.error, path);
        if (options.fail_on != FailOn::none)
            fail_read(path, "row " + std::to_string(y) + " of " + std::to_string(want.height) + " cannot be decoded: " +
                                gave_up + "; the decoder gave up (fail_on = \"none\" loads what it decoded)");
        std::memset(row, 0, rb);
        c->failed_at = y;
    }
    const bool partly = c->failed_at >= 0 && c->failed_at < end;
    if (partly && gave_up.empty()) gave_up = "rows from " + std::to_string(c->failed_at) + " are 0";
    const std::string w = new_warnings(*c->d);
    judge_complaints(path, gave_up + (gave_up.empty() || w.empty() ? "" : "; ") + w, partly, options,
                     "rows from " + std::to_string(row0));
    // 3. keep the band's last rows for the next band's halo
    keep_last_rows(*c, row0, dst);
    if (end >= want.height) return;          // the last band: the cursor closes here
    (void)cursors().give_back(std::move(c)); // the oldest idle one, if too many wait: closed here
}

// ---- writing --------------------------------------------------------------------------------

struct Encoder {
    Said said;
    std::string path;
    std::FILE* fp = nullptr;
    png_structp png = nullptr;
    png_infop info = nullptr;
    std::uint64_t dev = 0, ino = 0; ///< the file it writes, to see that it is gone
    int height = 0, next = 0;       ///< the rows of the image, the next one to write
    ~Encoder() {
        if (png) png_destroy_write_struct(&png, &info);
        if (fp) std::fclose(fp);
    }
};

bool step_begin(Encoder& e, int width, int channels, int depth) {
    if (setjmp(png_jmpbuf(e.png))) return false;
    static const int colour[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA};
    png_init_io(e.png, e.fp);
    // OpenImageIO 2.4's settings (pngoutput.cpp): level 6, default strategy, libpng's filters
    png_set_compression_level(e.png, 6);
    png_set_compression_strategy(e.png, Z_DEFAULT_STRATEGY);
    png_set_IHDR(e.png, e.info, png_uint_32(width), png_uint_32(e.height), depth, colour[channels - 1],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    // the chunk OpenImageIO wrote for an image at the origin, kept so that files stay byte for
    // byte the same as before (21 bytes)
    png_set_oFFs(e.png, e.info, 0, 0, PNG_OFFSET_PIXEL);
    png_write_info(e.png, e.info);
    if (depth == 16 && host_is_little_endian) png_set_swap(e.png);
    return true;
}

bool step_rows(Encoder& e, const ImageView& src) {
    if (setjmp(png_jmpbuf(e.png))) return false;
    for (int y = 0; y < src.height; ++y) png_write_row(e.png, src.row<unsigned char>(y));
    return true;
}

bool step_end(Encoder& e) {
    if (setjmp(png_jmpbuf(e.png))) return false;
    png_write_end(e.png, e.info);
    return true;
}

/// The encoders waiting for their next band, keyed by path (file.hpp).
using Encoders = WaitingEncoders<Encoder>;

Encoders& encoders() {
    static Encoders e;
    return e;
}

void png_write_rows(const std::string& path, int height, int row0, const ImageView& src) {
    (void)encoders().take_orphans(); // closed at the end of this statement, outside the lock
    std::unique_ptr<Encoder> e;
    if (row0 == 0) {
        (void)encoders().take(path); // a stale one of the same name (a run that failed): closed here
        e = std::make_unique<Encoder>();
        e->path = path;
        e->height = height;
        e->fp = std::fopen(path.c_str(), "wb");
        if (!e->fp) fail_write(path, std::generic_category().message(errno));
        e->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e->said, &on_error, &on_warning);
        if (e->png) e->info = png_create_info_struct(e->png);
        if (!e->png || !e->info) fail_write(path, "libpng cannot start (out of memory)");
        if (!step_begin(*e, src.width, src.channels, src.dtype == DType::u16 ? 16 : 8))
            fail_write(path, "PNG write error: " + one_line(e->said.error, path));
        std::tie(e->dev, e->ino) = inode_of(path);
    } else {
        e = encoders().take(path);
        PIXFLOW_INTERNAL_CHECK(e && e->next == row0 && e->height == height, "io: a band of rows for '" + path +
                                                                                "' from row " + std::to_string(row0) +
                                                                                " with no encoder waiting at that row");
    }
    if (!step_rows(*e, src)) fail_write(path, "PNG write error: " + one_line(e->said.error, path));
    e->next = row0 + src.height;
    if (e->next < height) return encoders().keep(std::move(e));
    if (!step_end(*e)) fail_write(path, "PNG write error: " + one_line(e->said.error, path));
    std::FILE* fp = e->fp;
    e->fp = nullptr;
    if (std::fclose(fp) != 0) fail_write(path, std::generic_category().message(errno));
}

void png_write(const std::string& path, const ImageView& src) { png_write_rows(path, src.height, 0, src); }

constexpr std::uint32_t kU8U16 = PF_DTYPE_BIT(PF_U8) | PF_DTYPE_BIT(PF_U16);
constexpr Format kPngFormats[] = {{".png", kU8U16, PF_ALL_CHANNELS}};

} // namespace

constexpr Codec png_codec{.name = "libpng",
                          .formats = kPngFormats,
                          .fallback = false,
                          .read_header = &png_read_header,
                          .read = &png_read,
                          .write = &png_write,
                          .read_rows = &png_read_rows,
                          .write_rows = &png_write_rows,
                          .reads_rows = &png_reads_rows,
                          .whole_why = &png_whole_why};

} // namespace pixflow::io::detail
