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
    } catch (const UserError& e) { return e.diagnostics().at(0).str(); }
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
    auto spec =
        parse_pipeline_text("[nodes.out]\nop = \"save\"\npath = \"a.png\"\n", "p.toml", {"out.path=caf\xC3\xA9.png"});
    ASSERT_EQ(spec.nodes.size(), 1u);
    bool found = false;
    for (const auto& [k, v] : spec.nodes[0].params)
        if (k == "path") found = v.s == "caf\xC3\xA9.png";
    EXPECT_TRUE(found);
}

TEST(TomlHardening, NoOtherHostFileIncludesTomlxxDirectly) {
    // toml++ is header-only: one file including it without the overrides would give the linker
    // two different definitions of its parser to choose from.
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(pixflow::testing::source_dir() / "framework")) {
        if (!entry.is_regular_file() || entry.path().filename() == "toml.hpp") continue;
        std::ifstream in(entry.path());
        std::stringstream ss;
        ss << in.rdbuf();
        EXPECT_EQ(ss.str().find("<toml++/"), std::string::npos) << entry.path() << " includes toml++ directly";
    }
}

// toml++ 3.3.0 asks whether a character is whitespace in places no pre-check can follow: after
// a line-ending backslash in a multi-line string, after a multi-line string's extra closing
// quotes. For 3,019 code points (é among them) that reaches its unreachable code inside a
// noexcept function: std::terminate. The fuzzer found these three; each must parse or be a
// syntax error naming its place, with the characters the user wrote.
TEST(TomlHardening, CharactersTomlxxHasNoWhitespaceAnswerForNeverEndTheProcess) {
    auto spec = parse_pipeline_text("[nodes.a]\nop = \"synth\"\n[nodes.b]\nop = \"save\"\ninput = \"a\"\n"
                                    "path = \"\"\"\\\n   \xC3\xA9t\xC3\xA9.png\"\"\"\n",
                                    "p.toml");
    bool found = false;
    for (const auto& n : spec.nodes)
        for (const auto& [k, v] : n.params)
            if (k == "path") found = v.s == "\xC3\xA9t\xC3\xA9.png";
    EXPECT_TRUE(found) << "the line-ending backslash trims the whitespace, not the é";

    std::string ml = first_error("[nodes.a]\nop = \"\"\"x\"\"\"\"\xC3\xA9\n");
    EXPECT_NE(ml.find("p.toml:2:"), std::string::npos) << ml;
    EXPECT_NE(ml.find("TOML syntax error"), std::string::npos) << ml;
    EXPECT_EQ(ml.find("\xF3\xB0"), std::string::npos) << "the message shows what was written: " << ml;
    std::string lit = first_error("[nodes.a]\nop = '''x''''\xC3\xA9\n");
    EXPECT_NE(lit.find("p.toml:2:"), std::string::npos) << lit;

    // Keys keep them too: a quoted key with é is the node id the user wrote.
    auto keyed = parse_pipeline_text("[nodes.\"caf\xC3\xA9\"]\nop = \"synth\"\n", "p.toml");
    ASSERT_EQ(keyed.nodes.size(), 1u);
    EXPECT_EQ(keyed.nodes[0].id, "caf\xC3\xA9");

    // The private-use characters the reader uses itself are refused, never silently changed.
    std::string pua = first_error("[nodes.a]\nop = \"\xF3\xB0\x83\xA9\"\n");
    EXPECT_NE(pua.find("U+F00E9"), std::string::npos) << pua;
}
