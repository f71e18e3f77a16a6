// Where nodes run and where data moves. tp_dual and tp_two claim a CUDA implementation, so these
// plans are checked on any machine; nothing here runs on a GPU.
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

using namespace pixflow::host;

namespace {
const Registry& reg() {
    static Registry r;
    static bool loaded =
        (r.load_all({pixflow::testing::plugin_dir(), pixflow::testing::test_plugin("planner_ops")}), true);
    (void)loaded;
    return r;
}
Graph graph(const std::string& text) { return build_graph(parse_pipeline_text(text, "p.toml"), reg()); }
PlanOptions with_gpu() {
    PlanOptions o;
    o.cuda_usable = true;
    return o;
}
const char* chain = R"(
[nodes.src]
op = "tp_src"
[nodes.a]
op = "tp_dual"
input = "src"
[nodes.b]
op = "tp_dual"
input = "a"
[nodes.c]
op = "tp_dual"
input = "b"
[nodes.sink]
op = "tp_cpu"
input = "c"
)";
} // namespace

TEST(Planner, CudaChainPlansOneUploadAndOneDownload) {
    Graph g = graph(chain);
    Plan p = make_plan(g, with_gpu());
    EXPECT_EQ(p.uploads(), 1);
    EXPECT_EQ(p.downloads(), 1);
    EXPECT_FALSE(p.on_device(g.find("src")));
    EXPECT_TRUE(p.on_device(g.find("a")));
    EXPECT_TRUE(p.on_device(g.find("b")));
    EXPECT_TRUE(p.on_device(g.find("c")));
    EXPECT_FALSE(p.on_device(g.find("sink")));
    // The upload feeds a, the download leaves c; b and c read in place.
    EXPECT_GE(p.input_transfer[g.find("a")][0], 0);
    EXPECT_EQ(p.input_transfer[g.find("b")][0], -1);
    EXPECT_EQ(p.input_transfer[g.find("c")][0], -1);
    EXPECT_GE(p.input_transfer[g.find("sink")][0], 0);
    // A chain stays on one stream.
    EXPECT_EQ(p.stream[g.find("a")], p.stream[g.find("c")]);
}

TEST(Planner, WithoutAGpuAutoRunsOnTheCpuAndSaysSo) {
    Graph g = graph(chain);
    PlanOptions o;
    o.cuda_usable = false;
    o.cuda_why = "no CUDA device found";
    Plan p = make_plan(g, o);
    EXPECT_EQ(p.uploads() + p.downloads(), 0);
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_NE(p.notes[0].find("no CUDA device found; running on the CPU"), std::string::npos);
}

TEST(Planner, ExplicitCudaWithoutAGpuIsAnErrorAtTheBackendKey) {
    std::string text = std::string(chain) + "";
    text.replace(text.find("op = \"tp_dual\"\ninput = \"a\""), 0, "backend = \"cuda\"\n");
    Graph g = graph(text);
    PlanOptions o;
    o.cuda_why = "no CUDA device found";
    try {
        make_plan(g, o);
        FAIL();
    } catch (const UserError& e) {
        EXPECT_EQ(e.diagnostics()[0].str(),
                  "p.toml:8:11: node 'b': backend = \"cuda\" but no CUDA device found; accepted: \"cpu\" or \"auto\"");
    }
}

TEST(Planner, ExplicitCudaOnACpuOnlyOpIsAnError) {
    Graph g = graph("[nodes.src]\nop = \"tp_src\"\n[nodes.x]\nop = \"tp_cpu\"\ninput = \"src\"\nbackend = \"cuda\"\n");
    try {
        make_plan(g, with_gpu());
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("op tp_cpu has no CUDA implementation"), std::string::npos) << e.what();
    }
}

TEST(Planner, BackendOverrideForcesCpuButKeepsExplicitNodes) {
    std::string text = "[nodes.src]\nop = \"tp_src\"\n[nodes.a]\nop = \"tp_dual\"\ninput = \"src\"\n"
                       "[nodes.b]\nop = \"tp_dual\"\ninput = \"a\"\nbackend = \"cuda\"\n";
    Graph g = graph(text);
    PlanOptions o = with_gpu();
    o.backend_override = "cpu";
    Plan p = make_plan(g, o);
    EXPECT_FALSE(p.on_device(g.find("a")));
    EXPECT_TRUE(p.on_device(g.find("b")));
    EXPECT_EQ(p.uploads(), 1);
    EXPECT_EQ(p.downloads(), 0);
}

TEST(Planner, ASharedHostOutputIsUploadedOnceForTwoDeviceConsumers) {
    std::string text = "[nodes.src]\nop = \"tp_src\"\n[nodes.a]\nop = \"tp_dual\"\ninput = \"src\"\n"
                       "[nodes.b]\nop = \"tp_dual\"\ninput = \"src\"\n"
                       "[nodes.j]\nop = \"tp_two\"\ninputs = { a = \"a\", b = \"b\" }\n";
    Graph g = graph(text);
    Plan p = make_plan(g, with_gpu());
    EXPECT_EQ(p.uploads(), 1);
    EXPECT_EQ(p.transfers[0].consumers.size(), 2u);
    // Independent branches get their own streams.
    EXPECT_NE(p.stream[g.find("a")], p.stream[g.find("b")]);
    EXPECT_EQ(p.downloads(), 0);
}

TEST(Planner, DotShowsBackendsAndTransfers) {
    Graph g = graph(chain);
    std::string dot = plan_to_dot(g, make_plan(g, with_gpu()));
    EXPECT_NE(dot.find("upload H2D"), std::string::npos);
    EXPECT_NE(dot.find("download D2H"), std::string::npos);
    EXPECT_NE(dot.find("tp_dual (cuda)"), std::string::npos);
    EXPECT_NE(dot.find("tp_src (cpu)"), std::string::npos);
}

TEST(Sdk, SchemaBuiltOnATemporaryKeepsItsStrings) {
    const pf_op_desc* d = reg().find("tp_src")->desc;
    ASSERT_EQ(d->n_params, 4);
    EXPECT_EQ(describe_accepted(d->params[2]), "one of ramp, flat");
    EXPECT_STREQ(d->params[2].default_value.s, "ramp");
    EXPECT_STREQ(d->params[3].default_value.s, "a label longer than the small-string buffer");
}
