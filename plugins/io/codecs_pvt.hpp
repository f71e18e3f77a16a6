// codecs_pvt.hpp: what the format files of the io plugin share; not part of codecs.hpp.
#pragma once

#include "codecs.hpp"

#include <pixflow/error.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace pixflow::io::detail {

/// "cannot read 'path': what" as a user error.
[[noreturn]] void fail_read(const std::string& path, const std::string& what);
/// "cannot write 'path': what" (an I/O failure, so PF_ERR_RUNTIME unless said otherwise).
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

// ---- per format: header, decode into dst (shape already checked), encode -------------------
// Netpbm P5/P6 (.pgm .ppm .pnm)
Header pnm_read_header(InFile& f);
void pnm_read(InFile& f, const Header& h, const ImageView& dst);
void pnm_write(const std::string& path, const ImageView& src);
/// True when the file starts with a Netpbm magic other than P5/P6 (P1..P4: plain or bitmap).
bool pnm_is_other_variant(const std::string& path);

// Portable float map (.pfm)
Header pfm_read_header(InFile& f);
void pfm_read(InFile& f, const Header& h, const ImageView& dst);
void pfm_write(const std::string& path, const ImageView& src);

// NumPy (.npy)
Header npy_read_header(InFile& f);
void npy_read(InFile& f, const Header& h, const ImageView& dst);
void npy_write(const std::string& path, const ImageView& src);

#ifdef PIXFLOW_WITH_OIIO
// OpenImageIO, for every other extension
Header oiio_read_header(const std::string& path);
void oiio_read(const std::string& path, const Header& h, const ImageView& dst);
void oiio_write(const std::string& path, const ImageView& src);
/// True when OpenImageIO has a writer for this file name.
bool oiio_can_write(const std::string& path);
#endif

} // namespace pixflow::io::detail
