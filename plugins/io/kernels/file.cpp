// file.cpp: the io plugin's file helpers (file.hpp): errors that name the file, checked reads
// and writes, byte order.
#include "file.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>
#include <vector>

namespace pixflow::io {

// codecs.hpp; here, so that the OpenImageIO module (oiio_module.h), which has no codec table, has it.
std::string extension_of(const std::string& path) {
    std::filesystem::path p(path);
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

} // namespace pixflow::io

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

int InFile::fd() const { return fileno(m_file); }

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

namespace {

/// Rows per chunk of a band split over threads: about 4 MiB of rows. Measured with
/// `scripts/bench-stream.sh --io` (256 MiB in 16 bands of 16 MiB, the 2-core dev machine, loaded;
/// load / save ms, two runs each of two rounds): chunks of 64 KiB 52-77 / 206-252, 256 KiB
/// 40-48 / 157-164, 1 MiB 36-52 / 127-140, 4 MiB 27-57 / 102-128, 16 MiB (a band in one chunk,
/// one thread) 38-66 / 75-1059 (writeback).
int chunk_rows(std::size_t row_bytes) {
    return int(std::max<std::size_t>(1, (std::size_t(4) << 20) / std::max<std::size_t>(row_bytes, 1)));
}

/// Runs body(k0, k1) over chunks of [0, n) rows: in parallel when there are several.
template <class F> void for_chunks(int n, std::size_t row_bytes, F&& body) {
    const int step = chunk_rows(row_bytes);
    const int chunks = (n + step - 1) / step;
    if (chunks <= 1) {
        if (n > 0) body(0, n);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int>(0, chunks, 1), [&](const tbb::blocked_range<int>& r) {
        for (int c = r.begin(); c != r.end(); ++c) body(c * step, std::min(n, (c + 1) * step));
    });
}

void pread_all(const InFile& f, void* dst, std::size_t n, std::uint64_t offset) {
    auto* p = static_cast<unsigned char*>(dst);
    while (n > 0) {
        const ssize_t got = ::pread(f.fd(), p, n, off_t(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) f.fail("read error: " + errno_text(errno));
        if (got == 0)
            f.fail("truncated: the file ends at byte " + std::to_string(offset) +
                   ", before the rows its header claims");
        p += got;
        n -= std::size_t(got);
        offset += std::uint64_t(got);
    }
}

void pwrite_all(const std::string& path, int fd, const void* src, std::size_t n, std::uint64_t offset) {
    const auto* p = static_cast<const unsigned char*>(src);
    while (n > 0) {
        const ssize_t put = ::pwrite(fd, p, n, off_t(offset));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) fail_write(path, errno_text(put < 0 ? errno : EIO));
        p += put;
        n -= std::size_t(put);
        offset += std::uint64_t(put);
    }
}

/// Swaps rows a and b (rb bytes each) through `tmp`.
void swap_rows(unsigned char* a, unsigned char* b, unsigned char* tmp, std::size_t rb) {
    std::memcpy(tmp, a, rb);
    std::memcpy(a, b, rb);
    std::memcpy(b, tmp, rb);
}

/// A file descriptor open for writing, closed (and the close checked) by close().
struct OutFd {
    std::string path;
    int fd = -1;
    OutFd(const std::string& p, bool update) : path(p) {
        fd = ::open(p.c_str(), update ? O_WRONLY : O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0) fail_write(p, errno_text(errno));
    }
    ~OutFd() {
        if (fd >= 0) ::close(fd); // only on an error path: close() already reported
    }
    void close() {
        const int f = fd;
        fd = -1;
        if (::close(f) != 0) fail_write(path, errno_text(errno));
    }
};

} // namespace

void read_band(const InFile& f, std::uint64_t offset, const ImageView& dst, bool reversed, std::size_t swap_size) {
    const std::size_t rb = dst.row_bytes();
    const bool packed = std::size_t(dst.pitch) == rb;
    const int n = dst.height;
    if (n > 0 && offset + std::uint64_t(n) * rb > f.size()) // the header's check, again for the band
        f.fail("truncated: rows end at byte " + std::to_string(offset + std::uint64_t(n) * rb) + ", the file has " +
               std::to_string(f.size()));
    // chunk [k0, k1) of the file's rows: file row k is dst row k, or n - 1 - k when reversed
    for_chunks(n, rb, [&](int k0, int k1) {
        const int m = k1 - k0;
        const int y0 = reversed ? n - k1 : k0; // the chunk's first row in dst
        const std::uint64_t at = offset + std::uint64_t(k0) * rb;
        if (packed) {
            pread_all(f, dst.row<unsigned char>(y0), std::size_t(m) * rb, at);
            if (reversed) {
                std::vector<unsigned char> tmp(rb);
                for (int a = 0, b = m - 1; a < b; ++a, --b)
                    swap_rows(dst.row<unsigned char>(y0 + a), dst.row<unsigned char>(y0 + b), tmp.data(), rb);
            }
        } else {
            for (int k = k0; k < k1; ++k)
                pread_all(f, dst.row<unsigned char>(reversed ? n - 1 - k : k), rb, offset + std::uint64_t(k) * rb);
        }
        if (swap_size > 1)
            for (int y = y0; y < y0 + m; ++y) byteswap_samples(dst.row<unsigned char>(y), dst.row_samples(), swap_size);
    });
}

void write_band(const std::string& path, const std::string& header, int height, int row0, const ImageView& src,
                RowPlace at, bool swap_bytes) {
    PIXFLOW_INTERNAL_CHECK(row0 >= 0 && src.height >= 0 && row0 + src.height <= height,
                           "io: a band of rows outside the image");
    OutFd f(path, /*update=*/row0 > 0);
    if (row0 == 0) pwrite_all(path, f.fd, header.data(), header.size(), 0);
    const std::size_t rb = src.row_bytes();
    const int n = src.height;
    // the band's rows lie one after the other in the file, in one order or the other
    const std::uint64_t first = n > 0 ? std::min(at(row0, height), at(row0 + n - 1, height)) : 0;
    const std::uint64_t offset = header.size() + first * rb;
    const bool reversed = n > 1 && at(row0, height) > at(row0 + 1, height);
    const bool direct = std::size_t(src.pitch) == rb && !reversed && !swap_bytes;
    // chunk [k0, k1) of the file's rows, written by one pwrite: straight from src when its rows
    // are the file's bytes, else through a buffer of the chunk (reordered, byte-swapped)
    for_chunks(n, rb, [&](int k0, int k1) {
        const int m = k1 - k0;
        const std::uint64_t pos = offset + std::uint64_t(k0) * rb;
        if (direct) return pwrite_all(path, f.fd, src.row<unsigned char>(k0), std::size_t(m) * rb, pos);
        const auto buf = std::make_unique_for_overwrite<unsigned char[]>(std::size_t(m) * rb);
        for (int k = k0; k < k1; ++k) {
            unsigned char* row = buf.get() + std::size_t(k - k0) * rb;
            std::memcpy(row, src.row<unsigned char>(reversed ? n - 1 - k : k), rb);
            if (swap_bytes) byteswap_samples(row, src.row_samples(), dtype_size(src.dtype));
        }
        pwrite_all(path, f.fd, buf.get(), std::size_t(m) * rb, pos);
    });
    f.close();
}

void byteswap_samples(void* data, std::size_t n, std::size_t size) {
    auto* p = static_cast<unsigned char*>(data);
    if (size < 2) return;
    for (std::size_t k = 0; k < n; ++k, p += size) std::reverse(p, p + size);
}

std::uint64_t image_bytes(const InFile& f, std::uint64_t w, std::uint64_t h, std::uint64_t c, std::size_t sample_size) {
    // w, h < 2^31 and c <= 4, sample_size <= 8: w*c*size < 2^36, times h < 2^67 may overflow.
    std::uint64_t row = w * c * sample_size;
    if (h != 0 && row > (std::uint64_t(1) << 62) / h)
        f.fail("header claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels, too many to be real");
    return row * h;
}

void check_pixel_limit(const std::string& path, std::int64_t width, std::int64_t height, std::int64_t max_pixels) {
    // width, height < 2^31: the product fits in 63 bits.
    if (max_pixels <= 0 || width * height <= max_pixels) return;
    fail_read(path, "its header claims " + std::to_string(width) + "x" + std::to_string(height) + " = " +
                        std::to_string(width * height) +
                        " pixels, more than max_pixels = " + std::to_string(max_pixels) +
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

void judge_complaints(const std::string& path, const std::string& complaints, bool gave_up, const ReadOptions& options,
                      const std::string& where) {
    if (complaints.empty()) return;
    const std::string at = where.empty() ? "" : where + ": ";
    if (gave_up ? options.fail_on != FailOn::none : options.fail_on == FailOn::warning)
        fail_read(path,
                  at + complaints +
                      (gave_up
                           ? "; the decoder gave up (fail_on = \"none\" loads what it decoded)"
                           : "; the file is corrupt or truncated (fail_on = \"error\" or \"none\" loads it anyway)"));
    if (options.warn)
        options.warn("'" + path + "': " + (where.empty() ? "" : where + " ") +
                     (gave_up ? "partly decoded: " : "decoded despite: ") + complaints + " (fail_on = \"" +
                     (options.fail_on == FailOn::none ? "none" : "error") + "\")");
}

FileId file_id(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail_read(path, "cannot stat it: " + errno_text(errno));
    return FileId{std::uint64_t(st.st_dev), std::uint64_t(st.st_ino), std::uint64_t(st.st_size),
                  std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

std::pair<std::uint64_t, std::uint64_t> inode_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {0, 0};
    return {std::uint64_t(st.st_dev), std::uint64_t(st.st_ino)};
}

} // namespace pixflow::io::detail
