// netpbm.cpp: binary PGM/PPM (P5/P6) and PFM (Pf/PF).
//
//   P5 <width> <height> <maxval><one whitespace><rows, top to bottom>      (PGM, 1 channel)
//   P6 <width> <height> <maxval><one whitespace><rows, top to bottom>      (PPM, 3 channels)
//       maxval <= 255: 1 byte per sample; else 2, big-endian
//   Pf/PF <width> <height> <scale><one whitespace><f32 rows, BOTTOM to top> (1/3 channels)
//       scale < 0: little-endian samples, > 0: big-endian; its magnitude is ignored
//
// Header tokens are separated by whitespace, and `#` starts a comment up to the end of the line.
// PGM/PPM samples are kept as stored (a maxval of 1023 gives u16 values 0..1023, not rescaled), so
// a round trip is exact; written files use maxval 255 (u8) or 65535 (u16).
#include "codec.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

namespace pixflow::io::detail {
namespace {

bool is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

void skip_comment(InFile& f) {
    for (int c = f.get(); c != '\n' && c != '\r'; c = f.get())
        if (c < 0) f.fail("truncated header (inside a comment)");
}

/// The next whitespace-separated header token; consumes the single character that ends it.
std::string next_token(InFile& f, const char* what) {
    int c = f.get();
    while (is_space(c) || c == '#') {
        if (c == '#') skip_comment(f);
        c = f.get();
    }
    if (c < 0) f.fail(std::string("truncated header (no ") + what + ")");
    std::string tok;
    while (c >= 0 && !is_space(c) && c != '#') {
        if (tok.size() >= 32) f.fail(std::string("corrupt header: ") + what + " is not a number");
        tok += char(c);
        c = f.get();
    }
    if (c == '#') skip_comment(f);
    if (c < 0) f.fail("truncated header (no pixel data follows it)");
    return tok;
}

int parse_dim(InFile& f, const std::string& tok, const char* what, long long max) {
    long long v = 0;
    if (tok.empty()) f.fail(std::string("corrupt header: missing ") + what);
    for (char ch : tok) {
        if (ch < '0' || ch > '9') f.fail("corrupt header: " + std::string(what) + " '" + tok + "' is not a number");
        v = v * 10 + (ch - '0');
        if (v > max) break;
    }
    if (v < 1 || v > max)
        f.fail("corrupt header: " + std::string(what) + " " + tok + " is outside 1.." + std::to_string(max));
    return int(v);
}

// ---- PGM / PPM -------------------------------------------------------------------------------

bool pnm_is_other_variant(const std::string& path) {
    std::FILE* fp = std::fopen(path.c_str(), "rb");
    if (!fp) return false;
    unsigned char m[2] = {0, 0};
    std::size_t n = std::fread(m, 1, 2, fp);
    std::fclose(fp);
    return n == 2 && m[0] == 'P' && m[1] >= '1' && m[1] <= '4';
}

Header pnm_read_header(InFile& f) {
    int a = f.get(), b = f.get();
    if (a != 'P' || !(b == '5' || b == '6')) {
        if (a == 'P' && b >= '1' && b <= '4')
            f.fail(std::string("P") + char(b) +
                   " (plain-text or bitmap) Netpbm files need OpenImageIO; the built-in reader "
                   "takes binary P5 (PGM) and P6 (PPM)");
        f.fail("not a binary PGM/PPM file (it does not start with P5 or P6)");
    }
    Header h;
    h.channels = b == '5' ? 1 : 3;
    h.width = parse_dim(f, next_token(f, "width"), "width", std::numeric_limits<int>::max());
    h.height = parse_dim(f, next_token(f, "height"), "height", std::numeric_limits<int>::max());
    int maxval = parse_dim(f, next_token(f, "maxval"), "maxval", 65535);
    h.dtype = maxval <= 255 ? DType::u8 : DType::u16;
    f.require(
        image_bytes(f, std::uint64_t(h.width), std::uint64_t(h.height), std::uint64_t(h.channels), dtype_size(h.dtype)),
        "the pixel data");
    return h;
}

void pnm_read_rows(InFile& f, const Header& h, int row0, const ImageView& dst) {
    read_band(f, f.tell() + std::uint64_t(row0) * dst.row_bytes(), dst, false,
              h.dtype == DType::u16 && host_is_little_endian ? 2 : 0);
}

std::string pnm_header_text(int width, int height, int channels, DType dtype) {
    return std::string(channels == 1 ? "P5" : "P6") + "\n" + std::to_string(width) + " " + std::to_string(height) +
           "\n" + (dtype == DType::u16 ? "65535" : "255") + "\n";
}

// ---- PFM -------------------------------------------------------------------------------------

/// Header plus the file's byte order, which the scale's sign gives.
Header pfm_header(InFile& f, bool& little_endian) {
    int a = f.get(), b = f.get();
    if (a != 'P' || !(b == 'F' || b == 'f')) f.fail("not a PFM file (it does not start with PF or Pf)");
    Header h;
    h.channels = b == 'F' ? 3 : 1;
    h.dtype = DType::f32;
    h.width = parse_dim(f, next_token(f, "width"), "width", std::numeric_limits<int>::max());
    h.height = parse_dim(f, next_token(f, "height"), "height", std::numeric_limits<int>::max());
    std::string tok = next_token(f, "scale");
    char* end = nullptr;
    double scale = std::strtod(tok.c_str(), &end);
    if (end == tok.c_str() || *end != '\0' || !std::isfinite(scale) || scale == 0.0)
        f.fail("corrupt header: scale '" + tok + "' is not a non-zero number");
    little_endian = scale < 0;
    f.require(image_bytes(f, std::uint64_t(h.width), std::uint64_t(h.height), std::uint64_t(h.channels), 4),
              "the pixel data");
    return h;
}

Header pfm_read_header(InFile& f) {
    bool le = true;
    return pfm_header(f, le);
}

void pfm_read_rows(InFile& f, const Header& h, int row0, const ImageView& dst) {
    // read_image already parsed the header once; parse again from the start for the byte order.
    f.seek(0);
    bool le = true;
    pfm_header(f, le);
    const bool swap = le != host_is_little_endian;
    // rows are stored bottom to top: the band's lowest row comes first
    read_band(f, f.tell() + std::uint64_t(h.height - row0 - dst.height) * dst.row_bytes(), dst, true, swap ? 4 : 0);
}

std::string pfm_header_text(int width, int height, int channels, DType) {
    return std::string(channels == 1 ? "Pf" : "PF") + "\n" + std::to_string(width) + " " + std::to_string(height) +
           "\n" + (host_is_little_endian ? "-1.0" : "1.0") + "\n";
}

bool pnm_reads(const std::string& path) { return !pnm_is_other_variant(path); }

constexpr std::uint32_t kU8U16 = PF_DTYPE_BIT(PF_U8) | PF_DTYPE_BIT(PF_U16);
constexpr Format kPnmFormats[] = {
    {".pgm", kU8U16, PF_CHANNELS_BIT(1)},
    {".ppm", kU8U16, PF_CHANNELS_BIT(3)},
    {".pnm", kU8U16, PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3), /*suggested=*/false},
};
constexpr Format kPfmFormats[] = {{".pfm", PF_DTYPE_BIT(PF_F32), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3)}};

} // namespace

// P1..P4 (plain text or bitmaps) are rare enough to leave to the fallback, when there is one.
constexpr Codec pnm_codec{.name = "binary PGM/PPM",
                          .formats = kPnmFormats,
                          .fallback = false,
                          .read_header = &header_of<pnm_read_header>,
                          .read = &read_with<pnm_read_header, pnm_read_rows>,
                          .write = &write_at<pnm_header_text, top_down, true>,
                          .reads = &pnm_reads,
                          .read_rows = &rows_with<pnm_read_header, pnm_read_rows>,
                          .write_rows = &write_rows_at<pnm_header_text, top_down, true>};
constexpr Codec pfm_codec{.name = "PFM",
                          .formats = kPfmFormats,
                          .fallback = false,
                          .read_header = &header_of<pfm_read_header>,
                          .read = &read_with<pfm_read_header, pfm_read_rows>,
                          .write = &write_at<pfm_header_text, bottom_up>,
                          .read_rows = &rows_with<pfm_read_header, pfm_read_rows>,
                          .write_rows = &write_rows_at<pfm_header_text, bottom_up>};

} // namespace pixflow::io::detail
