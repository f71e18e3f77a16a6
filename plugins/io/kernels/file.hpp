// file.hpp: what the format files of the io plugin share: errors that name the file, checked
// file access and byte order. The bottom layer: it knows no format and no codec table.
#pragma once

#include "codecs.hpp"

#include <pixflow/error.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pixflow::io::detail {

/// "cannot read 'path': what", the user's error (a missing, corrupt or truncated file).
[[noreturn]] void fail_read(const std::string& path, const std::string& what);
/// "cannot write 'path': what": an I/O failure (PF_ERR_RUNTIME), or the user's error when the
/// status says so.
[[noreturn]] void fail_write(const std::string& path, const std::string& what, pf_status status = PF_ERR_RUNTIME);

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
    /// The file descriptor, for read_band's preads (which leave the stream's position alone).
    int fd() const;
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
    /// Creates or truncates `path`; with `update`, opens the existing file to write into it
    /// (a band of rows after the first, written by save in strips).
    explicit OutFile(const std::string& path, bool update = false);
    ~OutFile();
    OutFile(const OutFile&) = delete;
    OutFile& operator=(const OutFile&) = delete;

    void write(const void* src, std::size_t n);
    void write(const std::string& s) { write(s.data(), s.size()); }
    /// Moves to an absolute offset; past the end leaves a gap that later writes fill.
    void seek(std::uint64_t pos);
    void close();

  private:
    std::string m_path;
    std::FILE* m_file = nullptr;
};

/// Reads the rows of dst (dst.height rows of dst.row_bytes() each) from `f`, where they lie one
/// after the other from byte `offset`: top to bottom, or bottom to top when `reversed` (the
/// file's first row is dst's last: PFM). Samples of `swap_size` bytes are byte-swapped (0: none).
/// A large band is split into chunks of rows of about 4 MiB, each read by its own pread, in
/// parallel (TBB), straight into dst's rows; swapping and reversing are done in place, chunk by
/// chunk. A file that ends early is a "truncated" error naming it.
void read_band(const InFile& f, std::uint64_t offset, const ImageView& dst, bool reversed, std::size_t swap_size);

/// Reverses the bytes of each of `n` samples of `size` bytes, in place.
void byteswap_samples(void* data, std::size_t n, std::size_t size);

constexpr bool host_is_little_endian = std::endian::native == std::endian::little;

/// width * height * channels * sample size, or a read error when it does not fit in 63 bits.
std::uint64_t image_bytes(const InFile& f, std::uint64_t w, std::uint64_t h, std::uint64_t c, std::size_t sample_size);

/// Fails unless width x height is within max_pixels (0: no limit): the message names the claimed
/// size, the limit and how to raise it.
void check_pixel_limit(const std::string& path, std::int64_t width, std::int64_t height, std::int64_t max_pixels);

/// `text` as one line: each line break and run of blanks becomes one separator ("; " between
/// lines), a line repeating the previous one is dropped, ` ("path")` quotes of the file's own
/// name are dropped, and the lines from the first that would pass `max_chars` are counted, not
/// kept ("; ... (3 more)").
std::string one_line(const std::string& text, const std::string& path = "", std::size_t max_chars = 400);

/// A decoder's complaints (libpng's, libjpeg's, as one line) judged by options.fail_on, as
/// OpenImageIO's are (codecs.hpp): `gave_up` when the decoder stopped before the last row. Fails
/// when fail_on says so, with how to load the file anyway; else passes them to options.warn,
/// prefixed by `where` ("rows from 10" or ""). Nothing when `complaints` is empty.
void judge_complaints(const std::string& path, const std::string& complaints, bool gave_up, const ReadOptions& options,
                      const std::string& where = "");

/// The device, inode, size and modification time of `path` (a read error when it cannot be
/// stat'ed): what tells a decoder kept open between bands that the file is still the same.
struct FileId {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileId&) const = default;
};
FileId file_id(const std::string& path);
/// The device and inode of `path`, or {0, 0} when there is no such file: what tells an encoder
/// kept open between bands that its file is gone.
std::pair<std::uint64_t, std::uint64_t> inode_of(const std::string& path);

/// The encoders of files written by bands of rows (write_rows), waiting for their next band, keyed
/// by path; shared by every codec that streams its writes (png.cpp, oiio.cpp). Encoder has `path`
/// and the (dev, ino) of the file it opened, so that an encoder whose file is gone or replaced (a
/// run that failed between bands removed its temporary) can be found and closed.
template <class Encoder> class WaitingEncoders {
  public:
    /// The waiting encoder of `path`, or null.
    std::unique_ptr<Encoder> take(const std::string& path) {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (auto it = m_waiting.begin(); it != m_waiting.end(); ++it)
            if ((*it)->path == path) {
                std::unique_ptr<Encoder> e = std::move(*it);
                m_waiting.erase(it);
                return e;
            }
        return nullptr;
    }
    void keep(std::unique_ptr<Encoder> e) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_waiting.push_back(std::move(e));
    }
    /// The waiting encoders whose file is gone or replaced, for the caller to close (outside the
    /// lock).
    std::vector<std::unique_ptr<Encoder>> take_orphans() {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::vector<std::unique_ptr<Encoder>> orphans;
        for (auto it = m_waiting.begin(); it != m_waiting.end();) {
            if (inode_of((*it)->path) != std::pair{(*it)->dev, (*it)->ino}) {
                orphans.push_back(std::move(*it));
                it = m_waiting.erase(it);
            } else
                ++it;
        }
        return orphans;
    }

  private:
    std::mutex m_mutex;
    std::vector<std::unique_ptr<Encoder>> m_waiting;
};

/// Row decoders kept open between bands (a PNG decodes from its top only, so the next band of a
/// file opened again would decode every row above it; png.cpp and oiio.cpp keep one per file
/// instead). A cursor keeps the last rows it gave, for the next band's halo: at most the band, and
/// at most k_kept_rows or k_kept_bytes, whichever is more (a halo of 32 rows on each side at any
/// width; 256 rows of a 65536-wide u8 image). At most k_idle_cursors wait; beyond that the oldest
/// is handed back to be closed (cursors left by a run that failed between bands).
constexpr int k_kept_rows = 64;
constexpr std::size_t k_kept_bytes = std::size_t(16) << 20;
constexpr std::size_t k_idle_cursors = 8;

/// The idle cursors of the process, shared by every codec that reads by rows. Cursor has `id`
/// (the FileId it opened), `next` (the row it gives next), `kept0` (its kept rows are [kept0,
/// next)), `used` (for closing the oldest), and `file_path()` and `file_header()`.
template <class Cursor> class IdleCursors {
  public:
    /// An idle cursor of this file (same path, FileId and header) whose kept rows reach down to
    /// row0, the one furthest down, or null.
    std::unique_ptr<Cursor> take(const std::string& path, const FileId& id, const Header& h, int row0) {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto best = m_idle.end();
        for (auto it = m_idle.begin(); it != m_idle.end(); ++it) {
            const Cursor& c = **it;
            const Header& ch = c.file_header();
            if (c.file_path() != path || !(c.id == id) || ch.width != h.width || ch.height != h.height ||
                ch.channels != h.channels || ch.dtype != h.dtype || c.kept0 > row0)
                continue;
            if (best == m_idle.end() || c.next > (*best)->next) best = it;
        }
        if (best == m_idle.end()) return nullptr;
        std::unique_ptr<Cursor> c = std::move(*best);
        m_idle.erase(best);
        return c;
    }
    /// Keeps `c` for the next band; returns the oldest idle cursor when too many wait, for the
    /// caller to close outside the lock, else null.
    [[nodiscard]] std::unique_ptr<Cursor> give_back(std::unique_ptr<Cursor> c) {
        std::lock_guard<std::mutex> lock(m_mutex);
        c->used = ++m_clock;
        m_idle.push_back(std::move(c));
        if (m_idle.size() <= k_idle_cursors) return nullptr;
        auto oldest = std::min_element(m_idle.begin(), m_idle.end(),
                                       [](const auto& a, const auto& b) { return a->used < b->used; });
        std::unique_ptr<Cursor> out = std::move(*oldest);
        m_idle.erase(oldest);
        return out;
    }

  private:
    std::mutex m_mutex;
    std::vector<std::unique_ptr<Cursor>> m_idle;
    std::uint64_t m_clock = 0;
};

/// Step 1 of a band read through a cursor: copies the rows of [row0, row0 + dst.height) that the
/// cursor kept (the halo above the previous band's end, rows [kept0, next)) into dst.
template <class Cursor> void copy_kept_rows(const Cursor& c, int row0, const ImageView& dst) {
    const std::size_t rb = dst.row_bytes();
    for (int y = row0; y < std::min(row0 + dst.height, c.next); ++y)
        std::memcpy(dst.row<unsigned char>(y - row0), c.kept.data() + std::size_t(y - c.kept0) * rb, rb);
}

/// Step 3: once the decoder has given the band's rows, the cursor keeps the band's last ones for
/// the next band's halo (k_kept_rows or k_kept_bytes, at most the band) and moves on past it.
template <class Cursor> void keep_last_rows(Cursor& c, int row0, const ImageView& dst) {
    const int end = row0 + dst.height;
    if (end < c.next) return;
    const std::size_t rb = dst.row_bytes();
    const int k =
        int(std::min<std::size_t>(std::size_t(dst.height), std::max<std::size_t>(k_kept_rows, k_kept_bytes / rb)));
    c.kept.resize(std::size_t(k) * rb);
    for (int y = 0; y < k; ++y)
        std::memcpy(c.kept.data() + std::size_t(y) * rb, dst.row<unsigned char>(dst.height - k + y), rb);
    c.kept0 = end - k;
    c.next = end;
}

/// Fails (the file changed since its header was read) unless `now` is `want`.
void expect_header(const std::string& path, const Header& want, const Header& now);

/// A built-in format's header reader and reader, over an InFile, as the codec table's functions
/// of a path: header_of<H> opens the file and reads its header; rows_with<H, R> opens it, reads
/// the header again (which checks that the file holds every row the header claims), checks it
/// against `want` and reads rows [row0, row0 + dst.height) into dst; read_with<H, R> reads them
/// all, with the same code. The built-in formats have no warnings (what they find is an error),
/// so they ignore fail_on; and their headers allocate nothing, so codecs.cpp's limit check after
/// them suffices. R reads the header once more from the start when it needs its byte order.
using RowReader = void (*)(InFile&, const Header&, int row0, const ImageView& dst);
template <Header (*H)(InFile&)> Header header_of(const std::string& path, const ReadOptions&) {
    InFile f(path);
    return H(f);
}
template <Header (*H)(InFile&), RowReader R>
void rows_with(const std::string& path, const Header& want, int row0, const ImageView& dst, const ReadOptions&) {
    InFile f(path);
    const Header h = H(f);
    expect_header(path, want, h);
    R(f, h, row0, dst);
}
template <Header (*H)(InFile&), RowReader R>
void read_with(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions& o) {
    rows_with<H, R>(path, want, 0, dst, o);
}

/// A built-in format's writer by rows, as the codec table's functions: the format gives its
/// header's text (which depends on the shape only) and where row y of the whole image lies after
/// it. write_rows_at<T, At> writes src as rows [row0, row0 + src.height) of an image of `height`
/// rows: row0 == 0 creates (truncates) the file and writes the header, a later band opens it and
/// writes at its place; write_at<T, At> writes the whole image, with the same code.
using HeaderText = std::string (*)(int width, int height, int channels, DType dtype);
using RowPlace = std::uint64_t (*)(int y, int height); ///< rows before y's place in the file
void write_band(const std::string& path, const std::string& header, int height, int row0, const ImageView& src,
                RowPlace at, bool swap_bytes);
template <HeaderText T, RowPlace At, bool SwapU16 = false>
void write_rows_at(const std::string& path, int height, int row0, const ImageView& src) {
    write_band(path, T(src.width, height, src.channels, src.dtype), height, row0, src, At,
               SwapU16 && src.dtype == DType::u16 && host_is_little_endian);
}
template <HeaderText T, RowPlace At, bool SwapU16 = false>
void write_at(const std::string& path, const ImageView& src) {
    write_rows_at<T, At, SwapU16>(path, src.height, 0, src);
}
/// Rows top to bottom (.npy, PGM/PPM), and bottom to top (PFM).
inline std::uint64_t top_down(int y, int) { return std::uint64_t(y); }
inline std::uint64_t bottom_up(int y, int height) { return std::uint64_t(height - 1 - y); }

} // namespace pixflow::io::detail
