// codecs.cpp: the codec table (codec.hpp) and what it serves: choosing a codec by extension,
// reading and writing through it, and save's check of what a format can store, with messages
// derived from the table.
#include "codec.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

namespace pixflow::io {
namespace {

using namespace detail;

/// The table: the built-in formats in the order messages list them, then the fallback.
constexpr const Codec* k_codecs[] = {
    &pnm_codec,  &pfm_codec, &npy_codec,
#ifdef PIXFLOW_IO_PNG
    &png_codec,
#endif
#ifdef PIXFLOW_IO_JPEG
    &jpeg_codec,
#endif
#ifdef PIXFLOW_WITH_OIIO
    &oiio_codec,
#endif
};

bool has_ext(const char* list, const std::string& ext) {
    std::string s(list);
    std::size_t pos = 0;
    while (pos < s.size()) {
        std::size_t end = s.find(' ', pos);
        if (end == std::string::npos) end = s.size();
        if (s.compare(pos, end - pos, ext) == 0) return true;
        pos = end + 1;
    }
    return false;
}

std::string join(const std::vector<std::string>& items, const char* last_sep) {
    std::string s;
    for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) s += k + 1 == items.size() ? last_sep : ", ";
        s += items[k];
    }
    return s;
}

/// The format of `codec` that lists `ext`, or null.
const Format* format_of(const Codec& codec, const std::string& ext) {
    for (const Format& f : codec.formats)
        if (has_ext(f.exts, ext)) return &f;
    return nullptr;
}

/// The row that lists `ext`, not counting the fallback, or null.
const Codec* listing(const std::string& ext) {
    for (const Codec* c : k_codecs)
        if (!c->fallback && format_of(*c, ext)) return c;
    return nullptr;
}

const Codec* fallback() {
    for (const Codec* c : k_codecs)
        if (c->fallback) return c;
    return nullptr;
}

/// The first of a format's extensions: ".jpg" of ".jpg .jpeg .jpe...".
std::string first_ext(const Format& f) {
    const std::string exts(f.exts);
    return exts.substr(0, exts.find(' '));
}

/// ".pgm, .ppm, .pnm, .pfm, .npy, .png and .jpg": the (first) extension of each built-in format.
std::string builtin_list() {
    std::vector<std::string> exts;
    for (const Codec* c : k_codecs)
        if (!c->fallback)
            for (const Format& f : c->formats) exts.push_back(first_ext(f));
    return join(exts, " and ");
}

/// ", and OpenImageIO's (.png, .jpg, .tif, .exr...)" when there is a fallback, else "".
std::string fallback_list() {
    const Codec* fb = fallback();
    if (!fb) return "";
    std::vector<std::string> exts;
    for (const Format& f : fb->formats) // those no built-in row takes
        if (exts.size() < 4 && !listing(first_ext(f))) exts.push_back(first_ext(f));
    return ", and " + std::string(fb->name) + "'s (" + join(exts, ", ") + "...)";
}

[[noreturn]] void fail_no_extension(const std::string& path, bool reading) {
    const std::string what = "the file name has no extension to choose a format by; built-in formats are " +
                             builtin_list() + fallback_list();
    if (reading) fail_read(path, what);
    fail_write(path, what, PF_ERR_INVALID);
}

[[noreturn]] void fail_no_fallback(const std::string& path, const std::string& ext, bool reading) {
    const std::string what = ext + " files need OpenImageIO, and this build has none; built-in formats are " +
                             builtin_list() + " (or rebuild with OpenImageIO)";
    if (reading) fail_read(path, what);
    fail_write(path, what, PF_ERR_UNSUPPORTED);
}

/// The codec that reads `path`: the row listing its extension, unless that row declines the file
/// and there is a fallback; else the fallback.
const Codec& reader_of(const std::string& path) {
    const std::string ext = extension_of(path);
    if (ext.empty()) fail_no_extension(path, true);
    const Codec* listed = listing(ext);
    if (listed && (!listed->reads || listed->reads(path))) return *listed;
    if (const Codec* fb = fallback()) return *fb;
    if (listed) return *listed;
    fail_no_fallback(path, ext, true);
}

/// The codec that writes `path` and what it stores there.
std::pair<const Codec*, const Format*> writer_of(const std::string& path) {
    const std::string ext = extension_of(path);
    if (ext.empty()) fail_no_extension(path, false);
    if (const Codec* listed = listing(ext)) return {listed, format_of(*listed, ext)};
    const Codec* fb = fallback();
    if (!fb) fail_no_fallback(path, ext, false);
    if (const Format* f = format_of(*fb, ext)) return {fb, f};
    if (!fb->writes || !fb->writes(path))
        fail_write(path, "no format writes " + ext + " files; built-in formats are " + builtin_list() + fallback_list(),
                   PF_ERR_INVALID);
    return {fb, &fb->other};
}

std::string describe_dtypes(std::uint32_t mask) {
    std::vector<std::string> names;
    for (int d = PF_U8; d <= PF_F64; ++d)
        if (mask & PF_DTYPE_BIT(d)) names.emplace_back(dtype_name(DType(d)));
    return names.size() == 8 ? std::string("any dtype") : join(names, " or ");
}

std::string describe_channels(std::uint32_t mask) {
    if (mask == PF_ALL_CHANNELS) return "1 to 4 channels";
    std::vector<std::string> counts;
    for (int c = 1; c <= 4; ++c)
        if (mask & PF_CHANNELS_BIT(c)) counts.push_back(std::to_string(c));
    return join(counts, " or ") + (counts.size() == 1 && counts[0] == "1" ? " channel" : " channels");
}

bool accepts(const Format& f, DType d, int c) {
    return (f.dtypes & PF_DTYPE_BIT(int(d))) && c >= 1 && c <= 4 && (f.channels & PF_CHANNELS_BIT(c));
}

/// Throws unless `f`, the format `path` is written in, stores dtype x channels; the message
/// says what it accepts and which built-in formats would take the image.
void check_format(const std::string& path, const Format& f, DType dtype, int channels) {
    if (accepts(f, dtype, channels)) return;
    const std::string ext = extension_of(path);
    std::string msg = "cannot save " + std::string(dtype_name(dtype)) + " with " + std::to_string(channels) +
                      (channels == 1 ? " channel" : " channels") + " as " + ext +
                      "; accepted: " + describe_dtypes(f.dtypes) + ", " + describe_channels(f.channels);
    if (!(f.dtypes & PF_DTYPE_BIT(int(dtype))))
        msg += " (use convert)";
    else if (channels > 1 && f.channels == PF_CHANNELS_BIT(1))
        msg += " (use grayscale)";
    std::vector<std::string> alternatives;
    for (const Codec* c : k_codecs)
        if (!c->fallback)
            for (const Format& a : c->formats)
                if (a.suggested && accepts(a, dtype, channels)) alternatives.push_back(first_ext(a));
    std::stable_sort(alternatives.begin(), alternatives.end(), [](const std::string& a, const std::string& b) {
        return (a == ".npy") > (b == ".npy"); // .npy, which takes anything, first
    });
    std::string alt;
    for (const std::string& a : alternatives) alt += (alt.empty() ? "" : "/") + a;
    if (!alt.empty()) msg += ", or save as " + alt;
    throw UserError(msg);
}

/// The formats read (or written) by rows, for whole_*_reason's messages.
std::string rows_list(bool reading) {
    const Codec* listed = listing(".png");
    const bool png = listed ? listed->read_rows != nullptr : fallback() != nullptr;
    std::string s = ".npy, .pgm/.ppm, .pfm";
    if (fallback()) s += ", .tif";
    if (png) s += reading ? " and .png (not interlaced)" : " and .png";
    return s;
}

} // namespace

Header read_header(const std::string& path, const ReadOptions& options) {
    const Header h = reader_of(path).read_header(path, options);
    check_pixel_limit(path, h.width, h.height, options.max_pixels);
    return h;
}

void read_image(const std::string& path, const ImageView& dst, const ReadOptions& options) {
    PIXFLOW_INTERNAL_CHECK(dst.on_host() && dst.data, "io: read_image needs a host image");
    // Again before decoding, for a caller that did not read the header through read_header
    // with these options; the codec then checks that the file still says `want`, so a file
    // grown since validation is refused too.
    check_pixel_limit(path, dst.width, dst.height, options.max_pixels);
    reader_of(path).read(path, Header{dst.width, dst.height, dst.channels, dst.dtype}, dst, options);
}

void check_can_save(const std::string& path, DType dtype, int channels) {
    const auto [codec, format] = writer_of(path);
    check_format(path, *format, dtype, channels);
    if (codec->check_writer) codec->check_writer(path);
}

void write_image(const std::string& path, const ImageView& src) {
    PIXFLOW_INTERNAL_CHECK(src.on_host() && src.data, "io: write_image needs a host image");
    const auto [codec, format] = writer_of(path);
    check_format(path, *format, src.dtype, src.channels);
    codec->write(path, src);
}

std::string whole_read_reason(const std::string& path) {
    const Codec& c = reader_of(path);
    if (c.read_rows && (!c.reads_rows || c.reads_rows(path))) return "";
    const std::string why = c.whole_why ? c.whole_why(path) : std::string();
    return (why.empty() ? "reads " + extension_of(path) + " files whole (" + c.name + ")" : why) + "; " +
           rows_list(true) + " are read by rows";
}

std::string whole_write_reason(const std::string& path) {
    const Codec& c = *writer_of(path).first;
    if (c.write_rows && (!c.writes_rows || c.writes_rows(path))) return "";
    return "writes " + extension_of(path) + " files whole (" + c.name + "); " + rows_list(false) +
           " are written by rows";
}

void read_rows(const std::string& path, int height, int row0, const ImageView& dst, const ReadOptions& options) {
    PIXFLOW_INTERNAL_CHECK(dst.on_host() && dst.data && row0 >= 0 && row0 + dst.height <= height,
                           "io: read_rows needs a host band within the image");
    check_pixel_limit(path, dst.width, height, options.max_pixels);
    const Codec& c = reader_of(path);
    // not reads_rows: a file that changed since planning (a PNG now interlaced) is still read,
    // by the codec's own means
    PIXFLOW_INTERNAL_CHECK(c.read_rows, "io: read_rows of a format read whole");
    c.read_rows(path, Header{dst.width, height, dst.channels, dst.dtype}, row0, dst, options);
}

void write_rows(const std::string& path, int height, int row0, const ImageView& src) {
    PIXFLOW_INTERNAL_CHECK(src.on_host() && src.data, "io: write_rows needs a host image");
    const auto [codec, format] = writer_of(path);
    check_format(path, *format, src.dtype, src.channels);
    PIXFLOW_INTERNAL_CHECK(codec->write_rows && (!codec->writes_rows || codec->writes_rows(path)),
                           "io: write_rows of a format written whole");
    codec->write_rows(path, height, row0, src);
}

} // namespace pixflow::io
