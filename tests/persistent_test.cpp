// Memory a node keeps between its calls (ABI 1.6, pf_host.persistent): the store itself (blocks
// per node and per call, zeroed when new, when the bytes change and after a failed call; device
// blocks ordered across streams) and the whole path through the host callbacks with
// tests/test_plugins/persistent_ops.cpp, whose operator counts its calls in its block.
#include "compile/compile.hpp"
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "executor/persistent.hpp"
#include "loader/registry.hpp"
#include "support/paths.hpp"

#include <pixflow/testing.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace pixflow::host;

namespace {

bool all_bytes(const void* p, std::size_t n, unsigned char v) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i)
        if (b[i] != v) return false;
    return true;
}

TEST(PersistentStore, AHostBlockKeepsItsBytesAndStateForTheNextCallOfItsNode) {
    PersistentStore store;
    DeviceMemoryCounter counter;
    PersistentStore::Block& a = store.take(NodeId(3), PF_HOST, 100, nullptr, counter);
    EXPECT_TRUE(all_bytes(a.data(), 100, 0));
    EXPECT_EQ(a.state, 0u);
    std::memset(a.data(), 0x5A, 100);
    a.state = 42;
    store.give_back(a, nullptr, true);
    PersistentStore::Block& again = store.take(NodeId(3), PF_HOST, 100, nullptr, counter);
    EXPECT_EQ(&again, &a);
    EXPECT_TRUE(all_bytes(again.data(), 100, 0x5A));
    EXPECT_EQ(again.state, 42u);
    // another node, and a second call of node 3 while the first holds its block: blocks of their own
    PersistentStore::Block& other = store.take(NodeId(4), PF_HOST, 100, nullptr, counter);
    PersistentStore::Block& second = store.take(NodeId(3), PF_HOST, 100, nullptr, counter);
    EXPECT_NE(&other, &again);
    EXPECT_NE(&second, &again);
    EXPECT_NE(second.data(), again.data());
    EXPECT_TRUE(all_bytes(other.data(), 100, 0));
    EXPECT_TRUE(all_bytes(second.data(), 100, 0));
    EXPECT_EQ(second.state, 0u);
    store.give_back(other, nullptr, true);
    store.give_back(second, nullptr, true);
    store.give_back(again, nullptr, true);
    EXPECT_EQ(store.device_bytes(), 0u);
}

TEST(PersistentStore, OtherBytesOrAFailedCallGiveAZeroedBlock) {
    PersistentStore store;
    DeviceMemoryCounter counter;
    PersistentStore::Block& a = store.take(NodeId(0), PF_HOST, 64, nullptr, counter);
    std::memset(a.data(), 1, 64);
    a.state = 7;
    store.give_back(a, nullptr, true);
    PersistentStore::Block& smaller =
        store.take(NodeId(0), PF_HOST, 32, nullptr, counter); // kept capacity, new contents
    EXPECT_TRUE(all_bytes(smaller.data(), 32, 0));
    EXPECT_EQ(smaller.state, 0u);
    std::memset(smaller.data(), 2, 32);
    smaller.state = 8;
    store.give_back(smaller, nullptr, true);
    PersistentStore::Block& larger = store.take(NodeId(0), PF_HOST, 4096, nullptr, counter);
    EXPECT_TRUE(all_bytes(larger.data(), 4096, 0));
    EXPECT_EQ(larger.state, 0u);
    std::memset(larger.data(), 3, 4096);
    larger.state = 9;
    store.give_back(larger, nullptr, false); // the call failed after writing
    PersistentStore::Block& after = store.take(NodeId(0), PF_HOST, 4096, nullptr, counter);
    EXPECT_TRUE(all_bytes(after.data(), 4096, 0));
    EXPECT_EQ(after.state, 0u);
    store.give_back(after, nullptr, true);
}

TEST(PersistentStore, ADeviceBlockIsOrderedAfterItsLastCallOnAnotherStream) {
    PIXFLOW_REQUIRE_CUDA();
    constexpr std::size_t n = std::size_t(64) << 20; // long enough for a race to show
    PersistentStore store;
    DeviceMemoryCounter counter;
    Stream s1(0), s2(0);
    PersistentStore::Block& a = store.take(NodeId(1), 0, n, &s1, counter);
    EXPECT_EQ(counter.peak(), (long long)n);
    EXPECT_EQ(store.device_bytes(), n);
    memset_async(a.data(), 0x11, n, s1);
    memset_async(a.data(), 0x22, n, s1); // the last call's last write
    store.give_back(a, &s1, true);
    PersistentStore::Block& b = store.take(NodeId(1), 0, n, &s2, counter); // s2 waits for s1's writes
    ASSERT_EQ(&b, &a);
    std::vector<unsigned char> host(n);
    copy_2d_async(host.data(), std::int64_t(n), b.data(), std::int64_t(n), n, 1, s2);
    s2.synchronize();
    EXPECT_TRUE(all_bytes(host.data(), n, 0x22));
    store.give_back(b, &s2, false); // failed: zeroed on s1 after s2's work
    PersistentStore::Block& c = store.take(NodeId(1), 0, n, &s1, counter);
    copy_2d_async(host.data(), std::int64_t(n), c.data(), std::int64_t(n), n, 1, s1);
    s1.synchronize();
    EXPECT_TRUE(all_bytes(host.data(), n, 0));
    EXPECT_EQ(c.state, 0u);
    store.give_back(c, &s1, true);
}

const Registry& reg() {
    static Registry r;
    static bool loaded =
        (r.load_all({pixflow::testing::plugin_dir(), pixflow::testing::test_plugin("persistent_ops")}), true);
    (void)loaded;
    return r;
}

std::string pipeline(const std::string& params_a, const std::string& params_b = "") {
    std::string t = "[pipeline]\nname = \"kept\"\nbackend = \"cpu\"\n\n"
                    "[nodes.src]\nop = \"synth\"\npattern = \"noise\"\nwidth = 17\nheight = 9\nchannels = 1\ndtype = "
                    "\"u8\"\n\n"
                    "[nodes.a]\nop = \"tp_persistent\"\ninput = \"src\"\n" +
                    params_a + "\n";
    if (!params_b.empty()) t += "[nodes.b]\nop = \"tp_persistent\"\ninput = \"a\"\n" + params_b + "\n";
    return t;
}

double metric(const RunReport& r, const std::string& node, const std::string& key) {
    for (const auto& n : r.nodes)
        if (n.id == node) return n.metrics.at(key);
    ADD_FAILURE() << "no node " << node;
    return -1;
}

RunReport run_once(Executor& ex) {
    RunOptions o;
    o.log = [](int, const std::string&) {};
    return ex.run(o);
}

TEST(Persistent, ANodeFindsWhatItsLastCallLeftAndEachNodeHasItsOwn) {
    Compiled c = compile(parse_pipeline_text(pipeline("bytes = 40", "bytes = 4000"), "kept.toml"), reg(), {});
    Executor ex(c.graph, c.plan);
    for (int k = 1; k <= 3; ++k) {
        const RunReport r = run_once(ex);
        for (const char* node : {"a", "b"}) {
            EXPECT_EQ(metric(r, node, "data_calls"), k) << node;
            EXPECT_EQ(metric(r, node, "state_calls"), k) << node;
            EXPECT_EQ(metric(r, node, "tail_ok"), 1.0) << node;
        }
    }
    Executor fresh(c.graph, c.plan); // another pipeline's nodes start from zero
    EXPECT_EQ(metric(run_once(fresh), "a", "data_calls"), 1.0);
}

TEST(Persistent, AFailedCallLeavesAZeroedBlockBehind) {
    Compiled c = compile(parse_pipeline_text(pipeline("bytes = 100\nfail_at = 2"), "kept.toml"), reg(), {});
    Executor ex(c.graph, c.plan);
    EXPECT_EQ(metric(run_once(ex), "a", "data_calls"), 1.0);
    try {
        run_once(ex);
        ADD_FAILURE() << "the second call should fail";
    } catch (const pixflow::UserError& e) {
        EXPECT_NE(std::string(e.what()).find("call 2 failed on purpose"), std::string::npos) << e.what();
    }
    const RunReport r = run_once(ex); // count 1 again: the failed call's writes are gone
    EXPECT_EQ(metric(r, "a", "data_calls"), 1.0);
    EXPECT_EQ(metric(r, "a", "state_calls"), 1.0);
    EXPECT_EQ(metric(r, "a", "tail_ok"), 1.0);
}

TEST(Persistent, AskedAgainInACallItIsTheSameBlockAndOtherBytesAreRefused) {
    Compiled c = compile(parse_pipeline_text(pipeline("bytes = 24\nask_twice = true"), "kept.toml"), reg(), {});
    Executor ex(c.graph, c.plan);
    const RunReport r = run_once(ex);
    EXPECT_EQ(metric(r, "a", "same"), 1.0);
    EXPECT_EQ(metric(r, "a", "other_refused"), 1.0);
    EXPECT_EQ(metric(run_once(ex), "a", "data_calls"), 2.0);
}

} // namespace
