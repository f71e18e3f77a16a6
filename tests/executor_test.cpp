// Running plans: results, reports, failures leaving nothing behind, and the GPU chain.
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace pixflow::host;
namespace fs = std::filesystem;

namespace {
const Registry& reg() {
    static Registry r;
    static bool loaded =
        (r.load_all({pixflow::testing::plugin_dir(), pixflow::testing::test_plugin("planner_ops")}), true);
    (void)loaded;
    return r;
}
struct Planned {
    Graph g;
    Plan p;
};
Planned prepare(const std::string& text, PlanOptions o = {}) {
    Graph g = build_graph(parse_pipeline_text(text, "p.toml"), reg());
    Plan p = make_plan(g, o);
    return {std::move(g), std::move(p)};
}
} // namespace

TEST(Executor, RunsACpuChainInOrder) {
    Planned r =
        prepare("[nodes.src]\nop = \"tp_src\"\nwidth = 5\nheight = 3\n[nodes.a]\nop = \"tp_cpu\"\ninput = \"src\"\n"
                "[nodes.b]\nop = \"tp_cpu\"\ninput = \"a\"\n");
    Executor ex(r.g, r.p);
    RunOptions o;
    o.keep_buffers = true;
    RunReport rep = ex.run(o);
    HostImage out = ex.fetch(r.g.find("b"));
    ASSERT_EQ(out.shape.width, 5);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 5; ++x) EXPECT_EQ(int(out.bytes[std::size_t(y * 5 + x)]), x + y + 4);
    EXPECT_EQ(rep.nodes.size(), 3u);
    EXPECT_EQ(rep.h2d_count + rep.d2h_count, 0);
}

TEST(Executor, RunsIndependentBranchesAndJoinsThem) {
    Planned r = prepare(
        "[nodes.src]\nop = \"tp_src\"\n[nodes.a]\nop = \"tp_cpu\"\ninput = \"src\"\n"
        "[nodes.b]\nop = \"tp_dual\"\ninput = \"src\"\n[nodes.j]\nop = \"tp_two\"\ninputs = { a = \"a\", b = \"b\" }\n");
    Executor ex(r.g, r.p);
    RunOptions o;
    o.keep_buffers = true;
    ex.run(o);
    HostImage out = ex.fetch(r.g.find("j"));
    EXPECT_EQ(int(out.bytes[0]), 2 + 1);
    EXPECT_EQ(int(out.bytes[9]), 2 * (1 + 1) + 3); // x=1, y=1: (2+2) + (2+1)
}

TEST(Executor, RunsEveryNodeExactlyOnceInWideGraphs) {
    // Regression: the first ready steps were started while scanning for them, so a step made
    // ready by an already started one could be started twice.
    std::string text;
    const int chains = 48;
    // Sources first, consumers after them: by the time the scan reaches a consumer, its source
    // has often finished.
    for (int k = 0; k < chains; ++k) text += "[nodes.s" + std::to_string(k) + "]\nop = \"tp_src\"\n";
    for (int k = 0; k < chains; ++k)
        text += "[nodes.c" + std::to_string(k) + "]\nop = \"tp_count\"\ninput = \"s" + std::to_string(k) + "\"\n";
    Planned r = prepare(text);
    double last = -1;
    for (int rep = 0; rep < 40; ++rep) {
        Executor ex(r.g, r.p);
        RunReport rep_ = ex.run();
        double lo = 1e300, hi = -1;
        for (const auto& n : rep_.nodes)
            if (n.op == "tp_count") lo = std::min(lo, n.metrics.at("call")), hi = std::max(hi, n.metrics.at("call"));
        ASSERT_EQ(hi - lo, chains - 1) << "a node ran twice or not at all";
        if (last >= 0) ASSERT_EQ(hi - last, chains) << "a node ran twice";
        last = hi;
    }
}

TEST(Executor, AFailingNodeWritesNoOutputFileAndNamesTheNode) {
    pixflow::testing::TempDir dir;
    std::string text = "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                       "[nodes.good]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                       (dir / "good.ppm") +
                       "\"\n"
                       "[nodes.gray]\nop = \"grayscale\"\ninput = \"src\"\n"
                       "[nodes.f]\nop = \"tp_fail\"\ninput = \"gray\"\n"
                       "[nodes.bad]\nop = \"save\"\ninput = \"f\"\npath = \"" +
                       (dir / "bad.pgm") + "\"\n";
    Planned r = prepare(text);
    Executor ex(r.g, r.p);
    try {
        ex.run();
        FAIL() << "the run should fail";
    } catch (const UserError& e) { // tp_fail throws with PF_ERR_INVALID: the user's
        EXPECT_NE(std::string(e.what()).find("p.toml:12:8: node 'f' (tp_fail on cpu): tp_fail failed on purpose"),
                  std::string::npos)
            << e.what();
    }
    // Not even the output of the branch that succeeded, and no temporaries.
    EXPECT_TRUE(fs::is_empty(dir.path)) << fs::directory_iterator(dir.path)->path();
}

TEST(Executor, SaveWritesAtomicallyAndCreatesTheFolder) {
    pixflow::testing::TempDir dir;
    std::string target = dir / "sub/out.pgm";
    Planned r = prepare("[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 4\nchannels = 1\n"
                        "[nodes.s]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                        target + "\"\n");
    Executor ex(r.g, r.p);
    RunReport rep = ex.run();
    ASSERT_EQ(rep.outputs.size(), 1u);
    EXPECT_TRUE(fs::exists(target));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path / "sub"), fs::directory_iterator{}), 1);
    EXPECT_EQ(fs::file_size(target), 8u * 4u + std::string("P5\n8 4\n255\n").size());
}

TEST(Executor, ReportJsonHasNodesTransfersAndPeakMemory) {
    Planned r = prepare(
        "[pipeline]\nname = \"t\"\n[nodes.src]\nop = \"tp_src\"\n[nodes.a]\nop = \"tp_cpu\"\ninput = \"src\"\n");
    Executor ex(r.g, r.p);
    auto j = nlohmann::json::parse(ex.run().to_json());
    EXPECT_EQ(j["pipeline"], "t");
    ASSERT_EQ(j["nodes"].size(), 2u);
    EXPECT_EQ(j["nodes"][1]["backend"], "cpu");
    EXPECT_TRUE(j["transfers"]["h2d"]["count"].is_number());
    EXPECT_TRUE(j["peak_device_bytes"].is_number());
}

TEST(ExecutorCuda, GaussChainUploadsOnceDownloadsOnceAndMatchesCpu) {
    PIXFLOW_REQUIRE_CUDA();
    std::string text =
        "[nodes.src]\nop = \"synth\"\nwidth = 301\nheight = 207\nchannels = 3\npattern = \"noise\"\n"
        "[nodes.a]\nop = \"gauss5x5\"\ninput = \"src\"\n[nodes.b]\nop = \"gauss5x5\"\ninput = \"a\"\n"
        "[nodes.c]\nop = \"gauss5x5\"\ninput = \"b\"\n[nodes.g]\nop = \"grayscale\"\ninput = \"c\"\nbackend = \"cpu\"\n";
    PlanOptions gpu;
    gpu.cuda_usable = true;
    Planned rg = prepare(text, gpu);
    Planned rc = prepare(text, PlanOptions{});
    ASSERT_EQ(rg.p.uploads(), 1);
    ASSERT_EQ(rg.p.downloads(), 1);
    Executor eg(rg.g, rg.p), ec(rc.g, rc.p);
    RunOptions keep;
    keep.keep_buffers = true;
    RunReport rep = eg.run(keep);
    ec.run(keep);
    EXPECT_EQ(rep.h2d_count, 1);
    EXPECT_EQ(rep.d2h_count, 1);
    EXPECT_GT(rep.peak_device_bytes, 0);
    for (const auto& n : rep.nodes)
        if (n.op == "gauss5x5") EXPECT_EQ(n.backend, "cuda");
    HostImage a = eg.fetch(rg.g.find("g")), b = ec.fetch(rc.g.find("g"));
    ASSERT_EQ(a.bytes.size(), b.bytes.size());
    int worst = 0;
    for (std::size_t k = 0; k < a.bytes.size(); ++k)
        worst = std::max(worst, std::abs(int(a.bytes[k]) - int(b.bytes[k])));
    EXPECT_LE(worst, 1);
}
