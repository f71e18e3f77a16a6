// file.hpp: what the format files of the io plugin share: errors that name the file, checked
// file access and byte order. The bottom layer: it knows no format and no codec table.
#pragma once

#include "codecs.hpp"

#include <pixflow/error.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace pixflow::io::detail {

/// "cannot read 'path': what", the user's error (a missing, corrupt or truncated file).
[[noreturn]] void fail_read(const std::string& path, const std::string& what);
/// "cannot write 'path': what": an I/O failure (PF_ERR_RUNTIME), or the user's error when the
/// status says so.
[[noreturn]] void fail_write(const std::string& path, const std::string& what,
                             pf_status status = PF_ERR_RUNTIME);

/// A file open for reading, with its size known up front so that a header's claims can be
/// checked against it before anything is allocated or read.
class InFile {
  public:
    explicit InFile(const std::string& path);
    ~InFile();
    InFile(const InFile&) = delete;
    InFile& operator=(const InFile&) = delete;

    const std::string& path() const { return m_path; }
    std::uint64_t size() const { return m_size; }
    std::uint64_t tell() const { return m_pos; }
    /// Next byte, or -1 at the end of the file.
    int get();
    /// Exactly n bytes or a "truncated" error.
    void read(void* dst, std::size_t n);
    /// Moves to an absolute offset within the file.
    void seek(std::uint64_t pos);
    /// Fails unless `bytes` more bytes are available from the current position.
    void require(std::uint64_t bytes, const char* what);
    [[noreturn]] void fail(const std::string& what) const { fail_read(m_path, what); }

  private:
    std::string m_path;
    std::FILE* m_file = nullptr;
    std::uint64_t m_size = 0;
    std::uint64_t m_pos = 0;
};

/// A file open for writing; every write is checked, and close() reports a failed flush.
class OutFile {
  public:
    explicit OutFile(const std::string& path);
    ~OutFile();
    OutFile(const OutFile&) = delete;
    OutFile& operator=(const OutFile&) = delete;

    void write(const void* src, std::size_t n);
    void write(const std::string& s) { write(s.data(), s.size()); }
    void close();

  private:
    std::string m_path;
    std::FILE* m_file = nullptr;
};

/// Reverses the bytes of each of `n` samples of `size` bytes, in place.
void byteswap_samples(void* data, std::size_t n, std::size_t size);

constexpr bool host_is_little_endian = std::endian::native == std::endian::little;

/// width * height * channels * sample size, or a read error when it does not fit in 63 bits.
std::uint64_t image_bytes(const InFile& f, std::uint64_t w, std::uint64_t h, std::uint64_t c,
                          std::size_t sample_size);

/// Fails unless width x height is within max_pixels (0: no limit): the message names the claimed
/// size, the limit and how to raise it.
void check_pixel_limit(const std::string& path, std::int64_t width, std::int64_t height,
                       std::int64_t max_pixels);

/// `text` as one line: each line break and run of blanks becomes one separator ("; " between
/// lines), a line repeating the previous one is dropped, ` ("path")` quotes of the file's own
/// name are dropped, and the lines from the first that would pass `max_chars` are counted, not
/// kept ("; ... (3 more)").
std::string one_line(const std::string& text, const std::string& path = "", std::size_t max_chars = 400);

/// Fails (the file changed since its header was read) unless `now` is `want`.
void expect_header(const std::string& path, const Header& want, const Header& now);

/// A built-in format's header reader and reader, over an InFile, as the codec table's functions
/// of a path: header_of<H> opens the file and reads its header; read_with<H, R> opens it, reads
/// the header again, checks it against `want` and reads the pixels into dst.
/// The built-in formats have no warnings (what they find is an error), so they ignore fail_on;
/// and their headers allocate nothing, so codecs.cpp's limit check after them suffices.
template <Header (*H)(InFile&)> Header header_of(const std::string& path, const ReadOptions&) {
    InFile f(path);
    return H(f);
}
template <Header (*H)(InFile&), void (*R)(InFile&, const Header&, const ImageView&)>
void read_with(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions&) {
    InFile f(path);
    const Header h = H(f);
    expect_header(path, want, h);
    R(f, h, dst);
}

} // namespace pixflow::io::detail
