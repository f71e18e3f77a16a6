// grey_palette.cpp: has_grey_palette (grey_palette.hpp), for BMP and PNG headers.
//
//   BMP: "BM", u32 LE data offset at 10, DIB header size at 14; a 12-byte (OS/2) header has the
//        bit count at 24 and 2^bits BGR entries; a 40-byte or longer one has the bit count at 28,
//        the number of entries at 46 (0: 2^bits) and BGRx entries; the palette follows the DIB
//        header.
//   PNG: signature, then chunks (u32 BE length, type, data, CRC): IHDR's colour type is its 10th
//        byte; PLTE holds RGB entries; tRNS gives transparency; IDAT ends the header.
#include "grey_palette.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace pixflow::io::detail {
namespace {

std::uint32_t le32(const unsigned char* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}
std::uint32_t le16(const unsigned char* p) { return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8; }
std::uint32_t be32(const unsigned char* p) {
    return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | std::uint32_t(p[3]);
}

/// Up to `n` bytes from `offset`; fewer at the end of the file.
std::vector<unsigned char> bytes_at(std::ifstream& in, std::uint64_t offset, std::size_t n) {
    std::vector<unsigned char> b(n);
    in.clear();
    in.seekg(std::streamoff(offset));
    in.read(reinterpret_cast<char*>(b.data()), std::streamsize(n));
    b.resize(in ? n : std::size_t(std::max<std::streamsize>(in.gcount(), 0)));
    return b;
}

bool entries_grey(const std::vector<unsigned char>& pal, std::size_t count, std::size_t stride) {
    if (count == 0 || pal.size() < count * stride) return false;
    for (std::size_t k = 0; k < count; ++k) {
        const unsigned char* e = &pal[k * stride];
        if (e[0] != e[1] || e[1] != e[2]) return false;
    }
    return true;
}

bool bmp_grey_palette(std::ifstream& in) {
    const std::vector<unsigned char> h = bytes_at(in, 0, 54);
    if (h.size() < 26 || h[0] != 'B' || h[1] != 'M') return false;
    const std::uint32_t dib = le32(&h[14]);
    std::uint32_t bits = 0, count = 0, stride = 0;
    if (dib == 12) {
        bits = le16(&h[24]);
        count = bits <= 8 ? 1u << bits : 0;
        stride = 3;
    } else if (dib >= 40 && h.size() >= 50) {
        bits = le16(&h[28]);
        count = le32(&h[46]);
        if (count == 0 && bits <= 8) count = 1u << bits;
        stride = 4;
    }
    if (bits < 1 || bits > 8 || count == 0 || count > 256) return false;
    return entries_grey(bytes_at(in, 14 + std::uint64_t(dib), count * stride), count, stride);
}

bool png_grey_palette(std::ifstream& in) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    std::vector<unsigned char> sig = bytes_at(in, 0, 8);
    if (sig.size() < 8 || std::memcmp(sig.data(), signature, 8) != 0) return false;
    std::uint64_t pos = 8;
    bool paletted = false, grey = false;
    for (int chunk = 0; chunk < 1000; ++chunk) { // ancillary chunks before IDAT are few
        const std::vector<unsigned char> head = bytes_at(in, pos, 8);
        if (head.size() < 8) return false;
        const std::uint32_t len = be32(&head[0]);
        const std::string type(reinterpret_cast<const char*>(&head[4]), 4);
        if (type == "IHDR") {
            const std::vector<unsigned char> ihdr = bytes_at(in, pos + 8, 13);
            if (ihdr.size() < 13) return false;
            paletted = ihdr[9] == 3;
            if (!paletted) return false;
        } else if (type == "PLTE") {
            if (!paletted || len % 3 != 0 || len > 768) return false;
            grey = entries_grey(bytes_at(in, pos + 8, len), len / 3, 3);
        } else if (type == "tRNS") {
            return false;
        } else if (type == "IDAT" || type == "IEND") {
            return paletted && grey;
        }
        pos += 12 + std::uint64_t(len);
    }
    return false;
}

} // namespace

bool has_grey_palette(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    const std::vector<unsigned char> magic = bytes_at(in, 0, 2);
    if (magic.size() < 2) return false;
    if (magic[0] == 'B' && magic[1] == 'M') return bmp_grey_palette(in);
    if (magic[0] == 0x89 && magic[1] == 'P') return png_grey_palette(in);
    return false;
}

} // namespace pixflow::io::detail
