// Streaming sources and sinks (issue 16 item 3, docs/strips.md): `load` reads and `save` writes
// .npy, binary PGM/PPM and PFM by bands of rows, so that a chain from a file to a file never holds
// a whole image. Streamed runs give the very bytes of the whole-image run for every format, dtype
// and channel count a format stores, strip heights that do not divide the image and 1-row images;
// `load -> save` in strips gives back the input file byte for byte (an independent check of the
// band reader and writer); TIFF (strips and tiles) is read by rows too, and TIFF and PNG written by
// rows (through an encoder kept open between bands) decode to the whole run's pixels; PNG is read
// by rows through a decoder kept open between bands (checked against PNGs made here, without
// OpenImageIO: 8 and 16 bits, gray, RGB, RGBA), an interlaced one is read whole and says why, a
// truncated one fails naming the row; truncated files and headers over the pixel limit are clear
// errors that leave no output and no temporary; bytes after the last row are ignored, whole or by
// rows (the documented choice); the host budget holds with the file nodes inside the chain;
// formats read or written whole keep load and save out of the chain; an ABI 1.2 access
// declaration still loads; CUDA nodes between a streamed load and save (skipped without a GPU).
#include "compile/compile.hpp"
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/descriptor_check.hpp"
#include "loader/registry.hpp"
#include "planner/plan.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace pixflow::host;
namespace fs = std::filesystem;

namespace {

const Registry& reg() {
    static Registry r;
    static bool loaded = (r.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    return r;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The files left in `dir`, by name (a temporary would show here).
std::vector<std::string> files_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string synth(int w, int h, int channels, const std::string& dtype) {
    return "[nodes.src]\nop = \"synth\"\npattern = \"noise\"\nwidth = " + std::to_string(w) +
           "\nheight = " + std::to_string(h) + "\nchannels = " + std::to_string(channels) + "\ndtype = \"" + dtype +
           "\"\nseed = 3\n";
}
std::string load(const std::string& id, const std::string& path, const std::string& extra = "") {
    return "[nodes." + id + "]\nop = \"load\"\npath = \"" + path + "\"\n" + extra;
}
std::string node(const std::string& id, const std::string& op, const std::string& input) {
    return "[nodes." + id + "]\nop = \"" + op + "\"\ninput = \"" + input + "\"\n";
}
std::string save(const std::string& id, const std::string& input, const std::string& path) {
    return "[nodes." + id + "]\nop = \"save\"\ninput = \"" + input + "\"\npath = \"" + path + "\"\n";
}

struct Ran {
    RunReport report;
    std::vector<StripChain> chains;
    std::vector<std::vector<std::string>> chain_ids; ///< per chain: its nodes' ids
};

/// Compiles and runs `text` (its files committed at the end), whole-image when rows == 0, else
/// in strips of `rows` rows; memory_limit: a host budget instead. Nodes without a backend of
/// their own run on `backend`.
Ran run(const std::string& text, int rows, std::size_t memory_limit = 0, const std::string& backend = "cpu") {
    CompileOptions co;
    co.backend = backend;
    co.strips = rows > 0 || memory_limit > 0;
    co.strip_rows = rows;
    co.memory_limit = memory_limit;
    Compiled c = compile(parse_pipeline_text(text, "stream.toml"), reg(), co);
    Executor ex(c.graph, c.plan);
    RunOptions o;
    o.log = [](int, const std::string&) {};
    Ran r;
    r.report = ex.run(o);
    r.chains = c.plan.strips.chains;
    for (const StripChain& ch : r.chains) {
        r.chain_ids.emplace_back();
        for (NodeId v : ch.nodes) r.chain_ids.back().push_back(c.graph.nodes[v].id);
    }
    return r;
}

/// Whether node `id` ran in strips.
bool streamed(const Ran& r, const std::string& id) {
    for (const auto& n : r.report.nodes)
        if (n.id == id) return n.strips > 0;
    return false;
}

/// Each format with what it stores: extension, dtype, channels.
struct Case {
    const char* ext;
    const char* dtype;
    int channels;
};
const std::vector<Case> kCases = {
    {".npy", "u8", 1},  {".npy", "u8", 3},  {".npy", "u16", 1}, {".npy", "u16", 3},
    {".npy", "f32", 1}, {".npy", "f32", 3}, {".pgm", "u8", 1},  {".pgm", "u16", 1},
    {".ppm", "u8", 3},  {".ppm", "u16", 3}, {".pfm", "f32", 1}, {".pfm", "f32", 3},
};
const std::vector<int> kHeights = {1, 2, 7, 37};
const std::vector<int> kRows = {1, 3, 5, 64};

/// Writes a synth image of the case as `path` (a whole-image run).
void make_input(const std::string& path, const Case& c, int w, int h) {
    run(synth(w, h, c.channels, c.dtype) + save("out", "src", path), 0);
}

/// A PNG made here, independently of OpenImageIO (stored deflate blocks, filter 0, Adam7 when
/// `interlaced`): `bits` 8 or 16, colour type by channels (gray, gray+alpha, RGB, RGBA), the
/// samples row by row, each pixel's channels together.
std::string png_file(int w, int h, int channels, int bits, const std::vector<std::uint16_t>& samples, bool interlaced) {
    auto be32 = [](std::uint32_t v) {
        return std::string{char(v >> 24), char(v >> 16 & 0xFF), char(v >> 8 & 0xFF), char(v & 0xFF)};
    };
    auto crc32 = [](const std::string& bytes) {
        std::uint32_t c = 0xFFFFFFFFu;
        for (unsigned char b : bytes) {
            c ^= b;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        return c ^ 0xFFFFFFFFu;
    };
    auto chunk = [&](const std::string& type, const std::string& data) {
        return be32(std::uint32_t(data.size())) + type + data + be32(crc32(type + data));
    };
    // the filtered rows (filter type 0), pass by pass when interlaced
    std::string raw;
    struct Pass {
        int x0, y0, dx, dy;
    };
    const std::vector<Pass> passes = interlaced
                                         ? std::vector<Pass>{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                                             {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
                                         : std::vector<Pass>{{0, 0, 1, 1}};
    for (const Pass& p : passes) {
        if (p.x0 >= w || p.y0 >= h) continue; // an empty pass has no rows at all
        for (int y = p.y0; y < h; y += p.dy) {
            raw += '\0';
            for (int x = p.x0; x < w; x += p.dx)
                for (int c = 0; c < channels; ++c) {
                    const std::uint16_t v = samples[(std::size_t(y) * w + x) * channels + c];
                    if (bits == 16) raw += char(v >> 8);
                    raw += char(v & 0xFF);
                }
        }
    }
    std::string z = "\x78\x01"; // zlib, stored blocks
    for (std::size_t at = 0; at < raw.size() || at == 0; at += 65535) {
        const std::size_t n = std::min<std::size_t>(65535, raw.size() - at);
        z += char(at + n >= raw.size() ? 1 : 0);
        z += {char(n & 0xFF), char(n >> 8), char(~n & 0xFF), char((~n >> 8) & 0xFF)};
        z += raw.substr(at, n);
        if (raw.empty()) break;
    }
    std::uint32_t a = 1, b = 0;
    for (unsigned char ch : raw) {
        a = (a + ch) % 65521;
        b = (b + a) % 65521;
    }
    z += be32(b << 16 | a);
    const char type = channels == 1 ? 0 : channels == 2 ? 4 : channels == 3 ? 2 : 6;
    const std::string ihdr =
        be32(std::uint32_t(w)) + be32(std::uint32_t(h)) + std::string{char(bits), type, 0, 0, char(interlaced ? 1 : 0)};
    return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

/// Samples for png_file: a pattern of x, y and c that fills `bits`.
std::vector<std::uint16_t> png_samples(int w, int h, int channels, int bits) {
    std::vector<std::uint16_t> v(std::size_t(w) * h * channels);
    for (std::size_t k = 0; k < v.size(); ++k)
        v[k] = std::uint16_t((k * 2654435761u >> 7) & (bits == 16 ? 0xFFFF : 0xFF));
    return v;
}

/// The samples of an image as the .npy that save writes holds them (after its header).
std::string npy_data(const std::string& npy) {
    const std::size_t len =
        std::size_t(static_cast<unsigned char>(npy[8])) | std::size_t(static_cast<unsigned char>(npy[9])) << 8;
    return npy.substr(10 + len);
}
std::string sample_bytes(const std::vector<std::uint16_t>& v, int bits) {
    std::string s;
    for (std::uint16_t x : v) {
        if (bits == 16)
            s.append(reinterpret_cast<const char*>(&x), 2); // .npy: the host's order
        else
            s += char(x);
    }
    return s;
}

} // namespace

// ---- declarations -------------------------------------------------------------------------------

TEST(StreamAccess, LoadIsAPointwiseSourceAndSaveACarriedSink) {
    const OpInfo* l = reg().find("load");
    const OpInfo* s = reg().find("save");
    ASSERT_NE(l, nullptr);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(l->access_kind(), PF_ACCESS_POINTWISE);
    EXPECT_EQ(s->access_kind(), PF_ACCESS_CARRIED);
    EXPECT_NE(l->access->whole_reason, nullptr); // per node: the format decides
    EXPECT_NE(s->access->whole_reason, nullptr);
}

TEST(StreamAccess, AnAbi12AccessDeclarationWithoutWholeReasonStillLoads) {
    static const pf_port_desc out{sizeof(pf_port_desc), "out", "", PF_ALL_DTYPES, PF_ALL_CHANNELS};
    auto infer = [](const pf_value*, int32_t, const pf_image*, int32_t, pf_image*, int32_t, char*, size_t) -> int32_t {
        return PF_OK;
    };
    auto run_fn = [](const pf_run_args*) -> int32_t { return PF_OK; };
    static const pf_op_desc ops[] = {
        {sizeof(pf_op_desc), "src", "doc", PF_OP_SOURCE, nullptr, 0, &out, 1, nullptr, 0, infer, run_fn, nullptr}};
    pf_access_desc a{};
    a.op = "src";
    a.kind = PF_ACCESS_POINTWISE;
    pf_plugin_desc d{};
    d.struct_size = sizeof d;
    d.abi_major = PIXFLOW_ABI_MAJOR;
    d.name = "p";
    d.version = "1";
    d.ops = ops;
    d.n_ops = 1;
    d.access = &a;
    d.n_access = 1;
    d.abi_minor = 2; // its pf_access_desc ends before whole_reason
    a.struct_size = uint32_t(offsetof(pf_access_desc, whole_reason));
    EXPECT_EQ(check_plugin_descriptor(&d), "");
    a.struct_size = sizeof(pf_access_desc); // a 1.2 plugin cannot have the 1.3 field
    EXPECT_NE(check_plugin_descriptor(&d).find("struct_size"), std::string::npos);
    d.abi_minor = PIXFLOW_ABI_MINOR;
    EXPECT_EQ(check_plugin_descriptor(&d), "");
    a.struct_size = uint32_t(offsetof(pf_access_desc, whole_reason));
    EXPECT_NE(check_plugin_descriptor(&d).find("struct_size"), std::string::npos);
}

// ---- bit for bit ----------------------------------------------------------------------------------

TEST(StreamFormats, LoadThenSaveInStripsGivesBackTheFileByteForByte) {
    pixflow::testing::TempDir dir;
    for (const Case& c : kCases)
        for (int h : kHeights) {
            SCOPED_TRACE(std::string(c.ext) + " " + c.dtype + " x" + std::to_string(c.channels) + ", " +
                         std::to_string(h) + " rows");
            const std::string in = dir / ("in" + std::string(c.ext)), out = dir / ("out" + std::string(c.ext));
            make_input(in, c, 11, h);
            const std::string original = read_file(in);
            ASSERT_FALSE(original.empty());
            for (int rows : kRows) {
                SCOPED_TRACE("--strip-rows " + std::to_string(rows));
                const Ran r = run(load("src", in) + save("out", "src", out), rows);
                ASSERT_EQ(r.chains.size(), 1u);
                EXPECT_EQ(r.chains[0].nodes.size(), 2u); // load -> save, both by rows
                EXPECT_TRUE(streamed(r, "src") && streamed(r, "out"));
                EXPECT_TRUE(read_file(out) == original) << "the file written by rows differs";
            }
        }
}

TEST(StreamFormats, AStreamedChainFromFileToFileMatchesTheWholeImageRun) {
    pixflow::testing::TempDir dir;
    for (const Case& c : kCases)
        for (int h : kHeights) {
            SCOPED_TRACE(std::string(c.ext) + " " + c.dtype + " x" + std::to_string(c.channels) + ", " +
                         std::to_string(h) + " rows");
            const std::string in = dir / ("in" + std::string(c.ext)), out = dir / ("out" + std::string(c.ext));
            make_input(in, c, 13, h);
            const std::string text = load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out);
            run(text, 0);
            const std::string whole = read_file(out);
            ASSERT_FALSE(whole.empty());
            fs::remove(out);
            for (int rows : kRows) {
                SCOPED_TRACE("--strip-rows " + std::to_string(rows));
                const Ran r = run(text, rows);
                ASSERT_EQ(r.chains.size(), 1u);
                EXPECT_EQ(r.chains[0].nodes.size(), 3u);
                EXPECT_TRUE(read_file(out) == whole) << "the strips differ from the whole image";
            }
        }
}

TEST(StreamFormats, MaxpoolChainWithAnOddHeightMatchesTheWholeImageRun) {
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.npy", out = dir / "out.npy";
    make_input(in, {".npy", "u8", 3}, 21, 39);
    const std::string text = load("src", in) + node("blur", "gauss5x5", "src") + node("pool", "maxpool2x2", "blur") +
                             save("out", "pool", out);
    run(text, 0);
    const std::string whole = read_file(out);
    for (int rows : {1, 2, 3, 7}) {
        const Ran r = run(text, rows);
        ASSERT_EQ(r.chains.size(), 1u);
        EXPECT_EQ(r.chains[0].nodes.size(), 4u);
        EXPECT_TRUE(read_file(out) == whole) << rows;
    }
}

TEST(StreamFormats, TiffIsReadByRowsFromStripsAndTiles) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    const bool have_oiiotool = fs::exists("/usr/bin/oiiotool"); // to make a tiled TIFF
    for (const Case& c : {Case{".tif", "u8", 1}, Case{".tif", "u8", 3}, Case{".tif", "u16", 3}, Case{".tif", "f32", 1}})
        for (int h : {1, 7, 37}) {
            SCOPED_TRACE(std::string(c.dtype) + " x" + std::to_string(c.channels) + ", " + std::to_string(h) + " rows");
            const std::string strips = dir / "strips.tif", tiles = dir / "tiles.tif", out = dir / "out.npy";
            make_input(strips, c, 13, h);
            std::vector<std::string> inputs = {strips};
            if (have_oiiotool) {
                const std::string cmd =
                    "/usr/bin/oiiotool '" + strips + "' --tile 16 16 -o '" + tiles + "' 2>/dev/null";
                ASSERT_EQ(std::system(cmd.c_str()), 0);
                inputs.push_back(tiles);
            }
            for (const std::string& in : inputs) {
                SCOPED_TRACE(in);
                const std::string text = load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out);
                run(text, 0);
                const std::string whole = read_file(out);
                for (int rows : {1, 5, 16}) {
                    const Ran r = run(text, rows);
                    ASSERT_EQ(r.chains.size(), 1u);
                    EXPECT_EQ(r.chain_ids[0], (std::vector<std::string>{"src", "blur", "out"}));
                    EXPECT_TRUE(read_file(out) == whole) << rows;
                }
            }
        }
#endif
}

TEST(StreamFormats, TiffAndPngWrittenByRowsDecodeToTheWholeImageRunsPixels) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    const std::vector<Case> cases = {{".tif", "u8", 3}, {".tif", "u16", 1}, {".tif", "f32", 3},
                                     {".png", "u8", 1}, {".png", "u8", 4},  {".png", "u16", 3}};
    for (const Case& c : cases)
        for (int h : {1, 7, 37}) {
            SCOPED_TRACE(std::string(c.ext) + " " + c.dtype + " x" + std::to_string(c.channels) + ", " +
                         std::to_string(h) + " rows");
            const std::string in = dir / "in.npy", out = dir / ("out" + std::string(c.ext));
            make_input(in, {".npy", c.dtype, c.channels}, 11, h);
            // the pixels of a file, as .npy bytes (decoded whole)
            auto pixels = [&](const std::string& file) {
                run(load("src", file) + save("out", "src", dir / "pixels.npy"), 0);
                return read_file(dir / "pixels.npy");
            };
            const std::string text = load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out);
            run(text, 0);
            const std::string whole = pixels(out);
            ASSERT_FALSE(whole.empty());
            for (int rows : {1, 5, 64}) {
                SCOPED_TRACE("--strip-rows " + std::to_string(rows));
                const Ran r = run(text, rows);
                ASSERT_EQ(r.chains.size(), 1u);
                EXPECT_EQ(r.chain_ids[0], (std::vector<std::string>{"src", "blur", "out"}));
                EXPECT_TRUE(pixels(out) == whole) << "the file written by rows decodes to other pixels";
                for (const std::string& f : files_in(dir.path)) // no temporary left
                    EXPECT_TRUE(f.find(".rows") == std::string::npos && f.find("pixflow-tmp") == std::string::npos)
                        << f;
            }
        }
#endif
}

// ---- bad files ------------------------------------------------------------------------------------

TEST(StreamFiles, ATruncatedFileIsAnErrorBeforeAnythingRunsAndLeavesNoOutput) {
    pixflow::testing::TempDir dir;
    for (const Case& c : {Case{".npy", "u8", 3}, Case{".ppm", "u16", 3}, Case{".pfm", "f32", 1}}) {
        SCOPED_TRACE(c.ext);
        const std::string in = dir / ("in" + std::string(c.ext)), out = dir / ("out" + std::string(c.ext));
        make_input(in, c, 9, 12);
        fs::resize_file(in, fs::file_size(in) - 5); // the last row lacks 5 bytes
        try {
            run(load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out), 4);
            FAIL() << "expected an error";
        } catch (const pixflow::UserError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(in), std::string::npos) << msg;
            EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
        }
        EXPECT_EQ(files_in(dir.path), std::vector<std::string>{"in" + std::string(c.ext)});
        fs::remove(in);
    }
}

TEST(StreamFiles, AFileTruncatedAfterValidationFailsTheRunAndLeavesNoOutputNorTemporary) {
    pixflow::testing::TempDir dir;
    // two chains: a's may write its whole temporary before b's fails; neither output may remain
    const std::string a = dir / "a.npy", b = dir / "b.npy";
    make_input(a, {".npy", "u8", 1}, 16, 40);
    make_input(b, {".npy", "u8", 1}, 16, 40);
    const std::string text = load("a", a) + node("a_blur", "gauss5x5", "a") +
                             save("a_out", "a_blur", dir / "a_out.npy") + load("b", b) +
                             node("b_blur", "gauss5x5", "b") + save("b_out", "b_blur", dir / "b_out.npy");
    CompileOptions co;
    co.backend = "cpu";
    co.strip_rows = 8;
    Compiled c = compile(parse_pipeline_text(text, "stream.toml"), reg(), co);
    fs::resize_file(b, fs::file_size(b) - 16 * 10); // 10 rows gone since validation
    Executor ex(c.graph, c.plan);
    RunOptions o;
    o.log = [](int, const std::string&) {};
    try {
        ex.run(o);
        FAIL() << "expected an error";
    } catch (const pixflow::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(b), std::string::npos) << msg;
        EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    }
    EXPECT_EQ(files_in(dir.path), (std::vector<std::string>{"a.npy", "b.npy"})); // no output, no temporary
}

TEST(StreamFiles, AFailureAfterSaveWroteItsFirstBandRemovesTheTemporary) {
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.npy", out = dir / "out.npy";
    make_input(in, {".npy", "u8", 3}, 16, 40);
    CompileOptions co;
    co.backend = "cpu";
    co.strip_rows = 8;
    Compiled c =
        compile(parse_pipeline_text(load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out),
                                    "stream.toml"),
                reg(), co);
    ASSERT_EQ(c.plan.strips.chains.size(), 1u);
    Executor ex(c.graph, c.plan);
    RunOptions o;
    o.log = [](int, const std::string&) {};
    const NodeId src = c.graph.find("src");
    int load_starts = 0;
    std::vector<std::string> before_second_band;
    o.on_node = [&](NodeId v, bool started) {
        if (v != src || !started || ++load_starts != 2) return;
        before_second_band = files_in(dir.path);    // save's temporary, with the first band's rows
        fs::resize_file(in, fs::file_size(in) - 1); // the input loses its last byte now
    };
    EXPECT_THROW(ex.run(o), pixflow::Error);
    ASSERT_EQ(before_second_band.size(), 2u) << "save wrote no temporary in the first strip";
    EXPECT_NE(before_second_band[0].find(".out.pixflow-tmp-"), std::string::npos) << before_second_band[0];
    EXPECT_EQ(files_in(dir.path), std::vector<std::string>{"in.npy"}); // rolled back: no output, no temporary
}

TEST(StreamFiles, AnEncoderLeftByAFailedRunIsClosedAndTheNextRunWritesTheFile) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    for (const char* ext : {".png", ".tif"}) {
        SCOPED_TRACE(ext);
        const std::string in = dir / "in.npy", out = dir / ("out" + std::string(ext));
        make_input(in, {".npy", "u8", 3}, 16, 40);
        const std::string text = load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out);
        CompileOptions co;
        co.backend = "cpu";
        co.strip_rows = 8;
        Compiled c = compile(parse_pipeline_text(text, "stream.toml"), reg(), co);
        Executor ex(c.graph, c.plan);
        RunOptions o;
        o.log = [](int, const std::string&) {};
        const NodeId src = c.graph.find("src");
        int load_starts = 0;
        o.on_node = [&](NodeId v, bool started) {
            if (v == src && started && ++load_starts == 3) fs::resize_file(in, fs::file_size(in) - 1);
        };
        EXPECT_THROW(ex.run(o), pixflow::Error); // save's encoder waits at row 16 on a temporary now gone
        EXPECT_EQ(files_in(dir.path), std::vector<std::string>{"in.npy"});
        // the next runs, by rows and whole, write the file; the same pixels
        make_input(in, {".npy", "u8", 3}, 16, 40);
        run(text, 8);
        run(load("src", out) + save("o", "src", dir / "rows.npy"), 0);
        run(text, 0);
        run(load("src", out) + save("o", "src", dir / "whole.npy"), 0);
        EXPECT_TRUE(read_file(dir / "rows.npy") == read_file(dir / "whole.npy"));
        EXPECT_EQ(files_in(dir.path),
                  (std::vector<std::string>{"in.npy", "out" + std::string(ext), "rows.npy", "whole.npy"}));
        for (const std::string& f : files_in(dir.path)) fs::remove(dir / f);
    }
#endif
}

TEST(StreamFiles, AHeaderOverThePixelLimitIsRefusedBeforeAnythingIsRead) {
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.pgm", out = dir / "out.pgm";
    make_input(in, {".pgm", "u8", 1}, 20, 30);
    try {
        run(load("src", in, "max_pixels = 599\n") + save("out", "src", out), 4);
        FAIL() << "expected an error";
    } catch (const pixflow::UserError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("20x30 = 600 pixels, more than max_pixels = 599"), std::string::npos) << msg;
    }
    EXPECT_FALSE(fs::exists(out));
}

TEST(StreamFiles, BytesAfterTheLastRowAreIgnoredWholeAndByRows) {
    pixflow::testing::TempDir dir;
    for (const Case& c : {Case{".npy", "f32", 3}, Case{".pgm", "u8", 1}, Case{".pfm", "f32", 3}}) {
        SCOPED_TRACE(c.ext);
        const std::string clean = dir / ("clean" + std::string(c.ext)), in = dir / ("in" + std::string(c.ext));
        const std::string out = dir / ("out" + std::string(c.ext));
        make_input(clean, c, 10, 9);
        std::ofstream(in, std::ios::binary) << read_file(clean) << "trailing garbage";
        run(load("src", in) + save("out", "src", out), 0);
        EXPECT_TRUE(read_file(out) == read_file(clean)) << "whole";
        run(load("src", in) + save("out", "src", out), 4);
        EXPECT_TRUE(read_file(out) == read_file(clean)) << "by rows";
    }
}

// ---- PNG read by rows ------------------------------------------------------------------------------

TEST(StreamPng, IsReadByRowsAsTheFileSaysAndAsTheWholeRead) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.png", out = dir / "out.npy";
    for (int bits : {8, 16})
        for (int channels : {1, 3, 4})
            for (int h : {1, 7, 37}) {
                SCOPED_TRACE(std::to_string(bits) + " bits x" + std::to_string(channels) + ", " + std::to_string(h) +
                             " rows");
                const std::vector<std::uint16_t> v = png_samples(13, h, channels, bits);
                std::ofstream(in, std::ios::binary) << png_file(13, h, channels, bits, v, false);
                run(load("src", in) + save("out", "src", out), 0);
                const std::string whole = read_file(out);
                ASSERT_TRUE(npy_data(whole) == sample_bytes(v, bits))
                    << "the whole read differs from the file's samples";
                const std::string chain = load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", out);
                run(chain, 0);
                const std::string blurred = read_file(out);
                for (int rows : {1, 5, 16}) {
                    SCOPED_TRACE("--strip-rows " + std::to_string(rows));
                    const Ran r = run(load("src", in) + save("out", "src", out), rows);
                    ASSERT_EQ(r.chains.size(), 1u);
                    EXPECT_EQ(r.chain_ids[0], (std::vector<std::string>{"src", "out"}));
                    EXPECT_TRUE(read_file(out) == whole) << "the rows read by bands differ";
                    // a stencil: each band starts 4 rows above the previous one's end
                    const Ran b = run(chain, rows);
                    ASSERT_EQ(b.chains.size(), 1u);
                    EXPECT_EQ(b.chain_ids[0], (std::vector<std::string>{"src", "blur", "out"}));
                    EXPECT_TRUE(read_file(out) == blurred) << "the blurred rows differ";
                }
            }
#endif
}

TEST(StreamPng, AnInterlacedPngIsReadWholeAndSaysWhy) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.png";
    const std::vector<std::uint16_t> v = png_samples(19, 23, 3, 8);
    std::ofstream(in, std::ios::binary) << png_file(19, 23, 3, 8, v, true);
    const std::string blurs = node("blur", "gauss5x5", "src") + node("b2", "gauss5x5", "blur");
    run(load("src", in) + save("out", "src", dir / "whole.npy"), 0);
    EXPECT_TRUE(npy_data(read_file(dir / "whole.npy")) == sample_bytes(v, 8)) << "Adam7 decoded to other samples";
    const Ran r =
        run(load("src", in) + save("out", "src", dir / "rows.npy") + blurs + save("out2", "b2", dir / "b.npy"), 3);
    EXPECT_FALSE(streamed(r, "src"));
    EXPECT_TRUE(read_file(dir / "rows.npy") == read_file(dir / "whole.npy"));
    try {
        run(load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", dir / "o.npy"), 0, 200);
        FAIL() << "expected an error";
    } catch (const pixflow::UserError& e) {
        ASSERT_FALSE(e.diagnostics().empty());
        EXPECT_EQ(e.diagnostics()[0].node, "src");
        EXPECT_NE(e.diagnostics()[0].message.find("reads interlaced (Adam7) .png files whole"), std::string::npos)
            << e.diagnostics()[0].message;
    }
#endif
}

TEST(StreamPng, ATruncatedPngFailsNamingTheFileAndTheRowAndLeavesNoOutput) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    const std::string in = dir / "cut.png";
    const int w = 50, h = 400; // 151 bytes a row, stored: row y's bytes lie at a known place
    const std::vector<std::uint16_t> v = png_samples(w, h, 3, 8);
    const std::string png = png_file(w, h, 3, 8, v, false);
    std::ofstream(in, std::ios::binary) << png.substr(0, png.size() * 3 / 4); // about row 300 on
    int failed = -1;
    try {
        run(load("src", in) + node("blur", "gauss5x5", "src") + save("out", "blur", dir / "out.npy"), 16);
        FAIL() << "expected an error";
    } catch (const pixflow::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("cannot read '" + in + "'"), std::string::npos) << msg;
        const std::size_t at = msg.find("row ");
        ASSERT_NE(at, std::string::npos) << msg;
        failed = std::atoi(msg.c_str() + at + 4);
        EXPECT_NE(msg.find("of 400 cannot be decoded"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    }
    // libpng reads ahead by at most 8 KiB (54 rows here): the row named is the first one lost
    EXPECT_GT(failed, 300 - 60);
    EXPECT_LE(failed, 300);
    EXPECT_EQ(files_in(dir.path), std::vector<std::string>{"cut.png"}); // no output, no temporary
    // fail_on = "none": the rows above are the file's, the rest 0, by bands as whole
    run(load("src", in, "fail_on = \"none\"\n") + save("out", "src", dir / "rows.npy"), 16);
    const std::string rows = npy_data(read_file(dir / "rows.npy"));
    const std::size_t good = std::size_t(failed) * w * 3;
    EXPECT_TRUE(rows.substr(0, good) == sample_bytes(v, 8).substr(0, good));
    EXPECT_EQ(rows.find_first_not_of('\0', good), std::string::npos) << "rows after the one lost are not 0";
    // (the whole read keeps fewer: OpenImageIO 2.4's read_image of this file gives all 0s, so the
    // two are not compared)
#endif
}

// ---- planning -------------------------------------------------------------------------------------

TEST(StreamPlan, TheHostBudgetHoldsWithLoadAndSaveInTheChain) {
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.npy", out = dir / "out.npy";
    make_input(in, {".npy", "u8", 3}, 256, 512); // 384 KiB
    const std::string text = load("src", in) + node("blur", "gauss5x5", "src") + node("pool", "maxpool2x2", "blur") +
                             save("out", "pool", out);
    const Ran whole = run(text, 0);
    EXPECT_GE(whole.report.peak_host_bytes, 2 * 384.0 * 1024); // load's and blur's whole images
    const std::string expected = read_file(out);
    for (std::size_t budget : {std::size_t(128) << 10, std::size_t(32) << 10}) {
        const Ran r = run(text, 0, budget);
        ASSERT_EQ(r.chains.size(), 1u) << budget;
        EXPECT_EQ(r.chains[0].nodes.size(), 4u) << "load and save belong to the chain";
        EXPECT_GT(r.report.strips[0].count, 1);
        EXPECT_LE(r.report.peak_host_bytes, double(budget)) << "strips of " << r.report.strips[0].rows << " rows";
        EXPECT_TRUE(read_file(out) == expected) << budget;
    }
}

TEST(StreamPlan, FormatsReadOrWrittenWholeKeepLoadAndSaveOutOfTheChainAndSayWhy) {
#ifndef PIXFLOW_TEST_WITH_OIIO
    GTEST_SKIP() << "this build has no OpenImageIO";
#else
    pixflow::testing::TempDir dir;
    const std::string in = dir / "in.bmp", out = dir / "out.bmp";
    run(synth(12, 10, 3, "u8") + save("out", "src", in), 0);
    const std::string blurs = node("blur", "gauss5x5", "src") + node("b2", "gauss5x5", "blur");
    const Ran r = run(load("src", in) + blurs + save("out", "b2", out), 3); // BMP read and written whole
    ASSERT_EQ(r.chains.size(), 1u);
    EXPECT_EQ(r.chain_ids[0], (std::vector<std::string>{"blur", "b2"}));
    EXPECT_FALSE(streamed(r, "src"));
    EXPECT_FALSE(streamed(r, "out"));
    EXPECT_TRUE(fs::exists(out));
    const Ran png = run(load("src", in) + blurs + save("out", "b2", dir / "out.png"), 3); // PNG written by rows
    ASSERT_EQ(png.chains.size(), 1u);
    EXPECT_EQ(png.chain_ids[0], (std::vector<std::string>{"blur", "b2", "out"}));
    // under a budget that its whole image exceeds, the error says why load is whole-image
    try {
        run(load("src", in) + node("blur", "gauss5x5", "src") + save("out2", "blur", dir / "out2.npy"), 0, 200);
        FAIL() << "expected an error";
    } catch (const pixflow::UserError& e) {
        ASSERT_FALSE(e.diagnostics().empty());
        EXPECT_EQ(e.diagnostics()[0].node, "src");
        EXPECT_NE(e.diagnostics()[0].message.find("op load reads .bmp files whole (OpenImageIO)"), std::string::npos)
            << e.diagnostics()[0].message;
    }
    EXPECT_FALSE(fs::exists(dir / "out2.npy"));
#endif
}

// ---- CUDA nodes between the file nodes -----------------------------------------------------------

TEST(StreamCuda, CudaNodesBetweenAStreamedLoadAndSaveMatchTheWholeImageRun) {
    if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
    pixflow::testing::TempDir dir;
    for (const Case& c : {Case{".npy", "u8", 3}, Case{".pfm", "f32", 1}, Case{".pgm", "u16", 1}})
        for (int h : {1, 7, 37}) {
            SCOPED_TRACE(std::string(c.ext) + " " + c.dtype + ", " + std::to_string(h) + " rows");
            const std::string in = dir / ("in" + std::string(c.ext)), out = dir / ("out" + std::string(c.ext));
            make_input(in, c, 19, h);
            // load (CPU) -> gauss5x5 (CUDA) -> maxpool2x2 (CPU) -> gauss5x5 (CUDA) -> save (CPU): the rows
            // cross the bus at each change of side, strip by strip
            std::string text = load("src", in) + node("blur", "gauss5x5", "src") + "backend = \"cuda\"\n" +
                               node("blur2", "gauss5x5", "blur") + "backend = \"cuda\"\n";
            if (h >= 2)
                text += node("pool", "maxpool2x2", "blur2") + "backend = \"cpu\"\n" + save("out", "pool", out);
            else
                text += save("out", "blur2", out);
            run(text, 0, 0, "auto");
            const std::string whole = read_file(out);
            for (int rows : {1, 3, 8}) {
                SCOPED_TRACE("--strip-rows " + std::to_string(rows));
                const Ran r = run(text, rows, 0, "auto");
                ASSERT_EQ(r.chains.size(), 1u);
                EXPECT_EQ(r.chain_ids[0].front(), "src");
                EXPECT_EQ(r.chain_ids[0].back(), "out");
                EXPECT_TRUE(read_file(out) == whole) << "the strips differ from the whole image";
            }
        }
}
