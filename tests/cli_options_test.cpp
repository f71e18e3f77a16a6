// Global options where users put them, and the messages that tell a user where pixflow looks.
#include "device/device.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;

namespace {
std::string test_plugins() { return "'" + pixflow::testing::test_plugin_dir().string() + "'"; }
std::string loaded_line(const std::string& name) { return "loaded    " + pixflow::testing::test_plugin(name).string(); }
} // namespace

TEST(CliOptions, PluginPathBeforeTheSubcommandLoadsItsPlugins) {
    auto r = run_pixflow("--plugin-path " + test_plugins() + " plugins");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(loaded_line("abi_older_minor")), std::string::npos) << r.out;
}

TEST(CliOptions, PluginPathAfterTheSubcommandLoadsItsPlugins) {
    auto r = run_pixflow("plugins --plugin-path " + test_plugins());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(loaded_line("abi_older_minor")), std::string::npos) << r.out;
}

TEST(CliOptions, OpsAcceptsPluginPathInEitherPlace) {
    for (const std::string args : {"ops --plugin-path " + test_plugins(), "--plugin-path " + test_plugins() + " ops"}) {
        auto r = run_pixflow(args);
        ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.err;
        // only test_abi_older_minor provides tp_v10_invert
        EXPECT_NE(r.out.find("tp_v10_invert"), std::string::npos) << args << "\n" << r.out;
    }
}

TEST(CliOptions, RunAcceptsPluginPathAfterThePipeline) {
    TempDir t;
    auto r = run_pixflow("run pipelines/blur.toml --plugin-path " + test_plugins() +
                         " --set src.width=16 --set src.height=8 --backend cpu --set out.path='" + (t / "b.ppm") + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("wrote " + (t / "b.ppm")), std::string::npos) << r.out;
}

TEST(CliOptions, MissingPluginFolderIsAWarningNamingIt) {
    auto r = run_pixflow("ops --plugin-path /nonexistent/pixflow-plugins");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: --plugin-path /nonexistent/pixflow-plugins does not exist"), std::string::npos)
        << r.err;
}

TEST(CliOptions, UnknownOpSaysWherePluginsAreSearchedAndHowToAddAFolder) {
    TempDir t;
    pixflow::testing::write_text(t / "p.toml", "[nodes.a]\nop = \"no_such_op\"\n");
    auto r = run_pixflow("validate '" + (t / "p.toml") + "' --plugin-path /nonexistent/extra");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("node 'a': unknown op 'no_such_op'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Plugins are searched in /nonexistent/extra, " + pixflow::testing::plugin_dir().string()),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("add a folder with --plugin-path DIR or $PIXFLOW_PLUGIN_PATH"), std::string::npos) << r.err;

    auto d = run_pixflow("describe no_such_op");
    EXPECT_EQ(d.exit_code, 1);
    EXPECT_NE(d.err.find("Plugins are searched in " + pixflow::testing::plugin_dir().string()), std::string::npos)
        << d.err;
}

TEST(CliOptions, IntegerRangesPrintExactly) {
    auto r = run_pixflow("describe synth");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("an integer in [0, 2147483647]"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("e+09"), std::string::npos) << r.out;
}

TEST(CliOptions, VersionListsTheBuildsFeatures) {
    auto r = run_pixflow("--version");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("plugin ABI"), std::string::npos) << r.out;
#ifdef PIXFLOW_HOST_WITH_CUDA
    EXPECT_NE(r.out.find("CUDA:        on (CUDA "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("architectures"), std::string::npos) << r.out;
#else
    EXPECT_NE(r.out.find("CUDA:        off"), std::string::npos) << r.out;
#endif
#ifdef PIXFLOW_TEST_WITH_OIIO
    EXPECT_NE(r.out.find("OpenImageIO: on ("), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(".png"), std::string::npos) << r.out;
#else
    EXPECT_NE(r.out.find("OpenImageIO: off"), std::string::npos) << r.out;
#endif
    EXPECT_NE(r.out.find("MPI:"), std::string::npos) << r.out;
}

TEST(CliOptions, BuildTreeHasNoHalfPackageConfig) {
    // find_package(pixflow) searches <prefix>/ itself: a config there without its targets file
    // would be found and fail. The build tree is not a prefix; the package lives in the install.
    EXPECT_FALSE(std::filesystem::exists(pixflow::testing::build_dir() / "pixflowConfig.cmake"));
}

TEST(CliOptions, AutoBackendNoteSaysNoGpuWasFound) {
    std::string why;
    if (pixflow::host::cuda_usable(&why)) GTEST_SKIP() << "a CUDA device is usable here: no fallback note to check";
    auto r = run_pixflow("validate pipelines/blur.toml");
    ASSERT_EQ(r.exit_code, 0) << r.err;
#ifdef PIXFLOW_HOST_WITH_CUDA
    EXPECT_NE(r.err.find("backend auto: no GPU or NVIDIA driver was found; running on the CPU"), std::string::npos)
        << r.err;
#else
    EXPECT_NE(r.err.find("backend auto: pixflow was built without CUDA"), std::string::npos) << r.err;
#endif
}

TEST(CliOptions, MaxPixelsLimitsEveryLoadThatSetsNoLimitOfItsOwn) {
    // A 16x16 PGM: refused under --max-pixels 100 (from the header, by validate), accepted when
    // the node sets its own limit, and by default.
    TempDir t;
    std::string pgm = "P5\n16 16\n255\n" + std::string(256, '\x40');
    {
        std::FILE* f = std::fopen((t / "in.pgm").c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fwrite(pgm.data(), 1, pgm.size(), f);
        std::fclose(f);
    }
    auto pipeline = [&](const std::string& extra) {
        std::string p = "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.pgm") + "\"\n" + extra +
                        "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"" + (t / "out.pgm") + "\"\n";
        std::FILE* f = std::fopen((t / "p.toml").c_str(), "w");
        std::fputs(p.c_str(), f);
        std::fclose(f);
        return t / "p.toml";
    };
    auto refused = run_pixflow("validate '" + pipeline("") + "' --max-pixels 100");
    EXPECT_EQ(refused.exit_code, 1) << refused.err;
    EXPECT_NE(refused.err.find("in.pgm"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("256"), std::string::npos) << refused.err; // the pixels it claims
    EXPECT_NE(refused.err.find("100"), std::string::npos) << refused.err; // the limit
    auto run = run_pixflow("run '" + pipeline("") + "' --max-pixels 100");
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_FALSE(std::filesystem::exists(t.path / "out.pgm"));
    auto own = run_pixflow("run '" + pipeline("max_pixels = 1000\n") + "' --max-pixels 100");
    EXPECT_EQ(own.exit_code, 0) << own.err;
    auto plenty = run_pixflow("run '" + pipeline("") + "' --max-pixels 256");
    EXPECT_EQ(plenty.exit_code, 0) << plenty.err;
}

TEST(CliOptions, DevicesOnOneImageIsANoteWithoutAGpuAndAnErrorForADeviceThatIsNotThere) {
    TempDir t;
    const std::string args = "run pipelines/blur.toml --set src.width=16 --set src.height=8 --set out.path='" +
                             (t / "b.ppm") + "' --devices ";
    std::string why;
    if (!pixflow::host::cuda_usable(&why)) {
        auto r = run_pixflow(args + "0,1");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.err.find("note: --devices 0,1 ignored: "), std::string::npos) << r.err;
        EXPECT_TRUE(std::filesystem::exists(t / "b.ppm"));
        return;
    }
    const int n = pixflow::host::cuda_device_count();
    auto r = run_pixflow(args + std::to_string(n));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("there is no CUDA device " + std::to_string(n)), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(t / "b.ppm"));
}
