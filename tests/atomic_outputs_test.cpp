// All or nothing (docs/guarantees.md, "Atomic outputs", "Signals"): a run's outputs are committed
// together or not at all, a replaced file comes back when a later rename fails, SIGINT, SIGTERM
// and SIGHUP remove the temporaries and the folders the run made and exit 128 + n, side outputs
// (--report, --trace, graph -o) never overwrite a file of the run and are part of its commit, and
// JSON reports take paths that are not UTF-8. Waits are generous and only for events, never timed.
#include "executor/output_files.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <set>
#include <spawn.h>
#include <thread>
#include <unistd.h>

extern char** environ;

using pixflow::host::FileTransaction;
using pixflow::InternalError;
using pixflow::testing::q;
using pixflow::testing::slurp;
using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
using pixflow::testing::write_text;
namespace fs = std::filesystem;

namespace {

/// Every entry below `dir` (hidden ones too), relative, sorted.
std::set<std::string> entries_below(const fs::path& dir) {
    std::set<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) out.insert(fs::relative(e.path(), dir).string());
    return out;
}

/// write_text, making the folder first.
void write_file(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    write_text(p.string(), text);
}

bool has_hidden_file(const fs::path& dir) {
    for (const auto& e : entries_below(dir))
        if (fs::path(e).filename().string()[0] == '.') return true;
    return false;
}

std::string faults_plugin() { return q(pixflow::testing::test_plugin("faults").string()); }

/// Polls `ok` every 20 ms for up to `seconds`.
bool eventually(const std::function<bool()>& ok, double seconds) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        if (ok()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ok();
}

/// pixflow started in the background with SIGINT, SIGTERM and SIGHUP at their defaults (a test
/// runner may ignore them), stdout and stderr to files.
struct Background {
    TempDir logs;
    pid_t pid = -1;
    /// `ignore_hup`: SIGHUP ignored, as under nohup.
    explicit Background(const std::vector<std::string>& args, bool ignore_hup = false) {
        std::string exe = pixflow::testing::pixflow_exe().string();
        std::vector<std::string> a{exe};
        a.insert(a.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& s : a) argv.push_back(s.data());
        argv.push_back(nullptr);
        std::vector<std::string> env{"PIXFLOW_PLUGIN_PATH="};
        for (char** e = environ; *e; ++e)
            if (std::string(*e).rfind("PIXFLOW_PLUGIN_PATH=", 0) != 0) env.emplace_back(*e);
        std::vector<char*> envp;
        for (auto& s : env) envp.push_back(s.data());
        envp.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, (logs / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&fa, 2, (logs / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        sigset_t none, defaults;
        sigemptyset(&none);
        sigemptyset(&defaults);
        for (int s : {SIGINT, SIGTERM, SIGHUP})
            if (!(ignore_hup && s == SIGHUP)) sigaddset(&defaults, s);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &defaults);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        struct sigaction ign {
        }, old{};
        ign.sa_handler = SIG_IGN;
        if (ignore_hup) sigaction(SIGHUP, &ign, &old); // inherited through exec, like nohup does it
        if (posix_spawn(&pid, exe.c_str(), &fa, &at, argv.data(), envp.data()) != 0) pid = -1;
        if (ignore_hup) sigaction(SIGHUP, &old, nullptr);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
    }
    /// Its wait status once it ended, within `seconds`; -1 when it did not (it is killed then).
    int wait(double seconds) {
        int st = -1;
        bool ended = eventually([&] { return ::waitpid(pid, &st, WNOHANG) == pid; }, seconds);
        if (!ended) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            st = -1;
        }
        pid = -1;
        return st;
    }
    std::string err() { return slurp(logs / "err"); }
    ~Background() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

/// The worker processes of the isolated batch run by `parent`, from /proc.
int workers_of(pid_t parent) {
    int n = 0;
    std::string want = std::string("__worker") + '\0' + "--parent" + '\0' + std::to_string(parent);
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (slurp(e.path() / "cmdline").find(want) != std::string::npos) ++n;
    }
    return n;
}

} // namespace

// ---- FileTransaction itself

TEST(FileTransaction, StagedFilesAppearTogetherOnlyWhenCommitted) {
    TempDir t;
    write_text(t / "a.txt", "old a"); // replaced, its backup gone afterwards
    FileTransaction tx;
    std::string a = tx.stage(t.path / "a.txt"), b = tx.stage(t.path / "new/b.txt");
    write_text(a, "A");
    write_text(b, "B");
    EXPECT_EQ(slurp(t.path / "a.txt"), "old a");
    EXPECT_EQ(tx.written().size(), 2u);
    auto done = tx.commit();
    EXPECT_EQ(done.size(), 2u);
    EXPECT_EQ(slurp(t.path / "a.txt"), "A");
    EXPECT_EQ(slurp(t.path / "new/b.txt"), "B");
    EXPECT_FALSE(has_hidden_file(t.path));
}

TEST(FileTransaction, AFailedRenameUndoesTheOnesBeforeItAndRestoresWhatTheyReplaced) {
    TempDir t;
    write_text(t / "a.txt", "old a");
    FileTransaction tx;
    std::string a = tx.stage(t.path / "a.txt"), n = tx.stage(t.path / "n.txt"), d = tx.stage(t.path / "d.txt");
    write_text(a, "new a");
    write_text(n, "new n");
    write_text(d, "new d");
    fs::create_directories(t.path / "d.txt/inside"); // the third target is a folder: its rename fails
    EXPECT_THROW(tx.commit(), InternalError);
    EXPECT_EQ(slurp(t.path / "a.txt"), "old a") << "the replaced file is back";
    EXPECT_FALSE(fs::exists(t.path / "n.txt")) << "the new file is gone again";
    EXPECT_FALSE(has_hidden_file(t.path)) << "no temporary, no backup";
}

TEST(FileTransaction, RollbackAndDestructionRemoveTemporariesAndTheFoldersMadeForThem) {
    TempDir t;
    {
        FileTransaction tx;
        write_text(tx.stage(t.path / "x/y/a.txt"), "A");
        tx.rollback();
        EXPECT_FALSE(fs::exists(t.path / "x"));
        write_text(tx.stage(t.path / "x/b.txt"), "B");
    } // destroyed uncommitted
    EXPECT_TRUE(entries_below(t.path).empty());
}

TEST(FileTransaction, ReleasedTemporariesCanBeAdoptedAndCommittedByAnother) {
    TempDir t;
    FileTransaction parent;
    {
        FileTransaction worker;
        std::string tmp = worker.stage(t.path / "a.txt");
        write_text(tmp, "A");
        parent.adopt(tmp, (t.path / "a.txt").string());
        worker.release();
    }
    EXPECT_EQ(parent.commit(), std::vector<std::string>{(t.path / "a.txt").string()});
    EXPECT_EQ(slurp(t.path / "a.txt"), "A");
}

// ---- a run's outputs

TEST(AtomicOutputs, WhenTheSecondOutputCannotBeMovedTheFirstIsNotInPlaceEither) {
    for (bool existed : {false, true}) {
        TempDir t;
        if (existed) write_text(t / "a.ppm", "old");
        fs::create_directories(t.path / "dir.ppm"); // the second output's path is a folder
        write_text(t / "p.toml", "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                                 "[nodes.one]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                                     (t / "a.ppm") +
                                     "\"\n"
                                     "[nodes.two]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                                     (t / "dir.ppm") + "\"\n");
        auto r = run_pixflow("run " + q(t / "p.toml"));
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find("dir.ppm"), std::string::npos) << r.err;
        EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
        if (existed)
            EXPECT_EQ(slurp(t / "a.ppm"), "old");
        else
            EXPECT_FALSE(fs::exists(t.path / "a.ppm"));
        EXPECT_FALSE(has_hidden_file(t.path)) << "no temporary or backup left";
    }
}

TEST(AtomicOutputs, AReportThatCannotBeWrittenFailsTheRunBeforeAnyOutputIsCommitted) {
    TempDir t;
    write_text(t / "file", "a file, not a folder");
    write_text(t / "p.toml", "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                             "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                                 (t / "out/a.ppm") + "\"\n");
    auto r = run_pixflow("run " + q(t / "p.toml") + " --report " + q(t / "file/report.json"));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(fs::exists(t.path / "out")) << "the image is not written when its report cannot be";
    // The same run with a good report: both are there, and it exits 0.
    auto ok = run_pixflow("run " + q(t / "p.toml") + " --report " + q(t / "r/report.json"));
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_TRUE(fs::exists(t.path / "out/a.ppm"));
    EXPECT_TRUE(fs::exists(t.path / "r/report.json"));
}

TEST(AtomicOutputs, BatchReportThatCannotBeWrittenIsRefusedBeforeAnyImageRuns) {
    TempDir t;
    write_text(t / "file", "a file, not a folder");
    write_text(t / "p.toml", "[nodes.src]\nop = \"load\"\npath = \"x.ppm\"\n"
                             "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"x.ppm\"\n");
    write_file(t.path / "in/a.ppm", "P6\n2 2\n255\n000000000000");
    auto r = run_pixflow("run " + q(t / "p.toml") + " --input " + q(t / "in") + " --output " + q(t / "out") +
                         " --report " + q(t / "file/report.json"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--report"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(t.path / "out"));
}

// ---- side outputs never overwrite a file of the run

TEST(SideOutputs, ReportTraceAndGraphCannotOverwriteTheInputsThePipelineOrTheOutputs) {
    TempDir t;
    write_text(t / "in.ppm", "P6\n2 2\n255\n000000000000");
    std::string pipeline = "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") +
                           "\"\n"
                           "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                           (t / "out.ppm") + "\"\n";
    write_text(t / "p.toml", pipeline);
    fs::create_hard_link(t.path / "in.ppm", t.path / "alias.ppm");
    struct Case {
        std::string args, says;
    } cases[] = {
        {"run " + q(t / "p.toml") + " --report " + q(t / "in.ppm"), "would overwrite the file that node 'src' reads"},
        {"run " + q(t / "p.toml") + " --report " + q(t / "alias.ppm"),
         "would overwrite the file that node 'src' reads"},
        {"run " + q(t / "p.toml") + " --report " + q(t / "sub/../p.toml"), "would overwrite the pipeline file"},
        {"run " + q(t / "p.toml") + " --trace " + q(t / "out.ppm"), "would overwrite the output of node 'out'"},
        {"run " + q(t / "p.toml") + " --trace " + q(t / "x.json") + " --report " + q(t / "x.json"),
         "is also where --trace goes"},
        {"graph " + q(t / "p.toml") + " -o " + q(t / "p.toml"), "would overwrite the pipeline file"},
        {"graph " + q(t / "p.toml") + " -o " + q(t / "in.ppm"), "would overwrite the file that node 'src' reads"},
        {"bench " + q(t / "p.toml") + " --report " + q(t / "p.toml"), "would overwrite the pipeline file"},
        {"run " + q(t / "p.toml") + " --input " + q(t / "in.ppm") + " --output " + q(t / "o") + " --report " +
             q(t / "in.ppm"),
         "would overwrite the input"},
        {"run " + q(t / "p.toml") + " --input " + q(t / "in.ppm") + " --output " + q(t / "o") + " --trace " +
             q(t / "o/in.ppm"),
         "would overwrite the output of"},
    };
    for (const auto& c : cases) {
        auto r = run_pixflow(c.args);
        EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_EQ(slurp(t / "in.ppm"), "P6\n2 2\n255\n000000000000") << c.args;
        EXPECT_EQ(slurp(t / "p.toml"), pipeline) << c.args;
        EXPECT_FALSE(fs::exists(t.path / "out.ppm")) << c.args;
        EXPECT_FALSE(fs::exists(t.path / "o")) << c.args;
    }
}

TEST(SideOutputs, ReportsTakePathsThatAreNotUtf8) {
    TempDir t;
    std::string odd = "caf\xe9-\xff"; // Latin-1 bytes: not UTF-8
    write_text(t / "p.toml", "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                             "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"x.ppm\"\n");
    auto r = run_pixflow("run " + q(t / "p.toml") + " --set out.path=" + q(t / (odd + ".ppm")) + " --report " +
                         q(t / "report.json") + " --trace " + q(t / "trace.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(t.path / (odd + ".ppm")));
    std::ifstream rin(t / "report.json");
    nlohmann::json j = nlohmann::json::parse(rin);
    EXPECT_NE(j.at("outputs").at(0).get<std::string>().find("caf\xEF\xBF\xBD-\xEF\xBF\xBD.ppm"), std::string::npos)
        << "each invalid byte is U+FFFD";
    std::ifstream tin(t / "trace.json");
    EXPECT_TRUE(nlohmann::json::accept(tin));

    // A batch over an input with such a name: its report and trace too.
    write_text(t / "b.toml", "[nodes.src]\nop = \"load\"\npath = \"x.ppm\"\n"
                             "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"x.ppm\"\n");
    write_file(t.path / "in" / (odd + ".ppm"), "P6\n2 2\n255\n000000000000");
    auto b = run_pixflow("run " + q(t / "b.toml") + " --input " + q(t / "in") + " --output " + q(t / "out") +
                         " --report " + q(t / "batch.json") + " --trace " + q(t / "btrace.json"));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    std::ifstream bin(t / "batch.json");
    nlohmann::json bj = nlohmann::json::parse(bin);
    EXPECT_EQ(bj.at("ok"), 1);
    std::ifstream btin(t / "btrace.json");
    EXPECT_TRUE(nlohmann::json::accept(btin));
}

// ---- signals

class Interrupted : public ::testing::TestWithParam<int> {};

TEST_P(Interrupted, ARunRemovesItsTemporariesAndFoldersAndExits128PlusTheSignal) {
    int sig = GetParam();
    TempDir t;
    write_text(t / "p.toml", "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                             "[nodes.one]\nop = \"save\"\ninput = \"src\"\npath = \"" +
                                 (t / "new/sub/a.ppm") +
                                 "\"\n"
                                 "[nodes.stuck]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"hang\"\n"
                                 "[nodes.two]\nop = \"save\"\ninput = \"stuck\"\npath = \"" +
                                 (t / "new/sub/b.ppm") + "\"\n");
    Background p({"--plugin-path", pixflow::testing::test_plugin("faults").string(), "run", t / "p.toml"});
    ASSERT_GT(p.pid, 0);
    // The folders are made before any node runs; then node `one` writes its temporary while
    // `stuck` hangs (where the CPU has a second thread for it).
    ASSERT_TRUE(eventually([&] { return fs::exists(t.path / "new/sub"); }, 120)) << p.err();
    eventually([&] { return has_hidden_file(t.path / "new/sub"); }, 10);
    ::kill(p.pid, sig);
    int st = p.wait(120);
    ASSERT_TRUE(st != -1 && WIFEXITED(st)) << "it must end, by its own exit: " << p.err();
    EXPECT_EQ(WEXITSTATUS(st), 128 + sig) << p.err();
    EXPECT_NE(p.err().find("interrupted by"), std::string::npos) << p.err();
    EXPECT_FALSE(fs::exists(t.path / "new")) << "temporaries and the folders made for them are gone";
}

TEST_P(Interrupted, AnIsolatedBatchStopsItsWorkersAndRemovesTheirTemporaries) {
    int sig = GetParam();
    TempDir t;
    for (int k = 0; k < 3; ++k)
        write_file(t.path / "in" / ("i" + std::to_string(k) + ".ppm"), "P6\n2 2\n255\n000000000000");
    write_text(t / "p.toml", "[nodes.src]\nop = \"load\"\npath = \"x.ppm\"\n"
                             "[nodes.one]\nop = \"save\"\ninput = \"src\"\npath = \"x.ppm\"\n"
                             "[nodes.stuck]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"hang\"\n"
                             "[nodes.two]\nop = \"save\"\ninput = \"stuck\"\npath = \"x.ppm\"\n");
    Background p({"--plugin-path", pixflow::testing::test_plugin("faults").string(), "run", t / "p.toml", "--input",
                  t / "in", "--output", t / "out/deep", "--isolate"});
    ASSERT_GT(p.pid, 0);
    pid_t parent = p.pid;
    ASSERT_TRUE(eventually([&] { return fs::exists(t.path / "out/deep") && workers_of(parent) > 0; }, 120)) << p.err();
    eventually([&] { return has_hidden_file(t.path / "out/deep"); }, 10);
    ::kill(p.pid, sig);
    int st = p.wait(120);
    ASSERT_TRUE(st != -1 && WIFEXITED(st)) << p.err();
    EXPECT_EQ(WEXITSTATUS(st), 128 + sig) << p.err();
    EXPECT_FALSE(fs::exists(t.path / "out")) << "no image finished: every folder it made goes, with the temporaries";
    EXPECT_TRUE(eventually([&] { return workers_of(parent) == 0; }, 30)) << "no worker outlives the batch";
}

TEST(Signals, OneIgnoredAtStartStaysIgnoredLikeUnderNohup) {
    TempDir t;
    write_text(t / "p.toml", "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                             "[nodes.stuck]\nop = \"tp_fault\"\ninput = \"src\"\nfault = \"hang\"\n"
                             "[nodes.out]\nop = \"save\"\ninput = \"stuck\"\npath = \"" +
                                 (t / "new/b.ppm") + "\"\n");
    Background p({"--plugin-path", pixflow::testing::test_plugin("faults").string(), "run", t / "p.toml"}, true);
    ASSERT_GT(p.pid, 0);
    ASSERT_TRUE(eventually([&] { return fs::exists(t.path / "new"); }, 120)) << p.err();
    // SIGHUP first: were it handled, it would end the run (129) before SIGTERM (143).
    ::kill(p.pid, SIGHUP);
    ::kill(p.pid, SIGTERM);
    int st = p.wait(120);
    ASSERT_TRUE(st != -1 && WIFEXITED(st)) << p.err();
    EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM) << p.err();
    EXPECT_FALSE(fs::exists(t.path / "new"));
}

INSTANTIATE_TEST_SUITE_P(Signals, Interrupted, ::testing::Values(SIGINT, SIGTERM, SIGHUP), [](const auto& info) {
    return std::string(info.param == SIGINT ? "Sigint" : info.param == SIGTERM ? "Sigterm" : "Sighup");
});
