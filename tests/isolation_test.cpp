// Isolated batches (docs/guarantees.md, "Isolation"): an operator that segfaults, aborts,
// overflows its stack, calls exit() or hangs in one image fails that image alone, named with the
// signal and the node; its worker is replaced and the batch goes on; the summary, the report and
// the exit code count every image. The faulty operator is tp_fault (tests/test_plugins/faults.cpp),
// which misbehaves only for images of width 13. Timings here are never asserted: the one
// --timeout is 5 s for an operator that hangs forever.
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>

using pixflow::testing::q;
using pixflow::testing::slurp;
using pixflow::testing::write_ppm;
using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
using pixflow::testing::write_text;
namespace fs = std::filesystem;

namespace {

/// Every file below `dir` (hidden ones too: a temporary left behind shows), relative, sorted.
std::set<std::string> files_below(const fs::path& dir) {
    std::set<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
    return out;
}

std::string faults_plugin() { return q(pixflow::testing::test_plugin("faults").string()); }

/// in/a.ppm (8 wide), in/b.ppm (13 wide: the one tp_fault fails on), in/c.ppm, in/d.ppm, and
/// load -> tp_fault (fault) -> save.
struct FaultBatch {
    TempDir t;
    std::string pipeline;
    explicit FaultBatch(const std::string& fault) {
        write_ppm(t.path / "in/a.ppm", 8, 6, 1);
        write_ppm(t.path / "in/b.ppm", 13, 6, 2);
        write_ppm(t.path / "in/c.ppm", 9, 6, 3);
        write_ppm(t.path / "in/d.ppm", 10, 6, 4);
        pipeline = t / "fault.toml";
        write_text(pipeline, "[nodes.src]\nop = \"load\"\npath = \"x.ppm\"\n"
                             "[nodes.bad]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"" +
                                 fault +
                                 "\"\non_width = 13\n"
                                 "[nodes.out]\nop = \"save\"\ninput = \"bad\"\npath = \"x.ppm\"\n");
    }
    pixflow::testing::CommandResult run(const std::string& extra = "") const {
        // Under AddressSanitizer (scripts/sanitize.sh) a worker's SIGSEGV would become ASan's
        // report and exit status 1: the workers die of the signal, as in any other build.
        const char* asan = std::getenv("ASAN_OPTIONS");
        std::string before = asan ? asan : "";
        ::setenv("ASAN_OPTIONS", (before + (before.empty() ? "" : ":") + "handle_segv=0").c_str(), 1);
        auto r = run_pixflow("--plugin-path " + faults_plugin() + " run " + q(pipeline) + " --input " + q(t / "in") +
                             " --output " + q(t / "out") + " " + extra);
        if (asan)
            ::setenv("ASAN_OPTIONS", before.c_str(), 1);
        else
            ::unsetenv("ASAN_OPTIONS");
        return r;
    }
};

struct FaultCase {
    const char* fault;
    const char* reason; ///< what the failure of b.ppm must say
};

class IsolatedFault : public ::testing::TestWithParam<FaultCase> {};

} // namespace

TEST_P(IsolatedFault, FailsOnlyItsImageNamesTheCauseAndTheNodeAndTheBatchGoesOn) {
    FaultBatch f(GetParam().fault);
    auto r = f.run("--isolate");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(files_below(f.t.path / "out"), (std::set<std::string>{"a.ppm", "c.ppm", "d.ppm"}))
        << "the others written, nothing of b, no temporary";
    EXPECT_NE(r.out.find("4 image(s): 3 ok, 1 failed"), std::string::npos) << r.out << r.err;
    std::string want = f.t / "in/b.ppm" + ": " + GetParam().reason + " in node 'bad'";
    auto summary = r.err.find("failed inputs:");
    ASSERT_NE(summary, std::string::npos) << r.err;
    EXPECT_NE(r.err.find(want, summary), std::string::npos) << "want: " << want << "\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(Faults, IsolatedFault,
                         ::testing::Values(FaultCase{"segv", "the worker died of SIGSEGV"},
                                           FaultCase{"abort", "the worker died of SIGABRT"},
                                           FaultCase{"stack_overflow", "the worker died of SIGSEGV"},
                                           FaultCase{"exit", "an operator ended the worker by calling exit()"}),
                         [](const auto& info) {
                             std::string n = info.param.fault;
                             n.erase(std::remove(n.begin(), n.end(), '_'), n.end());
                             return n;
                         });

TEST(Isolation, HangingImageTimesOutAndTheOthersAreWritten) {
    FaultBatch f("hang");
    auto r = f.run("--timeout 5");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(files_below(f.t.path / "out"), (std::set<std::string>{"a.ppm", "c.ppm", "d.ppm"}));
    EXPECT_NE(r.err.find(f.t / "in/b.ppm" + ": timed out after 5 s in node 'bad'"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("4 image(s): 3 ok, 1 failed"), std::string::npos) << r.out;
}

TEST(Isolation, IsTheDefaultForAPluginFromOutsideTheInstallation) {
    FaultBatch f("segv");
    auto r = f.run(); // no --isolate: tp_fault's plugin came through --plugin-path
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("note: images run in"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a plugin from outside the installation"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the worker died of SIGSEGV in node 'bad'"), std::string::npos) << r.err;
    EXPECT_EQ(files_below(f.t.path / "out").size(), 3u);
}

TEST(Isolation, ACrashedWorkerIsReplacedForTheImagesAfterIt) {
    FaultBatch f("abort");
    fs::rename(f.t.path / "in/b.ppm", f.t.path / "in/0-first.ppm"); // the bad one runs first
    auto r = f.run("--isolate --max-in-flight 1");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(files_below(f.t.path / "out"), (std::set<std::string>{"a.ppm", "c.ppm", "d.ppm"}));
    EXPECT_NE(r.out.find("4 image(s): 3 ok, 1 failed"), std::string::npos) << r.out;
}

TEST(Isolation, FailFastStartsNoImageAfterTheCrash) {
    FaultBatch f("segv");
    fs::rename(f.t.path / "in/b.ppm", f.t.path / "in/0-first.ppm");
    auto r = f.run("--isolate --max-in-flight 1 --fail-fast");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(files_below(f.t.path / "out").empty());
    EXPECT_NE(r.err.find("3 input(s) not run"), std::string::npos) << r.err;
}

TEST(Isolation, ReportCountsEveryImageWithTheCrashAsItsError) {
    FaultBatch f("segv");
    auto r = f.run("--isolate --report " + q(f.t / "report.json"));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    std::ifstream in(f.t / "report.json");
    nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j.at("inputs"), 4);
    EXPECT_EQ(j.at("ok"), 3);
    EXPECT_EQ(j.at("failed"), 1);
    EXPECT_GE(j.at("isolated_workers").get<int>(), 1);
    int failed = 0;
    for (const auto& im : j.at("images")) {
        if (im.at("status") == "ok") {
            EXPECT_EQ(im.at("outputs").size(), 1u) << im;
            continue;
        }
        ++failed;
        EXPECT_EQ(im.at("input"), f.t / "in/b.ppm");
        EXPECT_NE(im.at("error").get<std::string>().find("SIGSEGV"), std::string::npos) << im;
        EXPECT_TRUE(im.at("outputs").empty());
    }
    EXPECT_EQ(failed, 1);
}

TEST(Isolation, WritesWhatAnInProcessBatchWritesWithATraceOfEveryNode) {
    FaultBatch f("none");
    auto iso = f.run("--isolate --trace " + q(f.t / "trace.json"));
    ASSERT_EQ(iso.exit_code, 0) << iso.err;
    fs::rename(f.t.path / "out", f.t.path / "out-isolated");
    auto in = f.run("--no-isolate");
    ASSERT_EQ(in.exit_code, 0) << in.err;
    for (std::string name : {"a.ppm", "b.ppm", "c.ppm", "d.ppm"})
        EXPECT_EQ(slurp(f.t.path / "out-isolated" / name), slurp(f.t.path / "out" / name)) << name;
    std::ifstream tin(f.t / "trace.json");
    nlohmann::json j = nlohmann::json::parse(tin);
    std::map<std::pair<std::string, std::string>, int> spans;
    for (const auto& e : j.at("traceEvents"))
        if (e.at("ph") == "X" && e.at("cat") != "image")
            ++spans[{e.at("args").at("image").get<std::string>(), e.at("name").get<std::string>()}];
    for (std::string name : {"a", "b", "c", "d"})
        for (std::string node : {"src", "bad", "out"})
            EXPECT_EQ((spans[{f.t / ("in/" + name + ".ppm"), node}]), 1) << name << " " << node;
}

TEST(Isolation, TimeoutCannotBeAskedWithoutIsolation) {
    FaultBatch f("none");
    auto r = f.run("--no-isolate --timeout 5");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--timeout"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(f.t.path / "out"));
}

TEST(InProcess, AnOperatorCallingExitFailsTheBatchInsteadOfEndingItWithSuccess) {
    FaultBatch f("exit");
    auto r = f.run("--no-isolate --max-in-flight 1");
    EXPECT_EQ(r.exit_code, 2) << "exit(0) in an operator must not read as success\n" << r.err;
    EXPECT_NE(r.err.find("an operator called exit()"), std::string::npos) << r.err;
    for (const auto& name : files_below(f.t.path / "out")) EXPECT_NE(name[0], '.') << "a temporary was left: " << name;
}

TEST(InProcess, AnOperatorCallingExitFailsASingleRunWithNothingWritten) {
    TempDir t;
    write_text(t / "p.toml", "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                             "[nodes.ok]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                                 (t / "new/a.ppm") +
                                 "\"\n"
                                 "[nodes.bad]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"exit\"\n"
                                 "[nodes.out]\nop = \"save\"\ninput = \"bad\"\npath = \"" +
                                 (t / "new/b.ppm") + "\"\n");
    auto r = run_pixflow("--plugin-path " + faults_plugin() + " run " + q(t / "p.toml"));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("an operator called exit() while the pipeline ran; nothing was written"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(t.path / "new")) << "no output, no temporary, no folder made for them";
}
