// file.cpp: the io plugin's file helpers (file.hpp): errors that name the file, checked reads
// and writes, byte order.
#include "file.hpp"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <system_error>
#include <vector>

namespace pixflow::io::detail {

// ---- errors and files ------------------------------------------------------------------------

void fail_read(const std::string& path, const std::string& what) {
    throw UserError("cannot read '" + path + "': " + what);
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

OutFile::OutFile(const std::string& path, bool update) : m_path(path) {
    m_file = std::fopen(path.c_str(), update ? "r+b" : "wb");
    if (!m_file) fail_write(path, errno_text(errno));
}

void OutFile::seek(std::uint64_t pos) {
    if (pos > std::uint64_t(std::numeric_limits<long>::max()) || std::fseek(m_file, long(pos), SEEK_SET) != 0)
        fail_write(m_path, "cannot seek to offset " + std::to_string(pos) + ": " + errno_text(errno));
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

void write_band(const std::string& path, const std::string& header, int height, int row0, const ImageView& src,
                RowPlace at, bool swap_bytes) {
    PIXFLOW_INTERNAL_CHECK(row0 >= 0 && src.height >= 0 && row0 + src.height <= height,
                           "io: a band of rows outside the image");
    OutFile f(path, /*update=*/row0 > 0);
    if (row0 == 0) f.write(header);
    const std::size_t rb = src.row_bytes();
    std::vector<unsigned char> swapped(swap_bytes ? rb : 0);
    // the band's rows lie one after the other in the file, in one order or the other: one seek
    const std::uint64_t first = std::min(at(row0, height), at(row0 + src.height - 1, height));
    if (src.height > 0) f.seek(header.size() + first * rb);
    const bool reversed = src.height > 1 && at(row0, height) > at(row0 + 1, height);
    for (int k = 0; k < src.height; ++k) {
        const unsigned char* row = src.row<unsigned char>(reversed ? src.height - 1 - k : k);
        if (swap_bytes) {
            std::memcpy(swapped.data(), row, rb);
            byteswap_samples(swapped.data(), src.row_samples(), dtype_size(src.dtype));
            row = swapped.data();
        }
        f.write(row, rb);
    }
    f.close();
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

void check_pixel_limit(const std::string& path, std::int64_t width, std::int64_t height,
                       std::int64_t max_pixels) {
    // width, height < 2^31: the product fits in 63 bits.
    if (max_pixels <= 0 || width * height <= max_pixels) return;
    fail_read(path, "its header claims " + std::to_string(width) + "x" + std::to_string(height) + " = " +
                        std::to_string(width * height) + " pixels, more than max_pixels = " +
                        std::to_string(max_pixels) +
                        "; if the file is trusted, raise the limit (--set NODE.max_pixels=N, or "
                        "--max-pixels N for every load; 0: no limit)");
}

std::string one_line(const std::string& text, const std::string& path, std::size_t max_chars) {
    std::string cleaned = text;
    if (!path.empty())
        for (const std::string quote : {" (\"" + path + "\")", "(\"" + path + "\")"})
            for (std::size_t at; (at = cleaned.find(quote)) != std::string::npos;) cleaned.erase(at, quote.size());
    std::string out, previous;
    std::size_t dropped = 0;
    std::size_t pos = 0;
    while (pos <= cleaned.size()) {
        std::size_t end = cleaned.find_first_of("\r\n", pos);
        if (end == std::string::npos) end = cleaned.size();
        std::string line;
        for (std::size_t k = pos; k < end; ++k) {
            const unsigned char c = static_cast<unsigned char>(cleaned[k]);
            const bool blank = c == ' ' || c == '\t' || c == '\v' || c == '\f';
            if (blank) {
                if (!line.empty() && line.back() != ' ') line += ' ';
            } else
                line += c < 0x20 || c == 0x7F ? '?' : char(c);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        pos = end + 1;
        if (line.empty() || line == previous) continue;
        previous = line;
        if (dropped || (out.size() + line.size() + 2 > max_chars && !out.empty())) {
            ++dropped; // the first that does not fit, and all after it
            continue;
        }
        if (!out.empty()) out += "; ";
        out += line.size() > max_chars ? line.substr(0, max_chars) + "..." : line;
    }
    if (dropped) out += "; ... (" + std::to_string(dropped) + " more)";
    return out;
}

void expect_header(const std::string& path, const Header& want, const Header& now) {
    if (now.width != want.width || now.height != want.height || now.channels != want.channels ||
        now.dtype != want.dtype)
        fail_read(path, "the file changed since its header was read (now " + std::to_string(now.width) + "x" +
                            std::to_string(now.height) + ", " + std::to_string(now.channels) + " channels, " +
                            dtype_name(now.dtype) + ")");
}

} // namespace pixflow::io::detail
