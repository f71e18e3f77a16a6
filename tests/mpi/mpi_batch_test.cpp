// Batches over the ranks of mpirun (framework/mpi/, docs/mpi.md), run whole: `mpiexec
// --oversubscribe -np 2` and `-np 4` on this one machine (loopback), each against the same batch
// run by one process, which is the reference: the files written (bit for bit), the exit code, the
// summary and what the report says of every image. Then what goes wrong: a corrupt image, an
// invalid pipeline, ranks that see other inputs, an operator that crashes (isolated) or ends its
// rank (in-process), --fail-fast.
#include "mpiexec.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <set>

using pixflow::testing::q;
using pixflow::testing::slurp;
using pixflow::testing::write_ppm;
using pixflow::testing::CommandResult;
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

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

/// `mpiexec --oversubscribe -np N <command>` (mpiexec_prefix: from the source dir, as root too).
CommandResult run_mpi(int np, const std::string& command) {
    TempDir t;
    std::string cmd = pixflow::testing::mpiexec_prefix(t.path) + "-np " + std::to_string(np) + " " + command + " >" +
                      q(t / "out") + " 2>" + q(t / "err");
    int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(t / "out");
    r.err = slurp(t / "err");
    return r;
}

std::string pixflow_cmd() { return q(pixflow::testing::pixflow_exe().string()); }

/// 16 random RGB images of 16 sizes (so the ranks' shares differ) under in/, two of them in a
/// sub-folder, and the blur -> pool pipeline writing PPM.
struct Batch {
    TempDir t;
    static constexpr int n = 16;
    /// `scale` multiplies the sizes (a test that needs images slower than one round trip).
    explicit Batch(int scale = 1) {
        for (int i = 0; i < n; ++i) {
            std::string name = (i % 8 == 7 ? "sub/" : "") + std::string("img") + char('a' + i) + ".ppm";
            write_ppm(t.path / "in" / name, scale * (24 + 13 * i), scale * (40 + 7 * (i % 5)), unsigned(100 + i));
        }
    }
    /// `run` of the batch: "pixflow run P --input in --output <out> <extra>".
    std::string args(const std::string& out, const std::string& extra = "") const {
        return "run pipelines/batch-blur-pool.toml --set out.path=x.ppm --input " + q(t / "in") + " --output " +
               q(t / out) + " " + extra;
    }
    CommandResult alone(const std::string& out, const std::string& extra = "") const {
        return run_pixflow(args(out, extra));
    }
    CommandResult ranks(int np, const std::string& out, const std::string& extra = "") const {
        return run_mpi(np, pixflow_cmd() + " " + args(out, extra));
    }
    /// Whether out_a and out_b hold the same files, byte for byte.
    ::testing::AssertionResult same_files(const std::string& a, const std::string& b) const {
        auto fa = files_below(t.path / a), fb = files_below(t.path / b);
        if (fa != fb) return ::testing::AssertionFailure() << a << " and " << b << " hold other file names";
        for (const auto& f : fa)
            if (slurp(t.path / a / f) != slurp(t.path / b / f))
                return ::testing::AssertionFailure() << f << " differs between " << a << " and " << b;
        return ::testing::AssertionSuccess() << fa.size() << " identical files";
    }
};

class MpiRanks : public ::testing::TestWithParam<int> {};

} // namespace

TEST_P(MpiRanks, WriteTheSameFilesBitForBitAsOneProcess) {
    Batch b;
    auto one = b.alone("one");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    auto many = b.ranks(GetParam(), "many");
    EXPECT_EQ(many.exit_code, 0) << many.err;
    EXPECT_EQ(files_below(b.t.path / "many").size(), std::size_t(Batch::n));
    EXPECT_TRUE(b.same_files("one", "many"));
    EXPECT_EQ(count(many.out, "16 image(s): 16 ok, 0 failed"), 1u) << "one summary, from rank 0:\n" << many.out;
    EXPECT_EQ(count(many.err, "note: backend auto"), count(one.err, "note: backend auto"))
        << "every rank's copy of a note printed once:\n"
        << many.err;
}

TEST_P(MpiRanks, ReportListsEveryImageOnceWithTheRankThatRanIt) {
    Batch b;
    ASSERT_EQ(b.alone("one", "--report " + q(b.t / "one.json")).exit_code, 0);
    auto r = b.ranks(GetParam(), "many", "--report " + q(b.t / "many.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto one = nlohmann::json::parse(slurp(b.t / "one.json"));
    auto many = nlohmann::json::parse(slurp(b.t / "many.json"));
    // The shape of a single process's report, plus the ranks.
    for (const auto& [key, value] : one.items()) EXPECT_TRUE(many.contains(key)) << key;
    EXPECT_FALSE(one.contains("ranks"));
    ASSERT_EQ(many["ranks"].size(), std::size_t(GetParam()));
    EXPECT_EQ(many["ok"], Batch::n);
    EXPECT_EQ(many["inputs"], Batch::n);
    ASSERT_EQ(many["images"].size(), one["images"].size());
    std::vector<int> per_rank(std::size_t(GetParam()), 0);
    for (std::size_t i = 0; i < one["images"].size(); ++i) {
        const auto &a = one["images"][i], &m = many["images"][i];
        EXPECT_EQ(m["input"], a["input"]) << "input order, each image once";
        EXPECT_EQ(m["status"], "ok");
        EXPECT_FALSE(a.contains("rank"));
        ASSERT_TRUE(m.contains("rank")) << m.dump();
        int rank = m["rank"];
        ASSERT_GE(rank, 0);
        ASSERT_LT(rank, GetParam());
        ++per_rank[std::size_t(rank)];
        ASSERT_EQ(m["outputs"].size(), 1u);
        EXPECT_EQ(fs::path(m["outputs"][0].get<std::string>()).filename(),
                  fs::path(a["outputs"][0].get<std::string>()).filename());
    }
    for (int k = 0; k < GetParam(); ++k) {
        EXPECT_EQ(many["ranks"][std::size_t(k)]["rank"], k);
        EXPECT_EQ(many["ranks"][std::size_t(k)]["images"], per_rank[std::size_t(k)]) << "rank " << k;
    }
}

TEST_P(MpiRanks, CorruptImageFailsAloneAsInOneProcess) {
    Batch b;
    std::string bad = b.t / "in/imgc.ppm";
    std::string head = slurp(bad).substr(0, 30);
    write_text(bad, head); // the header promises more pixels than there are
    auto one = b.alone("one", "--report " + q(b.t / "one.json"));
    auto many = b.ranks(GetParam(), "many", "--report " + q(b.t / "many.json"));
    EXPECT_EQ(one.exit_code, 2) << one.err;
    EXPECT_EQ(many.exit_code, 2) << many.err;
    EXPECT_TRUE(b.same_files("one", "many"));
    EXPECT_EQ(files_below(b.t.path / "many").count("imgc.ppm"), 0u);
    EXPECT_EQ(files_below(b.t.path / "many").size(), std::size_t(Batch::n - 1));
    EXPECT_EQ(count(many.out, "16 image(s): 15 ok, 1 failed"), 1u) << many.out;
    EXPECT_EQ(count(many.err, "imgc.ppm: "), count(one.err, "imgc.ppm: "))
        << "its error while running and in the summary, once each:\n"
        << many.err;
    auto many_j = nlohmann::json::parse(slurp(b.t / "many.json"));
    EXPECT_EQ(many_j["failed"], 1);
    for (const auto& im : many_j["images"])
        if (im["input"].get<std::string>().find("imgc.ppm") != std::string::npos) {
            EXPECT_EQ(im["status"], "failed");
            EXPECT_NE(im["error"].get<std::string>().find("truncated"), std::string::npos) << im.dump();
        }
}

INSTANTIATE_TEST_SUITE_P(MpiBatch, MpiRanks, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "Ranks"; });

TEST(MpiBatch, InvalidPipelineIsReportedOnceWithTheExitCodeOfOneProcess) {
    Batch b;
    auto one = b.alone("one", "--set blur.sigma=-3");
    auto many = b.ranks(4, "many", "--set blur.sigma=-3");
    EXPECT_EQ(one.exit_code, 1);
    EXPECT_EQ(many.exit_code, 1) << many.err;
    EXPECT_EQ(count(many.err, "sigma = -3 is out of range"), 1u) << many.err;
    EXPECT_NE(many.err.find(one.err.substr(0, one.err.find('\n'))), std::string::npos) << "the same words:\n"
                                                                                       << many.err;
    EXPECT_FALSE(fs::exists(b.t.path / "many")) << "nothing created";
}

TEST(MpiBatch, RanksThatSeeOtherInputsAreRefusedBeforeAnythingRuns) {
    Batch b;
    // Rank 1 is given a folder with one image fewer: as if its machine did not share the inputs.
    fs::create_directories(b.t.path / "in1");
    fs::copy(b.t.path / "in", b.t.path / "in0", fs::copy_options::recursive);
    fs::copy(b.t.path / "in", b.t.path / "in1", fs::copy_options::recursive);
    fs::remove(b.t.path / "in1/imga.ppm");
    std::string each = "sh -c " + q("exec " + pixflow::testing::pixflow_exe().string() +
                                    " run pipelines/batch-blur-pool.toml --set out.path=x.ppm --input " + (b.t / "in") +
                                    "$OMPI_COMM_WORLD_RANK --output " + (b.t / "many"));
    auto r = run_mpi(2, each);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("error: rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sees 15 input(s) where rank 0 sees 16"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(b.t.path / "many")) << "nothing created";
}

TEST(MpiBatch, OperatorCrashUnderIsolationFailsOnlyItsImage) {
    Batch b;
    // tp_fault crashes on the image 37 wide (imgb.ppm, 24 + 13 x 1); its plugin comes through
    // --plugin-path, so every rank runs its images in worker processes.
    write_text(b.t / "fault.toml", "[nodes.src]\nop = \"load\"\npath = \"in.ppm\"\n"
                                   "[nodes.bad]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"segv\"\non_width = 37\n"
                                   "[nodes.out]\nop = \"save\"\ninput = \"bad\"\npath = \"x.ppm\"\n");
    std::string plugin = "--plugin-path " + q(pixflow::testing::test_plugin("faults").string());
    std::string args = plugin + " run " + q(b.t / "fault.toml") + " --input " + q(b.t / "in") + " --output ";
    // Under AddressSanitizer (scripts/sanitize.sh) the worker's SIGSEGV would become ASan's report
    // and exit status 1: the workers die of the signal, as in any other build.
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::string before = asan ? asan : "";
    ::setenv("ASAN_OPTIONS", (before + (before.empty() ? "" : ":") + "handle_segv=0").c_str(), 1);
    auto one = run_pixflow(args + q(b.t / "one"));
    auto many = run_mpi(2, pixflow_cmd() + " " + args + q(b.t / "many"));
    if (asan)
        ::setenv("ASAN_OPTIONS", before.c_str(), 1);
    else
        ::unsetenv("ASAN_OPTIONS");
    EXPECT_EQ(one.exit_code, 2) << one.err;
    EXPECT_EQ(many.exit_code, 2) << many.err;
    EXPECT_TRUE(b.same_files("one", "many"));
    EXPECT_EQ(files_below(b.t.path / "many").size(), std::size_t(Batch::n - 1)) << "no temporary, nothing of imgb";
    EXPECT_EQ(count(many.err, "imgb.ppm: the worker died of SIGSEGV in node 'bad'"), 2u) << many.err;
}

TEST(MpiBatch, RankEndedByAnOperatorStopsEveryRankCleanly) {
    Batch b;
    // In-process, tp_fault's exit() ends the rank that runs imgb.ppm, as it would end one process.
    write_text(b.t / "fault.toml", "[nodes.src]\nop = \"load\"\npath = \"in.ppm\"\n"
                                   "[nodes.bad]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"exit\"\non_width = 37\n"
                                   "[nodes.out]\nop = \"save\"\ninput = \"bad\"\npath = \"x.ppm\"\n");
    std::string args = "--plugin-path " + q(pixflow::testing::test_plugin("faults").string()) + " run " +
                       q(b.t / "fault.toml") + " --no-isolate --input " + q(b.t / "in") + " --output ";
    auto one = run_pixflow(args + q(b.t / "one"));
    auto many = run_mpi(4, pixflow_cmd() + " " + args + q(b.t / "many"));
    auto whole = run_pixflow(args + q(b.t / "whole") + " --set bad.fault=none"); // what each image is when written
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    EXPECT_EQ(one.exit_code, 2) << one.err;
    EXPECT_EQ(many.exit_code, 2) << many.err;
    // Which rank ran it depends on timing; it says it was a rank, which host, and why.
    EXPECT_NE(many.err.find(" on "), std::string::npos) << many.err;
    EXPECT_NE(many.err.find(": an operator called exit() while the batch ran"), std::string::npos) << many.err;
    for (const auto& f : files_below(b.t.path / "many")) {
        EXPECT_EQ(f.find("pixflow-tmp"), std::string::npos) << "a temporary was left: " << f;
        EXPECT_NE(f, "imgb.ppm");
        EXPECT_TRUE(slurp(b.t.path / "many" / f) == slurp(b.t.path / "whole" / f))
            << f << ": committed images are whole";
    }
}

TEST(MpiBatch, FailFastStopsHandingOutImagesToEveryRank) {
    Batch b(8); // about 10 ms an image on one thread, against the microseconds a failure takes to tell

    write_text(b.t / "in/imga.ppm", "P6\n9 9\n255\n"); // the first input, truncated
    auto r = b.ranks(2, "many", "--fail-fast --max-in-flight 1 --report " + q(b.t / "r.json"));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    auto j = nlohmann::json::parse(slurp(b.t / "r.json"));
    EXPECT_EQ(j["failed"], 1);
    EXPECT_EQ(int(j["ok"]) + int(j["failed"]) + int(j["skipped"]), Batch::n);
    EXPECT_GT(j["skipped"], 0) << "at most one image per rank was in flight when imga failed";
    EXPECT_EQ(files_below(b.t.path / "many").size(), std::size_t(int(j["ok"])));
}

TEST(MpiBatch, TraceHoldsEveryImageOfEveryRank) {
    Batch b;
    auto r = b.ranks(2, "many", "--trace " + q(b.t / "t.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(slurp(b.t / "t.json"));
    std::multiset<std::string> images;
    for (const auto& e : j["traceEvents"]) {
        int pid = e.value("pid", 0);
        EXPECT_LT(pid, 200) << "ranks 0 and 1 only: " << e.dump();
        if (e.value("ph", "") == "X" && pid % 100 == 0)
            images.insert(e["args"]["image"].get<std::string>()); // an image's span
    }
    EXPECT_EQ(images.size(), std::size_t(Batch::n));
    EXPECT_EQ(std::set<std::string>(images.begin(), images.end()).size(), std::size_t(Batch::n)) << "each image once";
}

TEST(MpiBatch, OtherCommandsRunOnceOnRankZero) {
    // a .ppm output: the check must not depend on OpenImageIO (GPU packs are built without it)
    auto r = run_mpi(2, pixflow_cmd() + " validate pipelines/batch-blur-pool.toml --set out.path=x.ppm");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(count(r.out, ": ok: "), 1u) << r.out;
}

TEST(MpiBatch, WithoutMpirunTheMpiBuildRunsAsBefore) {
    auto v = run_pixflow("--version");
    EXPECT_NE(v.out.find("MPI:         on (Open MPI"), std::string::npos) << v.out;
    Batch b;
    auto r = b.alone("one", "--report " + q(b.t / "r.json"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(slurp(b.t / "r.json"));
    EXPECT_FALSE(j.contains("ranks"));
    for (const auto& im : j["images"]) EXPECT_FALSE(im.contains("rank"));
    EXPECT_EQ(j["workers"].size(), 1u) << "the CPU or one GPU, no ranks: " << j["workers"].dump();
}
