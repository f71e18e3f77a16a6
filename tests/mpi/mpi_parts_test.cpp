// The parts of a batch over MPI ranks that need no MPI run (framework/mpi/): where a rank runs
// (placement.hpp), how rank 0 judges the ranks' checks (verdict.hpp) and the merged --trace
// (trace_merge.hpp), each against values worked out by hand; and the loader's rule for PF_OP_SPLIT
// (ABI 1.4), which only one-image runs over the ranks use.
#include "loader/descriptor_check.hpp"
#include "mpi/placement.hpp"
#include "mpi/session.hpp"
#include "mpi/trace_merge.hpp"
#include "mpi/verdict.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sched.h>

using namespace pixflow::mpi;

namespace {

/// A cpu_set_t holding the CPUs [first, first + n), as raw bytes.
std::string mask(int first, int n) {
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c = first; c < first + n; ++c) CPU_SET(c, &s);
    return std::string(reinterpret_cast<const char*>(&s), sizeof s);
}

Verdict passed(int rank, std::uint64_t inputs, std::uint64_t hash) {
    Verdict v;
    v.rank = rank;
    v.host = "node" + std::to_string(rank / 2);
    v.inputs = inputs;
    v.inputs_hash = hash;
    return v;
}

Verdict failed(int rank, int status, std::vector<std::string> lines) {
    Verdict v = passed(rank, 0, 0);
    v.status = status;
    v.lines = std::move(lines);
    return v;
}

} // namespace

TEST(MpiPlacement, RanksShareTheGpusOfTheirMachineRoundRobin) {
    EXPECT_EQ(device_for(0, 4), 0);
    EXPECT_EQ(device_for(3, 4), 3);
    EXPECT_EQ(device_for(5, 4), 1) << "more ranks than GPUs: they share them";
    EXPECT_EQ(device_for(2, 1), 0);
    EXPECT_EQ(device_for(0, 0), -1) << "no GPU";
}

TEST(MpiPlacement, UnboundRanksDivideTheMachinesCpusAmongThem) {
    // mpirun --bind-to none (or oversubscribed): every rank may use all 16 CPUs.
    std::vector<std::string> m(4, mask(0, 16));
    for (int r = 0; r < 4; ++r) EXPECT_EQ(cpu_share(m, r, 0), 4);
}

TEST(MpiPlacement, RanksBoundToACoreUseThatCore) {
    std::vector<std::string> m{mask(0, 1), mask(1, 1)}; // Open MPI's default for 2 ranks
    EXPECT_EQ(cpu_share(m, 0, 0), 1);
    EXPECT_EQ(cpu_share(m, 1, 0), 1);
}

TEST(MpiPlacement, RanksBoundToASocketDivideOnlyThatSocket) {
    // 2 sockets of 8 CPUs, 2 ranks on the first and 1 on the second.
    std::vector<std::string> m{mask(0, 8), mask(0, 8), mask(8, 8)};
    EXPECT_EQ(cpu_share(m, 0, 0), 4);
    EXPECT_EQ(cpu_share(m, 1, 0), 4);
    EXPECT_EQ(cpu_share(m, 2, 0), 8);
}

TEST(MpiPlacement, MoreRanksThanCpusStillGetOneThreadEach) {
    std::vector<std::string> m(4, mask(0, 2)); // this machine, -np 4 --oversubscribe
    EXPECT_EQ(cpu_share(m, 3, 0), 1);
}

TEST(MpiPlacement, TheThreadsVariableWins) {
    std::vector<std::string> m(4, mask(0, 16));
    EXPECT_EQ(cpu_share(m, 0, 7), 7);
    EXPECT_EQ(rank_threads_from_env(nullptr), 0);
    EXPECT_EQ(rank_threads_from_env(""), 0);
    EXPECT_EQ(rank_threads_from_env("12"), 12);
    for (const char* bad : {"0", "-2", "four", "3x", "100000"}) {
        try {
            rank_threads_from_env(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("PIXFLOW_RANK_THREADS=") + bad), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("expected 1 to 4096"), std::string::npos) << e.what();
        }
    }
}

TEST(MpiLaunch, OnlyALaunchersVariablesStartMpi) {
    ::unsetenv("OMPI_COMM_WORLD_SIZE");
    ::unsetenv("PMIX_RANK");
    EXPECT_FALSE(launched_by_mpirun());
    ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    EXPECT_TRUE(launched_by_mpirun());
    ::unsetenv("OMPI_COMM_WORLD_SIZE");
    ::setenv("PMIX_RANK", "0", 1);
    EXPECT_TRUE(launched_by_mpirun());
    ::unsetenv("PMIX_RANK");
}

TEST(MpiVerdict, EveryRankPassingWithTheSameInputsGoesOn) {
    std::vector<std::string> print;
    EXPECT_EQ(judge({passed(0, 64, 7), passed(1, 64, 7), passed(2, 64, 7)}, print), 0);
    EXPECT_TRUE(print.empty());
}

TEST(MpiVerdict, AnErrorEveryRankHasIsPrintedOnceAsOneProcessPrintsIt) {
    std::vector<std::string> line{"error: p.toml:3:9: node 'blur': sigma = -3 is out of range"};
    std::vector<std::string> print;
    EXPECT_EQ(judge({failed(0, 1, line), failed(1, 1, line), failed(2, 1, line)}, print), 1);
    EXPECT_EQ(print, line);
}

TEST(MpiVerdict, AnErrorOfSomeRanksNamesThem) {
    std::vector<std::string> line{"error: --input /data/x: no such file or folder"};
    std::vector<std::string> print;
    EXPECT_EQ(judge({passed(0, 64, 7), failed(1, 1, line), passed(2, 64, 7), failed(3, 1, line)}, print), 1);
    ASSERT_EQ(print.size(), 1u);
    EXPECT_EQ(print[0], "error: rank 1 on node0, rank 3 on node1: --input /data/x: no such file or folder");
}

TEST(MpiVerdict, AFailureThatIsNotTheUsersExitsTwo) {
    std::vector<std::string> print;
    EXPECT_EQ(
        judge({passed(0, 4, 1), failed(1, 2, {"error: cudaSetDevice: no device"}), failed(2, 1, {"error: x"})}, print),
        2);
    EXPECT_EQ(print, (std::vector<std::string>{"error: rank 1 on node0: cudaSetDevice: no device",
                                               "error: rank 2 on node1: x"}));
}

TEST(MpiVerdict, ARankThatSeesOtherInputsIsRefused) {
    std::vector<std::string> print;
    EXPECT_EQ(judge({passed(0, 64, 7), passed(1, 63, 9), passed(2, 64, 8)}, print), 1);
    ASSERT_EQ(print.size(), 2u);
    EXPECT_NE(print[0].find("error: rank 1 on node0: sees 63 input(s) where rank 0 sees 64"), std::string::npos)
        << print[0];
    EXPECT_NE(print[0].find("a folder that every machine shares"), std::string::npos) << print[0];
    EXPECT_NE(print[1].find("error: rank 2 on node1: sees other inputs or output names than rank 0 (as many: 64)"),
              std::string::npos)
        << print[1];
}

TEST(MpiVerdict, TheInputsHashSeesOrderFoldersAndOutputNames) {
    using pixflow::host::BatchInput;
    std::vector<BatchInput> ab{{"a.png", ""}, {"b.png", ""}}, ba{{"b.png", ""}, {"a.png", ""}},
        sub{{"a.png", "x"}, {"b.png", ""}};
    std::vector<std::vector<std::string>> out{{"o/a.png"}, {"o/b.png"}}, out2{{"p/a.png"}, {"o/b.png"}};
    std::uint64_t h = hash_inputs(ab, out);
    EXPECT_EQ(h, hash_inputs(ab, out));
    EXPECT_NE(h, hash_inputs(ba, out));
    EXPECT_NE(h, hash_inputs(sub, out));
    EXPECT_NE(h, hash_inputs(ab, out2));
    // A separator between fields: "ab" + "c" is not "a" + "bc".
    EXPECT_NE(hash_inputs({{"ab", "c"}}, {{}}), hash_inputs({{"a", "bc"}}, {{}}));
}

TEST(MpiTrace, EachRanksLanesBecomeProcessesOfTheirOwn) {
    auto trace = [](const std::string& image) {
        nlohmann::json j{{"traceEvents",
                          {{{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "cpu"}}}},
                           {{"ph", "X"},
                            {"name", "blur"},
                            {"pid", 1},
                            {"tid", 0},
                            {"ts", 5.0},
                            {"dur", 2.0},
                            {"args", {{"image", image}}}}}},
                         {"displayTimeUnit", "ms"}};
        return j.dump();
    };
    nlohmann::json m = nlohmann::json::parse(merge_traces({{0, "a", trace("x.png")}, {3, "b", trace("y.png")}}));
    const auto& ev = m["traceEvents"];
    ASSERT_EQ(ev.size(), 4u);
    EXPECT_EQ(ev[0]["pid"], 1);
    EXPECT_EQ(ev[0]["args"]["name"], "rank 0 on a: cpu");
    EXPECT_EQ(ev[1]["args"]["image"], "x.png");
    EXPECT_EQ(ev[2]["pid"], 301);
    EXPECT_EQ(ev[2]["args"]["name"], "rank 3 on b: cpu");
    EXPECT_EQ(ev[3]["pid"], 301);
    EXPECT_EQ(ev[3]["ts"], 5.0);
    EXPECT_EQ(m["displayTimeUnit"], "ms");
}

// ABI 1.4: PF_OP_SPLIT (a whole-image op that can run split over the ranks, pf_run_args.collective)
// is accepted from a 1.4 plugin and refused, naming the version, from an older one, whose
// operators are otherwise still accepted.
TEST(SplitFlag, IsAcceptedFromAbi14AndRefusedFromOlderPlugins) {
    static const pf_port_desc in{sizeof(pf_port_desc), "in", "", PF_ALL_DTYPES, PF_ALL_CHANNELS};
    static const pf_port_desc out{sizeof(pf_port_desc), "out", "", PF_ALL_DTYPES, PF_ALL_CHANNELS};
    auto infer = [](const pf_value*, int32_t, const pf_image*, int32_t, pf_image*, int32_t, char*, size_t) -> int32_t {
        return PF_OK;
    };
    auto run_fn = [](const pf_run_args*) -> int32_t { return PF_OK; };
    pf_op_desc op{sizeof(pf_op_desc), "seg", "doc", PF_OP_SPLIT, &in, 1, &out, 1, nullptr, 0, infer, run_fn, nullptr};
    pf_plugin_desc d{};
    d.struct_size = sizeof d;
    d.abi_major = PIXFLOW_ABI_MAJOR;
    d.abi_minor = 4;
    d.name = "p";
    d.version = "1";
    d.ops = &op;
    d.n_ops = 1;
    EXPECT_EQ(pixflow::host::check_plugin_descriptor(&d), "");
    d.abi_minor = 3;
    EXPECT_NE(pixflow::host::check_plugin_descriptor(&d).find("PF_OP_SPLIT needs ABI 1.4"), std::string::npos)
        << pixflow::host::check_plugin_descriptor(&d);
    op.flags = 0;
    EXPECT_EQ(pixflow::host::check_plugin_descriptor(&d), "");
}
