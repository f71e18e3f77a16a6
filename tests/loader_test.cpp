// The loader keeps going past bad plugin files and says why each was rejected.
#include "loader/registry.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

using namespace pixflow::host;
using pixflow::testing::test_plugin;

namespace {
const PluginRecord* record_of(const Registry& reg, const std::string& stem) {
    for (const auto& p : reg.plugins())
        if (p.path.stem() == stem) return &p;
    return nullptr;
}

/// The real plugins, then every test plugin (planner_ops first, so the duplicate comes second).
Registry& everything() {
    static Registry reg;
    static bool loaded = (reg.load_all({pixflow::testing::plugin_dir(), test_plugin("planner_ops"),
                                        pixflow::testing::test_plugin_dir()}),
                          true);
    (void)loaded;
    return reg;
}
} // namespace

TEST(Loader, RejectsAPluginWithAnUnresolvedSymbol) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_missing_symbol");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded);
    EXPECT_NE(r->reason.find("cannot be loaded"), std::string::npos) << r->reason;
    EXPECT_NE(r->reason.find("pixflow_test_function_that_does_not_exist"), std::string::npos) << r->reason;
}

TEST(Loader, RejectsAnotherAbiMajorNamingBothVersions) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_abi_major");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded);
    std::string want = "ABI major version differs (plugin ABI " + std::to_string(PIXFLOW_ABI_MAJOR + 1) + "." +
                       std::to_string(PIXFLOW_ABI_MINOR) + ", pixflow ABI " + std::to_string(PIXFLOW_ABI_MAJOR) + "." +
                       std::to_string(PIXFLOW_ABI_MINOR) + ")";
    EXPECT_NE(r->reason.find(want), std::string::npos) << r->reason;
}

TEST(Loader, RejectsANewerAbiMinor) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_abi_newer_minor");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded);
    EXPECT_NE(r->reason.find("built for a newer ABI"), std::string::npos) << r->reason;
}

TEST(Loader, RejectsAPluginWhoseInitFails) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_init_fails");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded);
    EXPECT_NE(r->reason.find("its init failed: license file not found"), std::string::npos) << r->reason;
}

TEST(Loader, RejectsADuplicateOperatorAndKeepsTheFirst) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_duplicate_op");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded);
    EXPECT_NE(r->reason.find("duplicate operator 'tp_src', already provided by"), std::string::npos) << r->reason;
    ASSERT_NE(everything().find("tp_src"), nullptr);
    EXPECT_EQ(everything().find("tp_src")->plugin, "planner_ops");
}

TEST(Loader, RejectsALibraryThatIsNotAPlugin) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_no_entry");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded);
    EXPECT_NE(r->reason.find("not a pixflow plugin"), std::string::npos) << r->reason;
}

TEST(Loader, BadFilesDoNotStopTheOthers) {
    for (const char* op : {"gauss5x5", "load", "save", "synth", "convert", "grayscale", "tp_dual"})
        EXPECT_NE(everything().find(op), nullptr) << op;
    for (const auto& p : everything().plugins())
        if (p.path.parent_path() == pixflow::testing::plugin_dir()) EXPECT_TRUE(p.loaded) << p.path << ": " << p.reason;
}

TEST(Loader, SuggestsCloseOperatorNames) {
    auto close = everything().closest("gaus5x5");
    ASSERT_FALSE(close.empty());
    EXPECT_EQ(close.front(), "gauss5x5");
}

TEST(Loader, SearchPathPutsExplicitThenEnvironmentThenInstallation) {
    setenv("PIXFLOW_PLUGIN_PATH", "/env/a:/env/b", 1);
    auto path = Registry::search_path({"/explicit"});
    unsetenv("PIXFLOW_PLUGIN_PATH");
    ASSERT_GE(path.size(), 4u);
    EXPECT_EQ(path[0], "/explicit");
    EXPECT_EQ(path[1], "/env/a");
    EXPECT_EQ(path[2], "/env/b");
    EXPECT_EQ(path[3].filename(), "plugins");
}

TEST(Loader, LoadsAPluginBuiltForAnOlderAbiMinorAndRunsIt) {
    const PluginRecord* r = record_of(everything(), "pixflow_test_abi_older_minor");
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->loaded) << r->reason;
    EXPECT_EQ(r->abi_minor, 0u);
    ASSERT_LT(r->abi_minor, unsigned(PIXFLOW_ABI_MINOR));
    const OpInfo* op = everything().find("tp_v10_invert");
    ASSERT_NE(op, nullptr);
    // Its descriptor ends before `fusions`: the poison behind it must not have been read.
    for (const FusionInfo& f : everything().fusions()) EXPECT_NE(f.fused->plugin, "abi_older_minor");
    unsigned char in[6] = {0, 1, 2, 200, 254, 255}, out[6] = {};
    pf_image iv{sizeof(pf_image), 3, 2, 1, PF_U8, PF_HOST, 3, in};
    pf_image ov = iv;
    ov.data = out;
    char err[256] = {};
    pf_run_args a{};
    a.struct_size = sizeof a;
    a.inputs = &iv;
    a.n_inputs = 1;
    a.outputs = &ov;
    a.n_outputs = 1;
    a.error = err;
    a.error_size = sizeof err;
    ASSERT_EQ(op->desc->run_cpu(&a), PF_OK) << err;
    EXPECT_EQ(int(out[0]), 255);
    EXPECT_EQ(int(out[3]), 55);
    EXPECT_EQ(int(out[5]), 0);
}

// A plugin's code stays mapped after its registry is gone (RTLD_NODELETE, registry.cpp): a TBB
// worker may still be in the epilogue of a task the plugin ran when the caller's loop returns.
// A copy of the plugin under a new path, so that no other registry of this process holds it.
TEST(Loader, APluginStaysMappedAfterItsRegistryIsGone) {
    pixflow::testing::TempDir t;
    const std::filesystem::path copy = t.path / "pixflow_test_mapped_copy.so";
    std::filesystem::copy_file(test_plugin("fusion_ops"), copy);
    const void* code = nullptr;
    {
        Registry reg;
        const PluginRecord& r = reg.load_file(copy);
        ASSERT_TRUE(r.loaded) << r.reason;
        const OpInfo* op = reg.find("tp_add");
        ASSERT_NE(op, nullptr);
        ASSERT_EQ(op->path, copy);
        code = reinterpret_cast<const void*>(op->desc->run_cpu);
        Dl_info in{};
        ASSERT_NE(dladdr(code, &in), 0) << "the test cannot tell: dladdr does not know the loaded plugin";
    }
    Dl_info after{};
    ASSERT_NE(dladdr(code, &after), 0) << "the plugin was unmapped with its registry";
    EXPECT_EQ(std::filesystem::path(after.dli_fname).filename(), copy.filename());
}
