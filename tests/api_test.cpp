// The embedding API (include/pixflow/pixflow.hpp): results equal `pixflow run` bit for bit,
// repeated runs reuse the compiled plan, two threads share one engine, device memory in and out,
// caller buffers of any layout, and every error path with its diagnostic.
#include "api/state.hpp"
#include "device/device.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <pixflow/pixflow.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

using pixflow::DType;
using pixflow::Engine;
using pixflow::Image;
using pixflow::ImageView;
using pixflow::Pipeline;
using pixflow::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const Engine& engine() {
    static Engine e({pixflow::testing::plugin_dir(), pixflow::testing::test_plugin("planner_ops"),
                     pixflow::testing::test_plugin("fusion_ops")});
    return e;
}

Image noise(int w, int h, int c, unsigned seed) {
    Image im(w, h, c, DType::u8);
    std::mt19937 rng(seed);
    for (std::size_t k = 0; k < im.size_bytes(); ++k) im.data()[k] = std::byte(rng() & 0xff);
    return im;
}

/// A binary PPM (P6) or PGM (P5) file: header, then the rows.
void write_pnm(const fs::path& p, const Image& im) {
    std::ofstream o(p, std::ios::binary);
    o << (im.channels() == 3 ? "P6\n" : "P5\n") << im.width() << " " << im.height() << "\n255\n";
    o.write(reinterpret_cast<const char*>(im.data()), std::streamsize(im.size_bytes()));
}

Image read_pnm(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::string magic;
    int w = 0, h = 0, maxval = 0;
    in >> magic >> w >> h >> maxval;
    in.get();
    Image im(w, h, magic == "P6" ? 3 : 1, DType::u8);
    in.read(reinterpret_cast<char*>(im.data()), std::streamsize(im.size_bytes()));
    return im;
}

/// The body both runs share: blur twice, pool, gray. `src` is prepended by each caller.
const std::string kChain = "[nodes.a]\nop = \"gauss5x5\"\ninput = \"src\"\nsigma = 1.2\n"
                           "[nodes.b]\nop = \"gauss5x5\"\ninput = \"a\"\nborder = \"zero\"\n"
                           "[nodes.pool]\nop = \"maxpool2x2\"\ninput = \"b\"\n"
                           "[nodes.gray]\nop = \"grayscale\"\ninput = \"pool\"\n";
const std::string kMemorySource = "[nodes.src]\nop = \"memory\"\n";

template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const pixflow::UserError& e) { return e.what(); } catch (const pixflow::InternalError& e) {
        return std::string("InternalError: ") + e.what();
    }
    return "(no error)";
}

/// `call` throws an error whose text contains `part`.
#define EXPECT_ERROR(call, part)                                                                                       \
    do {                                                                                                               \
        std::string msg_ = error_of(call);                                                                             \
        EXPECT_NE(msg_.find(part), std::string::npos) << msg_;                                                         \
    } while (0)

int compiles(const Pipeline& p) { return pixflow::detail::Access::compiles(p); }

} // namespace

class ApiBackend : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        if (GetParam() == "cuda") PIXFLOW_REQUIRE_CUDA();
    }
};

TEST_P(ApiBackend, ResultEqualsPixflowRunBitForBit) {
    TempDir t;
    Image in = noise(67, 45, 3, 11);
    write_pnm(t.path / "in.ppm", in);
    pixflow::testing::write_text(
        t / "cli.toml", "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" + kChain +
                            "[nodes.out]\nop = \"save\"\ninput = \"gray\"\npath = \"" + (t / "out.pgm") + "\"\n");
    auto r = pixflow::testing::run_pixflow("run '" + (t / "cli.toml") + "' --backend " + GetParam());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Image expected = read_pnm(t.path / "out.pgm");

    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    Image out(33, 22, 1, DType::u8);
    p.backend(GetParam()).input("src", in.view()).output("gray", out.view());
    pixflow::RunReport rep = p.run();
    EXPECT_TRUE(out == expected);
    for (const auto& n : rep.nodes)
        if (n.op == "gauss5x5") EXPECT_EQ(n.backend, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Backends, ApiBackend, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

TEST(Api, RepeatedRunsWithChangingInputsCompileOnce) {
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    Image out(33, 22, 1, DType::u8);
    p.backend("cpu").output("gray", out.view());
    for (unsigned seed = 1; seed <= 4; ++seed) {
        Image in = noise(67, 45, 3, seed);
        p.input("src", in.view());
        p.run();
        Pipeline fresh = engine().load_string(kMemorySource + kChain, "fresh.toml");
        Image want(33, 22, 1, DType::u8);
        fresh.backend("cpu").input("src", in.view()).output("gray", want.view()).run();
        EXPECT_TRUE(out == want) << "run " << seed;
    }
    EXPECT_EQ(compiles(p), 1) << "same shapes: the plan is reused";
    Image bigger = noise(80, 50, 3, 9);
    Image out2(40, 25, 1, DType::u8);
    p.input("src", bigger.view()).output("gray", out2.view()).run();
    EXPECT_EQ(compiles(p), 2) << "a new shape compiles again";
    p.set("a.sigma", 2.0).run();
    EXPECT_EQ(compiles(p), 3) << "set() compiles again";
}

TEST(Api, TwoThreadsRunTwoPipelinesOnOneEngine) {
    Engine shared = engine(); // a copy shares the loaded plugins
    Image in1 = noise(64, 48, 3, 1), in2 = noise(50, 30, 1, 2);
    auto make1 = [&] { return std::move(shared.load_string(kMemorySource + kChain, "one.toml").backend("cpu")); };
    auto make2 = [&] {
        return std::move(
            shared.load_string(kMemorySource + "[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n", "two.toml")
                .backend("cpu"));
    };
    Image want1(32, 24, 1, DType::u8), want2(50, 30, 1, DType::u8);
    make1().input("src", in1.view()).output("gray", want1.view()).run();
    make2().input("src", in2.view()).output("blur", want2.view()).run();
    bool ok1 = true, ok2 = true;
    std::thread a([&] {
        Pipeline p = make1();
        Image out(32, 24, 1, DType::u8);
        p.input("src", in1.view()).output("gray", out.view());
        for (int k = 0; k < 30; ++k) ok1 &= (p.run(), out == want1);
    });
    std::thread b([&] {
        Pipeline p = make2();
        Image out(50, 30, 1, DType::u8);
        p.input("src", in2.view()).output("blur", out.view());
        for (int k = 0; k < 30; ++k) ok2 &= (p.run(), out == want2);
    });
    a.join();
    b.join();
    EXPECT_TRUE(ok1);
    EXPECT_TRUE(ok2);
}

TEST(Api, CallerBuffersOfAnyLayoutGiveTheSameResult) {
    Image in = noise(67, 45, 3, 5);
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    Image packed(33, 22, 1, DType::u8);
    p.backend("cpu").input("src", in.view()).output("gray", packed.view()).run();
    // An input with padded rows and an output one byte off alignment, with padding too.
    std::vector<std::byte> in_mem(std::size_t(45) * 208 + 1), out_mem(std::size_t(22) * 40 + 1);
    ImageView pin = in.view(), pout = packed.view();
    pin.pitch = 208;
    pin.data = in_mem.data() + 1;
    for (int y = 0; y < 45; ++y)
        std::memcpy(in_mem.data() + 1 + y * 208, in.data() + y * in.pitch(), std::size_t(in.pitch()));
    pout.pitch = 40;
    pout.data = out_mem.data() + 1;
    Pipeline q = engine().load_string(kMemorySource + kChain, "api.toml");
    q.backend("cpu").input("src", pin).output("gray", pout).run();
    for (int y = 0; y < 22; ++y)
        EXPECT_EQ(std::memcmp(out_mem.data() + 1 + y * 40, packed.data() + y * packed.pitch(), 33), 0) << "row " << y;
}

TEST(Api, ResultAndViewGiveKeptOutputs) {
    Image in = noise(20, 10, 3, 3);
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    p.backend("cpu").input("src", in.view()).output("a");
    EXPECT_ERROR([&] { p.result("a"); }, "no run yet: call run() first");
    p.run();
    Image a = p.result("a"), gray = p.result("gray"); // gray: nobody reads it, so it is kept anyway
    EXPECT_EQ(a.width(), 20);
    EXPECT_EQ(gray.width(), 10);
    ImageView v = p.view("a");
    EXPECT_EQ(v.device, PF_HOST);
    EXPECT_EQ(std::memcmp(v.data, a.data(), a.size_bytes()), 0);
    EXPECT_ERROR([&] { p.result("b"); }, "not an output; ask for it with output(\"b\") before run()");
}

TEST(Api, ReportIsTheStructThatReportWrites) {
    Image in = noise(20, 10, 3, 3);
    Pipeline p = engine().load_string("[pipeline]\nname = \"r\"\n" + kMemorySource + kChain, "api.toml");
    pixflow::RunReport r = p.backend("cpu").input("src", in.view()).run();
    auto j = nlohmann::json::parse(r.to_json());
    EXPECT_EQ(j["pipeline"], "r");
    EXPECT_EQ(j["file"], "api.toml");
    ASSERT_EQ(j["nodes"].size(), 5u);
    EXPECT_EQ(j["nodes"][0]["op"], "memory");
    EXPECT_EQ(j["nodes"][4]["id"], "gray");
    for (const char* key : {"device", "notes", "outputs", "peak_device_bytes", "transfers", "wall_ms"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_NE(r.table().find("transfers:"), std::string::npos);
    EXPECT_NE(p.graphviz().find("\"gray\""), std::string::npos);
}

TEST(ApiCuda, DeviceInputAndDeviceOutputStayOnTheDevice) {
    PIXFLOW_REQUIRE_CUDA();
    using namespace pixflow::host;
    Image in = noise(256, 256, 3, 7);
    const std::string text = kMemorySource + "[nodes.a]\nop = \"gauss5x5\"\ninput = \"src\"\n"
                                             "[nodes.b]\nop = \"gauss5x5\"\ninput = \"a\"\n"
                                             "[nodes.c]\nop = \"gauss5x5\"\ninput = \"b\"\n";
    Image want(256, 256, 3, DType::u8);
    engine().load_string(text, "cpu.toml").backend("cpu").input("src", in.view()).output("c", want.view()).run();

    const std::int64_t pitch = 1024; // 768 bytes of samples, rows 256-byte aligned
    DeviceBuffer d_in(std::size_t(pitch) * 256, 0), d_out(std::size_t(pitch) * 256, 0);
    Stream stream(0);
    copy_2d_async(d_in.get(), pitch, in.data(), in.pitch(), 768, 256, stream);
    ImageView vin = in.view(), vout = in.view();
    vin.device = vout.device = 0;
    vin.pitch = vout.pitch = pitch;
    vin.data = d_in.get();
    vout.data = d_out.get();
    Pipeline p = engine().load_string(text, "gpu.toml");
    p.input("src", vin).output("c", vout).stream(static_cast<CUstream_st*>(stream.get()));
    for (int k = 0; k < 3; ++k) {
        pixflow::RunReport r = p.run();
        EXPECT_EQ(r.h2d_count + r.d2h_count, 0) << "device in, device out: no transfer";
        EXPECT_TRUE(std::isnan(r.nodes[1].ms)) << "run() did not wait, so the device time is not known yet";
    }
    pixflow::RunReport full = p.report();
    EXPECT_FALSE(std::isnan(full.nodes[1].ms));
    EXPECT_EQ(full.nodes[1].backend, "cuda");
    Image got(256, 256, 3, DType::u8);
    copy_2d_async(got.data(), got.pitch(), d_out.get(), pitch, 768, 256, stream); // ordered after the run
    stream.synchronize();
    int worst = 0;
    for (std::size_t k = 0; k < got.size_bytes(); ++k)
        worst = std::max(worst, std::abs(int(got.data()[k]) - int(want.data()[k])));
    EXPECT_LE(worst, 1);
    EXPECT_EQ(compiles(p), 1);
}

// A caller's device images whose rows do not start 256-byte aligned (a packed tensor 1000 bytes
// wide, a view one sample into a buffer), in and out, for every CUDA operator: the input is
// copied on the device into a staging buffer and the output into the caller's buffer after the
// run (never through the host, and the notes say so), the output has the bits of a run on
// pixflow's own buffers (which each operator's tests compare with the CPU), and nothing around
// the caller's rows is written (the padding between rows is poisoned and checked).
TEST(ApiCuda, EveryOperatorTakesUnalignedDeviceImages) {
    PIXFLOW_REQUIRE_CUDA();
    using namespace pixflow::host;
    struct Case {
        std::string node; // the op and its parameters, TOML
        std::vector<std::string> outs;
        int w, h, c;
        DType dtype;
    };
    const std::vector<Case> cases = {
        {"op = \"gauss5x5\"", {"op"}, 1000, 67, 3, DType::u8},
        {"op = \"gauss5x5\"", {"op"}, 333, 41, 1, DType::f32},
        {"op = \"maxpool2x2\"", {"op"}, 1001, 64, 3, DType::u8},
        {"op = \"maxpool2x2\"", {"op"}, 250, 33, 2, DType::u16},
        {"op = \"grayscale\"", {"op"}, 1000, 50, 3, DType::u8},
        {"op = \"grayscale\"", {"op"}, 999, 50, 4, DType::u8},
        {"op = \"integral\"", {"op"}, 1000, 131, 1, DType::u8},
        {"op = \"integral\"", {"op"}, 700, 60, 3, DType::u8},
        {"op = \"integral\"\ndtype = \"u64\"", {"op"}, 513, 40, 2, DType::u16},
        {"op = \"floyd_steinberg\"", {"op"}, 1000, 300, 1, DType::u8},
        {"op = \"floyd_steinberg\"", {"op"}, 8191, 70, 1, DType::u8},
        {"op = \"floyd_steinberg\"", {"op"}, 517, 90, 3, DType::u8},
        {"op = \"convert\"\ndtype = \"f32\"\nscale = 0.5", {"op"}, 1000, 20, 3, DType::u8},
        {"op = \"dct8x8\"", {"op"}, 1000, 64, 1, DType::u8},
        {"op = \"jpeg_roundtrip8x8\"", {"op"}, 1000, 64, 3, DType::u8},
        {"op = \"chan_vese\"\nmax_iter = 30", {"op.mask", "op.phi"}, 1000, 100, 1, DType::u8},
    };
    constexpr std::byte poison{0xAB};
    for (const Case& k : cases) {
        SCOPED_TRACE(k.node + ", " + std::to_string(k.w) + "x" + std::to_string(k.h) + "x" + std::to_string(k.c) + " " +
                     pixflow::dtype_name(k.dtype));
        const std::string text = kMemorySource + "[nodes.op]\ninput = \"src\"\n" + k.node + "\n";
        Image in = noise(k.w, k.h, k.c, 17);
        if (k.dtype != DType::u8) { // the same noise widened (floats in 0..1)
            Image wide(k.w, k.h, k.c, k.dtype);
            for (std::size_t i = 0; i < in.size_bytes(); ++i) {
                const auto v = std::uint8_t(in.data()[i]);
                if (k.dtype == DType::u16)
                    reinterpret_cast<std::uint16_t*>(wide.data())[i] = std::uint16_t(v * 257 + i % 3);
                else
                    reinterpret_cast<float*>(wide.data())[i] = float(v) / 255.0f;
            }
            in = std::move(wide);
        }
        // pixflow's buffers: the host image uploaded into aligned device memory
        Pipeline ref = engine().load_string(text, "aligned.toml");
        ref.backend("cuda").input("src", in.view());
        for (const auto& o : k.outs) ref.output(o);
        ref.run();

        // the caller's: rows one sample longer than packed, the first one sample into the buffer
        const std::size_t sample = pixflow::dtype_size(k.dtype), in_row = in.view().row_bytes();
        const std::int64_t in_pitch = std::int64_t(in_row + sample);
        Stream stream(0);
        DeviceBuffer d_in(std::size_t(in_pitch) * std::size_t(k.h) + 2 * sample, 0);
        copy_2d_async(static_cast<std::byte*>(d_in.get()) + sample, in_pitch, in.data(), in.pitch(), in_row, k.h,
                      stream);
        ImageView vin = in.view();
        vin.device = 0;
        vin.pitch = in_pitch;
        vin.data = static_cast<std::byte*>(d_in.get()) + sample;
        Pipeline p = engine().load_string(text, "unaligned.toml");
        p.backend("cuda").input("src", vin);
        struct Dest {
            ImageView view;
            std::size_t row, pitch, bytes;
            DeviceBuffer mem;
        };
        std::vector<Dest> dests;
        for (const auto& o : k.outs) {
            ImageView v = p.shape(o);
            const std::size_t os = pixflow::dtype_size(v.dtype), row = v.row_bytes(), pitch = row + os;
            const std::size_t bytes = pitch * std::size_t(v.height) + 2 * os;
            DeviceBuffer mem(bytes, 0);
            const std::vector<std::byte> fill(bytes, poison);
            copy_2d_async(mem.get(), std::int64_t(bytes), fill.data(), std::int64_t(bytes), bytes, 1, stream);
            stream.synchronize();
            v.device = 0;
            v.pitch = std::int64_t(pitch);
            v.data = static_cast<std::byte*>(mem.get()) + os;
            p.output(o, v);
            dests.push_back({v, row, pitch, bytes, std::move(mem)});
        }
        stream.synchronize();
        const pixflow::RunReport r = p.run();
        EXPECT_EQ(r.h2d_count + r.d2h_count, 0) << "copied on the device, never through the host";
        std::string notes;
        for (const auto& n : r.notes) notes += n + "\n";
        EXPECT_NE(notes.find("input(\"src\"): copied into a staging buffer"), std::string::npos) << notes;
        for (const auto& o : k.outs)
            EXPECT_NE(notes.find("output(\"" + o + "\"): copied into the caller's buffer after the run"),
                      std::string::npos)
                << notes;
        for (std::size_t i = 0; i < k.outs.size(); ++i) {
            const Dest& d = dests[i];
            std::vector<std::byte> got(d.bytes);
            copy_2d_async(got.data(), std::int64_t(d.bytes), d.mem.get(), std::int64_t(d.bytes), d.bytes, 1, stream);
            stream.synchronize();
            const Image want = ref.result(k.outs[i]);
            const std::size_t os = pixflow::dtype_size(d.view.dtype);
            std::size_t bad = 0, outside = 0;
            for (std::size_t b = 0; b < d.bytes; ++b) {
                const bool sample_byte =
                    b >= os && (b - os) / d.pitch < std::size_t(d.view.height) && (b - os) % d.pitch < d.row;
                if (!sample_byte)
                    outside += got[b] != poison;
                else
                    bad += got[b] != want.data()[(b - os) / d.pitch * std::size_t(want.pitch()) + (b - os) % d.pitch];
            }
            EXPECT_EQ(bad, 0u) << k.outs[i] << ": bytes unlike the aligned run's";
            EXPECT_EQ(outside, 0u) << k.outs[i] << ": bytes written outside the view";
        }
    }
}

TEST(ApiCuda, HostOutputOfADeviceChainIsCopiedBack) {
    PIXFLOW_REQUIRE_CUDA();
    Image in = noise(64, 40, 3, 8);
    Pipeline gpu = engine().load_string(kMemorySource + kChain, "gpu.toml");
    Pipeline cpu = engine().load_string(kMemorySource + kChain, "cpu.toml");
    Image a(32, 20, 1, DType::u8), b(32, 20, 1, DType::u8);
    gpu.backend("cuda").input("src", in.view()).output("gray", a.view()).run();
    cpu.backend("cpu").input("src", in.view()).output("gray", b.view()).run();
    int worst = 0;
    for (std::size_t k = 0; k < a.size_bytes(); ++k)
        worst = std::max(worst, std::abs(int(a.data()[k]) - int(b.data()[k])));
    EXPECT_LE(worst, 1);
}

// ---- every error path says what, where and what is accepted ---------------------------------------

TEST(ApiErrors, LoadingAndSetting) {
    EXPECT_ERROR([] { engine().load_file("/nonexistent/p.toml"); },
                 "/nonexistent/p.toml: cannot open the pipeline file");
    EXPECT_ERROR([] { engine().load_string("[nodes.a\nop = 1", "bad.toml"); }, "bad.toml:1:");
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    EXPECT_ERROR([&] { p.set("nokey"); }, "expected --set node.key=value");
    EXPECT_ERROR([&] { p.set("nokey", 1); }, "expected a key node.key");
    EXPECT_ERROR([&] { p.backend("gpu"); }, "backend(\"gpu\"): backend is one of auto, cpu, cuda");
    Image in = noise(20, 10, 3, 1);
    p.backend("cpu").input("src", in.view()).set("a.sigma", -3.0);
    EXPECT_ERROR([&] { p.run(); }, "set(\"a.sigma\", -3): node 'a': sigma = -3 is out of range");
    Pipeline q = engine().load_string(kMemorySource + kChain, "api.toml");
    q.input("src", in.view()).set("ghost.sigma", 1.0);
    EXPECT_ERROR([&] { q.compile(); }, "no node 'ghost'");
}

TEST(ApiErrors, Inputs) {
    Image in = noise(20, 10, 3, 1);
    auto fresh = [] { return engine().load_string(kMemorySource + kChain, "api.toml"); };
    EXPECT_ERROR(
        [&] { fresh().input("a", in.view()).run(); },
        "api.toml:4:6: node 'a': is op = \"gauss5x5\"; images are bound to memory nodes (op = \"memory\"); its memory nodes: src");
    EXPECT_ERROR([&] { fresh().input("nope", in.view()).run(); },
                 "input(\"nope\"): no node 'nope' to bind an image to");
    EXPECT_ERROR([&] { fresh().input("src", ImageView()); },
                 "input(\"src\"): node 'src': the image must be at least 1x1");
    EXPECT_ERROR([&] { fresh().run(); }, "api.toml:1:8: node 'src': no image is bound to this memory node");
    Pipeline declared = engine().load_string("[nodes.src]\nop = \"memory\"\nwidth = 64\n" + kChain, "decl.toml");
    EXPECT_ERROR([&] { declared.input("src", in.view()).run(); },
                 "decl.toml:3:9: node 'src': width = 64 but the bound image is 20x10 u8 with 3 channels");
}

TEST(ApiErrors, DeviceInputWithoutAUsableDevice) {
    if (engine().cuda_available()) GTEST_SKIP() << "what happens without a usable CUDA device";
    Image in = noise(20, 10, 3, 1);
    ImageView v = in.view();
    v.device = 0; // never read: compiling refuses it first
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    EXPECT_ERROR([&] { p.input("src", v).run(); }, "input(\"src\"): node 'src': the image lies on CUDA device 0 but ");
}

TEST(ApiErrors, Outputs) {
    Image in = noise(20, 10, 3, 1);
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    p.backend("cpu").input("src", in.view());
    EXPECT_ERROR([&] { p.output("nope").run(); }, "output(\"nope\"): no node 'nope'; nodes: src, a, b, pool, gray");
    Pipeline q = engine().load_string(kMemorySource + kChain, "api.toml");
    Image wrong(5, 5, 1, DType::u8);
    q.backend("cpu").input("src", in.view()).output("gray", wrong.view());
    EXPECT_ERROR(
        [&] { q.run(); },
        "output(\"gray\"): node 'gray': the buffer is 5x5 u8 with 1 channel but the output is 10x5 u8 with 1 channel");
    Pipeline r = engine().load_string(kMemorySource + kChain, "api.toml");
    EXPECT_ERROR([&] { r.backend("cpu").input("src", in.view()).output("gray.mask").run(); },
                 "node 'gray': has no output 'mask'; outputs: out");
    EXPECT_ERROR([&] { r.output("src", ImageView()); }, "the buffer needs non-null data");
}

TEST(ApiErrors, FusedAwayNodesAndSinks) {
    TempDir t;
    Pipeline p = engine().load_string(kMemorySource +
                                          "[nodes.add]\nop = \"tp_add\"\ninput = \"src\"\n"
                                          "[nodes.scale]\nop = \"tp_scale\"\ninput = \"add\"\n"
                                          "[nodes.out]\nop = \"save\"\ninput = \"scale\"\npath = \"" +
                                          (t / "o.pgm") + "\"\n",
                                      "fuse.toml");
    Image in = noise(8, 8, 1, 1);
    p.backend("cpu").input("src", in.view());
    EXPECT_ERROR([&] { p.output("add").run(); }, "node 'add' was fused into 'scale'");
    Pipeline q = engine().load_string(
        kMemorySource + "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"" + (t / "o.pgm") + "\"\n", "sink.toml");
    EXPECT_ERROR([&] { q.input("src", in.view()).output("out").run(); }, "node 'out': produces no image (a sink)");
}

TEST(ApiErrors, AnOperatorRefusingItsInputWhileRunningIsTheUsersAndWritesNothing) {
    TempDir t;
    Pipeline p = engine().load_string(kMemorySource +
                                          "[nodes.f]\nop = \"tp_fail\"\ninput = \"src\"\n"
                                          "[nodes.out]\nop = \"save\"\ninput = \"f\"\npath = \"" +
                                          (t / "o.pgm") + "\"\n",
                                      "fail.toml");
    Image in = noise(8, 8, 1, 1);
    p.input("src", in.view());
    try {
        p.run();
        FAIL() << "the run should fail";
    } catch (const pixflow::UserError& e) {
        EXPECT_NE(std::string(e.what()).find("fail.toml:3:8: node 'f' (tp_fail on cpu): tp_fail failed on purpose"),
                  std::string::npos)
            << e.what();
        ASSERT_EQ(e.diagnostics().size(), 1u);
        EXPECT_EQ(e.diagnostics()[0].node, "f");
    }
    EXPECT_TRUE(fs::is_empty(t.path));
}

TEST(ApiCli, MemoryIsListedAndAnUnboundMemoryNodeFailsTheRun) {
    auto d = pixflow::testing::run_pixflow("describe memory");
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_NE(d.out.find("memory: The caller's image"), std::string::npos) << d.out;
    TempDir t;
    pixflow::testing::write_text(t / "m.toml",
                                 "[nodes.src]\nop = \"memory\"\nwidth = 8\nheight = 8\nchannels = 1\ndtype = \"u8\"\n"
                                 "[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n");
    auto v = pixflow::testing::run_pixflow("validate '" + (t / "m.toml") + "'");
    EXPECT_EQ(v.exit_code, 0) << v.err;
    auto r = pixflow::testing::run_pixflow("run '" + (t / "m.toml") + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("node 'src' (memory on cpu): no image is bound to this memory node"), std::string::npos)
        << r.err;
}

TEST(Api, ShapeAndResultsTellWhatTheNextRunProduces) {
    Image in = noise(67, 45, 3, 4);
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    p.backend("cpu").input("src", in.view());
    EXPECT_EQ(p.results(), std::vector<std::string>{"gray"});
    ImageView g = p.shape("gray"), a = p.shape("a"), s = p.shape("src");
    EXPECT_EQ(g.width, 33);
    EXPECT_EQ(g.height, 22);
    EXPECT_EQ(g.channels, 1);
    EXPECT_EQ(g.dtype, DType::u8);
    EXPECT_EQ(g.device, PF_HOST);
    EXPECT_EQ(g.pitch, 33);
    EXPECT_EQ(g.data, nullptr);
    EXPECT_EQ(a.width, 67);
    EXPECT_EQ(a.channels, 3);
    EXPECT_EQ(s.width, 67);
    EXPECT_EQ(compiles(p), 1);
    p.run();
    EXPECT_EQ(compiles(p), 1) << "shape() compiled for the bound inputs; run() reuses it";
    EXPECT_ERROR([&] { p.shape("nope"); }, "output(\"nope\"): no node 'nope'");
    Image gray = noise(16, 8, 1, 4);
    Pipeline q = engine().load_string(kMemorySource + "[nodes.seg]\nop = \"chan_vese\"\ninput = \"src\"\n", "two.toml");
    q.backend("cpu").input("src", gray.view());
    EXPECT_EQ(q.results(), (std::vector<std::string>{"seg.mask", "seg.phi"}));
    EXPECT_EQ(q.shape("seg.phi").dtype, DType::f32);
}

TEST(Api, DescribeGivesWhatPixflowDescribeShows) {
    pixflow::OperatorInfo d = engine().describe("gauss5x5");
    EXPECT_EQ(d.name, "gauss5x5");
    EXPECT_EQ(d.plugin, "gauss5x5");
    ASSERT_EQ(d.inputs.size(), 1u);
    ASSERT_EQ(d.outputs.size(), 1u);
    EXPECT_FALSE(d.backends.empty());
    auto cli = pixflow::testing::run_pixflow("describe gauss5x5");
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    EXPECT_NE(cli.out.find(d.name + ": " + d.doc), std::string::npos) << cli.out;
    EXPECT_NE(cli.out.find(d.inputs[0].name + ": " + d.inputs[0].accepts), std::string::npos) << cli.out;
    ASSERT_FALSE(d.params.empty());
    for (const auto& q : d.params) {
        std::string line = q.name + " (" + q.type + ", " + (q.required ? "required" : "default " + q.default_value) +
                           (q.accepted.empty() ? "" : "; " + q.accepted) + "): " + q.doc;
        EXPECT_NE(cli.out.find(line), std::string::npos) << line << "\n" << cli.out;
    }
    EXPECT_ERROR([&] { engine().describe("gauss5x6"); },
                 "describe(\"gauss5x6\"): unknown op 'gauss5x6'; did you mean gauss5x5?");
}

TEST(Api, ReportNotesSayWhichBuffersWereCopied) {
    Image in = noise(67, 45, 3, 5);
    Image out(33, 22, 1, DType::u8);
    Pipeline p = engine().load_string(kMemorySource + kChain, "api.toml");
    auto r = p.backend("cpu").input("src", in.view()).output("gray", out.view()).run();
    for (const auto& n : r.notes) EXPECT_EQ(n.find("copied"), std::string::npos) << n;
    std::vector<std::byte> in_mem(std::size_t(45) * 208 + 1), out_mem(std::size_t(22) * 40 + 1);
    ImageView pin = in.view(), pout = out.view();
    pin.pitch = 208;
    pin.data = in_mem.data() + 1;
    pout.pitch = 40;
    pout.data = out_mem.data() + 1;
    r = p.input("src", pin).output("gray", pout).run();
    std::string all;
    for (const auto& n : r.notes) all += n + "\n";
    EXPECT_NE(
        all.find("input(\"src\"): copied into a staging buffer; memory is read in place when it lies on the host, "
                 "with packed rows that start 64-byte aligned"),
        std::string::npos)
        << all;
    EXPECT_NE(all.find("output(\"gray\"): copied into the caller's buffer after the run"), std::string::npos) << all;
}
