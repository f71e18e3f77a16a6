// The `pixflow` executable end to end: exit codes, messages, files.
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
namespace fs = std::filesystem;

TEST(Cli, OpsListsBackendsAndDocs) {
    auto r = run_pixflow("ops");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("gauss5x5"), std::string::npos);
    EXPECT_NE(r.out.find("synth"), std::string::npos);
}

TEST(Cli, DescribeShowsPortsAndParameters) {
    auto r = run_pixflow("describe gauss5x5");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("sigma (float, default 1.5"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("one of reflect101, replicate, zero"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("u8, u16, f32 with 1 to 4 channels"), std::string::npos) << r.out;
}

TEST(Cli, DescribeUnknownOpSuggests) {
    auto r = run_pixflow("describe gaus5x5");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("did you mean gauss5x5"), std::string::npos) << r.err;
}

TEST(Cli, PluginsListsRejectedFilesWithTheirReasons) {
    auto r = run_pixflow("--plugin-path '" + pixflow::testing::test_plugin_dir().string() + "' plugins");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("rejected  " + pixflow::testing::test_plugin("abi_major").string()), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("ABI major version differs"), std::string::npos);
    EXPECT_NE(r.out.find("loaded    " + (pixflow::testing::plugin_dir() / "pixflow_gauss5x5.so").string()),
              std::string::npos)
        << r.out;
}

TEST(Cli, ValidateReportsFileLineColumnAndExitsOne) {
    auto r = run_pixflow("validate tests/errors/bad_choice.toml");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("error: tests/errors/bad_choice.toml:7:10: node 'blur': border = \"mirror\" is not one of"),
              std::string::npos)
        << r.err;
}

TEST(Cli, RunWritesOutputsAndAJsonReport) {
    TempDir t;
    auto r = run_pixflow("run pipelines/blur.toml --set src.width=64 --set src.height=48 --set out.path='" +
                         (t / "b.ppm") + "' --backend cpu --report '" + (t / "r.json") + "' --profile");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(t / "b.ppm"));
    std::ifstream in(t / "r.json");
    auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["nodes"].size(), 3u);
    EXPECT_NE(r.out.find("transfers:"), std::string::npos) << r.out;
}

TEST(Cli, InvalidRunWritesNothingAndExitsOne) {
    TempDir t;
    auto r = run_pixflow("run pipelines/blur.toml --set blur.sigma=-3 --set out.path='" + (t / "b.ppm") + "'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--set blur.sigma=-3: node 'blur': sigma = -3 is out of range"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(t.path));
}

TEST(Cli, RefusesToOverwriteTheInput) {
    TempDir t;
    pixflow::testing::write_text(t / "in.pgm", "P5\n2 2\n255\nabcd");
    auto r = run_pixflow("run tests/data/copy.toml --set src.path='" + (t / "in.pgm") + "' --set out.path='" +
                         (t / "in.pgm") + "'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("would overwrite the file that node 'src' reads"), std::string::npos) << r.err;
    std::ifstream in(t / "in.pgm");
    std::string content((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(content, "P5\n2 2\n255\nabcd");
}

TEST(Cli, CorruptInputFailsWithTheFileNameAndWritesNothing) {
    TempDir t;
    pixflow::testing::write_text(t / "in.pgm", "P5\n200 200\n255\nshort");
    auto r = run_pixflow("run tests/data/copy.toml --set src.path='" + (t / "in.pgm") + "' --set out.path='" +
                         (t / "o.pgm") + "'");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("in.pgm"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(t / "o.pgm"));
}

TEST(Cli, GraphPrintsDot) {
    auto r = run_pixflow("graph pipelines/blur.toml --backend cpu --set out.path=b.ppm");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("digraph", 0), 0u);
    EXPECT_NE(r.out.find("gauss5x5 (cpu)"), std::string::npos);
}

TEST(Cli, BenchPrintsMedianAndFloorPerNode) {
    auto r = run_pixflow("bench pipelines/blur.toml --set src.width=128 --set src.height=64 --repeat 3 --backend cpu"
                         " --set out.path=b.ppm");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("x floor"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("gauss5x5"), std::string::npos) << r.out;
}

TEST(Cli, CudaBackendWithoutAGpuIsAClearError) {
    if (pixflow::testing::cuda_available()) GTEST_SKIP() << "a GPU is present";
    auto r = run_pixflow("run pipelines/blur.toml --backend cuda --set out.path=b.ppm");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("backend = \"cuda\" but"), std::string::npos) << r.err;
}

TEST(Docs, OperatorsPageCoversEveryOperatorAndParameter) {
    // docs/operators.md is generated: pixflow describe --markdown > docs/operators.md
    std::ifstream in(pixflow::testing::source_dir() / "docs/operators.md");
    std::string doc((std::istreambuf_iterator<char>(in)), {});
    auto r = run_pixflow("describe --markdown");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("## ", 0) == 0 || line.rfind("| `", 0) == 0) {
            std::string key = line.substr(0, line.find(" |", 3));
            EXPECT_NE(doc.find(key), std::string::npos)
                << "docs/operators.md lacks '" << key << "'; regenerate it with pixflow describe --markdown";
        }
}

TEST(Docs, WritingOperatorsTutorialShowsTheExampleFilesVerbatim) {
    // The tutorial cannot rot: each line "<!-- file: PATH -->" of docs/writing-operators.md is
    // followed by a fenced block that must be PATH's exact text, and every file of the example
    // (which CI builds out of tree) must be shown.
    const fs::path src = pixflow::testing::source_dir();
    const std::string doc_name = "docs/writing-operators.md", example = "sdk/examples/sobel";
    auto slurp = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    std::vector<std::string> lines;
    std::istringstream doc(slurp(src / doc_name));
    for (std::string line; std::getline(doc, line);) lines.push_back(line);
    ASSERT_FALSE(lines.empty()) << "cannot read " << src / doc_name;

    const std::string open = "<!-- file: ", close = " -->", fence = "```";
    std::set<std::string> shown;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& marker = lines[i];
        if (marker.rfind(open, 0) != 0) continue;
        const std::string where = doc_name + ":" + std::to_string(i + 1);
        ASSERT_TRUE(marker.size() > open.size() + close.size() &&
                    marker.compare(marker.size() - close.size(), close.size(), close) == 0)
            << where << ": a marker reads <!-- file: PATH -->, got: " << marker;
        const std::string path = marker.substr(open.size(), marker.size() - open.size() - close.size());
        ASSERT_TRUE(i + 1 < lines.size() && lines[i + 1].rfind(fence, 0) == 0)
            << where << ": the marker for " << path << " must be followed by a ``` line";
        std::string shown_text;
        std::size_t j = i + 2;
        for (; j < lines.size() && lines[j] != fence; ++j) shown_text += lines[j] + "\n";
        ASSERT_LT(j, lines.size()) << where << ": the code block of " << path << " is not closed";
        ASSERT_TRUE(fs::is_regular_file(src / path)) << where << ": " << path << " does not exist";
        EXPECT_EQ(shown_text, slurp(src / path))
            << where << ": the block differs from " << path << "; paste the file's current text";
        shown.insert(path);
        i = j;
    }
    for (const auto& entry : fs::directory_iterator(src / example))
        if (entry.is_regular_file()) {
            const std::string path = example + "/" + entry.path().filename().string();
            EXPECT_TRUE(shown.count(path))
                << doc_name << " does not show " << path << " (add it after a line <!-- file: " << path << " -->)";
        }
}
