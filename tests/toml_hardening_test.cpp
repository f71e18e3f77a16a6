// toml++ 3.3.0's known bugs (upstream PRs #301, #305) end in a diagnostic, never an assertion
// or undefined behaviour; the pre-check finds non-ASCII bytes outside strings with their place.
#include "pipeline/pipeline.hpp"
#include "pipeline/toml.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace pixflow::host;

namespace {
std::string first_error(const std::string& text, const std::vector<std::string>& sets = {}) {
    try {
        parse_pipeline_text(text, "p.toml", sets);
    } catch (const UserError& e) {
        return e.diagnostics().at(0).str();
    }
    return "";
}
} // namespace

TEST(TomlHardening, EmptyTableHeaderKeyIsASyntaxErrorNotAnAssertion) {
    // toml++ 3.3.0 asserts on this (and goes on with undefined behaviour when asserts are off)
    std::string e = first_error("[ = \"cpu\"\n");
    EXPECT_NE(e.find("p.toml:1:1: TOML syntax error: malformed TOML"), std::string::npos) << e;
}

TEST(TomlHardening, NonAsciiByteOutsideAStringIsRefusedWithItsPlace) {
    std::string e = first_error("[nodes.a]\nop = \"synth\"\nx\xC3\xA9 = 1\n");
    EXPECT_EQ(e, "p.toml:3:2: TOML syntax error: a non-ASCII byte (0xC3) outside a string or comment; TOML allows them "
                 "only inside \"strings\" and # comments");
    std::string bare = first_error("[nodes.a]\nop = \xFF\n");
    EXPECT_NE(bare.find("p.toml:2:6: TOML syntax error: a non-ASCII byte (0xFF)"), std::string::npos) << bare;
}

TEST(TomlHardening, NonAsciiInStringsAndCommentsIsAccepted) {
    const std::string text = "# caf\xC3\xA9\n[pipeline]\nname = \"b\xC3\xA9 \\\" \xC3\xA9\" # \xC3\xA9\n"
                             "[nodes.a] # \xC3\xA9\nop = 'synth'\n[nodes.b]\nop = \"\"\"\n\xC3\xA9\n\"\"\"\n"
                             "[nodes.c]\nop = '''\xC3\xA9'''\n[nodes.\"k\xC3\xA9y\"]\nop = \"x\"\n";
    TomlScanError err;
    EXPECT_TRUE(toml_precheck(text, err)) << err.line << ":" << err.column << " " << err.message;
    EXPECT_EQ(first_error(text), "");
}

TEST(TomlHardening, ANonAsciiSetValueIsABareString) {
    auto spec = parse_pipeline_text("[nodes.out]\nop = \"save\"\npath = \"a.png\"\n", "p.toml",
                                    {"out.path=caf\xC3\xA9.png"});
    ASSERT_EQ(spec.nodes.size(), 1u);
    bool found = false;
    for (const auto& [k, v] : spec.nodes[0].params)
        if (k == "path") found = v.s == "caf\xC3\xA9.png";
    EXPECT_TRUE(found);
}

TEST(TomlHardening, NoOtherHostFileIncludesTomlxxDirectly) {
    // toml++ is header-only: one file including it without the overrides would give the linker
    // two different definitions of its parser to choose from.
    for (const auto& entry : std::filesystem::recursive_directory_iterator(pixflow::testing::source_dir() / "framework")) {
        if (!entry.is_regular_file() || entry.path().filename() == "toml.hpp") continue;
        std::ifstream in(entry.path());
        std::stringstream ss;
        ss << in.rdbuf();
        EXPECT_EQ(ss.str().find("<toml++/"), std::string::npos) << entry.path() << " includes toml++ directly";
    }
}
