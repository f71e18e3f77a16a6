// codecs.cpp: choosing a format by extension, what each format can store, and the file helpers
// the format files share.
#include "codecs_pvt.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

namespace pixflow::io {
namespace detail {

// ---- errors and files ------------------------------------------------------------------------

void fail_read(const std::string& path, const std::string& what) {
    throw Error("cannot read '" + path + "': " + what, PF_ERR_INVALID);
}

void fail_write(const std::string& path, const std::string& what, pf_status status) {
    throw Error("cannot write '" + path + "': " + what, status);
}

namespace {
std::string errno_text(int e) { return std::generic_category().message(e); }
} // namespace

InFile::InFile(const std::string& path) : m_path(path) {
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st)) fail("no such file");
    if (std::filesystem::is_directory(st)) fail("it is a directory");
    m_file = std::fopen(path.c_str(), "rb");
    if (!m_file) fail(errno_text(errno));
    if (std::fseek(m_file, 0, SEEK_END) != 0) fail("cannot seek: " + errno_text(errno));
    long end = std::ftell(m_file);
    if (end < 0) fail("cannot tell its size: " + errno_text(errno));
    m_size = std::uint64_t(end);
    std::rewind(m_file);
}

InFile::~InFile() {
    if (m_file) std::fclose(m_file);
}

int InFile::get() {
    int c = std::getc(m_file);
    if (c != EOF) ++m_pos;
    return c == EOF ? -1 : c;
}

void InFile::read(void* dst, std::size_t n) {
    std::size_t got = std::fread(dst, 1, n, m_file);
    m_pos += got;
    if (got != n) {
        if (std::ferror(m_file)) fail("read error: " + errno_text(errno));
        fail("truncated: the file ends after " + std::to_string(m_pos) + " bytes");
    }
}

void InFile::seek(std::uint64_t pos) {
    if (pos > m_size) fail("truncated: offset " + std::to_string(pos) + " lies past its end");
    if (std::fseek(m_file, long(pos), SEEK_SET) != 0) fail("cannot seek: " + errno_text(errno));
    m_pos = pos;
}

void InFile::require(std::uint64_t bytes, const char* what) {
    std::uint64_t left = m_size - std::min(m_pos, m_size);
    if (bytes > left)
        fail("truncated: " + std::string(what) + " needs " + std::to_string(bytes) +
             " bytes after the header, the file has " + std::to_string(left));
}

OutFile::OutFile(const std::string& path) : m_path(path) {
    m_file = std::fopen(path.c_str(), "wb");
    if (!m_file) fail_write(path, errno_text(errno));
}

OutFile::~OutFile() {
    if (m_file) std::fclose(m_file); // only on an error path: close() already reported
}

void OutFile::write(const void* src, std::size_t n) {
    if (n && std::fwrite(src, 1, n, m_file) != n) fail_write(m_path, errno_text(errno));
}

void OutFile::close() {
    std::FILE* f = m_file;
    m_file = nullptr;
    if (std::fclose(f) != 0) fail_write(m_path, errno_text(errno));
}

void byteswap_samples(void* data, std::size_t n, std::size_t size) {
    auto* p = static_cast<unsigned char*>(data);
    if (size < 2) return;
    for (std::size_t k = 0; k < n; ++k, p += size) std::reverse(p, p + size);
}

std::uint64_t image_bytes(const InFile& f, std::uint64_t w, std::uint64_t h, std::uint64_t c,
                          std::size_t sample_size) {
    // w, h < 2^31 and c <= 4, sample_size <= 8: w*c*size < 2^36, times h < 2^67 may overflow.
    std::uint64_t row = w * c * sample_size;
    if (h != 0 && row > (std::uint64_t(1) << 62) / h)
        f.fail("header claims " + std::to_string(w) + "x" + std::to_string(h) +
               " pixels, too many to be real");
    return row * h;
}

} // namespace detail

// ---- formats by extension --------------------------------------------------------------------

namespace {

using namespace detail;

enum class Kind { pnm, pfm, npy, oiio };

constexpr const char* builtin_list = ".pgm, .ppm, .pnm, .pfm and .npy";

/// What a format can store, for save's check.
struct Capability {
    const char* exts; // space-separated, each with its dot
    std::uint32_t dtypes;
    std::uint32_t channels;
};

constexpr std::uint32_t bit(DType d) { return PF_DTYPE_BIT(int(d)); }
constexpr std::uint32_t ch(std::initializer_list<int> cs) {
    std::uint32_t m = 0;
    for (int c : cs) m |= PF_CHANNELS_BIT(c);
    return m;
}
constexpr std::uint32_t u8_u16 = bit(DType::u8) | bit(DType::u16);

constexpr Capability builtin_caps[] = {
    {".pgm", u8_u16, ch({1})},
    {".ppm", u8_u16, ch({3})},
    {".pnm", u8_u16, ch({1, 3})},
    {".pfm", bit(DType::f32), ch({1, 3})},
    {".npy", PF_ALL_DTYPES, PF_ALL_CHANNELS},
};

#ifdef PIXFLOW_WITH_OIIO
// What OpenImageIO's writers store without converting (OIIO 2.4). Alpha is written unassociated.
constexpr Capability oiio_caps[] = {
    {".png", u8_u16, PF_ALL_CHANNELS},
    {".jpg .jpeg .jpe .jif .jfif .jfi", bit(DType::u8), ch({1, 3})},
    {".tif .tiff",
     u8_u16 | bit(DType::i16) | bit(DType::i32) | bit(DType::u32) | bit(DType::f32) |
         bit(DType::f64),
     PF_ALL_CHANNELS},
    {".exr", bit(DType::u32) | bit(DType::f32), PF_ALL_CHANNELS},
    {".hdr .rgbe", bit(DType::f32), ch({3})},
    {".bmp .dib", bit(DType::u8), ch({1, 3, 4})},
    {".tga", bit(DType::u8), ch({1, 3, 4})},
    {".webp", bit(DType::u8), ch({3, 4})},
};
// Any other extension OpenImageIO can write: u8, whatever channels it takes.
constexpr Capability oiio_other{"", bit(DType::u8), PF_ALL_CHANNELS};
#endif

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

[[noreturn]] void fail_no_extension(const std::string& path, bool reading) {
    std::string what =
        "the file name has no extension to choose a format by; built-in formats are " +
        std::string(builtin_list);
#ifdef PIXFLOW_WITH_OIIO
    what += ", and OpenImageIO's (.png, .jpg, .tif, .exr...)";
#endif
    if (reading) fail_read(path, what);
    fail_write(path, what, PF_ERR_INVALID);
}

#ifndef PIXFLOW_WITH_OIIO
[[noreturn]] void fail_no_oiio(const std::string& path, const std::string& ext, bool reading) {
    std::string what = ext +
                       " files need OpenImageIO, and this build has none; built-in formats are " +
                       builtin_list + " (or rebuild with OpenImageIO)";
    if (reading) fail_read(path, what);
    fail_write(path, what, PF_ERR_UNSUPPORTED);
}
#endif

Kind kind_of(const std::string& path, bool reading) {
    std::string ext = extension_of(path);
    if (ext.empty()) fail_no_extension(path, reading);
    if (ext == ".pgm" || ext == ".ppm" || ext == ".pnm") {
#ifdef PIXFLOW_WITH_OIIO
        // P1..P4 (plain text or bitmaps) are rare enough to leave to OpenImageIO.
        if (reading && pnm_is_other_variant(path)) return Kind::oiio;
#endif
        return Kind::pnm;
    }
    if (ext == ".pfm") return Kind::pfm;
    if (ext == ".npy") return Kind::npy;
#ifdef PIXFLOW_WITH_OIIO
    return Kind::oiio;
#else
    fail_no_oiio(path, ext, reading);
#endif
}

std::string join(const std::vector<std::string>& items, const char* last_sep) {
    std::string s;
    for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) s += k + 1 == items.size() ? last_sep : ", ";
        s += items[k];
    }
    return s;
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
    return join(counts, " or ") +
           (counts.size() == 1 && counts[0] == "1" ? " channel" : " channels");
}

bool accepts(const Capability& cap, DType d, int c) {
    return (cap.dtypes & bit(d)) && c >= 1 && c <= 4 && (cap.channels & PF_CHANNELS_BIT(c));
}

} // namespace

std::string extension_of(const std::string& path) {
    std::filesystem::path p(path);
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

Header read_header(const std::string& path) {
    switch (kind_of(path, true)) {
    case Kind::pnm: {
        InFile f(path);
        return pnm_read_header(f);
    }
    case Kind::pfm: {
        InFile f(path);
        return pfm_read_header(f);
    }
    case Kind::npy: {
        InFile f(path);
        return npy_read_header(f);
    }
    case Kind::oiio:
#ifdef PIXFLOW_WITH_OIIO
        return oiio_read_header(path);
#endif
        break;
    }
    fail_read(path, "internal: no reader");
}

void read_image(const std::string& path, const ImageView& dst) {
    if (!dst.on_host() || !dst.data)
        throw Error("internal: read_image needs a host image", PF_ERR_RUNTIME);
    auto check_same = [&](const Header& h) {
        if (h.width != dst.width || h.height != dst.height || h.channels != dst.channels ||
            h.dtype != dst.dtype)
            fail_read(path, "the file changed since its header was read (now " +
                                std::to_string(h.width) + "x" + std::to_string(h.height) + ", " +
                                std::to_string(h.channels) + " channels, " + dtype_name(h.dtype) +
                                ")");
    };
    switch (kind_of(path, true)) {
    case Kind::pnm: {
        InFile f(path);
        Header h = pnm_read_header(f);
        check_same(h);
        pnm_read(f, h, dst);
        return;
    }
    case Kind::pfm: {
        InFile f(path);
        Header h = pfm_read_header(f);
        check_same(h);
        pfm_read(f, h, dst);
        return;
    }
    case Kind::npy: {
        InFile f(path);
        Header h = npy_read_header(f);
        check_same(h);
        npy_read(f, h, dst);
        return;
    }
    case Kind::oiio: {
#ifdef PIXFLOW_WITH_OIIO
        Header h = oiio_read_header(path);
        check_same(h);
        oiio_read(path, h, dst);
        return;
#endif
        break;
    }
    }
    fail_read(path, "internal: no reader");
}

void check_can_save(const std::string& path, DType dtype, int channels) {
    const std::string ext = extension_of(path);
    const Kind kind = kind_of(path, false); // fails for unknown formats
    const Capability* cap = nullptr;
    for (const Capability& c : builtin_caps)
        if (has_ext(c.exts, ext)) cap = &c;
#ifdef PIXFLOW_WITH_OIIO
    if (!cap && kind == Kind::oiio) {
        for (const Capability& c : oiio_caps)
            if (has_ext(c.exts, ext)) cap = &c;
        if (!cap) {
            if (!oiio_can_write(path))
                fail_write(path,
                           "no format writes " + ext + " files; built-in formats are " +
                               builtin_list + ", and OpenImageIO's (.png, .jpg, .tif, .exr...)",
                           PF_ERR_INVALID);
            cap = &oiio_other;
        }
    }
#endif
    (void)kind;
    if (!cap) fail_write(path, "internal: no capability for " + ext);
    if (accepts(*cap, dtype, channels)) return;

    std::string msg = "cannot save " + std::string(dtype_name(dtype)) + " with " +
                      std::to_string(channels) + (channels == 1 ? " channel" : " channels") +
                      " as " + ext + "; accepted: " + describe_dtypes(cap->dtypes) + ", " +
                      describe_channels(cap->channels);
    if (!(cap->dtypes & bit(dtype)))
        msg += " (use convert)";
    else if (channels > 1 && cap->channels == ch({1}))
        msg += " (use grayscale)";
    std::vector<std::string> alternatives;
    for (const Capability& c : builtin_caps)
        if (accepts(c, dtype, channels) && std::string(c.exts) != ".pnm")
            alternatives.emplace_back(c.exts);
    std::sort(alternatives.begin(), alternatives.end(),
              [](const std::string& a, const std::string& b) {
                  return (a == ".npy") > (b == ".npy"); // .npy, which takes anything, first
              });
    std::string alt;
    for (const std::string& a : alternatives) alt += (alt.empty() ? "" : "/") + a;
    if (!alt.empty()) msg += ", or save as " + alt;
    throw Error(msg, PF_ERR_INVALID);
}

void write_image(const std::string& path, const ImageView& src) {
    if (!src.on_host() || !src.data)
        throw Error("internal: write_image needs a host image", PF_ERR_RUNTIME);
    check_can_save(path, src.dtype, src.channels);
    switch (kind_of(path, false)) {
    case Kind::pnm: pnm_write(path, src); return;
    case Kind::pfm: pfm_write(path, src); return;
    case Kind::npy: npy_write(path, src); return;
    case Kind::oiio:
#ifdef PIXFLOW_WITH_OIIO
        oiio_write(path, src);
        return;
#endif
        break;
    }
    fail_write(path, "internal: no writer");
}

} // namespace pixflow::io
