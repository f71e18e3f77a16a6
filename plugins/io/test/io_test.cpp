// Tests of the io plugin (load, save) through the real plugin: round trips of every built-in
// format, file layouts checked byte by byte, and corrupt or truncated files.
#include "../kernels/codecs.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

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

void save(const Image& im, const std::string& path) {
    run_op("save", "cpu", {&im}, {{"path", path}});
}

Image load(const std::string& path) {
    auto out = run_op("load", "cpu", {}, {{"path", path}});
    EXPECT_EQ(out.size(), 1u);
    return out.at(0);
}

std::string describe(const Image& im) {
    return std::to_string(im.width) + "x" + std::to_string(im.height) + "x" +
           std::to_string(im.channels) + " " + pixflow::dtype_name(im.dtype);
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

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

/// True when this build reads and writes PNG (OpenImageIO present).
bool have_oiio() {
    TempDir dir;
    Image im = Image::make(2, 2, 1, DType::u8);
    return error_of([&] { save(im, dir / "probe.png"); }).empty();
}

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
    EXPECT_EQ(read_file(dir / "a.pgm"),
              std::string("P5\n2 1\n65535\n") + std::string("\x01\x02\xA0\xB0", 4));
}

TEST(IoPgm, ReadsCommentsAndKeepsSamplesOfASmallMaxval) {
    TempDir dir;
    write_file(dir / "c.pgm",
               std::string("P5\n# made by hand\n3 # width\n1\n#maxval next\n1000\n") +
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
    write_file(dir / "be.pfm",
               std::string("Pf\n1 2\n1.0\n") + std::string("\x3F\xC0\x00\x00\xC0\x10\x00\x00", 8));
    Image im = load(dir / "be.pfm");
    ASSERT_EQ(describe(im), "1x2x1 f32");
    EXPECT_EQ(im.at<float>(0, 0), -2.25f);
    EXPECT_EQ(im.at<float>(0, 1), 1.5f);
}

/// A .npy file as NumPy writes it (format 1.0, header padded to 64 bytes).
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data,
                     bool fortran = false) {
    std::string dict = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
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
               npy_file("<u2", "(2, 3)",
                        std::string("\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x01", 12)));
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
    EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
              std::string::npos);
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
        {"a.pgm", 3, DType::u8,
         "cannot save u8 with 3 channels as .pgm; accepted: u8 or u16, 1 channel"},
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
    if (have_oiio())
        EXPECT_NE(
            e.find("cannot save f32 with 3 channels as .png; accepted: u8 or u16, 1 to 4 channels "
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
    if (have_oiio()) return; // the other IoOiio tests cover that build
    TempDir dir;
    write_file(dir / "a.png", "\x89PNG\r\n\x1a\n");
    for (const std::string& e : {error_of([&] { load(dir / "a.png"); }), error_of([&] {
                                     save(Image::make(2, 2, 3, DType::u8), dir / "b.png");
                                 })}) {
        EXPECT_NE(e.find(".png files need OpenImageIO"), std::string::npos) << e;
        EXPECT_NE(e.find(".pgm, .ppm, .pnm, .pfm and .npy"), std::string::npos) << e;
    }
}

TEST(IoOiio, RoundTripsLosslessFormatsInTheirNativeDtype) {
    if (!have_oiio()) return; // covered by WithoutOpenImageIOOtherFormatsAreAClearError
    TempDir dir;
    struct Case {
        const char* ext;
        int channels;
        DType dtype;
    };
    const std::vector<Case> cases = {{".png", 1, DType::u8},  {".png", 4, DType::u8},
                                     {".png", 2, DType::u16}, {".png", 3, DType::u16},
                                     {".tif", 3, DType::f32}, {".tif", 1, DType::i16},
                                     {".tif", 4, DType::f64}, {".exr", 4, DType::f32}};
    std::uint32_t seed = 20;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.ext) + " " + pixflow::dtype_name(c.dtype) + " x" +
                     std::to_string(c.channels));
        Image im = random_image(10, 7, c.channels, c.dtype, seed++);
        // RGBA with some fully transparent pixels: colours must survive (no premultiplication)
        if (c.channels == 4 && c.dtype == DType::u8) im.at<std::uint8_t>(0, 0, 3) = 0;
        const std::string path = dir / (std::string("a") + c.ext);
        save(im, path);
        expect_same(im, load(path));
    }
}

TEST(IoOiio, JpegRoundTripIsClose) {
    if (!have_oiio()) return; // covered by WithoutOpenImageIOOtherFormatsAreAClearError
    TempDir dir;
    Image im = Image::make(16, 16, 3, DType::u8);
    for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 16; ++x)
            for (int c = 0; c < 3; ++c)
                im.at<std::uint8_t>(x, y, c) = std::uint8_t(8 * x + 4 * c + 2 * y);
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
    EXPECT_NE(e.find("no extension to choose a format by; built-in formats are .pgm, .ppm, .pnm, .pfm and .npy"),
              std::string::npos)
        << e;
}

} // namespace
