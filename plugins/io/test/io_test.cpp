// Tests of the io plugin (load, save) through the real plugin: round trips of every built-in
// format, file layouts checked byte by byte, corrupt or truncated files, the pixel limit and
// fail_on (hostile files are made here: headers patched, streams cut or flipped), and the
// channel count of paletted images.
#include "../kernels/codecs.hpp"
#include "../kernels/file.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#ifdef PIXFLOW_TEST_WITH_OIIO
#include <OpenImageIO/imageio.h>
#endif

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using pixflow::DType;
using pixflow::testing::fill_random;
using pixflow::testing::Image;
using pixflow::testing::run_op;
using pixflow::testing::TempDir;

const DType all_dtypes[] = {DType::u8,  DType::u16, DType::i16, DType::i32,
                            DType::u32, DType::u64, DType::f32, DType::f64};

template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const std::exception& e) { return e.what(); }
    return "";
}

void save(const Image& im, const std::string& path) { run_op("save", "cpu", {&im}, {{"path", path}}); }

Image load(const std::string& path) {
    auto out = run_op("load", "cpu", {}, {{"path", path}});
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

std::string describe(const Image& im) {
    return std::to_string(im.width) + "x" + std::to_string(im.height) + "x" + std::to_string(im.channels) + " " +
           pixflow::dtype_name(im.dtype);
}

void expect_same(const Image& a, const Image& b) {
    ASSERT_EQ(describe(a), describe(b));
    EXPECT_TRUE(a.bytes == b.bytes) << "pixels differ for " << describe(a);
}

Image random_image(int w, int h, int c, DType d, std::uint32_t seed) {
    Image im = Image::make(w, h, c, d);
    fill_random(im, seed);
    return im;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

/// True when this build reads and writes TIFF (OpenImageIO present; PNG and JPEG may be built in).
bool have_oiio() {
    TempDir dir;
    Image im = Image::make(2, 2, 1, DType::u8);
    return error_of([&] { save(im, dir / "probe.tif"); }).empty();
}

#ifdef PIXFLOW_IO_PNG
constexpr bool k_png = true;
#else
constexpr bool k_png = false;
#endif
#ifdef PIXFLOW_IO_JPEG
constexpr bool k_jpeg = true;
#else
constexpr bool k_jpeg = false;
#endif

/// "built-in formats are ..." as codecs.cpp words it for this build.
std::string builtin_formats() {
    return std::string(".pgm, .ppm, .pnm, .pfm") + (k_png || k_jpeg ? ", .npy" : " and .npy") +
           (k_png && k_jpeg ? ", .png and .jpg"
            : k_png         ? " and .png"
            : k_jpeg        ? " and .jpg"
                            : "");
}

/// First line of a test of an OpenImageIO format: SKIPPED, never passed, without it.
#define REQUIRE_OIIO()                                                                                                 \
    do {                                                                                                               \
        if (!have_oiio()) GTEST_SKIP() << "this build has no OpenImageIO";                                             \
    } while (0)

// ---- round trips ------------------------------------------------------------------------------

TEST(IoNpy, RoundTripsEveryDtypeAndChannelCount) {
    TempDir dir;
    std::uint32_t seed = 1;
    for (DType d : all_dtypes)
        for (int c = 1; c <= 4; ++c) {
            SCOPED_TRACE(std::string(pixflow::dtype_name(d)) + " x" + std::to_string(c));
            Image im = random_image(13, 7, c, d, seed++);
            save(im, dir / "a.npy");
            expect_same(im, load(dir / "a.npy"));
        }
}

TEST(IoPgm, RoundTripsU8AndU16) {
    TempDir dir;
    for (DType d : {DType::u8, DType::u16}) {
        Image im = random_image(11, 6, 1, d, 3);
        save(im, dir / "a.pgm");
        expect_same(im, load(dir / "a.pgm"));
        save(im, dir / "a.pnm");
        expect_same(im, load(dir / "a.pnm"));
    }
}

TEST(IoPpm, RoundTripsU8AndU16) {
    TempDir dir;
    for (DType d : {DType::u8, DType::u16}) {
        Image im = random_image(11, 6, 3, d, 4);
        save(im, dir / "a.ppm");
        expect_same(im, load(dir / "a.ppm"));
    }
}

TEST(IoPfm, RoundTripsOneAndThreeChannels) {
    TempDir dir;
    for (int c : {1, 3}) {
        Image im = random_image(9, 5, c, DType::f32, 5);
        save(im, dir / "a.pfm");
        expect_same(im, load(dir / "a.pfm"));
    }
}

// ---- layouts on disk --------------------------------------------------------------------------

TEST(IoPgm, WritesBigEndianU16WithMaxval65535) {
    TempDir dir;
    Image im = Image::make(2, 1, 1, DType::u16);
    im.at<std::uint16_t>(0, 0) = 0x0102;
    im.at<std::uint16_t>(1, 0) = 0xA0B0;
    save(im, dir / "a.pgm");
    EXPECT_EQ(read_file(dir / "a.pgm"), std::string("P5\n2 1\n65535\n") + std::string("\x01\x02\xA0\xB0", 4));
}

TEST(IoPgm, ReadsCommentsAndKeepsSamplesOfASmallMaxval) {
    TempDir dir;
    write_file(dir / "c.pgm", std::string("P5\n# made by hand\n3 # width\n1\n#maxval next\n1000\n") +
                                  std::string("\x00\x07\x03\xE8\x01\x00", 6));
    Image im = load(dir / "c.pgm");
    ASSERT_EQ(describe(im), "3x1x1 u16");
    EXPECT_EQ(im.at<std::uint16_t>(0, 0), 7);
    EXPECT_EQ(im.at<std::uint16_t>(1, 0), 1000);
    EXPECT_EQ(im.at<std::uint16_t>(2, 0), 256);
}

TEST(IoPfm, StoresRowsBottomToTop) {
    TempDir dir;
    Image im = Image::make(2, 3, 1, DType::f32);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 2; ++x) im.at<float>(x, y) = float(10 * y + x); // asymmetric
    save(im, dir / "a.pfm");
    const std::string bytes = read_file(dir / "a.pfm");
    const std::string header = "Pf\n2 3\n-1.0\n";
    ASSERT_EQ(bytes.size(), header.size() + 6 * 4);
    EXPECT_EQ(bytes.substr(0, header.size()), header);
    float first[2];
    std::memcpy(first, bytes.data() + header.size(), sizeof first);
    EXPECT_EQ(first[0], 20.0f) << "the first stored row must be the bottom one";
    EXPECT_EQ(first[1], 21.0f);
}

TEST(IoPfm, ReadsBigEndianFiles) {
    TempDir dir;
    // 1x2, scale +1 (big-endian); stored bottom row first: bottom = 1.5, top = -2.25.
    write_file(dir / "be.pfm", std::string("Pf\n1 2\n1.0\n") + std::string("\x3F\xC0\x00\x00\xC0\x10\x00\x00", 8));
    Image im = load(dir / "be.pfm");
    ASSERT_EQ(describe(im), "1x2x1 f32");
    EXPECT_EQ(im.at<float>(0, 0), -2.25f);
    EXPECT_EQ(im.at<float>(0, 1), 1.5f);
}

/// A .npy file as NumPy writes it (format 1.0, header padded to 64 bytes).
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data,
                     bool fortran = false) {
    std::string dict =
        "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
    std::size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
    dict.append(total - 10 - dict.size() - 1, ' ');
    dict += '\n';
    std::string pre("\x93NUMPY\x01\x00", 8);
    pre += char(dict.size() & 0xFF);
    pre += char(dict.size() >> 8);
    return pre + dict + data;
}

TEST(IoNpy, ReadsTwoDimensionalArraysAsOneChannel) {
    TempDir dir;
    write_file(dir / "a.npy",
               npy_file("<u2", "(2, 3)", std::string("\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x01", 12)));
    Image im = load(dir / "a.npy");
    ASSERT_EQ(describe(im), "3x2x1 u16");
    EXPECT_EQ(im.at<std::uint16_t>(2, 0), 3);
    EXPECT_EQ(im.at<std::uint16_t>(2, 1), 0x0106);
}

TEST(IoNpy, ReadsBigEndianAndPipeU1) {
    TempDir dir;
    write_file(dir / "be.npy", npy_file(">i2", "(1, 2, 1)", std::string("\xFF\xFE\x01\x00", 4)));
    Image be = load(dir / "be.npy");
    ASSERT_EQ(describe(be), "2x1x1 i16");
    EXPECT_EQ(be.at<std::int16_t>(0, 0), -2);
    EXPECT_EQ(be.at<std::int16_t>(1, 0), 256);
    write_file(dir / "u1.npy", npy_file("|u1", "(1, 1, 3)", "abc"));
    Image u1 = load(dir / "u1.npy");
    ASSERT_EQ(describe(u1), "1x1x3 u8");
    EXPECT_EQ(u1.at<std::uint8_t>(0, 0, 2), 'c');
}

TEST(IoNpy, WritesOneChannelAsTwoDimensionalLittleEndian) {
    TempDir dir;
    Image im = Image::make(3, 2, 1, DType::f32);
    save(im, dir / "a.npy");
    const std::string bytes = read_file(dir / "a.npy");
    ASSERT_GT(bytes.size(), 24u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
    EXPECT_EQ((bytes.size() - 24) % 64, 0u) << "data must start on a 64-byte boundary";
}

// ---- bad files --------------------------------------------------------------------------------

TEST(IoLoad, MissingFileNamesThePath) {
    TempDir dir;
    const std::string path = dir / "nope.pgm";
    const std::string e = error_of([&] { load(path); });
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("no such file"), std::string::npos) << e;
}

TEST(IoLoad, EveryTruncationOfEveryFormatIsAnErrorNamingTheFile) {
    TempDir dir;
    struct Case {
        const char* ext;
        Image im;
    };
    std::vector<Case> cases = {{".pgm", random_image(3, 2, 1, DType::u16, 1)},
                               {".ppm", random_image(3, 2, 3, DType::u8, 2)},
                               {".pfm", random_image(3, 2, 3, DType::f32, 3)},
                               {".npy", random_image(3, 2, 4, DType::f64, 4)}};
    for (const Case& c : cases) {
        const std::string good = dir / (std::string("good") + c.ext);
        save(c.im, good);
        const std::string full = read_file(good);
        const std::string bad = dir / (std::string("cut") + c.ext);
        for (std::size_t n = 0; n < full.size(); ++n) {
            write_file(bad, full.substr(0, n));
            const std::string e = error_of([&] { load(bad); });
            EXPECT_NE(e.find(bad), std::string::npos)
                << c.ext << " cut to " << n << " of " << full.size() << " bytes: '" << e << "'";
        }
    }
}

TEST(IoLoad, CorruptHeadersAreErrorsNamingTheFile) {
    TempDir dir;
    struct Case {
        const char* name;
        std::string bytes;
        const char* says;
    };
    const std::string px(64, '\x10');
    const std::vector<Case> cases = {
        {"magic.pgm", "P9\n1 1\n255\n" + px, "P5 or P6"},
        {"width.pgm", "P5\n-3 1\n255\n" + px, "width"},
        {"maxval0.pgm", "P5\n1 1\n0\n" + px, "maxval"},
        {"maxval.ppm", "P6\n1 1\n70000\n" + px, "maxval"},
        {"huge.ppm", "P6\n100000 100000\n255\n" + px, "truncated"},
        {"vast.ppm", "P6\n2000000000 2000000000\n65535\n" + px, "too many"},
        {"scale.pfm", "PF\n1 1\n0.0\n" + px, "scale"},
        {"magic.pfm", "PX\n1 1\n-1.0\n" + px, "PFM"},
        {"magic.npy", "\x93NUMPX\x01\x00" + px, ".npy"},
        {"dict.npy", npy_file("<u1", "(2, 2", px), "corrupt .npy header"},
        {"descr.npy", npy_file("<c8", "(2, 2)", px), "unsupported .npy dtype '<c8'"},
        {"int64.npy", npy_file("<i8", "(2, 2)", px), "accepted"},
        {"rank.npy", npy_file("<u1", "(4,)", px), "not an image"},
        {"channels.npy", npy_file("<u1", "(2, 2, 5)", px), "5 channels"},
        {"fortran.npy", npy_file("<u1", "(2, 2)", px, true), "Fortran"},
        {"huge.npy", npy_file("<f8", "(100000, 100000, 4)", px), "truncated"},
        {"empty.npy", npy_file("<u1", "(0, 3)", px), "empty"},
        {"version.npy", std::string("\x93NUMPY\x07\x00", 8) + px, "version"},
    };
    for (const Case& c : cases) {
        const std::string path = dir / c.name;
        write_file(path, c.bytes);
        const std::string e = error_of([&] { load(path); });
        EXPECT_NE(e.find(path), std::string::npos) << c.name << ": '" << e << "'";
        EXPECT_NE(e.find(c.says), std::string::npos) << c.name << ": '" << e << "'";
    }
}

// ---- save's checks ----------------------------------------------------------------------------

TEST(IoSave, RefusesAFormatThatCannotHoldTheImage) {
    TempDir dir;
    struct Case {
        const char* file;
        int channels;
        DType dtype;
        const char* says;
    };
    const std::vector<Case> cases = {
        {"a.pgm", 3, DType::u8, "cannot save u8 with 3 channels as .pgm; accepted: u8 or u16, 1 channel"},
        {"a.ppm", 3, DType::f32,
         "cannot save f32 with 3 channels as .ppm; accepted: u8 or u16, 3 channels (use convert), "
         "or save as .npy/.pfm"},
        {"a.pfm", 1, DType::u8,
         "cannot save u8 with 1 channel as .pfm; accepted: f32, 1 or 3 channels (use convert), or "
         "save as .npy/.pgm"},
        {"a.pfm", 4, DType::f32, "accepted: f32, 1 or 3 channels"},
    };
    for (const Case& c : cases) {
        Image im = Image::make(4, 4, c.channels, c.dtype);
        const std::string e = error_of([&] { save(im, dir / c.file); });
        EXPECT_NE(e.find(c.says), std::string::npos) << c.file << ": '" << e << "'";
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir.path)) << "a refused save must write nothing";
}

TEST(IoSave, PngNamesWhatItAccepts) {
    TempDir dir;
    Image im = Image::make(4, 4, 3, DType::f32);
    const std::string e = error_of([&] { save(im, dir / "a.png"); });
    if (have_oiio() || k_png)
        EXPECT_NE(e.find("cannot save f32 with 3 channels as .png; accepted: u8 or u16, 1 to 4 channels "
                         "(use convert), or save as .npy/.pfm"),
                  std::string::npos)
            << e;
    else
        EXPECT_NE(e.find("OpenImageIO"), std::string::npos) << e;
}

TEST(IoSave, WritesExactlyOneFile) {
    TempDir dir;
    Image im = random_image(5, 4, 3, DType::u8, 9);
    save(im, dir / "only.ppm");
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path))
        names.push_back(entry.path().filename().string());
    EXPECT_EQ(names, std::vector<std::string>{"only.ppm"});
}

// ---- OpenImageIO formats ----------------------------------------------------------------------

TEST(IoOiio, WithoutOpenImageIOOtherFormatsAreAClearError) {
    if (have_oiio()) GTEST_SKIP() << "this build has OpenImageIO; the other IoOiio tests cover it";
    TempDir dir;
    write_file(dir / "a.tif", "II*\0");
    for (const std::string& e : {error_of([&] { load(dir / "a.tif"); }),
                                 error_of([&] { save(Image::make(2, 2, 3, DType::u8), dir / "b.tif"); })}) {
        EXPECT_NE(e.find(".tif files need OpenImageIO"), std::string::npos) << e;
        EXPECT_NE(e.find(builtin_formats()), std::string::npos) << e;
    }
}

TEST(IoOiio, RoundTripsLosslessFormatsInTheirNativeDtype) {
    REQUIRE_OIIO();
    TempDir dir;
    struct Case {
        const char* ext;
        int channels;
        DType dtype;
    };
    const std::vector<Case> cases = {{".png", 1, DType::u8},  {".png", 4, DType::u8},  {".png", 2, DType::u16},
                                     {".png", 3, DType::u16}, {".tif", 3, DType::f32}, {".tif", 1, DType::i16},
                                     {".tif", 4, DType::f64}, {".exr", 4, DType::f32}};
    std::uint32_t seed = 20;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.ext) + " " + pixflow::dtype_name(c.dtype) + " x" + std::to_string(c.channels));
        Image im = random_image(10, 7, c.channels, c.dtype, seed++);
        // RGBA with some fully transparent pixels: colours must survive (no premultiplication)
        if (c.channels == 4 && c.dtype == DType::u8) im.at<std::uint8_t>(0, 0, 3) = 0;
        const std::string path = dir / (std::string("a") + c.ext);
        save(im, path);
        expect_same(im, load(path));
    }
}

TEST(IoOiio, JpegRoundTripIsClose) {
    REQUIRE_OIIO();
    TempDir dir;
    Image im = Image::make(16, 16, 3, DType::u8);
    for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 16; ++x)
            for (int c = 0; c < 3; ++c) im.at<std::uint8_t>(x, y, c) = std::uint8_t(8 * x + 4 * c + 2 * y);
    save(im, dir / "a.jpg");
    Image back = load(dir / "a.jpg");
    ASSERT_EQ(describe(back), describe(im));
    double err = 0;
    for (std::size_t k = 0; k < im.samples(); ++k) err += std::abs(im.get(k) - back.get(k));
    EXPECT_LT(err / double(im.samples()), 4.0);
}

} // namespace

// ---- the codecs on their own, without pixflow
// ----------------------------------------------------

namespace {

TEST(IoCodecs, WriteAndReadThroughPaddedViewsInEveryBuiltInFormat) {
    TempDir dir;
    const Image im = random_image(23, 11, 1, DType::u16, 4);
    for (const char* name : {"a.pgm", "a.npy"}) {
        const std::string path = dir / name;
        pixflow::io::write_image(path, im.view());
        const pixflow::io::Header h = pixflow::io::read_header(path);
        ASSERT_EQ(h.width, 23);
        ASSERT_EQ(h.height, 11);
        ASSERT_EQ(h.channels, 1);
        ASSERT_EQ(h.dtype, DType::u16);
        // Rows 100 bytes apart: the codec must honour the view's pitch.
        std::vector<std::byte> padded(100 * 11);
        pixflow::ImageView v = im.view();
        v.pitch = 100;
        v.data = padded.data();
        pixflow::io::read_image(path, v);
        for (int y = 0; y < 11; ++y)
            EXPECT_EQ(std::memcmp(v.row<std::uint16_t>(y), &im.at<std::uint16_t>(0, y), 46), 0) << name << " row " << y;
    }
}

TEST(IoCodecs, ANameWithoutExtensionListsTheFormats) {
    const std::string e = error_of([] { pixflow::io::read_header("/tmp/no-extension"); });
    EXPECT_NE(e.find("no extension to choose a format by; built-in formats are " + builtin_formats()),
              std::string::npos)
        << e;
}

} // namespace

// ---- limits, corrupt files, palettes ------------------------------------------------------------
//
// The hostile files are made here from valid ones: a header patched to claim a huge size, a
// stream cut short, entropy-coded bytes flipped. Each test finishes in well under a second:
// nothing is allocated or decoded at the claimed size.

namespace {

using pixflow::testing::run_pixflow;

Image load_with(const std::string& path, const std::map<std::string, std::string>& more) {
    std::map<std::string, std::string> params = more;
    params["path"] = path;
    auto out = run_op("load", "cpu", {}, params);
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

std::string be32(std::uint32_t v) { return {char(v >> 24), char(v >> 16 & 0xFF), char(v >> 8 & 0xFF), char(v & 0xFF)}; }

std::uint32_t crc32(const std::string& bytes) { // PNG's CRC (ISO 3309), bit by bit
    std::uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : bytes) {
        c ^= b;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

std::uint32_t adler32(const std::string& bytes) {
    std::uint32_t a = 1, b = 0;
    for (unsigned char x : bytes) {
        a = (a + x) % 65521;
        b = (b + a) % 65521;
    }
    return b << 16 | a;
}

std::string png_chunk(const std::string& type, const std::string& data) {
    return be32(std::uint32_t(data.size())) + type + data + be32(crc32(type + data));
}

/// A PNG written by hand: `scanlines` (each a filter byte, then the packed samples) in one stored
/// (uncompressed) deflate block, so no zlib is needed to make it.
std::string png_file(std::uint32_t w, std::uint32_t h, int depth, int colour, const std::string& scanlines,
                     const std::string& plte = "", const std::string& trns = "") {
    std::string ihdr = be32(w) + be32(h) + char(depth) + char(colour) + std::string(3, '\0');
    const std::size_t n = scanlines.size();
    std::string zlib = std::string("\x78\x01\x01", 3) + char(n & 0xFF) + char(n >> 8) + char(~n & 0xFF) +
                       char((~n >> 8) & 0xFF) + scanlines + be32(adler32(scanlines));
    std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr);
    if (!plte.empty()) png += png_chunk("PLTE", plte);
    if (!trns.empty()) png += png_chunk("tRNS", trns);
    return png + png_chunk("IDAT", zlib) + png_chunk("IEND", "");
}

/// A BMP (BITMAPINFOHEADER) of `bits` per pixel: palette entries as RGB triples, rows of
/// indices top to bottom.
std::string bmp_file(int w, int bits, const std::vector<std::array<int, 3>>& palette,
                     const std::vector<std::vector<int>>& rows) {
    auto le32 = [](std::uint32_t v) { return std::string{char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; };
    auto le16 = [](std::uint32_t v) { return std::string{char(v), char(v >> 8)}; };
    const std::size_t row_bytes = (std::size_t(w) * bits + 31) / 32 * 4;
    std::string data;
    for (auto r = rows.rbegin(); r != rows.rend(); ++r) { // bottom row first
        std::string row(row_bytes, '\0');
        for (int x = 0; x < w; ++x) {
            const std::size_t bit = std::size_t(x) * bits;
            row[bit / 8] = char(row[bit / 8] | (*r)[std::size_t(x)] << (8 - bits - bit % 8));
        }
        data += row;
    }
    std::string pal;
    for (const auto& e : palette) pal += std::string{char(e[2]), char(e[1]), char(e[0]), '\0'};
    const std::uint32_t offset = 14 + 40 + std::uint32_t(pal.size());
    return "BM" + le32(offset + std::uint32_t(data.size())) + le32(0) + le32(offset) + le32(40) + le32(w) +
           le32(std::uint32_t(rows.size())) + le16(1) + le16(bits) + le32(0) + le32(std::uint32_t(data.size())) +
           le32(2835) + le32(2835) + le32(std::uint32_t(palette.size())) + le32(0) + pal + data;
}

/// The offset of the first byte after the segment with `marker` (0xC0 SOF0...) of a JPEG file, and
/// that segment's offset.
std::pair<std::size_t, std::size_t> jpeg_segment(const std::string& jpg, std::initializer_list<int> markers) {
    std::size_t i = 2;
    while (i + 4 <= jpg.size() && static_cast<unsigned char>(jpg[i]) == 0xFF) {
        const int m = static_cast<unsigned char>(jpg[i + 1]);
        const std::size_t len =
            std::size_t(static_cast<unsigned char>(jpg[i + 2])) << 8 | static_cast<unsigned char>(jpg[i + 3]);
        for (int want : markers)
            if (m == want) return {i, i + 2 + len};
        i += 2 + len;
    }
    return {std::string::npos, std::string::npos};
}

/// A noisy RGB image: JPEG keeps much entropy-coded data for it.
Image noise(int w, int h, int c = 3) { return random_image(w, h, c, DType::u8, 77); }

/// Patches the width and height of a little-endian TIFF's first IFD.
std::string patch_tiff_size(std::string tif, std::uint32_t w, std::uint32_t h) {
    auto u16 = [&](std::size_t at) {
        return unsigned(static_cast<unsigned char>(tif[at])) | unsigned(static_cast<unsigned char>(tif[at + 1])) << 8;
    };
    auto u32 = [&](std::size_t at) { return u16(at) | u16(at + 2) << 16; };
    EXPECT_EQ(tif.substr(0, 4), std::string("II*\0", 4));
    const std::size_t ifd = u32(4);
    for (unsigned k = 0; k < u16(ifd); ++k) {
        const std::size_t e = ifd + 2 + 12 * k;
        const unsigned tag = u16(e), type = u16(e + 2);
        if (tag != 256 && tag != 257) continue;
        const std::uint32_t v = tag == 256 ? w : h;
        tif[e + 8] = char(v);
        tif[e + 9] = char(v >> 8);
        if (type == 4) { // LONG; SHORT holds the low half
            tif[e + 10] = char(v >> 16);
            tif[e + 11] = char(v >> 24);
        }
    }
    return tif;
}

/// Standard error, file descriptor 2, sent to a file while alive.
class StderrToFile {
  public:
    explicit StderrToFile(const std::string& path) {
        std::fflush(stderr);
        m_saved = ::dup(2);
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(fd, 2);
        ::close(fd);
    }
    ~StderrToFile() {
        std::fflush(stderr);
        ::dup2(m_saved, 2);
        ::close(m_saved);
    }

  private:
    int m_saved = -1;
};

std::string pipeline_loading(const std::string& path, const std::string& out) {
    return "[pipeline]\nname = \"t\"\n[nodes.src]\nop = \"load\"\npath = \"" + path +
           "\"\n[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"" + out + "\"\n";
}

// -- the pixel limit

TEST(IoLimits, AHeaderOverMaxPixelsIsRefusedNamingTheSizeTheLimitAndHowToRaiseIt) {
    TempDir dir;
    const std::string path = dir / "a.pgm";
    save(random_image(64, 64, 1, DType::u8, 1), path);
    const std::string e = error_of([&] { load_with(path, {{"max_pixels", "4095"}}); });
    for (const char* says : {"cannot read '", "64x64 = 4096 pixels", "max_pixels = 4095", "--set NODE.max_pixels=N",
                             "--max-pixels N", "0: no limit"})
        EXPECT_NE(e.find(says), std::string::npos) << says << " in '" << e << "'";
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_EQ(describe(load_with(path, {{"max_pixels", "4096"}})), "64x64x1 u8") << "the limit itself is allowed";
    EXPECT_EQ(describe(load_with(path, {{"max_pixels", "0"}})), "64x64x1 u8") << "0 is no limit";
}

TEST(IoLimits, TheDefaultIsTwoToThe28Pixels) {
    EXPECT_EQ(pixflow::io::default_max_pixels, 268435456);
    auto r = run_pixflow("describe load");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("268435456"), std::string::npos) << r.out;
}

TEST(IoLimits, ValidateRefusesAnOverLimitHeaderOfABuiltInFormat) {
    TempDir dir;
    save(random_image(64, 64, 1, DType::u8, 1), dir / "a.pgm");
    write_file(dir / "p.toml", pipeline_loading(dir / "a.pgm", dir / "b.pgm"));
    auto r = run_pixflow("validate " + dir / "p.toml" + " --set src.max_pixels=100");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("64x64 = 4096 pixels, more than max_pixels = 100"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "b.pgm"));
}

TEST(IoLimits, ValidateRefusesHugePngJpegAndTiffHeadersWithoutDecoding) {
    REQUIRE_OIIO();
    TempDir dir;
    // PNG: a valid 1x1 file whose IHDR (with its CRC) claims 10^6 x 10^6; the pixel data is 2 bytes.
    write_file(dir / "huge.png", png_file(1000000, 1000000, 8, 0, std::string(2, '\0')));
    // JPEG: a valid 16x16 file whose SOF claims 20000 x 20000.
    save(noise(16, 16), dir / "small.jpg");
    std::string jpg = read_file(dir / "small.jpg");
    const std::size_t sof = jpeg_segment(jpg, {0xC0, 0xC1, 0xC2}).first;
    ASSERT_NE(sof, std::string::npos);
    jpg.replace(sof + 5, 4, std::string{char(20000 >> 8), char(20000 & 0xFF), char(20000 >> 8), char(20000 & 0xFF)});
    write_file(dir / "huge.jpg", jpg);
    // TIFF: a valid 16x16 file whose IFD claims 60000 x 60000 (the 1,130-byte file of issue 15).
    save(noise(16, 16, 1), dir / "small.tif");
    write_file(dir / "huge.tif", patch_tiff_size(read_file(dir / "small.tif"), 60000, 60000));

    for (const char* name : {"huge.png", "huge.jpg", "huge.tif"}) {
        SCOPED_TRACE(name);
        const std::string path = dir / name;
        write_file(dir / "p.toml", pipeline_loading(path, dir / "out.npy"));
        auto r = run_pixflow("validate " + dir / "p.toml");
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("max_pixels = 268435456"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("--max-pixels N"), std::string::npos) << r.err;
        // and run, through the operator, refuses it the same way, before allocating
        const std::string e = error_of([&] { load(path); });
        EXPECT_NE(e.find("max_pixels = 268435456"), std::string::npos) << e;
    }
    EXPECT_NE(error_of([&] { load(dir / "huge.png"); }).find("1000000x1000000 = 1000000000000 pixels"),
              std::string::npos);
    EXPECT_NE(error_of([&] { load(dir / "huge.jpg"); }).find("20000x20000 = 400000000 pixels"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir / "out.npy"));
}

TEST(IoLimits, TheCodecReadsNoPixelOfAnOverLimitFile) {
    // read_image itself (not only infer) refuses, before touching dst: a caller that skipped
    // read_header cannot be made to decode past the limit.
    TempDir dir;
    save(random_image(8, 8, 1, DType::u8, 2), dir / "a.pgm");
    Image im = Image::make(8, 8, 1, DType::u8);
    pixflow::io::ReadOptions o;
    o.max_pixels = 63;
    const std::string e = error_of([&] { pixflow::io::read_image(dir / "a.pgm", im.view(), o); });
    EXPECT_NE(e.find("8x8 = 64 pixels, more than max_pixels = 63"), std::string::npos) << e;
    EXPECT_EQ(im.bytes, std::vector<std::byte>(64, std::byte{0}));
}

// -- short files of the built-in formats

TEST(IoLoad, AShortBuiltInFileNamesTheBytesExpectedAndPresent) {
    TempDir dir;
    save(random_image(3, 2, 1, DType::u16, 1), dir / "a.pgm"); // 12 bytes of pixels
    std::string pgm = read_file(dir / "a.pgm");
    write_file(dir / "cut.pgm", pgm.substr(0, pgm.size() - 1));
    std::string e = error_of([&] { load(dir / "cut.pgm"); });
    EXPECT_NE(e.find("truncated: the pixel data needs 12 bytes after the header, the file has 11"), std::string::npos)
        << e;
    save(random_image(4, 2, 1, DType::f64, 1), dir / "a.npy"); // 64 bytes of data
    std::string npy = read_file(dir / "a.npy");
    write_file(dir / "cut.npy", npy.substr(0, npy.size() - 10));
    e = error_of([&] { load_with(dir / "cut.npy", {{"fail_on", "none"}}); });
    EXPECT_NE(e.find("the array data needs 64 bytes after the header, the file has 54"), std::string::npos)
        << "fail_on does not relax the built-in formats: " << e;
}

// -- corrupt files through OpenImageIO

TEST(IoCorrupt, TruncatedBaselineAndProgressiveJpegsFailNamingTheFileAndTheReason) {
    REQUIRE_OIIO();
#ifdef PIXFLOW_TEST_WITH_OIIO
    // `jpg` cut in the middle of its entropy-coded data.
    auto cut_in_scan = [](const std::string& jpg) {
        const std::size_t scan = jpeg_segment(jpg, {0xDA}).second;
        EXPECT_NE(scan, std::string::npos);
        return jpg.substr(0, scan + (jpg.size() - scan) / 2);
    };
    TempDir dir;
    const Image im = noise(64, 64);
    save(im, dir / "base.jpg");
    { // progressive: save has no option for it, so OpenImageIO writes it directly
        OIIO::ImageSpec spec(64, 64, 3, OIIO::TypeDesc::UINT8);
        spec.attribute("jpeg:progressive", 1);
        auto out = OIIO::ImageOutput::create(dir / "prog.jpg");
        ASSERT_TRUE(out && out->open(dir / "prog.jpg", spec));
        ASSERT_TRUE(out->write_image(OIIO::TypeDesc::UINT8, im.bytes.data()));
        ASSERT_TRUE(out->close());
    }
    ASSERT_NE(read_file(dir / "prog.jpg").find("\xFF\xC2"), std::string::npos) << "SOF2: progressive";
    for (const char* name : {"base.jpg", "prog.jpg"}) {
        SCOPED_TRACE(name);
        EXPECT_EQ(describe(load(dir / name)), "64x64x3 u8") << "the intact file loads";
        const std::string cut = dir / (std::string("cut-") + name);
        write_file(cut, cut_in_scan(read_file(dir / name)));
        const std::string e = error_of([&] { load(cut); });
        EXPECT_NE(e.find("cannot read '" + cut + "'"), std::string::npos) << e;
        EXPECT_NE(e.find("Premature end of JPEG file"), std::string::npos) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
        // fail_on = "none" (and "error": libjpeg's complaint is a warning) loads it
        EXPECT_EQ(describe(load_with(cut, {{"fail_on", "none"}})), "64x64x3 u8");
        EXPECT_EQ(describe(load_with(cut, {{"fail_on", "error"}})), "64x64x3 u8");
    }
#endif
}

TEST(IoCorrupt, AJpegWithFlippedEntropyCodedBytesFails) {
    REQUIRE_OIIO();
    TempDir dir;
    const Image im = noise(64, 64);
    save(im, dir / "a.jpg");
    std::string jpg = read_file(dir / "a.jpg");
    const std::size_t scan = jpeg_segment(jpg, {0xDA}).second;
    ASSERT_NE(scan, std::string::npos);
    // Every byte from the 100th of the scan to the EOI marker: the decoder loses its place in the
    // Huffman codes, so it ends either short of data or with bytes left over, which libjpeg
    // reports as "Corrupt JPEG data". No 0xFF is made or unmade: the markers stay where they are.
    for (std::size_t k = scan + 100; k + 2 < jpg.size(); ++k)
        if (static_cast<unsigned char>(jpg[k]) != 0xFF && (static_cast<unsigned char>(jpg[k]) ^ 0x5A) != 0xFF)
            jpg[k] = char(jpg[k] ^ 0x5A);
    write_file(dir / "flip.jpg", jpg);
    const std::string e = error_of([&] { load(dir / "flip.jpg"); });
    EXPECT_NE(e.find("cannot read '" + dir / "flip.jpg" + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("Corrupt JPEG data"), std::string::npos) << e;
    EXPECT_NE(e.find("fail_on"), std::string::npos) << "says how to load it anyway: " << e;
    const Image relaxed = load_with(dir / "flip.jpg", {{"fail_on", "none"}});
    EXPECT_EQ(describe(relaxed), "64x64x3 u8");
}

TEST(IoCorrupt, ATruncatedTiffFails) {
    REQUIRE_OIIO();
    TempDir dir;
    save(noise(64, 64), dir / "a.tif");
    const std::string tif = read_file(dir / "a.tif");
    write_file(dir / "cut.tif", tif.substr(0, tif.size() / 2));
    const std::string e = error_of([&] { load(dir / "cut.tif"); });
    EXPECT_NE(e.find("cannot read '" + dir / "cut.tif" + "'"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
    EXPECT_GT(e.size(), std::string("cannot read '" + dir / "cut.tif" + "': ").size() + 10) << "and why: " << e;
    // Let through, the strips libtiff could not read are 0, not what the buffer held before.
    for (const char* relax : {"error", "none"}) {
        const Image im = load_with(dir / "cut.tif", {{"fail_on", relax}});
        ASSERT_EQ(describe(im), "64x64x3 u8") << relax;
        bool bottom_zero = true;
        for (int x = 0; x < 64; ++x)
            for (int c = 0; c < 3; ++c) bottom_zero = bottom_zero && im.at<std::uint8_t>(x, 63, c) == 0;
        EXPECT_TRUE(bottom_zero) << relax;
    }
}

TEST(IoCorrupt, ATruncatedPngFailsUnlessFailOnIsNoneAndPrintsNothing) {
    REQUIRE_OIIO();
    TempDir dir;
    save(noise(64, 64), dir / "a.png");
    const std::string png = read_file(dir / "a.png");
    write_file(dir / "cut.png", png.substr(0, png.size() / 2));
    std::string e, e_error;
    Image relaxed;
    {
        StderrToFile quiet(dir / "stderr.txt");
        e = error_of([&] { load(dir / "cut.png"); });
        e_error = error_of([&] { load_with(dir / "cut.png", {{"fail_on", "error"}}); });
        relaxed = load_with(dir / "cut.png", {{"fail_on", "none"}});
    }
    // Only the host's warning for fail_on = "none" (through its log), never libpng's own text.
    const std::string printed = read_file(dir / "stderr.txt");
    EXPECT_EQ(printed.find("libpng"), std::string::npos) << printed;
    EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 1) << printed;
    EXPECT_NE(printed.find("partly decoded: "), std::string::npos) << printed;
    for (const std::string& m : {e, e_error}) {
        EXPECT_NE(m.find("cannot read '" + dir / "cut.png" + "'"), std::string::npos) << m;
        EXPECT_NE(m.find("PNG read error"), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
    }
    EXPECT_EQ(describe(relaxed), "64x64x3 u8");
}

TEST(IoCorrupt, TheCliPrintsOneLineForACorruptPng) {
    REQUIRE_OIIO();
    TempDir dir;
    save(noise(64, 64), dir / "a.png");
    const std::string png = read_file(dir / "a.png");
    write_file(dir / "cut.png", png.substr(0, png.size() / 2));
    write_file(dir / "p.toml", pipeline_loading(dir / "cut.png", dir / "out.npy"));
    // --backend cpu: a build without CUDA (the sanitizer build) would add a note on the backend
    auto r = run_pixflow("run " + dir / "p.toml" + " --backend cpu");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("libpng error"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(dir / "cut.png"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "out.npy"));
}

// -- paletted images: as many channels as their pixels have

TEST(IoPalette, OneBitBmpAndOneBitPngLoadAsOneChannelWithTheSamePixels) {
    REQUIRE_OIIO();
    TempDir dir;
    const std::vector<std::vector<int>> rows = {{0, 1, 1, 0, 1, 0, 0, 1, 1}, {1, 0, 0, 0, 1, 1, 1, 0, 0}};
    write_file(dir / "bw.bmp", bmp_file(9, 1, {{0, 0, 0}, {255, 255, 255}}, rows));
    std::string scanlines;
    for (const auto& r : rows) {
        scanlines += '\0'; // filter: none
        unsigned bits[2] = {0, 0};
        for (int x = 0; x < 9; ++x) bits[x / 8] |= unsigned(r[std::size_t(x)]) << (7 - x % 8);
        scanlines += char(bits[0]);
        scanlines += char(bits[1]);
    }
    write_file(dir / "bw.png", png_file(9, 2, 1, 0, scanlines));
    const Image bmp = load(dir / "bw.bmp"), png = load(dir / "bw.png");
    ASSERT_EQ(describe(bmp), "9x2x1 u8");
    ASSERT_EQ(describe(png), "9x2x1 u8");
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 9; ++x) {
            const int want = rows[std::size_t(y)][std::size_t(x)] ? 255 : 0;
            EXPECT_EQ(bmp.at<std::uint8_t>(x, y), want) << x << "," << y;
            EXPECT_EQ(png.at<std::uint8_t>(x, y), want) << x << "," << y;
        }
}

TEST(IoPalette, GreyPalettesLoadAsOneChannelAndColourOnesAsThree) {
    REQUIRE_OIIO();
    TempDir dir;
    const std::vector<std::array<int, 3>> greys = {{0, 0, 0}, {60, 60, 60}, {130, 130, 130}, {255, 255, 255}};
    const std::vector<std::array<int, 3>> colours = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    const std::vector<std::vector<int>> rows = {{0, 1, 2, 3}};
    write_file(dir / "grey4.bmp", bmp_file(4, 4, greys, rows));
    write_file(dir / "colour4.bmp", bmp_file(4, 4, colours, rows));
    auto plte = [](const std::vector<std::array<int, 3>>& p) {
        std::string s;
        for (const auto& e : p) s += std::string{char(e[0]), char(e[1]), char(e[2])};
        return s;
    };
    const std::string scan = std::string("\0\x1B", 2); // filter none; 2-bit indices 0 1 2 3
    write_file(dir / "grey.png", png_file(4, 1, 2, 3, scan, plte(greys)));
    write_file(dir / "colour.png", png_file(4, 1, 2, 3, scan, plte(colours)));
    write_file(dir / "alpha.png", png_file(4, 1, 2, 3, scan, plte(greys), std::string("\xFF\x80", 2)));
    for (const char* name : {"grey4.bmp", "grey.png"}) {
        const Image im = load(dir / name);
        ASSERT_EQ(describe(im), "4x1x1 u8") << name;
        for (int x = 0; x < 4; ++x) EXPECT_EQ(im.at<std::uint8_t>(x, 0), greys[std::size_t(x)][0]) << name;
    }
    for (const char* name : {"colour4.bmp", "colour.png"}) {
        const Image im = load(dir / name);
        ASSERT_EQ(describe(im), "4x1x3 u8") << name;
        EXPECT_EQ(im.at<std::uint8_t>(1, 0, 0), 255) << name;
        EXPECT_EQ(im.at<std::uint8_t>(2, 0, 1), 255) << name;
        EXPECT_EQ(im.at<std::uint8_t>(3, 0, 2), 255) << name;
    }
    EXPECT_EQ(describe(load(dir / "alpha.png")), "4x1x4 u8") << "transparency keeps RGBA";
}

TEST(IoCodecs, DecoderMessagesBecomeOneLine) {
    using pixflow::io::detail::one_line;
    EXPECT_EQ(one_line("JPEG error: Premature end (\"/x/a.jpg\")\n\nsecond\r\nsecond\n  third\tpart  ", "/x/a.jpg"),
              "JPEG error: Premature end; second; third part");
    const std::string many =
        one_line(std::string(300, 'a') + "\n" + std::string(300, 'b') + "\n" + std::string(5, 'c'));
    EXPECT_EQ(many, std::string(300, 'a') + "; ... (2 more)");
    EXPECT_EQ(one_line("bell\a"), "bell?");
}

} // namespace

// ---- PNG by rows (issue 16): a decoder kept open between bands ----------------------------------

TEST(IoPngRows, BandsInAnyOrderGiveTheWholeReadsRows) {
    REQUIRE_OIIO();
    TempDir dir;
    for (DType d : {DType::u8, DType::u16})
        for (int c : {1, 2, 4}) {
            const Image im = random_image(23, 61, c, d, 7u + std::uint32_t(c));
            save(im, dir / "a.png");
            const Image whole = load(dir / "a.png");
            expect_same(whole, im);
            // in order with overlaps (a stencil's halos), then backwards, then the same band twice:
            // the kept rows, a cursor opened again from the top, and one reused without decoding
            const std::vector<std::pair<int, int>> bands = {{0, 10}, {6, 14}, {16, 30}, {26, 61}, {50, 61}, {40, 55},
                                                            {0, 3},  {3, 20}, {3, 20},  {20, 21}, {21, 61}};
            for (auto [y0, y1] : bands) {
                SCOPED_TRACE(describe(im) + " rows " + std::to_string(y0) + ".." + std::to_string(y1));
                Image band = Image::make(23, y1 - y0, c, d);
                pixflow::io::read_rows(dir / "a.png", 61, y0, band.view());
                const std::size_t rb = std::size_t(23) * c * pixflow::dtype_size(d);
                EXPECT_TRUE(
                    std::equal(band.bytes.begin(), band.bytes.end(), whole.bytes.begin() + std::ptrdiff_t(y0 * rb)));
            }
        }
}

TEST(IoPngRows, AFileChangedBetweenBandsIsReadAfresh) {
    REQUIRE_OIIO();
    TempDir dir;
    const Image a = random_image(17, 30, 3, DType::u8, 1), b = random_image(17, 30, 3, DType::u8, 2);
    save(a, dir / "f.png");
    Image band = Image::make(17, 10, 3, DType::u8);
    pixflow::io::read_rows(dir / "f.png", 30, 0, band.view()); // a cursor now waits at row 10
    save(b, dir / "g.png");
    std::filesystem::rename(dir / "g.png", dir / "f.png"); // another inode under the same name
    pixflow::io::read_rows(dir / "f.png", 30, 10, band.view());
    const std::size_t rb = 17 * 3;
    EXPECT_TRUE(std::equal(band.bytes.begin(), band.bytes.end(), b.bytes.begin() + std::ptrdiff_t(10 * rb)))
        << "rows of the old file";
}

// ---- large bands: split over threads (file.cpp's read_band / write_band, chunks of 4 MiB) -------

TEST(IoLargeBands, FilesOfSeveralChunksHoldTheLayoutOfEachFormatAndReadBackByAnyBand) {
    TempDir dir;
    struct Big {
        const char* name;
        int w, h, c;
        DType d;
    };
    // 10 to 12 MiB each: three chunks, the last one short
    for (const Big& b : {Big{"a.npy", 2048, 1900, 3, DType::u8}, Big{"a.pgm", 2048, 2600, 1, DType::u16},
                         Big{"a.pfm", 1024, 1000, 3, DType::f32}}) {
        SCOPED_TRACE(b.name);
        const Image im = random_image(b.w, b.h, b.c, b.d, 11);
        const std::string path = dir / b.name;
        save(im, path);
        // the file against a layout made here: header, then rows (PGM: big-endian; PFM: bottom up)
        const std::size_t rb = std::size_t(b.w) * b.c * pixflow::dtype_size(b.d);
        std::string body(im.bytes.size(), '\0');
        for (int y = 0; y < b.h; ++y) {
            const int fy = std::string(b.name) == "a.pfm" ? b.h - 1 - y : y;
            std::memcpy(body.data() + std::size_t(fy) * rb, im.bytes.data() + std::size_t(y) * rb, rb);
        }
        if (b.d == DType::u16)
            for (std::size_t k = 0; k + 1 < body.size(); k += 2) std::swap(body[k], body[k + 1]);
        const std::string file = read_file(path);
        ASSERT_GE(file.size(), body.size());
        EXPECT_TRUE(file.substr(file.size() - body.size()) == body) << "the rows are not where the format puts them";
        expect_same(load(path), im);
        // bands that cut chunks anywhere, into a padded view (rows 40 bytes apart more than needed)
        for (auto [y0, y1] : {std::pair{0, b.h}, std::pair{3, b.h - 2}, std::pair{b.h / 2, b.h / 2 + 1}}) {
            SCOPED_TRACE(std::to_string(y0) + ".." + std::to_string(y1));
            std::vector<unsigned char> buf((rb + 40) * std::size_t(y1 - y0));
            pixflow::ImageView v;
            v.width = b.w;
            v.height = y1 - y0;
            v.channels = b.c;
            v.dtype = b.d;
            v.pitch = std::int64_t(rb + 40);
            v.data = buf.data();
            pixflow::io::read_rows(path, b.h, y0, v);
            bool same = true;
            for (int y = y0; y < y1 && same; ++y)
                same = std::memcmp(v.row<unsigned char>(y - y0), im.bytes.data() + std::size_t(y) * rb, rb) == 0;
            EXPECT_TRUE(same);
            Image packed = Image::make(b.w, y1 - y0, b.c, b.d);
            pixflow::io::read_rows(path, b.h, y0, packed.view());
            EXPECT_TRUE(
                std::equal(packed.bytes.begin(), packed.bytes.end(), im.bytes.begin() + std::ptrdiff_t(y0 * rb)));
        }
        // by bands of a padded source, written in order: the same file
        const std::string again = dir / (std::string("b") + (b.name + 1));
        for (int y0 = 0; y0 < b.h; y0 += 777) {
            const int n = std::min(777, b.h - y0);
            std::vector<unsigned char> buf((rb + 40) * std::size_t(n));
            pixflow::ImageView v;
            v.width = b.w;
            v.height = n;
            v.channels = b.c;
            v.dtype = b.d;
            v.pitch = std::int64_t(rb + 40);
            v.data = buf.data();
            for (int y = 0; y < n; ++y)
                std::memcpy(v.row<unsigned char>(y), im.bytes.data() + std::size_t(y0 + y) * rb, rb);
            pixflow::io::write_rows(again, b.h, y0, v);
        }
        EXPECT_TRUE(read_file(again) == file);
    }
}

TEST(IoLargeBands, AFileCutInsideALaterChunkIsTruncated) {
    TempDir dir;
    const Image im = random_image(4096, 3000, 1, DType::u8, 5); // 12 MiB: three chunks
    save(im, dir / "a.npy");
    std::filesystem::resize_file(dir / "a.npy", std::filesystem::file_size(dir / "a.npy") - 100);
    const std::string e = error_of([&] { load(dir / "a.npy"); });
    EXPECT_NE(e.find("cannot read '" + dir / "a.npy" + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

// ---- PNG and JPEG built in (libpng, libjpeg): the same pixels as OpenImageIO's path -------------
//
// "OpenImageIO's path" is the io plugin's module, pixflow_io_oiio.so, called as the plugin called
// it before PNG and JPEG were built in (its row still reads and writes them). Files are made here
// by the built-in writers, by the module's, and by libpng and libjpeg directly for what save never
// writes (palettes, low bit depths, transparency, interlacing, progressive, CMYK).

#if defined(PIXFLOW_IO_PNG)
#include <png.h>
#endif
#if defined(PIXFLOW_IO_JPEG)
#include <cstdio>
#include <jpeglib.h>
#endif
#ifdef PIXFLOW_TEST_WITH_OIIO
#include "oiio_module.h"

#include <dlfcn.h>
#endif

namespace {

#ifdef PIXFLOW_TEST_WITH_OIIO
/// The module's table, loaded from the build tree; null when it cannot be.
const pf_io_oiio_module* oiio_module() {
    static const pf_io_oiio_module* m = []() -> const pf_io_oiio_module* {
        const std::string path = (pixflow::testing::plugin_dir() / "io" / "pixflow_io_oiio.so").string();
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) return nullptr;
        auto entry = reinterpret_cast<pf_io_oiio_entry_fn>(dlsym(h, PIXFLOW_IO_OIIO_ENTRY));
        return entry ? entry() : nullptr;
    }();
    return m;
}

struct ModuleError {
    std::string text;
    pf_io_oiio_sink sink{this, [](void* ctx, int, int, const char* t) { static_cast<ModuleError*>(ctx)->text = t; }};
};

/// `path` read through OpenImageIO (the module), as load read it before.
Image oiio_load(const std::string& path, int fail_on = 0) {
    const pf_io_oiio_module* m = oiio_module();
    EXPECT_NE(m, nullptr);
    ModuleError err;
    pf_io_oiio_options o{0, fail_on, nullptr};
    pf_io_oiio_header h{};
    if (m->read_header(path.c_str(), &o, &h, &err.sink) != PF_IO_OIIO_OK) throw std::runtime_error(err.text);
    Image im = Image::make(h.width, h.height, h.channels, DType(h.dtype));
    const pf_image d = im.view().to_c();
    if (m->read(path.c_str(), &h, &d, &o, &err.sink) != PF_IO_OIIO_OK) throw std::runtime_error(err.text);
    return im;
}

/// `im` written through OpenImageIO (the module), as save wrote it before.
void oiio_save(const Image& im, const std::string& path) {
    ModuleError err;
    const pf_image s = im.view().to_c();
    ASSERT_EQ(oiio_module()->write(path.c_str(), &s, &err.sink), PF_IO_OIIO_OK) << err.text;
}
#endif

#define REQUIRE_PNG()                                                                                                  \
    do {                                                                                                               \
        if (!k_png) GTEST_SKIP() << "this build has no libpng";                                                        \
    } while (0)
#define REQUIRE_JPEG()                                                                                                 \
    do {                                                                                                               \
        if (!k_jpeg) GTEST_SKIP() << "this build has no libjpeg";                                                      \
    } while (0)

/// Loads `path` with the built-in codec and, where OpenImageIO is built, expects its path to give
/// the same image, bit for bit.
Image expect_load_as_oiio(const std::string& path) {
    const Image native = load(path);
#ifdef PIXFLOW_TEST_WITH_OIIO
    SCOPED_TRACE(path);
    expect_same(oiio_load(path), native);
#endif
    return native;
}

TEST(IoPng, RoundTripsEveryDtypeAndChannelCount) {
    REQUIRE_PNG();
    TempDir dir;
    for (DType d : {DType::u8, DType::u16})
        for (int c = 1; c <= 4; ++c) {
            SCOPED_TRACE(describe(Image::make(1, 1, c, d)));
            Image im = random_image(37, 23, c, d, 100u + std::uint32_t(c));
            if (c == 4) im.at<std::uint8_t>(0, 0, 3) = 0; // transparent: the colour survives
            save(im, dir / "a.png");
            expect_same(im, expect_load_as_oiio(dir / "a.png"));
        }
}

TEST(IoPng, SixteenBitSamplesAreStoredBigEndian) {
    REQUIRE_PNG();
    TempDir dir;
    // a file made by hand (stored deflate): one row of gray 0x0102, 0xFF00
    write_file(dir / "a.png", png_file(2, 1, 16, 0, std::string("\0\x01\x02\xFF\x00", 5)));
    const Image im = load(dir / "a.png");
    ASSERT_EQ(describe(im), "2x1x1 u16");
    EXPECT_EQ(im.at<std::uint16_t>(0, 0), 0x0102);
    EXPECT_EQ(im.at<std::uint16_t>(1, 0), 0xFF00);
    // and save writes what a reader of big-endian samples reads back
    save(im, dir / "b.png");
    expect_same(im, expect_load_as_oiio(dir / "b.png"));
}

#ifdef PIXFLOW_IO_PNG
/// A PNG written by libpng itself: `packed` rows of `depth`-bit samples of colour type `colour`,
/// with a palette of `palette` (RGB triples) and a tRNS chunk when given.
void write_png(const std::string& path, int w, int h, int depth, int colour, bool interlaced,
               const std::vector<unsigned char>& packed, const std::string& palette = "",
               const std::string& trns = "") {
    std::FILE* fp = std::fopen(path.c_str(), "wb");
    ASSERT_NE(fp, nullptr);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, fp);
    png_set_IHDR(png, info, png_uint_32(w), png_uint_32(h), depth, colour,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    std::vector<png_color> pal;
    for (std::size_t k = 0; k + 2 < palette.size(); k += 3)
        pal.push_back(png_color{png_byte(palette[k]), png_byte(palette[k + 1]), png_byte(palette[k + 2])});
    if (!pal.empty()) png_set_PLTE(png, info, pal.data(), int(pal.size()));
    png_color_16 key{};
    key.gray = 3;
    key.red = 200;
    key.green = 100;
    key.blue = 50;
    if (!trns.empty()) {
        if (colour == PNG_COLOR_TYPE_PALETTE)
            png_set_tRNS(png, info, reinterpret_cast<png_const_bytep>(trns.data()), int(trns.size()), nullptr);
        else
            png_set_tRNS(png, info, nullptr, 0, &key);
    }
    png_write_info(png, info);
    const std::size_t rb = png_get_rowbytes(png, info);
    std::vector<png_bytep> rows;
    for (int y = 0; y < h; ++y) rows.push_back(const_cast<png_bytep>(packed.data() + std::size_t(y) * rb));
    png_write_image(png, rows.data());
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    std::fclose(fp);
}
#endif

TEST(IoPng, ReadsPalettesLowBitDepthsTransparencyAndInterlacingAsOpenImageIODoes) {
    REQUIRE_PNG();
#ifdef PIXFLOW_IO_PNG
    TempDir dir;
    struct Case {
        const char* name;
        int depth, colour;
        bool interlaced;
        const char* palette; // "grey", "colour" or ""
        bool trns;
        const char* loads; // the shape load gives (OpenImageIO's, kept)
    };
    const int w = 13, h = 11;
    const std::vector<Case> cases = {
        {"gray1", 1, PNG_COLOR_TYPE_GRAY, false, "", false, "13x11x1 u8"},
        {"gray2", 2, PNG_COLOR_TYPE_GRAY, false, "", false, "13x11x1 u8"},
        {"gray4", 4, PNG_COLOR_TYPE_GRAY, true, "", false, "13x11x1 u8"},
        {"gray8trns", 8, PNG_COLOR_TYPE_GRAY, false, "", true, "13x11x2 u8"},
        {"gray16trns", 16, PNG_COLOR_TYPE_GRAY, false, "", true, "13x11x2 u16"},
        {"ga16", 16, PNG_COLOR_TYPE_GRAY_ALPHA, true, "", false, "13x11x2 u16"},
        {"rgb8trns", 8, PNG_COLOR_TYPE_RGB, false, "", true, "13x11x4 u8"},
        {"rgb16", 16, PNG_COLOR_TYPE_RGB, true, "", false, "13x11x3 u16"},
        {"rgba8", 8, PNG_COLOR_TYPE_RGB_ALPHA, true, "", false, "13x11x4 u8"},
        {"rgba16", 16, PNG_COLOR_TYPE_RGB_ALPHA, false, "", false, "13x11x4 u16"},
        {"pal1grey", 1, PNG_COLOR_TYPE_PALETTE, false, "grey", false, "13x11x1 u8"},
        {"pal2colour", 2, PNG_COLOR_TYPE_PALETTE, false, "colour", false, "13x11x3 u8"},
        {"pal4grey", 4, PNG_COLOR_TYPE_PALETTE, true, "grey", false, "13x11x1 u8"},
        {"pal8colour", 8, PNG_COLOR_TYPE_PALETTE, true, "colour", false, "13x11x3 u8"},
        {"pal8trns", 8, PNG_COLOR_TYPE_PALETTE, false, "grey", true, "13x11x4 u8"},
        {"pal4colourtrns", 4, PNG_COLOR_TYPE_PALETTE, true, "colour", true, "13x11x4 u8"},
    };
    std::uint32_t seed = 300;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        static const int samples[] = {1, 0, 3, 1, 2, 0, 4}; // per colour type
        const std::size_t rb = (std::size_t(w) * std::size_t(samples[c.colour]) * std::size_t(c.depth) + 7) / 8;
        Image bytes = random_image(int(rb), h, 1, DType::u8, seed++);
        std::string palette, trns;
        for (int k = 0; k < 1 << std::min(c.depth, 8); ++k) {
            const int v = (k * 37 + 11) % 256;
            palette += std::string(c.palette) == "grey" ? std::string(3, char(v))
                                                        : std::string{char(v), char(k), char(255 - v)};
            trns += char((k * 91) % 256);
        }
        const std::string path = dir / (std::string(c.name) + ".png");
        write_png(path, w, h, c.depth, c.colour, c.interlaced,
                  std::vector<unsigned char>(reinterpret_cast<unsigned char*>(bytes.bytes.data()),
                                             reinterpret_cast<unsigned char*>(bytes.bytes.data()) + bytes.bytes.size()),
                  c.palette[0] ? palette : "", c.trns ? trns : "");
        EXPECT_EQ(describe(expect_load_as_oiio(path)), c.loads);
        if (c.interlaced)
            EXPECT_NE(pixflow::io::whole_read_reason(path).find("interlaced"), std::string::npos);
        else
            EXPECT_EQ(pixflow::io::whole_read_reason(path), "");
    }
#endif
}

TEST(IoPng, WritesTheSameFileAsOpenImageIO) {
    REQUIRE_PNG();
    REQUIRE_OIIO();
#ifdef PIXFLOW_TEST_WITH_OIIO
    TempDir dir;
    for (DType d : {DType::u8, DType::u16})
        for (int c = 1; c <= 4; ++c) {
            const Image im = random_image(64, 40, c, d, 7u * std::uint32_t(c));
            SCOPED_TRACE(describe(im));
            save(im, dir / "native.png");
            oiio_save(im, dir / "oiio.png");
            EXPECT_TRUE(read_file(dir / "native.png") == read_file(dir / "oiio.png"));
        }
#endif
}

TEST(IoPng, TruncatedAndCorruptFilesAreErrorsNamingTheFile) {
    REQUIRE_PNG();
    TempDir dir;
    save(noise(20, 12), dir / "a.png");
    const std::string png = read_file(dir / "a.png");
    const std::size_t iend = png.size() - 12; // the IEND chunk, which load does not need
    for (std::size_t n = 0; n < iend; n += (n < 64 ? 1 : 7)) {
        write_file(dir / "cut.png", png.substr(0, n));
        const std::string e = error_of([&] { load(dir / "cut.png"); });
        EXPECT_NE(e.find("cannot read '" + dir / "cut.png" + "'"), std::string::npos) << n << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
    }
    std::string flipped = png;
    flipped[png.find("IDAT") + 20] ^= 0x40; // the chunk's CRC no longer matches
    write_file(dir / "crc.png", flipped);
    const std::string e = error_of([&] { load(dir / "crc.png"); });
    EXPECT_NE(e.find("cannot read '" + dir / "crc.png" + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("PNG read error"), std::string::npos) << e;
    write_file(dir / "not.png", "GIF89a" + std::string(40, '\0'));
    EXPECT_NE(error_of([&] { load(dir / "not.png"); }).find("not a PNG file"), std::string::npos);
}

TEST(IoPng, ATruncatedFileUnderFailOnNoneGivesTheRowsDecodedThenZeros) {
    REQUIRE_PNG();
    TempDir dir;
    // 192 KiB: libpng reads the stream 8 KiB at a time, so half the file gives many rows
    const Image im = noise(256, 256);
    save(im, dir / "a.png");
    const std::string png = read_file(dir / "a.png");
    write_file(dir / "cut.png", png.substr(0, png.size() / 2));
    const Image whole = load_with(dir / "cut.png", {{"fail_on", "none"}});
    ASSERT_EQ(describe(whole), "256x256x3 u8");
    const std::size_t rb = 256 * 3;
    int decoded = 0; // rows equal to the image's, then only zeros
    while (decoded < 256 &&
           std::memcmp(&whole.bytes[rb * std::size_t(decoded)], &im.bytes[rb * std::size_t(decoded)], rb) == 0)
        ++decoded;
    EXPECT_GT(decoded, 64);
    EXPECT_LT(decoded, 256);
    EXPECT_TRUE(std::all_of(whole.bytes.begin() + std::ptrdiff_t(rb * std::size_t(decoded)), whole.bytes.end(),
                            [](std::byte b) { return b == std::byte{0}; }));
    // and by rows, the same
    Image band = Image::make(256, 256, 3, DType::u8);
    pixflow::io::ReadOptions none;
    none.fail_on = pixflow::io::FailOn::none;
    pixflow::io::read_rows(dir / "cut.png", 256, 0, band.view(), none);
    expect_same(whole, band);
}

TEST(IoJpeg, RoundTripsGrayAndRgbClosely) {
    REQUIRE_JPEG();
    TempDir dir;
    for (int c : {1, 3}) {
        Image im = Image::make(33, 17, c, DType::u8);
        for (int y = 0; y < 17; ++y)
            for (int x = 0; x < 33; ++x)
                for (int k = 0; k < c; ++k)
                    im.at<std::uint8_t>(x, y, k) = std::uint8_t(3 * x + 2 * y + 40 * k); // smooth, no wrap
        save(im, dir / "a.jpg");
        const Image back = expect_load_as_oiio(dir / "a.jpg");
        ASSERT_EQ(describe(back), describe(im));
        double err = 0;
        for (std::size_t k = 0; k < im.samples(); ++k) err += std::abs(im.get(k) - back.get(k));
        EXPECT_LT(err / double(im.samples()), 3.0) << c << " channels";
    }
}

TEST(IoJpeg, DecodesFilesOfEitherWriterAsOpenImageIODoes) {
    REQUIRE_JPEG();
    REQUIRE_OIIO();
#ifdef PIXFLOW_TEST_WITH_OIIO
    TempDir dir;
    for (int c : {1, 3})
        for (auto [w, h] : {std::pair{64, 48}, std::pair{37, 23}, std::pair{1, 1}, std::pair{255, 3}}) {
            const Image im = random_image(w, h, c, DType::u8, std::uint32_t(w * h + c));
            SCOPED_TRACE(describe(im));
            save(im, dir / "native.jpg");
            oiio_save(im, dir / "oiio.jpg");
            EXPECT_TRUE(read_file(dir / "native.jpg") == read_file(dir / "oiio.jpg")) << "the same encoder settings";
            expect_load_as_oiio(dir / "native.jpg");
            // what save never writes: progressive, 4:4:4 and 4:2:2, another quality
            for (const char* kind : {"progressive", "444", "422", "q50"}) {
                if (c == 1 && kind[0] == '4') continue;
                OIIO::ImageSpec spec(w, h, c, OIIO::TypeDesc::UINT8);
                if (kind[0] == 'p') spec.attribute("jpeg:progressive", 1);
                if (kind[0] == '4') spec.attribute("jpeg:subsampling", kind[1] == '4' ? "4:4:4" : "4:2:2");
                if (kind[0] == 'q') spec.attribute("Compression", "jpeg:50");
                const std::string path = dir / (std::string(kind) + ".jpg");
                auto out = OIIO::ImageOutput::create(path);
                ASSERT_TRUE(out && out->open(path, spec));
                ASSERT_TRUE(out->write_image(OIIO::TypeDesc::UINT8, im.bytes.data()));
                ASSERT_TRUE(out->close());
                SCOPED_TRACE(kind);
                expect_load_as_oiio(path);
            }
        }
#endif
}

TEST(IoJpeg, ATruncatedFileFailsAndUnderFailOnNoneGivesOpenImageIOsPixels) {
    REQUIRE_JPEG();
    TempDir dir;
    save(noise(48, 40), dir / "a.jpg");
    const std::string jpg = read_file(dir / "a.jpg");
    for (std::size_t n = 0; n < jpg.size(); n += (n < 700 ? 13 : 101)) {
        write_file(dir / "cut.jpg", jpg.substr(0, n));
        const std::string e = error_of([&] { load(dir / "cut.jpg"); });
        EXPECT_NE(e.find("cannot read '" + dir / "cut.jpg" + "'"), std::string::npos) << n << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
    }
    write_file(dir / "cut.jpg", jpg.substr(0, jpg.size() * 2 / 3));
    EXPECT_NE(error_of([&] { load(dir / "cut.jpg"); }).find("Premature end of JPEG file"), std::string::npos);
    const Image relaxed = load_with(dir / "cut.jpg", {{"fail_on", "none"}});
#ifdef PIXFLOW_TEST_WITH_OIIO
    expect_same(oiio_load(dir / "cut.jpg", 2), relaxed);
#endif
}

TEST(IoJpeg, CmykFilesAreLeftToOpenImageIOOrRefusedClearly) {
    REQUIRE_JPEG();
#ifdef PIXFLOW_IO_JPEG
    TempDir dir;
    const std::string path = dir / "cmyk.jpg";
    const Image im = random_image(16, 8, 4, DType::u8, 5);
    {
        jpeg_compress_struct c{};
        jpeg_error_mgr e{};
        c.err = jpeg_std_error(&e);
        jpeg_create_compress(&c);
        std::FILE* fp = std::fopen(path.c_str(), "wb");
        jpeg_stdio_dest(&c, fp);
        c.image_width = 16;
        c.image_height = 8;
        c.input_components = 4;
        c.in_color_space = JCS_CMYK;
        jpeg_set_defaults(&c);
        jpeg_start_compress(&c, TRUE);
        for (int y = 0; y < 8; ++y) {
            JSAMPROW row = const_cast<JSAMPROW>(reinterpret_cast<const JSAMPLE*>(&im.at<std::uint8_t>(0, y)));
            jpeg_write_scanlines(&c, &row, 1);
        }
        jpeg_finish_compress(&c);
        jpeg_destroy_compress(&c);
        std::fclose(fp);
    }
    if (have_oiio()) {
        EXPECT_EQ(describe(expect_load_as_oiio(path)), "16x8x3 u8") << "OpenImageIO converts it to RGB, as before";
    } else {
        const std::string e = error_of([&] { load(path); });
        EXPECT_NE(e.find("cannot read '" + path + "'"), std::string::npos) << e;
        EXPECT_NE(e.find("CMYK"), std::string::npos) << e;
    }
#endif
}

TEST(IoJpeg, SaveRefusesWhatJpegCannotHold) {
    REQUIRE_JPEG();
    TempDir dir;
    const std::string e = error_of([&] { save(Image::make(4, 4, 4, DType::u8), dir / "a.jpg"); });
    EXPECT_NE(e.find("cannot save u8 with 4 channels as .jpg; accepted: u8, 1 or 3 channels"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { save(Image::make(4, 4, 3, DType::u16), dir / "a.jpeg"); }).find("accepted: u8"),
              std::string::npos);
    EXPECT_TRUE(std::filesystem::is_empty(dir.path));
}

TEST(IoPngRows, BandsWrittenInOrderGiveTheWholeWritesFile) {
    REQUIRE_PNG();
    TempDir dir;
    for (DType d : {DType::u8, DType::u16}) {
        const Image im = random_image(29, 50, 3, d, 12);
        save(im, dir / "whole.png");
        const std::size_t rb = std::size_t(29) * 3 * pixflow::dtype_size(d);
        for (int y0 = 0; y0 < 50; y0 += 16) {
            const int n = std::min(16, 50 - y0);
            Image band = Image::make(29, n, 3, d);
            std::memcpy(band.bytes.data(), im.bytes.data() + std::size_t(y0) * rb, std::size_t(n) * rb);
            pixflow::io::write_rows(dir / "bands.png", 50, y0, band.view());
        }
        EXPECT_TRUE(read_file(dir / "bands.png") == read_file(dir / "whole.png"));
    }
}

} // namespace
