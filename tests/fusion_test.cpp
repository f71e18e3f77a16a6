// Fusion: a plugin's fused implementation replaces a matching chain, and only when it may.
#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace pixflow::host;

namespace {
const Registry& reg() {
    static Registry r;
    static bool loaded =
        (r.load_all({pixflow::testing::test_plugin("planner_ops"), pixflow::testing::test_plugin("fusion_ops")}), true);
    (void)loaded;
    return r;
}

struct Planned {
    Graph g;
    Plan p;
    int fused = 0;
};

Planned prepare(const std::string& text, bool fuse_on, PlanOptions o = {}) {
    Graph g = build_graph(parse_pipeline_text(text, "f.toml"), reg());
    Plan p = make_plan(g, o);
    int n = fuse_on ? fuse(g, p, o, reg()) : 0;
    return {std::move(g), std::move(p), n};
}

std::vector<std::byte> output_of(Planned& r, const std::string& id) {
    Executor ex(r.g, r.p);
    RunOptions o;
    o.keep_buffers = true;
    ex.run(o);
    return ex.fetch(r.g.find(id)).bytes;
}

const std::string chain = "[nodes.src]\nop = \"tp_src\"\nwidth = 40\nheight = 30\n"
                          "[nodes.add]\nop = \"tp_add\"\ninput = \"src\"\nk = 7\n"
                          "[nodes.scale]\nop = \"tp_scale\"\ninput = \"add\"\nm = 3\n";
} // namespace

TEST(Fusion, ReplacesAMatchingChainAndGivesTheSameResult) {
    Planned fused = prepare(chain, true);
    Planned plain = prepare(chain, false);
    EXPECT_EQ(fused.fused, 1);
    ASSERT_EQ(fused.g.nodes.size(), 2u);
    const Node& n = fused.g.nodes[fused.g.find("scale")];
    EXPECT_STREQ(n.op->desc->name, "tp_add_scale");
    EXPECT_EQ(n.replaced, (std::vector<std::string>{"add", "scale"}));
    EXPECT_FALSE(fused.g.find("add").valid());
    auto a = output_of(fused, "scale"), b = output_of(plain, "scale");
    EXPECT_EQ(a, b);
    // (x + y + 7) * 3 saturated: pixel (39, 29) -> 75 * 3 = 225; (0, 0) -> 21.
    EXPECT_EQ(int(a[0]), 21);
    EXPECT_EQ(int(a.back()), 225);
}

TEST(Fusion, TheReportAndTheGraphShowTheFusedNode) {
    Planned r = prepare(chain, true);
    Executor ex(r.g, r.p);
    RunReport rep = ex.run();
    ASSERT_EQ(rep.nodes.size(), 2u);
    EXPECT_EQ(rep.nodes[1].op, "tp_add_scale");
    EXPECT_EQ(rep.nodes[1].replaced, (std::vector<std::string>{"add", "scale"}));
    EXPECT_EQ(nlohmann::json::parse(rep.to_json())["nodes"][1]["replaced"][0], "add");
    std::string dot = plan_to_dot(r.g, r.p);
    EXPECT_NE(dot.find("fused: add + scale"), std::string::npos) << dot;
    bool noted = false;
    for (const auto& s : r.p.notes) noted |= s.find("fused add, scale into one tp_add_scale node") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(Fusion, KeepsTheChainWhenAnIntermediateHasAnotherConsumer) {
    Planned r = prepare(chain + "[nodes.other]\nop = \"tp_cpu\"\ninput = \"add\"\n", true);
    EXPECT_EQ(r.fused, 0);
    EXPECT_EQ(r.g.nodes.size(), 4u);
}

TEST(Fusion, KeepsTheChainWhenASameConstraintFails) {
    std::string text = chain;
    text.replace(text.find("m = 3"), 5, "m = 3\nwrap = true");
    Planned r = prepare(text, true);
    EXPECT_EQ(r.fused, 0);
    std::string both = text;
    both.replace(both.find("k = 7"), 5, "k = 7\nwrap = true");
    EXPECT_EQ(prepare(both, true).fused, 1);
}

TEST(Fusion, KeepsTheChainWhenItsNodesRunOnDifferentBackends) {
    PlanOptions o;
    o.cuda_usable = true; // a plan only: nothing runs
    std::string text = chain;
    text.replace(text.find("k = 7"), 5, "k = 7\nbackend = \"cuda\"");
    text.replace(text.find("m = 3"), 5, "m = 3\nbackend = \"cpu\"");
    EXPECT_EQ(prepare(text, true, o).fused, 0);
}

TEST(Fusion, KeepsACudaChainWhenTheFusedOperatorHasNoCudaImplementation) {
    PlanOptions o;
    o.cuda_usable = true;
    o.backend_override = "cuda";
    Planned r = prepare(chain, true, o);
    EXPECT_EQ(r.fused, 0);
    EXPECT_TRUE(r.p.on_device(r.g.find("add")));
}

TEST(Fusion, FusesEveryOccurrence) {
    std::string text = chain + "[nodes.add2]\nop = \"tp_add\"\ninput = \"scale\"\nk = 1\n"
                               "[nodes.scale2]\nop = \"tp_scale\"\ninput = \"add2\"\nm = 1\n";
    Planned r = prepare(text, true);
    EXPECT_EQ(r.fused, 2);
    EXPECT_EQ(r.g.nodes.size(), 3u);
    EXPECT_EQ(output_of(r, "scale2"), output_of(*std::make_unique<Planned>(prepare(text, false)), "scale2"));
}

TEST(Fusion, TheFusedOperatorDeclaresItsChain) {
    const FusionInfo* f = reg().fusion_of("tp_add_scale");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->text(), "tp_add -> tp_scale");
    EXPECT_TRUE(f->fused->desc->flags & PF_OP_FUSED);
    EXPECT_EQ(reg().fusion_of("tp_add"), nullptr);
}
