// Every example pipeline validates and runs, on small synthetic inputs, writing into a temp dir.
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

using namespace pixflow::host;
namespace fs = std::filesystem;

namespace {
std::vector<fs::path> pipelines() {
    std::vector<fs::path> out;
    if (!fs::is_directory(pixflow::testing::source_dir() / "pipelines")) return out;
    for (const auto& e : fs::recursive_directory_iterator(pixflow::testing::source_dir() / "pipelines"))
        if (e.path().extension() == ".toml") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}
} // namespace

class ExamplePipeline : public ::testing::TestWithParam<fs::path> {};

TEST_P(ExamplePipeline, ValidatesAndRunsOnSmallInputs) {
    static Registry reg;
    static bool loaded = (reg.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    pixflow::testing::TempDir dir;
    PipelineSpec first = parse_pipeline_file(GetParam());
    std::vector<std::string> sets;
    for (const NodeSpec& n : first.nodes) {
        const OpInfo* op = reg.find(n.op);
        ASSERT_NE(op, nullptr) << n.op;
        if (n.op == "synth") {
            sets.push_back(n.id + ".width=67");
            sets.push_back(n.id + ".height=45");
        }
        for (int k = 0; k < op->desc->n_params; ++k) {
            // Files an example reads are named relative to the repository root.
            if (op->desc->params[k].flags & PF_PARAM_INPUT_PATH) {
                auto it = std::find_if(n.params.begin(), n.params.end(),
                                       [&](auto& kv) { return kv.first == op->desc->params[k].name; });
                if (it != n.params.end() && fs::path(it->second.s).is_relative())
                    sets.push_back(n.id + "." + op->desc->params[k].name + "=" +
                                   (pixflow::testing::source_dir() / it->second.s).string());
            }
            if (op->desc->params[k].flags & PF_PARAM_OUTPUT_PATH) {
                auto it = std::find_if(n.params.begin(), n.params.end(),
                                       [&](auto& kv) { return kv.first == op->desc->params[k].name; });
                std::string ext = it != n.params.end() ? fs::path(it->second.s).extension().string() : ".npy";
#ifndef PIXFLOW_TEST_WITH_OIIO
                // Without OpenImageIO only the built-in formats can be written.
                if (ext != ".pgm" && ext != ".ppm" && ext != ".pfm" && ext != ".npy") ext = ".npy";
#endif
                sets.push_back(n.id + "." + op->desc->params[k].name + "=" + (dir / (n.id + ext)));
            }
        }
    }
    Graph g = build_graph(parse_pipeline_file(GetParam(), sets), reg);
    PlanOptions po;
    po.cuda_usable = cuda_usable(&po.cuda_why);
    Plan p = make_plan(g, po);
    Executor ex(g, p);
    RunReport r = ex.run();
    for (const auto& f : r.outputs) EXPECT_TRUE(fs::exists(f)) << f;
}

INSTANTIATE_TEST_SUITE_P(All, ExamplePipeline, ::testing::ValuesIn(pipelines()), [](const auto& info) {
    std::string s = fs::relative(info.param, pixflow::testing::source_dir() / "pipelines").replace_extension().string();
    std::string out;
    for (char c : s)
        if (std::isalnum(static_cast<unsigned char>(c))) out += c;
    return out;
});
