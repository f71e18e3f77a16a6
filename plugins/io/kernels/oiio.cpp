// oiio.cpp: every format that is not built in, through OpenImageIO (compiled only with
// PIXFLOW_WITH_OIIO): in the plugin, into the module pixflow_io_oiio.so (oiio_entry.cpp is its
// C entry point; oiio_lazy.cpp loads it on first use), so that pixflow_io.so links no OpenImageIO.
//
// Samples keep the file's own type where pixflow has it (u8, u16, i16, i32, u32, u64, f32, f64);
// half becomes f32 and int8 becomes i16. Alpha is read and written unassociated (as stored in
// PNG), so a round trip never premultiplies or divides colours. Only the first subimage and MIP
// level are read. A BMP or PNG of indices into an all-grey palette loads as 1 channel
// (grey_palette.hpp).
//
// Limits and complaints (docs/guarantees.md, "Limits and corrupt files"):
//  - The pixel limit is checked on the spec as soon as the file is open, before any pixel is
//    read. OpenImageIO's global "limits:imagesize_MB", which some of its readers (TIFF in 2.4)
//    check inside open(), is set to what the largest limit in use allows (4 channels of 8 bytes
//    per pixel), so it never refuses what pixflow's own check accepts.
//  - OpenImageIO reports a decoder's complaints through the ImageInput's error, and read_image
//    still returns true for those it recovers from (libjpeg's "Premature end of JPEG file",
//    "Corrupt JPEG data"; libtiff's unreadable strips): those are warnings here; a false return
//    is an error. What a library prints on stderr instead (libpng) is captured (StderrCapture)
//    and joins the complaints. ReadOptions::fail_on then decides.
#include "codec.hpp"
#include "grey_palette.hpp"
#include "oiio_formats.hpp"
#include "stderr_capture.hpp"

#include <OpenImageIO/imageio.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <tuple>
#include <vector>

namespace pixflow::io::detail {
namespace {

OIIO::TypeDesc type_of(DType d) {
    switch (d) {
    case DType::u8: return OIIO::TypeDesc::UINT8;
    case DType::u16: return OIIO::TypeDesc::UINT16;
    case DType::i16: return OIIO::TypeDesc::INT16;
    case DType::i32: return OIIO::TypeDesc::INT32;
    case DType::u32: return OIIO::TypeDesc::UINT32;
    case DType::u64: return OIIO::TypeDesc::UINT64;
    case DType::f32: return OIIO::TypeDesc::FLOAT;
    case DType::f64: return OIIO::TypeDesc::DOUBLE;
    }
    return OIIO::TypeDesc::UINT8;
}

/// Makes OpenImageIO's "limits:imagesize_MB" allow max_pixels pixels of 4 channels of 8 bytes
/// (the most a pixflow image holds), rounded up to whole MiB, unless a larger limit (or none,
/// 0) was already set: the attribute is global, and a concurrent load with a larger limit must
/// not be refused by it. pixflow's own check, per load, is the one that decides.
void allow_in_oiio(std::int64_t max_pixels) {
    static std::mutex mutex;
    static std::int64_t largest = -1; // -1: never set; 0: no limit
    std::lock_guard<std::mutex> lock(mutex);
    const bool larger = largest < 0 || (largest > 0 && (max_pixels <= 0 || max_pixels > largest));
    if (!larger) return;
    largest = max_pixels <= 0 ? 0 : max_pixels;
    int mb = 0; // 0: OpenImageIO checks nothing
    if (max_pixels > 0) {
        const std::int64_t mib = std::int64_t(1) << 20;
        const std::int64_t cap = std::int64_t(INT_MAX) * mib / 32; // beyond: the attribute's int is full
        mb = max_pixels >= cap ? INT_MAX : int((max_pixels * 32 + mib - 1) / mib);
    }
    OIIO::attribute("limits:imagesize_MB", mb);
}

/// The hint for a message about the limit (check_pixel_limit's words).
const char* raise_hint =
    "if the file is trusted, raise the limit (--set NODE.max_pixels=N, or --max-pixels N for every load; 0: no limit)";

/// OpenImageIO's complaints and what the libraries printed, as one line; a printed line that
/// repeats one of OpenImageIO's (libpng prints "libpng error: X" for the "PNG read error: X" it
/// reported through OpenImageIO) is dropped.
std::string merge(const std::string& oiio, const std::string& printed, const std::string& path) {
    std::string text = oiio;
    std::size_t pos = 0;
    while (pos < printed.size()) {
        std::size_t end = printed.find('\n', pos);
        if (end == std::string::npos) end = printed.size();
        const std::string line = printed.substr(pos, end - pos);
        pos = end + 1;
        std::string said = line;
        for (const char* prefix : {"libpng error: ", "libpng warning: "})
            if (said.rfind(prefix, 0) == 0) said.erase(0, std::strlen(prefix));
        if (!said.empty() && oiio.find(said) == std::string::npos) text += "\n" + line;
    }
    return one_line(text, path);
}

/// One file open in OpenImageIO, with every complaint of its decoder kept for the message:
/// the input's errors, and what the libraries print on stderr while it is open.
/// Opens `path` in OpenImageIO (alpha unassociated), or fails with the decoder's complaints and
/// what it printed into `capture`.
std::unique_ptr<OIIO::ImageInput> open_input(const std::string& path, const ReadOptions& options,
                                             const StderrCapture& capture) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail_read(path, "no such file");
    allow_in_oiio(options.max_pixels);
    OIIO::ImageSpec config;
    config.attribute("oiio:UnassociatedAlpha", 1);
    auto in = OIIO::ImageInput::open(path, &config);
    if (in) return in;
    std::string e = merge(OIIO::geterror(), capture.text(), path);
    if (e.find("limits:imagesize_MB") != std::string::npos) {
        // OpenImageIO's own check (some readers make it inside open): say it in
        // pixflow's terms, since its advice (an OpenImageIO attribute) is not the user's.
        const std::size_t cut = e.find(". Possible corrupt");
        fail_read(path, "its header claims more pixels than max_pixels = " + std::to_string(options.max_pixels) +
                            " allows (OpenImageIO: " + e.substr(0, cut) + "); " + raise_hint);
    }
    fail_read(path, e.empty() ? std::string("OpenImageIO cannot open it") : e);
}

/// The complaints of `in` and the text `capture` took from `*printed` on, as one line ("" when
/// none); `*printed` moves to the end of the text.
std::string complaints_of(OIIO::ImageInput& in, const StderrCapture& capture, std::size_t* printed,
                          const std::string& path) {
    std::string text = in.has_error() ? in.geterror() : std::string();
    const std::string global = OIIO::geterror();
    if (!global.empty()) text += "\n" + global;
    const std::string said = capture.text().substr(std::min(*printed, capture.text().size()));
    *printed = capture.text().size();
    return merge(text, said, path);
}

class Input {
  public:
    Input(const std::string& path, const ReadOptions& options)
        : m_path(path), m_in(open_input(path, options, m_capture)) {}
    ~Input() { m_in.reset(); } // inside the capture: a reader's destructor may still complain

    const OIIO::ImageSpec& spec() const { return m_in->spec(); }
    OIIO::ImageInput& get() { return *m_in; }

    /// The complaints since the last call, as one line ("" when none).
    std::string complaints() { return complaints_of(*m_in, m_capture, &m_printed, m_path); }

  private:
    StderrCapture m_capture; // first: it outlives the input
    std::string m_path;
    std::unique_ptr<OIIO::ImageInput> m_in;
    std::size_t m_printed = 0; // of m_capture's text, already in complaints()
};

/// The message for complaints that fail_on does not let pass.
[[noreturn]] void fail_complaints(const std::string& path, const std::string& complaints, bool error) {
    fail_read(path, complaints + (error ? "; the decoder gave up (fail_on = \"none\" loads what it decoded)"
                                        : "; the file is corrupt or truncated (fail_on = \"error\" or \"none\" "
                                          "loads it anyway)"));
}

Header header_from(const std::string& path, const OIIO::ImageSpec& spec, const ReadOptions& options) {
    if (spec.deep) fail_read(path, "deep images are not supported");
    if (spec.depth > 1) fail_read(path, "volume images are not supported");
    if (spec.width < 1 || spec.height < 1) fail_read(path, "the image is empty");
    check_pixel_limit(path, spec.width, spec.height, options.max_pixels);
    if (spec.nchannels < 1 || spec.nchannels > 4)
        fail_read(path, "the image has " + std::to_string(spec.nchannels) + " channels; pixflow images have 1 to 4");
    Header h;
    h.width = spec.width;
    h.height = spec.height;
    h.channels = spec.nchannels == 3 && has_grey_palette(path) ? 1 : spec.nchannels;
    switch (OIIO::TypeDesc::BASETYPE(spec.format.basetype)) {
    case OIIO::TypeDesc::UINT8: h.dtype = DType::u8; break;
    case OIIO::TypeDesc::INT8:
    case OIIO::TypeDesc::INT16: h.dtype = DType::i16; break;
    case OIIO::TypeDesc::UINT16: h.dtype = DType::u16; break;
    case OIIO::TypeDesc::INT32: h.dtype = DType::i32; break;
    case OIIO::TypeDesc::UINT32: h.dtype = DType::u32; break;
    case OIIO::TypeDesc::UINT64: h.dtype = DType::u64; break;
    case OIIO::TypeDesc::HALF:
    case OIIO::TypeDesc::FLOAT: h.dtype = DType::f32; break;
    case OIIO::TypeDesc::DOUBLE: h.dtype = DType::f64; break;
    default: fail_read(path, std::string("samples of type ") + spec.format.c_str() + " have no pixflow dtype");
    }
    return h;
}

Header oiio_read_header(const std::string& path, const ReadOptions& options) {
    Input in(path, options);
    const Header h = header_from(path, in.spec(), options);
    // A complaint while reading the header (a progressive JPEG's scans are read by open()) is
    // judged as the decode's would be; under a laxer fail_on the run reports it.
    const std::string complaints = in.complaints();
    if (!complaints.empty() && options.fail_on == FailOn::warning) fail_complaints(path, complaints, false);
    return h;
}

void oiio_read(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions& options) {
    Input in(path, options);
    expect_header(path, want, header_from(path, in.spec(), options));
    // Unless any complaint fails the read, what the decoder does not produce (libtiff's missing
    // strips) must read as 0, not as whatever the buffer held.
    if (options.fail_on != FailOn::warning)
        for (int y = 0; y < dst.height; ++y) std::memset(dst.row<unsigned char>(y), 0, dst.row_bytes());
    // Channels 0..want.channels: all of them, or the first of an RGB expanded from a grey palette.
    const bool ok = in.get().read_image(0, 0, 0, want.channels, type_of(want.dtype), dst.data, OIIO::AutoStride,
                                        OIIO::stride_t(dst.pitch));
    in.get().close();
    std::string complaints = in.complaints();
    if (!ok && complaints.empty()) complaints = "OpenImageIO failed to decode it";
    if (complaints.empty()) return;
    if (!ok ? options.fail_on != FailOn::none : options.fail_on == FailOn::warning)
        fail_complaints(path, complaints, !ok);
    if (options.warn)
        options.warn("'" + path + "': " + (ok ? "decoded despite: " : "partly decoded: ") + complaints +
                     " (fail_on = \"" + (options.fail_on == FailOn::none ? "none" : "error") + "\")");
}

/// Rows [row0, row0 + dst.height) of a TIFF (strips or tiles: OpenImageIO reads the strips or
/// tiles that hold them, from a file opened for this band alone; a tiled file's tile rows go
/// through a buffer of their own, at most two tile rows more than the band). Limits, the header check and
/// fail_on as for the whole image; libtiff's complaint about a missing strip is a warning.
void png_read_rows(const std::string& path, const Header& want, int row0, const ImageView& dst,
                   const ReadOptions& options);

void oiio_read_rows(const std::string& path, const Header& want, int row0, const ImageView& dst,
                    const ReadOptions& options) {
    if (extension_of(path) == ".png") return png_read_rows(path, want, row0, dst, options);
    Input in(path, options);
    expect_header(path, want, header_from(path, in.spec(), options));
    if (options.fail_on != FailOn::warning)
        for (int y = 0; y < dst.height; ++y) std::memset(dst.row<unsigned char>(y), 0, dst.row_bytes());
    const OIIO::ImageSpec& sp = in.spec();
    bool ok = false;
    if (sp.tile_width > 0 && sp.tile_height > 0) {
        // read_tiles of the tile rows that hold the band, then the band's rows: OpenImageIO 2.4's
        // read_scanlines of a tiled TIFF divides by zero (SIGFPE)
        const int th = sp.tile_height, t0 = row0 / th * th;
        const int t1 = std::min(sp.height, (row0 + dst.height + th - 1) / th * th);
        const std::size_t rb = dst.row_bytes();
        std::vector<unsigned char> tiles(std::size_t(t1 - t0) * rb);
        ok = in.get().read_tiles(0, 0, sp.x, sp.x + sp.width, sp.y + t0, sp.y + t1, sp.z, sp.z + std::max(1, sp.depth),
                                 0, want.channels, type_of(want.dtype), tiles.data(), OIIO::AutoStride,
                                 OIIO::stride_t(rb), OIIO::AutoStride);
        for (int y = 0; ok && y < dst.height; ++y)
            std::memcpy(dst.row<unsigned char>(y), tiles.data() + std::size_t(row0 - t0 + y) * rb, rb);
    } else {
        ok = in.get().read_scanlines(0, 0, sp.y + row0, sp.y + row0 + dst.height, sp.z, 0, want.channels,
                                     type_of(want.dtype), dst.data, OIIO::AutoStride, OIIO::stride_t(dst.pitch));
    }
    in.get().close();
    std::string complaints = in.complaints();
    if (!ok && complaints.empty()) complaints = "OpenImageIO failed to decode rows " + std::to_string(row0) + "..";
    if (complaints.empty()) return;
    if (!ok ? options.fail_on != FailOn::none : options.fail_on == FailOn::warning)
        fail_complaints(path, complaints, !ok);
    if (options.warn)
        options.warn("'" + path + "': rows from " + std::to_string(row0) +
                     (ok ? " decoded despite: " : " partly decoded: ") + complaints + " (fail_on = \"" +
                     (options.fail_on == FailOn::none ? "none" : "error") + "\")");
}

// ---- PNG by rows: a decoder kept open between bands -----------------------------------------
//
// A PNG's rows decode in order only (one zlib stream, each row filtered against the one above),
// so a band read from a file opened again would decode every row above it. The carried state is
// plain bytes that nothing destroys, so the open decoder cannot live there; it lives here, in a
// cursor: an OpenImageIO input at its next row, with the last rows it gave (a stencil's next band
// starts a few rows above where the previous one ended: its halo). A band takes, from the idle
// cursors of the same file (same path, inode, size and modification time, same header), one whose
// kept rows reach down to the band's first row, or opens a new one at row 0; it gives the cursor
// back after its rows, and the band that reaches the last row closes it. Any cursor of the file
// serves any band at or below its kept rows, so correctness never depends on which node or run
// took it: bands out of order, or of two runs at once, only cost a decode from the top. Cursors
// left by a run that failed between bands are closed when more than k_idle_cursors wait (the
// oldest first).
//
// An interlaced (Adam7) PNG does not decode by rows: it is read whole (oiio_reads_rows), the
// node's whole_reason says so.

// FileId, file_id, IdleCursors and the kept rows' limits: file.hpp.

struct PngCursor {
    std::string path;
    FileId id;
    Header header;
    std::unique_ptr<OIIO::ImageInput> in;
    int next = 0;                    ///< the row the decoder gives next
    int kept0 = 0;                   ///< kept holds rows [kept0, next)
    std::vector<unsigned char> kept; ///< the last rows given (k_kept_rows or k_kept_bytes)
    int failed_at = -1;              ///< under fail_on error or none: the row the decoder gave up at
    std::uint64_t used = 0;          ///< for closing the oldest idle one
    const std::string& file_path() const { return path; }
    const Header& file_header() const { return header; }
};

/// The idle cursors of the process. A cursor is closed inside a StderrCapture of its caller.
using PngCursors = IdleCursors<PngCursor>;

PngCursors& png_cursors() {
    static auto* cursors = new PngCursors; // never destroyed: OpenImageIO may be gone at exit
    return *cursors;
}

/// Whether `path` is a PNG whose IHDR says interlaced (Adam7): byte 28 of the file.
bool png_is_interlaced(const std::string& path) {
    std::FILE* fp = std::fopen(path.c_str(), "rb");
    if (!fp) return false;
    unsigned char b[29] = {};
    const std::size_t n = std::fread(b, 1, sizeof b, fp);
    std::fclose(fp);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    return n == sizeof b && std::memcmp(b, sig, 8) == 0 && std::memcmp(b + 12, "IHDR", 4) == 0 && b[28] == 1;
}

/// Rows [row0, row0 + dst.height) of a PNG, through a cursor (above). A row the decoder cannot
/// give (a truncated or corrupt stream) is an error naming it, unless fail_on = none: then it and
/// the rows below are 0, and the complaint is reported once per band that has such rows.
/// Warnings (libpng's, printed) are judged by fail_on as for the whole image.
void png_read_rows(const std::string& path, const Header& want, int row0, const ImageView& dst,
                   const ReadOptions& options) {
    StderrCapture capture; // first: the cursor is opened, used and closed inside it
    std::size_t printed = 0;
    const FileId id = file_id(path);
    std::unique_ptr<PngCursor> c = png_cursors().take(path, id, want, row0);
    if (!c) {
        c = std::make_unique<PngCursor>();
        c->path = path;
        c->id = id;
        c->header = want;
        c->in = open_input(path, options, capture);
        expect_header(path, want, header_from(path, c->in->spec(), options));
    }
    const std::size_t rb = dst.row_bytes();
    const int end = row0 + dst.height;
    if (options.fail_on != FailOn::warning)
        for (int y = 0; y < dst.height; ++y) std::memset(dst.row<unsigned char>(y), 0, rb);
    // 1. the rows the cursor kept (the halo above the previous band's end)
    copy_kept_rows(*c, row0, dst);
    // 2. the rest from the decoder, one row at a time so that a failure names its row; rows above
    //    the band (a cursor opened for a band that does not start at 0) go through a scratch row
    std::vector<unsigned char> scratch(c->next < row0 ? rb : 0);
    std::string complaints;
    const OIIO::TypeDesc type = type_of(want.dtype);
    for (int y = c->next; y < end && c->failed_at < 0; ++y) {
        void* row = y >= row0 ? dst.row<unsigned char>(y - row0) : scratch.data();
        if (!c->in->read_scanlines(0, 0, c->in->spec().y + y, c->in->spec().y + y + 1, 0, 0, want.channels, type, row,
                                   OIIO::AutoStride, OIIO::AutoStride)) {
            std::string why = complaints_of(*c->in, capture, &printed, path);
            if (why.empty()) why = "OpenImageIO failed to decode it";
            if (options.fail_on != FailOn::none)
                fail_read(path, "row " + std::to_string(y) + " of " + std::to_string(want.height) +
                                    " cannot be decoded: " + why +
                                    "; the decoder gave up (fail_on = \"none\" loads what it decoded)");
            std::memset(row, 0, rb);
            c->failed_at = y;
            complaints = why;
        }
    }
    if (complaints.empty()) complaints = complaints_of(*c->in, capture, &printed, path);
    if (!complaints.empty() && c->failed_at < 0 && options.fail_on == FailOn::warning)
        fail_complaints(path, "rows from " + std::to_string(row0) + ": " + complaints, false);
    if (c->failed_at >= 0 && c->failed_at < end && complaints.empty())
        complaints = "rows from " + std::to_string(c->failed_at) + " are 0";
    if (!complaints.empty() && options.warn)
        options.warn("'" + path + "': rows from " + std::to_string(row0) +
                     (c->failed_at >= 0 && c->failed_at < end ? " partly decoded: " : " decoded despite: ") +
                     complaints + " (fail_on = \"" + (options.fail_on == FailOn::none ? "none" : "error") + "\")");
    // 3. keep the band's last rows for the next band's halo
    keep_last_rows(*c, row0, dst);
    if (end >= want.height) return; // the last band: the cursor closes here, inside the capture
    std::unique_ptr<PngCursor> oldest = png_cursors().give_back(std::move(c));
}

/// TIFF is read by bands from the file opened again, PNG by a decoder kept open (above), unless
/// interlaced.
bool oiio_reads_rows(const std::string& path) {
    const std::string ext = extension_of(path);
    return ext == ".tif" || ext == ".tiff" || (ext == ".png" && !png_is_interlaced(path));
}

/// The format's own reason to read `path` whole, where it has one.
std::string oiio_whole_why(const std::string& path) {
    if (extension_of(path) == ".png" && png_is_interlaced(path))
        return "reads interlaced (Adam7) .png files whole: their rows do not decode in order";
    return "";
}

bool oiio_can_write(const std::string& path) {
    auto out = OIIO::ImageOutput::create(path);
    if (!out) (void)OIIO::geterror(); // clear it
    return out != nullptr;
}

void oiio_write(const std::string& path, const ImageView& src) {
    StderrCapture printed; // libpng prints its errors (see stderr_capture.hpp)
    auto last_error = [&](std::unique_ptr<OIIO::ImageOutput>& out, const char* fallback) {
        std::string e = merge(out ? out->geterror() : OIIO::geterror(), printed.text(), path);
        return e.empty() ? std::string(fallback) : e;
    };
    auto out = OIIO::ImageOutput::create(path);
    if (!out) fail_write(path, last_error(out, "OpenImageIO has no writer for it"), PF_ERR_INVALID);
    OIIO::ImageSpec spec(src.width, src.height, src.channels, type_of(src.dtype));
    spec.attribute("oiio:UnassociatedAlpha", 1);
    if (!out->open(path, spec)) fail_write(path, last_error(out, "OpenImageIO cannot create it"));
    if (!out->write_image(type_of(src.dtype), src.data, OIIO::AutoStride, OIIO::stride_t(src.pitch)))
        fail_write(path, last_error(out, "OpenImageIO failed to write it"));
    if (!out->close()) fail_write(path, last_error(out, "OpenImageIO failed to finish it"));
}

/// Writing by rows: an encoder kept open between bands, as the PNG decoder is (above). The first
/// band creates `path` (the run's temporary) through ImageOutput::open and writes its rows with
/// write_scanlines; the encoder then waits, keyed by the path (a run's temporary has a name of
/// its own), for the next band, which must start where it stopped; the band that reaches the
/// last row closes it. libpng and libtiff write as the rows come (TIFF: a strip at a time), so
/// memory stays bounded and each row is written once. A run that fails between bands leaves its
/// encoder waiting, on a temporary that the run removes: every band closes the waiting encoders
/// whose file is gone (or is another file now), so they do not pile up. A failure while a band
/// is written closes its encoder at once.
struct Encoder {
    std::string path;
    std::uint64_t dev = 0, ino = 0; ///< the file it writes, to see that it is gone
    int height = 0, next = 0;       ///< the rows of the image, the next one to write
    std::unique_ptr<OIIO::ImageOutput> out;
};

// inode_of: file.hpp.

using Encoders = WaitingEncoders<Encoder>;

Encoders& encoders() {
    static auto* e = new Encoders; // never destroyed: OpenImageIO may be gone at exit
    return *e;
}

void oiio_write_rows(const std::string& path, int height, int row0, const ImageView& src) {
    StderrCapture printed; // libpng prints its errors (see stderr_capture.hpp); first: encoders close inside it
    const std::vector<std::unique_ptr<Encoder>> orphans = encoders().take_orphans();
    std::unique_ptr<Encoder> e;
    auto last_error = [&](const char* fallback) {
        std::string msg = merge(e && e->out ? e->out->geterror() : OIIO::geterror(), printed.text(), path);
        return msg.empty() ? std::string(fallback) : msg;
    };
    if (row0 == 0) {
        (void)encoders().take(path); // a stale one of the same name (a run that failed): closed here
        e = std::make_unique<Encoder>();
        e->path = path;
        e->height = height;
        e->out = OIIO::ImageOutput::create(path);
        if (!e->out) fail_write(path, last_error("OpenImageIO has no writer for it"), PF_ERR_INVALID);
        OIIO::ImageSpec spec(src.width, height, src.channels, type_of(src.dtype));
        spec.attribute("oiio:UnassociatedAlpha", 1);
        if (!e->out->open(path, spec)) fail_write(path, last_error("OpenImageIO cannot create it"));
        std::tie(e->dev, e->ino) = inode_of(path);
    } else {
        e = encoders().take(path);
        PIXFLOW_INTERNAL_CHECK(e && e->next == row0 && e->height == height, "io: a band of rows for '" + path +
                                                                                "' from row " + std::to_string(row0) +
                                                                                " with no encoder waiting at that row");
    }
    if (src.height > 0 && !e->out->write_scanlines(row0, row0 + src.height, 0, type_of(src.dtype), src.data,
                                                   OIIO::AutoStride, OIIO::stride_t(src.pitch)))
        fail_write(path, last_error("OpenImageIO failed to write it"));
    e->next = row0 + src.height;
    if (e->next < height) return encoders().keep(std::move(e));
    if (!e->out->close()) fail_write(path, last_error("OpenImageIO failed to finish it"));
}

/// TIFF and PNG are written by rows (an encoder kept open); other formats whole.
bool oiio_writes_rows(const std::string& path) {
    const std::string ext = extension_of(path);
    return ext == ".tif" || ext == ".tiff" || ext == ".png";
}

} // namespace

// The fallback: every extension the built-in rows do not list; any other extension it can write
// stores u8, whatever channels it takes. In the plugin, the row of the module (oiio_entry.cpp)
// that kernels/oiio_lazy.cpp loads; linked straight in (scripts/bench-codecs.sh's tool), the
// table's row itself.
constexpr Codec oiio_direct_codec{.name = "OpenImageIO",
                                  .formats = kOiioFormats,
                                  .fallback = true,
                                  .read_header = &oiio_read_header,
                                  .read = &oiio_read,
                                  .write = &oiio_write,
                                  .reads = nullptr,
                                  .writes = &oiio_can_write,
                                  .other = kOiioOther,
                                  .read_rows = &oiio_read_rows,
                                  .write_rows = &oiio_write_rows,
                                  .reads_rows = &oiio_reads_rows,
                                  .writes_rows = &oiio_writes_rows,
                                  .whole_why = &oiio_whole_why};
#ifndef PIXFLOW_IO_OIIO_MODULE
const Codec oiio_codec = oiio_direct_codec;
#endif

} // namespace pixflow::io::detail
