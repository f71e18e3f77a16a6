// Tests of the compare operator through the real plugin and executor: its metrics against a
// reference computed here from the same images, the PSNR peak of each dtype, identical images
// (PSNR +inf: printed "inf", null in the JSON report), and shape or dtype mismatches reported at
// validation.
#include "../kernels/compare.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <pixflow/error.hpp>

#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

using namespace pixflow::host;

namespace {

const Registry& registry() {
    static Registry r;
    static bool loaded = (r.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    return r;
}

std::string synth(const std::string& id, int w, int h, int channels, const std::string& dtype, int seed) {
    return "[nodes." + id + "]\nop = \"synth\"\npattern = \"noise\"\nwidth = " + std::to_string(w) +
           "\nheight = " + std::to_string(h) + "\nchannels = " + std::to_string(channels) + "\ndtype = \"" + dtype +
           "\"\nseed = " + std::to_string(seed) + "\n";
}

const char* kCompare = "[nodes.diff]\nop = \"compare\"\ninputs = { a = \"a\", b = \"b\" }\n";

struct Result {
    std::map<std::string, double> metrics;
    nlohmann::json json;
    HostImage a, b;
};

Result run(const std::string& text) {
    Graph g = build_graph(parse_pipeline_text(text, "compare.toml"), registry());
    PlanOptions o; // CPU: compare is CPU only, and so are the sources
    Plan p = make_plan(g, o);
    Executor ex(g, p);
    RunOptions ro;
    ro.keep_buffers = true;
    RunReport rep = ex.run(ro);
    Result r;
    for (const auto& n : rep.nodes)
        if (n.id == "diff") r.metrics = n.metrics;
    r.json = nlohmann::json::parse(rep.to_json());
    r.a = ex.fetch(g.find("a"));
    r.b = ex.fetch(g.find(g.find("b").valid() ? "b" : "a"));
    return r;
}

template <class T> double sample(const HostImage& im, std::size_t k) {
    T v;
    std::memcpy(&v, im.bytes.data() + k * sizeof(T), sizeof(T));
    return double(v);
}

/// PSNR, max and mean |a - b| written plainly, in double.
void expect_reference(const Result& r, double peak, double (*get)(const HostImage&, std::size_t)) {
    const std::size_t n = std::size_t(r.a.shape.width) * r.a.shape.height * r.a.shape.channels;
    double sum = 0, sq = 0, mx = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const double d = get(r.a, k) - get(r.b, k);
        sum += std::abs(d);
        sq += d * d;
        mx = std::max(mx, std::abs(d));
    }
    ASSERT_GT(sq, 0.0);
    EXPECT_EQ(r.metrics.at("max_abs_diff"), mx);
    EXPECT_NEAR(r.metrics.at("mean_abs_diff"), sum / double(n), 1e-9 * sum / double(n));
    EXPECT_NEAR(r.metrics.at("psnr"), 10 * std::log10(peak * peak / (sq / double(n))), 1e-9);
}

} // namespace

TEST(Compare, MatchesAReferenceWithThePeakOfEachDtype) {
    {
        SCOPED_TRACE("u8, peak 255");
        Result r = run(synth("a", 67, 45, 3, "u8", 1) + synth("b", 67, 45, 3, "u8", 2) + kCompare);
        expect_reference(r, 255.0, &sample<std::uint8_t>);
    }
    {
        SCOPED_TRACE("u16, peak 65535");
        Result r = run(synth("a", 31, 17, 1, "u16", 1) + synth("b", 31, 17, 1, "u16", 2) + kCompare);
        expect_reference(r, 65535.0, &sample<std::uint16_t>);
    }
    {
        SCOPED_TRACE("f32, peak 1");
        Result r = run(synth("a", 40, 9, 4, "f32", 1) + synth("b", 40, 9, 4, "f32", 2) + kCompare);
        expect_reference(r, 1.0, &sample<float>);
    }
}

TEST(Compare, IdenticalImagesGiveInfinitePsnrAndNullInJson) {
    Result r =
        run(synth("a", 33, 21, 1, "u8", 4) + "[nodes.diff]\nop = \"compare\"\ninputs = { a = \"a\", b = \"a\" }\n");
    EXPECT_EQ(r.metrics.at("psnr"), std::numeric_limits<double>::infinity());
    EXPECT_EQ(r.metrics.at("max_abs_diff"), 0.0);
    EXPECT_EQ(r.metrics.at("mean_abs_diff"), 0.0);
    // JSON has no infinity: nlohmann keeps +inf in memory and writes it as null.
    const auto m = nlohmann::json::parse(r.json["nodes"][1]["metrics"].dump());
    EXPECT_TRUE(m["psnr"].is_null()) << m.dump();
    EXPECT_EQ(m["max_abs_diff"], 0.0);
}

TEST(Compare, ShapeOrDtypeMismatchIsAValidationError) {
    for (const std::string& b :
         {synth("b", 64, 65, 1, "u8", 2), synth("b", 64, 64, 3, "u8", 2), synth("b", 64, 64, 1, "u16", 2)}) {
        try {
            run(synth("a", 64, 64, 1, "u8", 1) + b + kCompare);
            ADD_FAILURE() << "no error for " << b;
        } catch (const UserError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("node 'diff'"), std::string::npos) << msg;
            EXPECT_NE(msg.find("compare: a is 64x64x1 u8 and b is"), std::string::npos) << msg;
            EXPECT_NE(msg.find("they need the same size, channels and dtype"), std::string::npos) << msg;
        }
    }
}

TEST(Compare, PixflowRunPrintsInfAndTheReportWritesNull) {
    pixflow::testing::TempDir dir;
    pixflow::testing::write_text(dir / "same.toml",
                                 synth("a", 16, 16, 1, "u8", 1) +
                                     "[nodes.diff]\nop = \"compare\"\ninputs = { a = \"a\", b = \"a\" }\n");
    auto r = pixflow::testing::run_pixflow("run " + (dir / "same.toml") + " --report " + (dir / "r.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("diff: psnr = inf"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("diff: max_abs_diff = 0"), std::string::npos) << r.out;
    std::ifstream in(dir / "r.json");
    const std::string json((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(json.find("\"psnr\": null"), std::string::npos) << json;
}

// ---- the kernel on its own, without pixflow
// ------------------------------------------------------

TEST(CompareKernel, OneOffEverywhereGivesPsnrOfThePeak) {
    auto a = pixflow::testing::Image::make(13, 7, 2, pixflow::DType::u16);
    auto b = a;
    for (std::size_t k = 0; k < b.samples(); ++k) b.set(k, k % 2 ? 1.0 : 0.0);
    a.set(0, 1.0); // one sample off the other way: |a - b| = 1 there too
    const pixflow::compare::Stats s = pixflow::compare::compare_cpu(a.view(), b.view());
    const double off = double(b.samples() / 2 + 1) / double(b.samples());
    EXPECT_EQ(s.max_abs_diff, 1.0);
    EXPECT_DOUBLE_EQ(s.mean_abs_diff, off);
    EXPECT_DOUBLE_EQ(s.psnr, 10.0 * std::log10(65535.0 * 65535.0 / off));
    EXPECT_THROW(
        pixflow::compare::compare_cpu(a.view(), pixflow::testing::Image::make(13, 7, 1, pixflow::DType::u16).view()),
        pixflow::UserError);
}
