// Plugins are scanned in a child process before the host loads them (issue 15 item 1): a plugin
// that throws, crashes, exits, hangs or answers garbage is listed as rejected with its reason, is
// never loaded by pixflow itself, and changes nothing for the other commands. The scan verdicts
// are cached by file identity. Also: the descriptor validator alone, the overflow-checked sizes,
// and plugin messages cut at their buffer.
//
// The bad plugins are in tests/test_plugins/isolation/; each appends "<plugin> <program>" to
// $PIXFLOW_TEST_LOAD_LOG when something loads it, and pixflow-plugin-scanner appends the path of
// each file it scans to $PIXFLOW_PLUGIN_SCAN_LOG.
#include "loader/checked_size.hpp"
#include "loader/descriptor_check.hpp"
#include "loader/registry.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace pixflow::host;
using pixflow::testing::CommandResult;
using pixflow::testing::TempDir;

namespace {

namespace fs = std::filesystem;

fs::path isolation_dir() { return pixflow::testing::test_plugin_dir() / "isolation"; }
fs::path bad(const std::string& name) { return isolation_dir() / ("pixflow_bad_" + name + ".so"); }

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> lines_of(const fs::path& p) {
    std::vector<std::string> out;
    std::istringstream in(slurp(p));
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

/// A private scan cache, scan log and load log, and pixflow run with them.
struct Sandbox {
    TempDir dir;
    std::string extra_env;
    fs::path cache() const { return dir.path / "cache.json"; }
    fs::path scan_log() const { return dir.path / "scans.log"; }
    fs::path load_log() const { return dir.path / "loads.log"; }
    /// 3 s: a hanging plugin costs 3 s, and the real plugins load well within it even under ASan.
    std::string env() const {
        return "PIXFLOW_PLUGIN_PATH= PIXFLOW_PLUGIN_SCAN_TIMEOUT=3 PIXFLOW_PLUGIN_CACHE='" + cache().string() +
               "' PIXFLOW_PLUGIN_SCAN_LOG='" + scan_log().string() + "' PIXFLOW_TEST_LOAD_LOG='" + load_log().string() +
               "' " + extra_env;
    }
    CommandResult run(const std::string& args) const {
        TempDir t;
        std::string cmd = "cd '" + pixflow::testing::source_dir().string() + "' && " + env() + " '" +
                          pixflow::testing::pixflow_exe().string() + "' " + args + " >'" + (t / "out") + "' 2>'" +
                          (t / "err") + "'";
        int status = std::system(cmd.c_str());
        CommandResult r;
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        r.out = slurp(t / "out");
        r.err = slurp(t / "err");
        return r;
    }
    std::size_t scans() const { return lines_of(scan_log()).size(); }
    std::size_t scans_of(const fs::path& plugin) const {
        std::size_t n = 0;
        for (const auto& l : lines_of(scan_log())) n += l.find(plugin.filename().string()) != std::string::npos;
        return n;
    }
    /// Programs other than the scanner that loaded a plugin of the isolation folder.
    std::vector<std::string> loads_outside_the_scanner() const {
        std::vector<std::string> out;
        for (const auto& l : lines_of(load_log()))
            if (l.size() < 23 || l.compare(l.size() - 23, 23, " pixflow-plugin-scanner") != 0) out.push_back(l);
        return out;
    }
};

/// The line of `pixflow plugins` that follows the plugin's own line: its reason or its ops.
std::string plugins_entry(const std::string& out, const fs::path& plugin) {
    auto at = out.find("  " + plugin.string() + "\n");
    if (at == std::string::npos) return "(not listed)";
    auto start = out.rfind('\n', at);
    start = start == std::string::npos ? 0 : start + 1;
    auto end = out.find('\n', out.find('\n', at) + 1);
    return out.substr(start, end - start);
}

struct BadCase {
    const char* plugin;
    const char* reason; ///< a part of the reason `pixflow plugins` must print
};

const BadCase bad_cases[] = {
    {"entry_throws", "its entry point threw an exception (the descriptor table is not ready)"},
    {"entry_segfault", "the plugin crashed during the scan (SIGSEGV) in its entry point pixflow_plugin_entry()"},
    {"garbage_descriptor", "declares -1515870811 operators (a negative count)"},
    {"null_arrays", "declares 3 operators but the array is NULL"},
    {"null_choices", "operator 'tp_null_choices', parameter #0 'mode': declares 3 choices but the array is NULL"},
    {"unterminated_string", "operator 'tp_unterminated': its doc is not NUL-terminated within 4096 bytes"},
    {"unterminated_message", "its init failed: yyyyyyyy"},
    {"ctor_abort", "the plugin crashed during the scan (SIGABRT) while loading it (in a static constructor"},
    {"ctor_exit", "the plugin ended the scan with exit status 0 while loading it (in a static constructor"},
    {"ctor_hang", "the scan did not finish within 3 s: it hangs while loading it (in a static constructor"},
};

/// GoogleTest prints the parameter in test listings: the plugin's name, not its bytes.
[[maybe_unused]] void PrintTo(const BadCase& c, std::ostream* os) { *os << c.plugin; }

class BadPlugin : public ::testing::TestWithParam<BadCase> {};

} // namespace

// (a) listed as rejected with its reason, (b) ops, validate and describe of everything else work
// as if it were not there, (c) only the scanner ever loaded it.
TEST_P(BadPlugin, IsRejectedWithItsReasonAndChangesNothingElse) {
    const BadCase& c = GetParam();
    Sandbox box;
    std::string path = "--plugin-path '" + bad(c.plugin).string() + "' ";

    CommandResult plugins = box.run(path + "plugins");
    ASSERT_EQ(plugins.exit_code, 0) << plugins.err;
    std::string entry = plugins_entry(plugins.out, bad(c.plugin));
    EXPECT_EQ(entry.rfind("rejected  ", 0), 0u) << entry;
    EXPECT_NE(entry.find(c.reason), std::string::npos) << entry;
    EXPECT_NE(plugins.out.find("loaded    " + (pixflow::testing::plugin_dir() / "pixflow_gauss5x5.so").string()),
              std::string::npos)
        << plugins.out;

    CommandResult ops = box.run(path + "ops");
    EXPECT_EQ(ops.exit_code, 0) << ops.err;
    EXPECT_NE(ops.out.find("gauss5x5"), std::string::npos) << ops.out;
    EXPECT_NE(ops.out.find("maxpool2x2"), std::string::npos) << ops.out;
    EXPECT_NE(ops.err.find("note: 1 plugin file(s) rejected"), std::string::npos) << ops.err;

    // Saved as .npy: a build without OpenImageIO (the GPU check's) cannot write the file's .png.
    CommandResult validate = box.run(path + "validate pipelines/blur.toml --set out.path=out/blur.npy");
    EXPECT_EQ(validate.exit_code, 0) << validate.err;
    EXPECT_NE(validate.out.find("pipelines/blur.toml: ok: 3 nodes"), std::string::npos) << validate.out;

    CommandResult describe = box.run(path + "describe");
    EXPECT_EQ(describe.exit_code, 0) << describe.err;
    EXPECT_NE(describe.out.find("gauss5x5"), std::string::npos);

    EXPECT_EQ(box.scans_of(bad(c.plugin)), 1u) << "scanned once, then known from the cache";
    EXPECT_FALSE(lines_of(box.load_log()).empty()) << "the scanner loaded it";
    EXPECT_EQ(box.loads_outside_the_scanner(), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(PluginIsolation, BadPlugin, ::testing::ValuesIn(bad_cases), [](const auto& info) {
    std::string n = info.param.plugin;
    std::erase(n, '_');
    return n;
});

TEST(PluginIsolation, AnUnterminatedInitMessageIsCutAtItsBuffer) {
    Sandbox box;
    CommandResult r = box.run("--plugin-path '" + bad("unterminated_message").string() + "' plugins");
    std::string entry = plugins_entry(r.out, bad("unterminated_message"));
    // 512-byte buffer: at most 511 bytes of the message, then the end of the line.
    EXPECT_NE(entry.find("its init failed: " + std::string(511, 'y') + ""), std::string::npos) << entry;
    EXPECT_EQ(entry.find(std::string(512, 'y')), std::string::npos);
}

// The same registry the CLI uses, in this process: every bad plugin is rejected, none is mapped
// into this process (ctor_abort or ctor_exit would have ended this test), and the plugin that
// passes the scan is loaded.
TEST(PluginIsolation, ARegistryInThisProcessNeverMapsARejectedPlugin) {
    Sandbox box;
    setenv("PIXFLOW_PLUGIN_SCAN_TIMEOUT", "3", 1);
    setenv("PIXFLOW_PLUGIN_CACHE", box.cache().c_str(), 1);
    setenv("PIXFLOW_TEST_LOAD_LOG", box.load_log().c_str(), 1);
    Registry reg;
    reg.load_all({isolation_dir()});
    unsetenv("PIXFLOW_PLUGIN_SCAN_TIMEOUT");
    unsetenv("PIXFLOW_PLUGIN_CACHE");
    unsetenv("PIXFLOW_TEST_LOAD_LOG");

    std::string maps = slurp("/proc/self/maps");
    for (const BadCase& c : bad_cases) {
        const PluginRecord* rec = nullptr;
        for (const auto& p : reg.plugins())
            if (p.path == bad(c.plugin)) rec = &p;
        ASSERT_NE(rec, nullptr) << c.plugin;
        EXPECT_FALSE(rec->loaded) << c.plugin;
        EXPECT_NE(rec->reason.find(c.reason), std::string::npos) << rec->reason;
        EXPECT_EQ(rec->scan, PluginRecord::Scan::scanner) << c.plugin;
        EXPECT_EQ(maps.find(bad(c.plugin).filename().string()), std::string::npos) << c.plugin << " is mapped";
    }
    ASSERT_NE(reg.find("tp_huge"), nullptr);
    EXPECT_NE(maps.find("pixflow_bad_hostile_ops.so"), std::string::npos);
    for (const auto& l : box.loads_outside_the_scanner()) EXPECT_EQ(l, "hostile_ops pixflow_tests");

    // A second registry takes every verdict from the cache.
    setenv("PIXFLOW_PLUGIN_CACHE", box.cache().c_str(), 1);
    Registry again;
    again.load_all({isolation_dir()});
    unsetenv("PIXFLOW_PLUGIN_CACHE");
    for (const auto& p : again.plugins()) EXPECT_EQ(p.scan, PluginRecord::Scan::cache) << p.path;
}

// Defence in depth: with the scanner turned off, the same validator still runs in-process
// (only for a plugin that is safe to load here).
TEST(PluginIsolation, WithoutTheScannerTheDescriptorIsStillValidated) {
    Sandbox box;
    box.extra_env = "PIXFLOW_PLUGIN_SCANNER=off";
    CommandResult r = box.run("--plugin-path '" + bad("null_choices").string() + "' plugins");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(plugins_entry(r.out, bad("null_choices")).find("declares 3 choices but the array is NULL"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(box.scans(), 0u);
}

TEST(PluginIsolation, AMissingScannerIsAWarningAndPluginsStillLoad) {
    Sandbox box;
    box.extra_env = "PIXFLOW_PLUGIN_SCANNER=/nonexistent/pixflow-plugin-scanner";
    CommandResult r = box.run("ops");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("gauss5x5"), std::string::npos);
    EXPECT_NE(r.err.find("warning: the plugin scanner /nonexistent/pixflow-plugin-scanner is missing"),
              std::string::npos)
        << r.err;
}

TEST(PluginIsolation, ValidateRefusesAnInferredShapeWhoseBytesOverflow) {
    Sandbox box;
    TempDir t;
    pixflow::testing::write_text(t / "huge.toml", "[nodes.a]\nop = \"tp_huge\"\n");
    CommandResult r =
        box.run("--plugin-path '" + bad("hostile_ops").string() + "' validate '" + (t / "huge.toml") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("node 'a': op tp_huge inferred an output of 2147483647x2147483647, 4 channel(s) of f64, "
                         "whose size in bytes overflows"),
              std::string::npos)
        << r.err;
}

TEST(PluginIsolation, AnUnterminatedInferMessageIsCutAtItsBuffer) {
    Sandbox box;
    TempDir t;
    pixflow::testing::write_text(t / "bad.toml", "[nodes.b]\nop = \"tp_bad_infer\"\n");
    CommandResult r =
        box.run("--plugin-path '" + bad("hostile_ops").string() + "' validate '" + (t / "bad.toml") + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    // validate's buffer is 1024 bytes: 1023 of them, then the end of the line.
    EXPECT_NE(r.err.find("node 'b': " + std::string(1023, 'z') + "\n"), std::string::npos) << r.err.substr(0, 200);
}

// ---- the cache ----------------------------------------------------------------------------------

TEST(PluginScanCache, ASecondRunStartsNoScanner) {
    Sandbox box;
    ASSERT_EQ(box.run("ops").exit_code, 0);
    std::size_t first = box.scans();
    EXPECT_GE(first, 9u) << "every real plugin is scanned once";
    EXPECT_NE(slurp(box.cache()).find("\"format\": \"pixflow plugin scan cache\""), std::string::npos)
        << slurp(box.cache()).substr(0, 200);
    CommandResult second = box.run("ops");
    EXPECT_EQ(second.exit_code, 0);
    EXPECT_NE(second.out.find("gauss5x5"), std::string::npos);
    EXPECT_EQ(box.scans(), first) << "no scanner was started";
}

TEST(PluginScanCache, AChangedFileIsScannedAgain) {
    Sandbox box;
    TempDir t;
    fs::path copy = t.path / "pixflow_copy.so";
    fs::copy_file(pixflow::testing::test_plugin("fusion_ops"), copy);
    std::string args = "--plugin-path '" + copy.string() + "' plugins";
    auto loaded = [&](const CommandResult& r) { return plugins_entry(r.out, copy).rfind("loaded    ", 0) == 0; };

    EXPECT_TRUE(loaded(box.run(args)));
    EXPECT_EQ(box.scans_of(copy), 1u);
    EXPECT_TRUE(loaded(box.run(args)));
    EXPECT_EQ(box.scans_of(copy), 1u) << "unchanged: from the cache";

    fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(5)); // touched
    EXPECT_TRUE(loaded(box.run(args)));
    EXPECT_EQ(box.scans_of(copy), 2u) << "another mtime: scanned again";

    std::ofstream(copy, std::ios::app | std::ios::binary) << "trailing bytes"; // another size
    auto r = box.run(args);
    EXPECT_TRUE(loaded(r)) << r.out;
    EXPECT_EQ(box.scans_of(copy), 3u) << "another size: scanned again";
}

TEST(PluginScanCache, ACorruptCacheIsIgnoredAndRewritten) {
    Sandbox box;
    pixflow::testing::write_text(box.cache().string(),
                                 "{\"format\": \"pixflow plugin scan cache\", \"plugins\": [1, 2");
    CommandResult r = box.run("ops");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("gauss5x5"), std::string::npos);
    EXPECT_EQ(r.err, "");
    EXPECT_GE(box.scans(), 9u);
    std::string text = slurp(box.cache());
    EXPECT_NE(text.find("pixflow_gauss5x5.so"), std::string::npos) << text.substr(0, 300);
    std::size_t before = box.scans();
    EXPECT_EQ(box.run("ops").exit_code, 0);
    EXPECT_EQ(box.scans(), before) << "the rewritten cache is used";
}

// One cache file serves every pixflow of the user (build trees, installations): a verdict counts
// only for the pixflow and scanner that made it, and the others' verdicts stay.
TEST(PluginScanCache, VerdictsOfAnotherPixflowAreNotTrustedButKept) {
    Sandbox box;
    ASSERT_EQ(box.run("ops").exit_code, 0);
    std::size_t first = box.scans();
    std::string text = slurp(box.cache());
    const std::string from = "\"pixflow\": \"", to = from + "0.0.0-older ";
    std::size_t older = 0;
    for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size(), ++older)
        text.replace(at, from.size(), to);
    ASSERT_EQ(older, first) << text.substr(0, 300);
    pixflow::testing::write_text(box.cache().string(), text);

    ASSERT_EQ(box.run("ops").exit_code, 0);
    EXPECT_EQ(box.scans(), 2 * first) << "an upgrade rescans everything";
    std::string after = slurp(box.cache());
    std::size_t kept = 0;
    for (std::size_t at = 0; (at = after.find(to, at)) != std::string::npos; ++at) ++kept;
    EXPECT_EQ(kept, first) << "the older pixflow's verdicts are still there for it";
}

TEST(PluginScanCache, CanBeTurnedOff) {
    Sandbox box;
    box.extra_env = "PIXFLOW_PLUGIN_CACHE=off";
    ASSERT_EQ(box.run("ops").exit_code, 0);
    std::size_t first = box.scans();
    ASSERT_EQ(box.run("ops").exit_code, 0);
    EXPECT_EQ(box.scans(), 2 * first);
}

// ---- the validator alone --------------------------------------------------------------------------

namespace {

int32_t infer_nothing(const pf_value*, int32_t, const pf_image*, int32_t, pf_image*, int32_t, char*, size_t) {
    return PF_OK;
}
int32_t run_nothing(const pf_run_args*) { return PF_OK; }

/// A valid one-op plugin to break one field at a time.
struct Desc {
    const char* choices[2] = {"fast", "slow"};
    pf_port_desc in{sizeof(pf_port_desc), "in", nullptr, PF_DTYPE_BIT(PF_U8), PF_ALL_CHANNELS};
    pf_port_desc out{sizeof(pf_port_desc), "out", "", PF_DTYPE_BIT(PF_U8), PF_ALL_CHANNELS};
    pf_param_desc params[2]{};
    pf_op_desc op{};
    pf_plugin_desc plugin{};
    Desc() {
        params[0].struct_size = params[1].struct_size = sizeof(pf_param_desc);
        params[0].name = "mode";
        params[0].doc = "how";
        params[0].type = params[0].default_value.type = PF_PARAM_CHOICE;
        params[0].choices = choices;
        params[0].n_choices = 2;
        params[0].default_value.s = "slow";
        params[1].name = "k";
        params[1].doc = "size";
        params[1].type = params[1].default_value.type = PF_PARAM_INT;
        params[1].has_range = 1;
        params[1].min = 1;
        params[1].max = 9;
        params[1].default_value.i = 3;
        op = pf_op_desc{sizeof(pf_op_desc), "tp_op",      "doc",  0, &in, 1, &out, 1, params, 2,
                        &infer_nothing,     &run_nothing, nullptr};
        plugin = pf_plugin_desc{
            sizeof(pf_plugin_desc), PIXFLOW_ABI_MAJOR, PIXFLOW_ABI_MINOR, "p", "1", &op, 1, nullptr, nullptr, 0};
    }
    std::string check() const { return check_plugin_descriptor(&plugin); }
};

} // namespace

TEST(DescriptorCheck, AcceptsAValidDescriptor) { EXPECT_EQ(Desc().check(), ""); }

TEST(DescriptorCheck, RejectsACountAboveItsBoundWithoutReadingTheArray) {
    Desc d;
    d.plugin.ops = reinterpret_cast<const pf_op_desc*>(std::uintptr_t(16)); // followed: a crash
    d.plugin.n_ops = DescriptorLimits::ops + 1;
    EXPECT_EQ(d.check(), "declares 1025 operators (at most 1024)");
    d.plugin.n_ops = -1;
    EXPECT_EQ(d.check(), "declares -1 operators (a negative count)");
}

TEST(DescriptorCheck, RejectsANullArrayWithACount) {
    Desc d;
    d.op.params = nullptr;
    EXPECT_EQ(d.check(), "operator 'tp_op': declares 2 parameters but the array is NULL");
}

TEST(DescriptorCheck, RejectsANameNotTerminatedWithinItsBound) {
    Desc d;
    std::vector<char> name(DescriptorLimits::name_bytes + 1, 'a'); // no NUL anywhere: reads stay inside
    d.op.name = name.data();
    EXPECT_EQ(d.check(), "operator #0: its name is not NUL-terminated within 128 bytes");
}

TEST(DescriptorCheck, RejectsNamesThatAPipelineCouldNotSpell) {
    Desc d;
    d.params[1].name = "a.b";
    EXPECT_EQ(d.check(), "operator 'tp_op', parameter #1: its name has the byte 0x2e at offset 1; names are made "
                         "of A-Z a-z 0-9 _ -");
    Desc e;
    e.op.doc = "two\nlines";
    EXPECT_EQ(e.check(), "operator 'tp_op': its doc has the byte 0x0a at offset 3; it must be one line of UTF-8 text");
    Desc f;
    f.op.doc = "\xC3\x28";
    EXPECT_NE(f.check().find("it must be one line of UTF-8 text"), std::string::npos);
}

TEST(DescriptorCheck, RejectsDefaultsOutsideTheirRangeOrChoices) {
    Desc d;
    d.params[1].default_value.i = 10;
    EXPECT_NE(d.check().find("parameter #1 'k': default 10 is outside its range"), std::string::npos) << d.check();
    Desc e;
    e.params[0].default_value.s = "medium";
    EXPECT_EQ(e.check(), "operator 'tp_op', parameter #0 'mode': default is not one of its choices");
    Desc f;
    f.params[1].min = std::nan("");
    EXPECT_NE(f.check().find("is empty or NaN"), std::string::npos);
    Desc g;
    g.params[1].default_value.type = PF_PARAM_FLOAT;
    EXPECT_NE(g.check().find("the default's type 3 is not the parameter's type 2"), std::string::npos);
}

TEST(DescriptorCheck, RejectsMasksWithUnknownBitsAndDuplicateNames) {
    Desc d;
    d.in.dtypes = 1; // PF_DTYPE_INVALID's bit
    EXPECT_NE(d.check().find("input #0 'in': dtype mask 0x1 is empty or has unknown bits"), std::string::npos);
    Desc e;
    e.out.channels = PF_CHANNELS_BIT(5);
    EXPECT_NE(e.check().find("channel mask 0x20"), std::string::npos);
    Desc f;
    f.params[1].name = "mode";
    EXPECT_EQ(f.check(), "operator 'tp_op': parameter 'mode' is declared twice");
}

TEST(DescriptorCheck, RejectsAFusionOfAnOperatorThePluginLacks) {
    Desc d;
    const char* chain[] = {"a", "b"};
    pf_fusion_desc f{sizeof(pf_fusion_desc), "tp_other", chain, 2, nullptr, 0, nullptr, 0};
    d.plugin.fusions = &f;
    d.plugin.n_fusions = 1;
    EXPECT_EQ(d.check(), "fusion #0 names fused operator 'tp_other', which this plugin does not declare");
    f.fused_op = "tp_op";
    EXPECT_EQ(d.check(), "");
    pf_fusion_bind b{"k", 2, "k"};
    f.binds = &b;
    f.n_binds = 1;
    EXPECT_EQ(d.check(), "fusion #0 ('tp_op') binds an unknown parameter or node");
}

TEST(DescriptorCheck, AMessageIsReadOnlyUpToItsBuffer) {
    char buf[16];
    std::memset(buf, 'q', sizeof buf);
    EXPECT_EQ(terminated_message(buf, sizeof buf), std::string(15, 'q'));
    EXPECT_EQ(buf[15], '\0');
    std::strcpy(buf, "a\tb\nc");
    EXPECT_EQ(terminated_message(buf, sizeof buf), "a b c");
}

TEST(CheckedSize, RefusesAShapeWhoseBytesWrap) {
    pf_image huge{sizeof(pf_image), INT_MAX, INT_MAX, 4, PF_F64, PF_HOST, 0, nullptr};
    EXPECT_FALSE(checked_image_bytes(huge));
    EXPECT_TRUE(checked_row_bytes(huge)); // one row is fine: 64 GiB
    pf_image big{sizeof(pf_image), 65536, 65536, 4, PF_F64, PF_HOST, 0, nullptr};
    EXPECT_EQ(checked_image_bytes(big), std::size_t(1) << 37);
    EXPECT_THROW(image_bytes_or_throw(huge, *checked_row_bytes(huge)), std::length_error);
    pf_image negative = big;
    negative.width = -1;
    EXPECT_FALSE(checked_row_bytes(negative));
    pf_image bad_dtype = big;
    bad_dtype.dtype = 99;
    EXPECT_FALSE(checked_row_bytes(bad_dtype));
    EXPECT_FALSE(checked_round_up(max_buffer_bytes, 256));
    EXPECT_EQ(checked_round_up(257, 256), 512u);
    EXPECT_FALSE(checked_image_bytes(big, 10)) << "a pitch shorter than the row";
}
