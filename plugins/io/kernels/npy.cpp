// npy.cpp: NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
//   "\x93NUMPY" major minor  header_len (u16 LE in 1.0, u32 LE in 2.0/3.0)
//   {'descr': '<f4', 'fortran_order': False, 'shape': (H, W, C), }   padded with spaces, ends "\n"
//   raw samples in C order
//
// Read: descr u1 u2 i2 i4 u4 u8 f4 f8 (either byte order; b1 reads as u8), shape (H, W) or
// (H, W, C) with C 1..4, C order only. Written: little-endian, shape (H, W) for one channel,
// version 1.0, header padded so that the data starts on a 64-byte boundary (as NumPy does).
#include "codec.hpp"

#include <vector>

namespace pixflow::io::detail {
namespace {

constexpr unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::uint32_t max_header_len = 1u << 20; // NumPy's own limit is 10000 bytes

struct NpyInfo {
    Header header;
    bool little_endian = true;
};

/// A cursor over the header's Python dict literal; every step is bounds-checked.
class DictParser {
  public:
    DictParser(const InFile& f, const std::string& text) : m_f(f), m_s(text) {}

    void skip_ws() {
        while (m_pos < m_s.size() &&
               (m_s[m_pos] == ' ' || m_s[m_pos] == '\t' || m_s[m_pos] == '\n' || m_s[m_pos] == '\r'))
            ++m_pos;
    }
    bool at(char c) {
        skip_ws();
        return m_pos < m_s.size() && m_s[m_pos] == c;
    }
    void expect(char c) {
        if (!at(c)) bad(std::string("expected '") + c + "'");
        ++m_pos;
    }
    std::string string() {
        skip_ws();
        if (m_pos >= m_s.size() || (m_s[m_pos] != '\'' && m_s[m_pos] != '"')) bad("expected a string");
        char q = m_s[m_pos++];
        std::size_t end = m_s.find(q, m_pos);
        if (end == std::string::npos) bad("unterminated string");
        std::string v = m_s.substr(m_pos, end - m_pos);
        m_pos = end + 1;
        return v;
    }
    bool boolean() {
        skip_ws();
        if (m_s.compare(m_pos, 4, "True") == 0) {
            m_pos += 4;
            return true;
        }
        if (m_s.compare(m_pos, 5, "False") == 0) {
            m_pos += 5;
            return false;
        }
        bad("expected True or False");
    }
    std::vector<std::uint64_t> tuple() {
        std::vector<std::uint64_t> v;
        expect('(');
        while (!at(')')) {
            if (v.size() >= 32) bad("shape has too many dimensions");
            std::uint64_t n = 0;
            std::size_t start = m_pos;
            while (m_pos < m_s.size() && m_s[m_pos] >= '0' && m_s[m_pos] <= '9') {
                n = n * 10 + std::uint64_t(m_s[m_pos++] - '0');
                if (n > (std::uint64_t(1) << 40)) bad("shape dimension too large");
            }
            if (m_pos == start) bad("shape must be a tuple of non-negative integers");
            if (m_pos < m_s.size() && m_s[m_pos] == 'L') ++m_pos; // Python 2 long
            v.push_back(n);
            if (!at(',')) break;
            ++m_pos;
        }
        expect(')');
        return v;
    }
    void skip_value() { // a value of a key we do not know: a string, a bool or a tuple
        skip_ws();
        if (at('('))
            tuple();
        else if (at('\'') || at('"'))
            string();
        else
            boolean();
    }
    [[noreturn]] void bad(const std::string& what) const {
        m_f.fail("corrupt .npy header: " + what + " at offset " + std::to_string(m_pos) + " of '" + m_s.substr(0, 120) +
                 "'");
    }

  private:
    const InFile& m_f;
    const std::string& m_s;
    std::size_t m_pos = 0;
};

DType dtype_of_descr(const InFile& f, const std::string& descr, bool& little_endian) {
    static const char* accepted = "accepted: u1, u2, i2, i4, u4, u8, f4, f8 (and b1), either byte order";
    if (descr.size() < 2) f.fail("unsupported .npy dtype '" + descr + "'; " + accepted);
    char order = descr[0];
    std::string code = descr.substr(1);
    if (order != '<' && order != '>' && order != '|' && order != '=')
        f.fail("unsupported .npy dtype '" + descr + "' (structured or non-numeric); " + accepted);
    little_endian = order == '<' || order == '|' || (order == '=' && host_is_little_endian);
    if (code == "u1" || code == "b1") return DType::u8;
    if (code == "u2") return DType::u16;
    if (code == "i2") return DType::i16;
    if (code == "i4") return DType::i32;
    if (code == "u4") return DType::u32;
    if (code == "u8") return DType::u64;
    if (code == "f4") return DType::f32;
    if (code == "f8") return DType::f64;
    f.fail("unsupported .npy dtype '" + descr + "'; " + accepted);
}

NpyInfo parse_header(InFile& f) {
    unsigned char pre[8];
    if (f.size() < 10) f.fail("not a .npy file (too short)");
    f.read(pre, 8);
    if (std::memcmp(pre, magic, 6) != 0) f.fail("not a .npy file (bad magic)");
    const int major = pre[6];
    std::uint32_t len = 0;
    if (major == 1) {
        unsigned char b[2];
        f.read(b, 2);
        len = std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8;
    } else if (major == 2 || major == 3) {
        unsigned char b[4];
        f.read(b, 4);
        len = std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24;
    } else {
        f.fail("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(pre[7]) +
               " (1.0, 2.0 and 3.0 are read)");
    }
    if (len > max_header_len) f.fail("corrupt .npy header: header length " + std::to_string(len));
    f.require(len, "the .npy header");
    std::string text(len, '\0');
    f.read(text.data(), len);

    DictParser p(f, text);
    std::string descr;
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    std::vector<std::uint64_t> shape;
    p.expect('{');
    while (!p.at('}')) {
        std::string key = p.string();
        p.expect(':');
        if (key == "descr") {
            descr = p.string();
            have_descr = true;
        } else if (key == "fortran_order") {
            fortran = p.boolean();
            have_order = true;
        } else if (key == "shape") {
            shape = p.tuple();
            have_shape = true;
        } else
            p.skip_value();
        if (!p.at(',')) break;
        p.expect(',');
    }
    p.expect('}');
    if (!have_descr || !have_order || !have_shape) p.bad("it lacks one of 'descr', 'fortran_order', 'shape'");

    NpyInfo info;
    Header& h = info.header;
    h.dtype = dtype_of_descr(f, descr, info.little_endian);
    if (shape.size() != 2 && shape.size() != 3) {
        std::string s = "(";
        for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
        f.fail("array of shape " + s + (shape.size() == 1 ? ",)" : ")") +
               " is not an image; expected (height, width) or (height, width, channels)");
    }
    std::uint64_t c = shape.size() == 3 ? shape[2] : 1;
    if (shape[0] == 0 || shape[1] == 0) f.fail("the image is empty (a dimension is 0)");
    if (shape[0] > 0x7FFFFFFF || shape[1] > 0x7FFFFFFF) f.fail("the image is too large");
    if (c < 1 || c > 4) f.fail("the image has " + std::to_string(c) + " channels; 1 to 4 are supported");
    if (fortran) f.fail("Fortran-order arrays are not supported (save np.ascontiguousarray(a))");
    h.height = int(shape[0]);
    h.width = int(shape[1]);
    h.channels = int(c);
    f.require(image_bytes(f, shape[1], shape[0], c, dtype_size(h.dtype)), "the array data");
    return info;
}

const char* descr_of(DType d) {
    const bool le = host_is_little_endian;
    switch (d) {
    case DType::u8: return "|u1";
    case DType::u16: return le ? "<u2" : ">u2";
    case DType::i16: return le ? "<i2" : ">i2";
    case DType::i32: return le ? "<i4" : ">i4";
    case DType::u32: return le ? "<u4" : ">u4";
    case DType::u64: return le ? "<u8" : ">u8";
    case DType::f32: return le ? "<f4" : ">f4";
    case DType::f64: return le ? "<f8" : ">f8";
    }
    return "|u1";
}

Header npy_read_header(InFile& f) { return parse_header(f).header; }

void npy_read_rows(InFile& f, const Header& h, int row0, const ImageView& dst) {
    f.seek(0); // the byte order is in the header: parse it again
    NpyInfo info = parse_header(f);
    const bool swap = info.little_endian != host_is_little_endian;
    read_band(f, f.tell() + std::uint64_t(row0) * dst.row_bytes(), dst, false, swap ? dtype_size(h.dtype) : 0);
}

std::string npy_header_text(int width, int height, int channels, DType dtype) {
    std::string dict = std::string("{'descr': '") + descr_of(dtype) + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(height) + ", " + std::to_string(width) +
                       (channels == 1 ? "" : ", " + std::to_string(channels)) + "), }";
    const std::size_t preamble = 10; // magic, version, u16 length
    std::size_t total = preamble + dict.size() + 1;
    total = (total + 63) / 64 * 64;
    dict.append(total - preamble - dict.size() - 1, ' ');
    dict += '\n';
    const std::size_t len = dict.size();
    const char pre[10] = {
        char(magic[0]),   char(magic[1]), char(magic[2]), char(magic[3]), char(magic[4]), char(magic[5]), 1, 0,
        char(len & 0xFF), char(len >> 8)};
    return std::string(pre, sizeof pre) + dict;
}

constexpr Format kNpyFormats[] = {{".npy", PF_ALL_DTYPES, PF_ALL_CHANNELS}};

} // namespace

constexpr Codec npy_codec{.name = "NumPy",
                          .formats = kNpyFormats,
                          .fallback = false,
                          .read_header = &header_of<npy_read_header>,
                          .read = &read_with<npy_read_header, npy_read_rows>,
                          .write = &write_at<npy_header_text, top_down>,
                          .read_rows = &rows_with<npy_read_header, npy_read_rows>,
                          .write_rows = &write_rows_at<npy_header_text, top_down>};

} // namespace pixflow::io::detail
