// A batch's outcome does not depend on which input sorts first (issue 15, item 6): the whole
// pipeline is checked with each input in turn until one passes, an input that fails that check
// fails alone and is named, and only when no input passes does nothing run (exit 1), again naming
// the inputs.
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
using pixflow::testing::write_text;
namespace fs = std::filesystem;

namespace {

/// A binary PGM (one channel) or PPM (three), u8, constant.
void write_pnm(const fs::path& p, int w, int h, int channels) {
    fs::create_directories(p.parent_path());
    std::string data(std::size_t(w) * std::size_t(h) * std::size_t(channels), char(100));
    std::ofstream(p, std::ios::binary) << (channels == 1 ? "P5\n" : "P6\n") << w << " " << h << "\n255\n" << data;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

std::set<std::string> files_below(const fs::path& dir) {
    std::set<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
    return out;
}

/// load -> save to .ppm, which holds only three channels: a grey input fails the shape check.
std::string rgb_only_pipeline(const TempDir& t) {
    write_text(t / "rgb.toml", "[nodes.src]\nop = \"load\"\npath = \"x.ppm\"\n"
                               "[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"x.ppm\"\n");
    return t / "rgb.toml";
}

} // namespace

TEST(BatchOrder, AGreyInputFailsAloneNamedWhetherItSortsFirstOrLast) {
    for (std::string grey : {"a-grey.pgm", "z-grey.pgm"}) {
        TempDir t;
        std::string p = rgb_only_pipeline(t);
        write_pnm(t.path / "in" / grey, 6, 4, 1);
        write_pnm(t.path / "in/m1.ppm", 6, 4, 3);
        write_pnm(t.path / "in/m2.ppm", 7, 4, 3);
        auto r = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out"));
        EXPECT_EQ(r.exit_code, 2) << grey << "\n" << r.err;
        EXPECT_EQ(files_below(t.path / "out"), (std::set<std::string>{"m1.ppm", "m2.ppm"})) << grey;
        EXPECT_NE(r.out.find("3 image(s): 2 ok, 1 failed"), std::string::npos) << grey << "\n" << r.out;
        auto summary = r.err.find("failed inputs:");
        ASSERT_NE(summary, std::string::npos) << r.err;
        EXPECT_NE(r.err.find(t / ("in/" + grey) + ": ", summary), std::string::npos) << grey << "\n" << r.err;
    }
}

TEST(BatchOrder, WhenNoInputPassesNothingRunsAndTheInputsAreNamed) {
    TempDir t;
    std::string p = rgb_only_pipeline(t);
    write_pnm(t.path / "in/a.pgm", 6, 4, 1);
    write_pnm(t.path / "in/b.pgm", 6, 4, 1);
    write_pnm(t.path / "in/c.pgm", 9, 4, 1);
    auto r = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_FALSE(fs::exists(t.path / "out"));
    EXPECT_NE(r.err.find("cannot save u8 with 1 channel as .ppm"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(inputs '" + (t / "in/a.pgm") + "', '" + (t / "in/b.pgm") + "', '" + (t / "in/c.pgm") + "')"),
              std::string::npos)
        << r.err;
}
