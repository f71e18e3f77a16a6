// One pipeline per error class in tests/errors/; each file's first line says where the error must
// point and what it must say:  # expect: LINE:COL: message
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <fstream>

using namespace pixflow::host;
namespace fs = std::filesystem;

namespace {

const Registry& builtin_registry() {
    static Registry reg;
    static bool loaded = (reg.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    return reg;
}

std::vector<fs::path> error_cases() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(pixflow::testing::source_dir() / "tests/errors"))
        if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

class PipelineError : public ::testing::TestWithParam<fs::path> {};

TEST_P(PipelineError, IsReportedWithLineColumnAndMessage) {
    fs::path file = GetParam();
    std::ifstream in(file);
    std::string first;
    std::getline(in, first);
    const std::string tag = "# expect: ";
    ASSERT_EQ(first.rfind(tag, 0), 0u) << file << " must start with '# expect: LINE:COL: message'";
    std::string expect = first.substr(tag.size());
    // Relative file name, as a user would type it from the source dir.
    std::string rel = fs::relative(file, pixflow::testing::source_dir()).string();
    fs::current_path(pixflow::testing::source_dir());
    try {
        Graph g = build_graph(parse_pipeline_file(rel), builtin_registry());
        FAIL() << rel << " was accepted; expected: " << expect;
    } catch (const UserError& e) {
        bool found = false;
        for (const auto& d : e.diagnostics()) found |= d.str().find(rel + ":" + expect) == 0;
        EXPECT_TRUE(found) << "expected a line starting with\n  " << rel << ":" << expect << "\ngot\n" << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Errors, PipelineError, ::testing::ValuesIn(error_cases()), [](const auto& info) {
    std::string s = info.param.stem().string();
    std::erase(s, '_');
    return s;
});

TEST(PipelineSet, OverridesAParameterAndReportsTheCommandLine) {
    const char* text = "[nodes.src]\nop = \"synth\"\n[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n";
    PipelineSpec spec = parse_pipeline_text(text, "p.toml", {"blur.sigma=2.5", "blur.border=zero"});
    Graph g = build_graph(spec, builtin_registry());
    const Node& n = g.nodes[g.find("blur")];
    EXPECT_DOUBLE_EQ(n.params[0].f, 2.5);
    EXPECT_STREQ(n.params[1].s, "zero");
    try {
        build_graph(parse_pipeline_text(text, "p.toml", {"blur.sigma=1000"}), builtin_registry());
        FAIL();
    } catch (const UserError& e) {
        EXPECT_EQ(e.diagnostics()[0].str().rfind("--set blur.sigma=1000: node 'blur': sigma = 1000 is out of range", 0),
                  0u)
            << e.what();
    }
}

TEST(PipelineSet, UnknownNodeListsTheNodes) {
    try {
        parse_pipeline_text("[nodes.src]\nop = \"synth\"\n", "p.toml", {"blurr.sigma=2"});
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("no node 'blurr'; nodes: src"), std::string::npos) << e.what();
    }
}

TEST(PipelineParse, ReportsEveryErrorNotJustTheFirst) {
    const char* text =
        "[nodes.src]\nop = \"synth\"\nwidht = 3\n[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\nsigma = \"x\"\n";
    try {
        build_graph(parse_pipeline_text(text, "p.toml"), builtin_registry());
        FAIL();
    } catch (const UserError& e) {
        ASSERT_EQ(e.diagnostics().size(), 2u) << e.what();
        EXPECT_EQ(e.diagnostics()[0].loc.line, 3);
        EXPECT_EQ(e.diagnostics()[1].loc.line, 7);
    }
}

TEST(PipelineParse, NodePortReferencesAndDefaultsResolve) {
    const char* text = "[nodes.src]\nop = \"synth\"\nwidth = 33\nheight = 17\nchannels = 1\n"
                       "[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src.out\"\n";
    Graph g = build_graph(parse_pipeline_text(text, "p.toml"), builtin_registry());
    const Node& n = g.nodes[g.find("blur")];
    EXPECT_EQ(n.inputs[0].node, g.find("src"));
    EXPECT_DOUBLE_EQ(n.params[0].f, 1.5); // the schema's default sigma
    ASSERT_EQ(n.outputs.size(), 1u);
    EXPECT_EQ(n.outputs[0].width, 33);
    EXPECT_EQ(n.outputs[0].height, 17);
}
