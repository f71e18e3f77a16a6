// One image over the ranks of mpirun (framework/mpi/image.hpp, docs/mpi.md "One image over the
// ranks"): `mpiexec --oversubscribe -np 2` and `-np 4` of `pixflow run P.toml` (no --input) on this
// one machine, each against the same run by one process, which is the reference: the file written
// must be the same bit for bit, for every kind of access (pointwise, stencil, blocks, the JPEG
// chain fused and not, integral's carry combined over the ranks, carried states such as
// floyd_steinberg's error row passed from rank to rank) and for the whole-image operators
// that read a chain's gathered output. The image is 77 x 53, so no band is a whole number of
// blocks and the ranks' bands differ. Then what goes wrong: a rank that fails before or after the
// chain stops every rank, says which rank, and leaves no file.
#include "device/device.hpp"
#include "mpiexec.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

using pixflow::testing::q;
using pixflow::testing::slurp;
using pixflow::testing::CommandResult;
using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
using pixflow::testing::write_text;
namespace fs = std::filesystem;

namespace {

std::set<std::string> files_below(const fs::path& dir) {
    std::set<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
    return out;
}

/// The names in `files`, one per line (what a test that expects none shows when it fails).
std::string listing(const std::set<std::string>& files) {
    std::string s;
    for (const auto& f : files) s += f + "\n";
    return s;
}

void write_ppm(const fs::path& p, int w, int h, unsigned seed) {
    std::mt19937 rng(seed);
    std::string data(std::size_t(w) * std::size_t(h) * 3, '\0');
    for (char& c : data) c = char(rng() & 0xff);
    std::ofstream(p, std::ios::binary) << "P6\n" << w << " " << h << "\n255\n" << data;
}

/// `mpiexec --oversubscribe <args>` (mpiexec_prefix: from the source dir, as root too).
CommandResult run_mpi(const std::string& args) {
    TempDir t;
    std::string cmd = pixflow::testing::mpiexec_prefix(t.path) + args + " >" + q(t / "out") + " 2>" + q(t / "err");
    int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(t / "out");
    r.err = slurp(t / "err");
    return r;
}

std::string pixflow_cmd() { return q(pixflow::testing::pixflow_exe().string()); }

/// One pipeline: the nodes between `src` (load of the 77 x 53 RGB image) and `out` (save of the
/// node `last` to `out.<ext>`), and whether a chain of it must be split over the ranks.
struct Case {
    std::string name, nodes, last, ext;
    /// How the last chain's output is completed, as the note says; empty: not split.
    std::string how = k_written;
    std::string extra;   ///< more run arguments (--no-fuse)
    std::string relayed; ///< the carried nodes whose state passes rank to rank, as the note names them
    static constexpr const char* k_written = "written by every rank at its rows' offset";
    static constexpr const char* k_gathered = "gathered at rank 0";
    static constexpr const char* k_everywhere = "gathered on every rank";
};

std::string node(const std::string& id, const std::string& op, const std::string& input, const std::string& more = "") {
    return "[nodes." + id + "]\nop = \"" + op + "\"\ninput = \"" + input + "\"\n" + more;
}

const std::vector<Case>& cases() {
    static const std::vector<Case> c = {
        {"Convert", node("f", "convert", "src", "dtype = \"f32\"\nscale = 0.5\n"), "f", "npy"},
        {"Gauss", node("blur", "gauss5x5", "src", "sigma = 1.5\n"), "blur", "ppm"},
        {"GaussThreeTimes",
         node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1", "sigma = 2.0\nborder = \"replicate\"\n") +
             node("b3", "gauss5x5", "b2"),
         "b3", "npy"},
        {"GrayGaussPool", node("g", "grayscale", "src") + node("b", "gauss5x5", "g") + node("p", "maxpool2x2", "b"),
         "p", "pgm"},
        {"PoolTwice", node("p1", "maxpool2x2", "src") + node("p2", "maxpool2x2", "p1"), "p2", "npy"},
        {"JpegFused",
         node("g", "grayscale", "src") + node("dct", "dct8x8", "g") + node("qz", "quantize", "dct", "quality = 50\n") +
             node("dq", "dequantize", "qz", "quality = 50\n") + node("idct", "idct8x8", "dq", "dtype = \"u8\"\n"),
         "idct", "pgm"},
        {"JpegNodes",
         node("g", "grayscale", "src") + node("dct", "dct8x8", "g") + node("qz", "quantize", "dct", "quality = 30\n") +
             node("dq", "dequantize", "qz", "quality = 30\n") + node("idct", "idct8x8", "dq", "dtype = \"f32\"\n"),
         "idct", "npy", Case::k_written, "--no-fuse"},
        {"IntegralU32", node("g", "grayscale", "src") + node("sat", "integral", "g", "dtype = \"u32\"\n"), "sat",
         "npy"},
        {"IntegralU64", node("sat", "integral", "src", "dtype = \"u64\"\n"), "sat", "npy"},
        {"IntegralAfterBlur", node("b", "gauss5x5", "src") + node("sat", "integral", "b", "dtype = \"u32\"\n"), "sat",
         "npy"},
        // f64 sums depend on their order: the running sums pass from rank to rank, in order
        {"IntegralF64", node("sat", "integral", "src", "dtype = \"f64\"\n"), "sat", "npy", Case::k_written, "",
         "'sat'"},
        // integral before other nodes: relayed too (a scan would need every later node's rows again)
        {"IntegralF64ThenPool", node("sat", "integral", "src", "dtype = \"f64\"\n") + node("p", "maxpool2x2", "sat"),
         "p", "npy", Case::k_written, "", "'sat'"},
        {"IntegralU32ThenPool",
         node("g", "grayscale", "src") + node("sat", "integral", "g", "dtype = \"u32\"\n") +
             node("p", "maxpool2x2", "sat"),
         "p", "npy", Case::k_written, "", "'sat'"},
        // formats MPI-IO does not write (PFM stores its rows bottom up; PGM u16 big-endian):
        // gathered at rank 0, which runs save
        {"GaussToPfm",
         node("g", "grayscale", "src") + node("b", "gauss5x5", "g") + node("f", "convert", "b", "dtype = \"f32\"\n"),
         "f", "pfm", Case::k_gathered},
        {"GaussToPgm16",
         node("g", "grayscale", "src") + node("w", "convert", "g", "dtype = \"u16\"\nscale = 200\n") +
             node("b", "gauss5x5", "w"),
         "b", "pgm", Case::k_gathered},
        // whole-image operators after a chain read its output gathered on every rank
        // (chan_vese after a chain runs split, to a tolerance: MpiChanVese below)
        // floyd_steinberg is carried: its error row passes from rank to rank, each rank after
        // the one above
        {"FloydSteinbergAfterGray", node("g", "grayscale", "src") + node("d", "floyd_steinberg", "g"), "d", "pgm",
         Case::k_written, "", "'d'"},
        {"FloydSteinbergRgbAfterBlur", node("b", "gauss5x5", "src") + node("d", "floyd_steinberg", "b"), "d", "ppm",
         Case::k_written, "", "'d'"},
        // several strips per band: the rank below waits for the last strip of the one above
        {"FloydSteinbergStripsOf8", node("g", "grayscale", "src") + node("d", "floyd_steinberg", "g"), "d", "npy",
         Case::k_written, "--strip-rows 8", "'d'"},
        {"FloydSteinbergThenPool",
         node("g", "grayscale", "src") + node("d", "floyd_steinberg", "g") + node("p", "maxpool2x2", "d"), "p", "pgm",
         Case::k_written, "", "'d'"},
        // two carried nodes: floyd_steinberg relayed, integral (u32, last) scanned
        {"FloydSteinbergThenIntegral",
         node("g", "grayscale", "src") + node("d", "floyd_steinberg", "g") +
             node("sat", "integral", "d", "dtype = \"u32\"\n"),
         "sat", "npy", Case::k_written, "", "'d'"},
        // a stencil after it would read the rank above's rows (its halo): runs whole on every rank
        {"FloydSteinbergThenBlur",
         node("g", "grayscale", "src") + node("d", "floyd_steinberg", "g") + node("b", "gauss5x5", "d"), "b", "pgm",
         ""},
        // a second sink (compare) reads the blur: rank 0 runs both, after a gather
        {"BlurComparedWithItsSource",
         node("g", "grayscale", "src") + node("b", "gauss5x5", "g") +
             "[nodes.diff]\nop = \"compare\"\ninputs = { a = \"g\", b = \"b\" }\n",
         "b", "npy", Case::k_gathered},
    };
    return c;
}

/// The cases whose chain has a stencil after its first node (load of the PPM reads by rows: it
/// is a chain's first node): with halos exchanged (the default), its halo rows come from the
/// neighbour ranks.
bool exchanges_halos(const std::string& name) {
    static const std::set<std::string> k{
        "Gauss",        "GaussThreeTimes",        "GrayGaussPool",     "GaussToPfm",
        "GaussToPgm16", "FloydSteinbergThenBlur", "IntegralAfterBlur", "FloydSteinbergRgbAfterBlur"};
    return k.count(name) > 0;
}

/// --mpi-halo: 0 exchange (the default, no option given), 1 recompute.
std::string halo_option(int recompute) { return recompute ? " --mpi-halo recompute" : ""; }

class MpiImage : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

} // namespace

TEST_P(MpiImage, WritesTheSameFileBitForBitAsOneProcess) {
    const int np = std::get<0>(GetParam());
    const int recompute = std::get<2>(GetParam());
    Case c = cases()[std::size_t(std::get<1>(GetParam()))];
    const bool halos = !recompute && exchanges_halos(c.name);
    c.extra += halo_option(recompute);
    if (halos && c.name == "FloydSteinbergThenBlur") // its halo rows after the relayed node come from the neighbours
        c.how = Case::k_written, c.relayed = "'d'";
    TempDir t;
    write_ppm(t / "in.ppm", 77, 53, 7);
    std::string toml = "[pipeline]\nname = \"" + c.name +
                       "\"\nbackend = \"cpu\"\n[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" +
                       c.nodes + "[nodes.out]\nop = \"save\"\ninput = \"" + c.last + "\"\npath = \"x\"\n";
    write_text(t / "p.toml", toml);
    const std::string one = (t / ("one." + c.ext)), many = (t / ("many." + c.ext));
    auto a = run_pixflow("run " + q(t / "p.toml") + " --set out.path=" + q(one) + " " +
                         cases()[std::size_t(std::get<1>(GetParam()))].extra);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b = run_mpi("-np " + std::to_string(np) + " " + pixflow_cmd() + " run " + q(t / "p.toml") +
                     " --set out.path=" + q(many) + " --report " + q(t / "r.json") + " " + c.extra);
    ASSERT_EQ(b.exit_code, 0) << b.err;
    ASSERT_TRUE(fs::exists(many)) << b.err;
    EXPECT_TRUE(slurp(one) == slurp(many)) << c.name << ": the file differs from one process's\n" << b.err;
    // the chain really ran over the ranks, its output completed as expected (or, where it must
    // not be split, whole on each)
    const std::string over = "runs over " + std::to_string(np) + " ranks";
    EXPECT_EQ(b.err.find(over) != std::string::npos, !c.how.empty()) << b.err;
    if (!c.how.empty()) EXPECT_NE(b.err.find("its output is " + c.how), std::string::npos) << b.err;
    EXPECT_EQ(b.err.find("the state of carried " + c.relayed + " passed from rank to rank") != std::string::npos,
              !c.relayed.empty())
        << b.err;
    // the metrics (compare's) as one process prints them
    auto metrics = [](const std::string& out) {
        std::string m;
        std::istringstream in(out);
        for (std::string line; std::getline(in, line);)
            if (line.find(" = ") != std::string::npos) m += line + "\n";
        return m;
    };
    EXPECT_EQ(metrics(a.out), metrics(b.out));
    EXPECT_NE(b.out.find("wrote " + many), std::string::npos) << b.out;
    const std::set<std::string> expected{"many." + c.ext, "in.ppm", "p.toml", "one." + c.ext, "r.json"};
    EXPECT_EQ(expected, files_below(t.path)) << "no temporary left";
    auto j = nlohmann::json::parse(slurp(t / "r.json"));
    ASSERT_EQ(j["ranks"].size(), std::size_t(np));
    // only a rank below another waits for a relayed state
    EXPECT_EQ(j["ranks"][0]["relay_wait_ms"].get<double>(), 0.0);
    if (c.relayed.empty()) EXPECT_EQ(j["ranks"][np - 1]["relay_wait_ms"].get<double>(), 0.0);
    // halo rows exchanged exactly where a stencil reads rows of the rank above or below
    EXPECT_EQ(b.err.find("stencil halos exchanged with the neighbour ranks") != std::string::npos, halos) << b.err;
    const long long halo_sent = j["ranks"][1]["halo_bytes_sent"].get<long long>();
    if (halos)
        EXPECT_GT(halo_sent, 0);
    else
        EXPECT_EQ(halo_sent, 0);
    // rank 1 sent its rows, unless it wrote them itself
    const long long sent = j["ranks"][1]["bytes_sent"].get<long long>() - halo_sent;
    // (written: the agreement flags, and integral's one row of sums or a relayed state: 77 x 3 x 8
    // bytes at most)
    if (c.how == Case::k_written)
        EXPECT_LT(sent, 2048) << "rank 1 wrote its rows itself";
    else if (!c.how.empty())
        EXPECT_GT(sent, 1024) << "rank 1 sent its rows";
}

INSTANTIATE_TEST_SUITE_P(Ranks, MpiImage,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Range(0, int(cases().size())),
                                            ::testing::Values(0, 1)),
                         [](const auto& info) {
                             return cases()[std::size_t(std::get<1>(info.param))].name + "Np" +
                                    std::to_string(std::get<0>(info.param)) +
                                    (std::get<2>(info.param) ? "Recompute" : "");
                         });

namespace {

/// A whole pipeline whose output node is `out`: halos exchanged, or (when a band is thinner than
/// the halo read of it) recomputed with a note, bit for bit as one process either way.
struct HaloCase {
    std::string name, nodes, ext, extra;
    /// When halos are exchanged with -np N: "yes" or "thin" (a band of fewer rows than the halo read of it: recomputed).
    std::string (*expect)(int np);
};

std::string yes(int) { return "yes"; }
/// synth (H rows) -> gauss -> gauss, bands of the balanced cut (H * r / np): each rank reads
/// 2 rows above and below its band (fewer at the image's edges) of src and b1, which must lie
/// in its neighbours' bands.
template <int H> std::string two_rows_each(int np) {
    auto edge = [&](int r) { return H * r / np; };
    for (int r = 0; r < np; ++r) {
        const int above = std::min(2, edge(r)), below = std::min(2, H - edge(r + 1));
        if ((r > 0 && above > edge(r) - edge(r - 1)) || (r + 1 < np && below > edge(r + 2) - edge(r + 1)))
            return "thin";
    }
    return "yes";
}

std::string synth(int h, int channels) {
    return "[nodes.src]\nop = \"synth\"\npattern = \"noise\"\nwidth = 77\nheight = " + std::to_string(h) +
           "\nchannels = " + std::to_string(channels) + "\ndtype = \"u8\"\nseed = 5\n";
}

const std::vector<HaloCase>& halo_cases() {
    static const std::vector<HaloCase> c = {
        // rows halve in maxpool: the second gauss's band edges map through the pooling
        {"SynthGaussPoolGauss",
         synth(53, 3) + node("b1", "gauss5x5", "src") + node("p", "maxpool2x2", "b1") + node("b2", "gauss5x5", "p"),
         "npy", "", yes},
        // load reads a PPM by rows, in the chain: each rank its band and the rows gauss reads
        // around it, from its neighbours
        {"LoadGaussNpy", "LOAD" + node("b", "gauss5x5", "src"), "npy", "", yes},
        {"LoadGrayGaussNpy", "LOAD" + node("g", "grayscale", "src") + node("b", "gauss5x5", "g"), "npy", "", yes},
#ifdef PIXFLOW_TEST_WITH_OIIO
        // PNG: gathered at rank 0, which saves
        {"LoadGrayGaussPng", "LOAD" + node("g", "grayscale", "src") + node("b", "gauss5x5", "g"), "png", "", yes},
        {"LoadGaussPng", "LOAD" + node("b", "gauss5x5", "src"), "png", "", yes},
#endif
        // --strip-rows: the bands are cut at strips of 8 rows (53 rows: 7 strips)
        {"GaussThreeTimesStripRows",
         "LOAD" + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1") + node("b3", "gauss5x5", "b2"), "npy",
         "--strip-rows 8", yes},
        // bands of 1 to 3 rows: a band of 1 row whose neighbour reads 2 rows of it (the rows 2
        // away lie two ranks away): recomputed, with a note (5 rows at -np 4); at the image's
        // top the rank below reads 1 row of it: exchanged (7 rows at -np 4)
        {"Height5", synth(5, 1) + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1"), "npy", "",
         two_rows_each<5>},
        {"Height7", synth(7, 1) + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1"), "npy", "",
         two_rows_each<7>},
        {"Height9", synth(9, 1) + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1"), "npy", "",
         two_rows_each<9>},
    };
    return c;
}

class MpiHalo : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

} // namespace

TEST_P(MpiHalo, ExchangedOrRecomputedGiveTheBitsOfOneProcess) {
    const int np = std::get<0>(GetParam());
    const HaloCase& c = halo_cases()[std::size_t(std::get<1>(GetParam()))];
    const int recompute = std::get<2>(GetParam());
    TempDir t;
    write_ppm(t / "in.ppm", 77, 53, 13);
    std::string nodes = c.nodes;
    if (nodes.rfind("LOAD", 0) == 0)
        nodes = "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" + nodes.substr(4);
    const std::string last = nodes.substr(nodes.rfind("[nodes.") + 7, nodes.rfind("]") - nodes.rfind("[nodes.") - 7);
    write_text(t / "p.toml", "[pipeline]\nbackend = \"cpu\"\n" + nodes + "[nodes.out]\nop = \"save\"\ninput = \"" +
                                 last + "\"\npath = \"x\"\n");
    const std::string one = t / ("one." + c.ext), many = t / ("many." + c.ext);
    auto a = run_pixflow("run " + q(t / "p.toml") + " --set out.path=" + q(one) + " " + c.extra);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b =
        run_mpi("-np " + std::to_string(np) + " " + pixflow_cmd() + " run " + q(t / "p.toml") +
                " --set out.path=" + q(many) + " --report " + q(t / "r.json") + " " + c.extra + halo_option(recompute));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    ASSERT_FALSE(slurp(one).empty());
    EXPECT_TRUE(slurp(one) == slurp(many)) << c.name << ": the file differs from one process's\n" << b.err;
    EXPECT_NE(b.err.find("runs over " + std::to_string(np) + " ranks"), std::string::npos) << b.err;
    const std::string expect = recompute ? "no" : c.expect(np);
    EXPECT_EQ(b.err.find("stencil halos exchanged") != std::string::npos, expect == "yes") << b.err;
    EXPECT_EQ(b.err.find("halos recomputed: ") != std::string::npos, expect == "thin") << b.err;
    auto j = nlohmann::json::parse(slurp(t / "r.json"));
    long long halo = 0;
    for (const auto& r : j["ranks"]) halo += r["halo_bytes_sent"].get<long long>();
    EXPECT_EQ(halo > 0, expect == "yes") << b.err;
}

INSTANTIATE_TEST_SUITE_P(Ranks, MpiHalo,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Range(0, int(halo_cases().size())),
                                            ::testing::Values(0, 1)),
                         [](const auto& info) {
                             return halo_cases()[std::size_t(std::get<1>(info.param))].name + "Np" +
                                    std::to_string(std::get<0>(info.param)) +
                                    (std::get<2>(info.param) ? "Recompute" : "");
                         });

// The run report counts the halo rows each rank sent, exactly: gauss x3 on 77 x 53 RGB u8 (rows
// of 231 bytes); load (a PPM, read by rows: in the chain), b1 and b2 each have 2 rows read by
// the next gauss from each neighbour band, each message with a one-byte flag. The other bytes
// are those of the recomputing run.
TEST(MpiHaloBytes, ReportCountsTheHaloRowsEachRankSent) {
    TempDir t;
    write_ppm(t / "in.ppm", 77, 53, 3);
    write_text(t / "p.toml", "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" +
                                 node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1") +
                                 node("b3", "gauss5x5", "b2") +
                                 "[nodes.out]\nop = \"save\"\ninput = \"b3\"\npath = \"" + (t / "x.npy") + "\"\n");
    const long long msg = 2 * 231 + 1;
    for (int np : {2, 4}) {
        auto ex = run_mpi("-np " + std::to_string(np) + " " + pixflow_cmd() + " run " + q(t / "p.toml") +
                          " --backend cpu --report " + q(t / "e.json"));
        auto re = run_mpi("-np " + std::to_string(np) + " " + pixflow_cmd() + " run " + q(t / "p.toml") +
                          " --backend cpu --mpi-halo recompute --report " + q(t / "r.json"));
        ASSERT_EQ(ex.exit_code, 0) << ex.err;
        ASSERT_EQ(re.exit_code, 0) << re.err;
        auto je = nlohmann::json::parse(slurp(t / "e.json")), jr = nlohmann::json::parse(slurp(t / "r.json"));
        for (int r = 0; r < np; ++r) {
            const long long neighbours = (r > 0) + (r + 1 < np);
            EXPECT_EQ(je["ranks"][r]["halo_bytes_sent"].get<long long>(), 3 * neighbours * msg) << "rank " << r;
            EXPECT_EQ(je["ranks"][r]["bytes_sent"].get<long long>() - 3 * neighbours * msg,
                      jr["ranks"][r]["bytes_sent"].get<long long>())
                << "rank " << r;
            EXPECT_EQ(jr["ranks"][r]["halo_bytes_sent"].get<long long>(), 0);
        }
        EXPECT_NE(ex.err.find("(" + std::to_string(3 * msg) + " of them halo rows)"), std::string::npos) << ex.err;
    }
}

namespace {

/// A gray 77 x 53 image: a bright disk on a dark ground, with noise (a segmentation to find).
void write_disk_pgm(const fs::path& p, unsigned seed) {
    const int w = 77, h = 53;
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 25.0);
    std::string data(std::size_t(w) * std::size_t(h), '\0');
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double d = std::hypot(x - 40.0, y - 24.0);
            const double v = (d < 17 ? 180.0 : 70.0) + noise(rng);
            data[std::size_t(y) * std::size_t(w) + std::size_t(x)] = char(std::clamp(int(v), 0, 255));
        }
    std::ofstream(p, std::ios::binary) << "P5\n" << w << " " << h << "\n255\n" << data;
}

/// The samples after the header of a binary PGM (maxval 255) or of a .npy.
std::string payload(const std::string& file, bool npy) {
    if (npy) return file.substr(std::size_t(std::uint8_t(file[8])) + (std::size_t(std::uint8_t(file[9])) << 8) + 10);
    std::size_t at = 0;
    for (int fields = 0; fields < 4; ++fields) { // P5, width, height, maxval, each ended by one space
        while (at < file.size() && std::isspace(static_cast<unsigned char>(file[at]))) ++at;
        while (at < file.size() && !std::isspace(static_cast<unsigned char>(file[at]))) ++at;
    }
    return file.substr(at + 1);
}

/// `name = value` of the metric lines printed (chan_vese's iterations and rms_change).
double metric(const std::string& out, const std::string& name) {
    const std::size_t at = out.find(name + " = ");
    return at == std::string::npos ? -1 : std::stod(out.substr(at + name.size() + 3));
}

class MpiChanVese : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

} // namespace

// chan_vese runs split over the ranks (PF_OP_SPLIT; kernels/chan_vese_split.cpp): a band of rows
// each, halo rows and the region sums exchanged per iteration. Its sums are added in another
// order than one process's, so the segmentation is compared with the tolerance of CUDA against
// the CPU (plugins/chan_vese/test): 99.5% of the mask; over a fixed number of iterations (tol = 0,
// as ChanVese.CudaAgreesWithCpu) the RMS change to 1e-4 relative and phi to 1e-3; until tol, the
// iterations to 5% (the differences in the last bits grow over hundreds of iterations: measured
// on this image, the RMS change agrees to 7 digits after 30 iterations, to 1% after 100).
TEST_P(MpiChanVese, SegmentsAsOneProcessWithinTheCpuVsCudaTolerance) {
    const int np = std::get<0>(GetParam());
    const std::string settings = std::get<1>(GetParam());
    TempDir t;
    write_disk_pgm(t / "in.pgm", 5);
    const std::string toml = "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.pgm") + "\"\n" +
                             node("b", "gauss5x5", "src") + node("seg", "chan_vese", "b", settings) +
                             "[nodes.out]\nop = \"save\"\ninput = \"seg\"\npath = \"x.pgm\"\n"
                             "[nodes.outphi]\nop = \"save\"\ninput = \"seg.phi\"\npath = \"x.npy\"\n";
    write_text(t / "p.toml", toml);
    auto sets = [&](const std::string& stem) {
        return " --backend cpu --set out.path=" + q(t / (stem + ".pgm")) +
               " --set outphi.path=" + q(t / (stem + ".npy"));
    };
    auto a = run_pixflow("run " + q(t / "p.toml") + sets("one"));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b = run_mpi("-np " + std::to_string(np) + " " + pixflow_cmd() + " run " + q(t / "p.toml") + sets("many"));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.err.find("node 'seg' (chan_vese) runs split over " + std::to_string(np) + " ranks"), std::string::npos)
        << b.err;
    const std::string m1 = payload(slurp(t / "one.pgm"), false), m2 = payload(slurp(t / "many.pgm"), false);
    ASSERT_EQ(m1.size(), std::size_t(77 * 53));
    ASSERT_EQ(m2.size(), m1.size());
    std::size_t same = 0, inside = 0;
    for (std::size_t i = 0; i < m1.size(); ++i) same += m1[i] == m2[i], inside += m1[i] != 0;
    EXPECT_GE(double(same) / double(m1.size()), 0.995);
    EXPECT_GT(inside, std::size_t(400)) << "the disk is found (not an empty mask)";
    EXPECT_LT(inside, std::size_t(77 * 53 - 400)) << "the disk is found (not a full mask)";
    const std::string p1 = payload(slurp(t / "one.npy"), true), p2 = payload(slurp(t / "many.npy"), true);
    ASSERT_EQ(p1.size(), m1.size() * 4);
    ASSERT_EQ(p2.size(), p1.size());
    double worst = 0;
    for (std::size_t i = 0; i < m1.size(); ++i) {
        float f1, f2;
        std::memcpy(&f1, p1.data() + 4 * i, 4);
        std::memcpy(&f2, p2.data() + 4 * i, 4);
        worst = std::max(worst, double(std::abs(f1 - f2)));
    }
    const double i1 = metric(a.out, "seg: iterations"), i2 = metric(b.out, "seg: iterations");
    const double r1 = metric(a.out, "seg: rms_change"), r2 = metric(b.out, "seg: rms_change");
    ASSERT_GT(i1, 1.0) << a.out;
    if (settings.find("tol = 0.0") != std::string::npos) {
        EXPECT_LT(worst, 1e-3);
        EXPECT_EQ(i1, i2) << a.out << b.out;
        EXPECT_NEAR(r2, r1, 1e-4 * r1) << a.out << b.out;
    } else {
        EXPECT_LE(std::abs(i2 - i1), 0.05 * i1) << a.out << b.out;
        if (i2 < 300) EXPECT_LE(r2, 1e-3) << "stopped at tol";
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, MpiChanVese,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values("max_iter = 30\ntol = 0.0\ninit = \"checkerboard\"\n",
                                                              "max_iter = 300\ninit = \"disk\"\n")),
                         [](const auto& info) {
                             return std::string(std::get<1>(info.param).find("disk") != std::string::npos
                                                    ? "DiskUntilTol"
                                                    : "Checkerboard30Iterations") +
                                    "Np" + std::to_string(std::get<0>(info.param));
                         });

namespace {

/// A run whose rank 1 fails where its pipeline has `tp_fault` (MPMD: rank 1 gets `fault=...`).
CommandResult run_failing_rank(TempDir& t, const std::string& nodes, const std::string& last,
                               const std::string& fault = "throw") {
    write_ppm(t / "in.ppm", 77, 53, 9);
    std::string toml = "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" + nodes +
                       "[nodes.out]\nop = \"save\"\ninput = \"" + last + "\"\npath = \"" + (t / "out/x.npy") + "\"\n";
    write_text(t / "p.toml", toml);
    const std::string run = pixflow_cmd() + " --plugin-path " + q(pixflow::testing::test_plugin("faults").string()) +
                            " run " + q(t / "p.toml") + " --backend cpu";
    return run_mpi("-np 1 " + run + " : -np 1 " + run + " --set bad.fault=" + fault + " : -np 1 " + run);
}

} // namespace

TEST(MpiImageFaults, RankFailingBeforeTheChainStopsEveryRankAndWritesNothing) {
    TempDir t;
    auto r = run_failing_rank(t, node("bad", "tp_fault", "src") + node("b", "gauss5x5", "bad"), "b");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tp_fault failed on purpose"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("another rank failed"), std::string::npos) << "only the cause is printed:\n" << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, RankFailingAfterTheChainLeavesNoOutput) {
    TempDir t;
    // rank 0 finishes its whole run; the verdict after it stops the commit
    auto r = run_failing_rank(t, node("b", "gauss5x5", "src") + node("bad", "tp_fault", "b"), "bad");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tp_fault failed on purpose"), std::string::npos) << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, OperatorEndingItsRankStopsEveryRankAndWritesNothing) {
    TempDir t;
    // in-process exit() on rank 1 while rank 0 waits to gather: mpirun stops the others
    auto r = run_failing_rank(t, node("b", "gauss5x5", "src") + node("bad", "tp_fault", "b"), "bad", "exit");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("an operator called exit() on rank 1 on "), std::string::npos) << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, RankFailingInItsBandBeforeARelayedNodeStopsTheRanksBelowAndWritesNothing) {
    TempDir t;
    // rank 1 fails in its strip before floyd_steinberg: rank 2, waiting for its error row, gets
    // "failed" instead and stops; rank 0's row is received all the same
    auto r = run_failing_rank(t, node("bad", "tp_fault_rows", "src") + node("d", "floyd_steinberg", "bad"), "d");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("runs over 3 ranks"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tp_fault_rows failed on purpose"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("another rank failed"), std::string::npos) << "only the cause is printed:\n" << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, RankFailingInItsBandAfterARelayedNodeStopsEveryRankAndWritesNothing) {
    TempDir t;
    // rank 1 has passed its error row on to rank 2 when it fails
    auto r = run_failing_rank(t, node("d", "floyd_steinberg", "src") + node("bad", "tp_fault_rows", "d"), "bad");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("runs over 3 ranks"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tp_fault_rows failed on purpose"), std::string::npos) << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, OperatorEndingItsRankInARelayedChainStopsEveryRankAndWritesNothing) {
    TempDir t;
    // exit() on rank 1 while rank 2 waits for its error row: mpirun stops the others
    auto r =
        run_failing_rank(t, node("bad", "tp_fault_rows", "src") + node("d", "floyd_steinberg", "bad"), "d", "exit");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("an operator called exit() on rank 1 on "), std::string::npos) << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, RankFailingBeforeAHaloExchangeStopsItsNeighboursAndWritesNothing) {
    TempDir t;
    // rank 1 fails in its band before gauss: ranks 0 and 2, waiting for its rows of 'bad' (the
    // gauss's halo), get "failed" instead and stop
    auto r = run_failing_rank(
        t, node("g", "grayscale", "src") + node("bad", "tp_fault_rows", "g") + node("b", "gauss5x5", "bad"), "b");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("stencil halos exchanged"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tp_fault_rows failed on purpose"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("another rank failed"), std::string::npos) << "only the cause is printed:\n" << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, RankFailingWhileTheOthersRunASplitNodeEndsTheRunAndWritesNothing) {
    TempDir t;
    // ranks 0 and 2 enter chan_vese and wait in its first sum for rank 1, which failed before
    // it: rank 1 ends the run (MPI_Abort); no agreement could reach them there
    auto r = run_failing_rank(t,
                              node("g", "grayscale", "src") + node("bad", "tp_fault", "g") +
                                  node("seg", "chan_vese", "bad", "max_iter = 5\n"),
                              "seg");
    EXPECT_NE(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("rank 1 on "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tp_fault failed on purpose"), std::string::npos) << r.err;
    EXPECT_EQ(listing(files_below(t / "out")), "") << "no file, no temporary";
}

TEST(MpiImageFaults, InvalidPipelineIsReportedOnceWithTheExitCodeOfOneProcess) {
    TempDir t;
    write_ppm(t / "in.ppm", 77, 53, 9);
    write_text(t / "p.toml", "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") +
                                 "\"\n[nodes.b]\nop = \"gauss5x5\"\ninput = \"src\"\nsigma = -3\n"
                                 "[nodes.out]\nop = \"save\"\ninput = \"b\"\npath = \"" +
                                 (t / "x.npy") + "\"\n");
    auto one = run_pixflow("run " + q(t / "p.toml"));
    auto many = run_mpi("-np 4 " + pixflow_cmd() + " run " + q(t / "p.toml"));
    EXPECT_EQ(one.exit_code, 1) << one.err;
    EXPECT_EQ(many.exit_code, 1) << many.err;
    const std::string first = one.err.substr(0, one.err.find('\n'));
    ASSERT_NE(first.find("sigma"), std::string::npos) << one.err;
    std::size_t n = 0;
    for (std::size_t at = many.err.find(first); at != std::string::npos; at = many.err.find(first, at + 1)) ++n;
    EXPECT_EQ(n, 1u) << "printed once, as one process prints it:\n" << many.err;
    EXPECT_FALSE(fs::exists(t / "x.npy"));
}

TEST(MpiImageOneRank, RunsAsOneProcess) {
    TempDir t;
    write_ppm(t / "in.ppm", 77, 53, 11);
    write_text(t / "p.toml", "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" +
                                 node("b", "gauss5x5", "src") +
                                 "[nodes.out]\nop = \"save\"\ninput = \"b\"\npath = \"x\"\n");
    auto one = run_pixflow("run " + q(t / "p.toml") + " --backend cpu --set out.path=" + q(t / "one.npy"));
    auto mpi = run_mpi("-np 1 " + pixflow_cmd() + " run " + q(t / "p.toml") +
                       " --backend cpu --set out.path=" + q(t / "mpi.npy"));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    ASSERT_EQ(mpi.exit_code, 0) << mpi.err;
    EXPECT_EQ(mpi.err, one.err) << "no note of ranks: the plain run";
    EXPECT_TRUE(slurp(t / "one.npy") == slurp(t / "mpi.npy"));
}

// ---- CUDA chains over the ranks: each rank streams its band through its own GPU ----------------

namespace {

/// One process's run and an N-rank run of the same pipeline (`backend`), their files and stderr.
struct CudaSplitRun {
    CommandResult one, cpu, many;
    std::string one_bytes, cpu_bytes, many_bytes;
};

CudaSplitRun run_cuda_split(const TempDir& t, const std::string& nodes, const std::string& last, const std::string& ext,
                            int np) {
    write_ppm(t / "in.ppm", 97, 61, 23);
    write_text(t / "p.toml", "[nodes.src]\nop = \"load\"\npath = \"" + (t / "in.ppm") + "\"\n" + nodes +
                                 "[nodes.out]\nop = \"save\"\ninput = \"" + last + "\"\npath = \"x\"\n");
    CudaSplitRun r;
    const std::string one = t / ("one." + ext), cpu = t / ("cpu." + ext), many = t / ("many." + ext);
    r.one = run_pixflow("run " + q(t / "p.toml") + " --backend cuda --set out.path=" + q(one));
    r.cpu = run_pixflow("run " + q(t / "p.toml") + " --backend cpu --set out.path=" + q(cpu));
    r.many = run_mpi("-np " + std::to_string(np) + " " + pixflow_cmd() + " run " + q(t / "p.toml") +
                     " --backend cuda --set out.path=" + q(many));
    r.one_bytes = slurp(one), r.cpu_bytes = slurp(cpu), r.many_bytes = slurp(many);
    return r;
}

class MpiImageCuda : public ::testing::TestWithParam<int> {
  protected:
    void SetUp() override {
        std::string why;
        if (!pixflow::host::cuda_usable(&why))
            GTEST_SKIP() << "no usable CUDA device (" << why << "): the GPU split is not run";
    }
};

} // namespace

TEST_P(MpiImageCuda, AGpuChainSplitsOverTheRanksBitForBit) {
    const int np = GetParam();
    for (const std::string ext : {"npy", "ppm"}) { // written by every rank at its offset (MPI-IO)
        TempDir t;
        auto r = run_cuda_split(t,
                                node("b1", "gauss5x5", "src") + node("p", "maxpool2x2", "b1") +
                                    node("b2", "gauss5x5", "p", "sigma = 2.0\nborder = \"replicate\"\n"),
                                "b2", ext, np);
        ASSERT_EQ(r.one.exit_code, 0) << r.one.err;
        ASSERT_EQ(r.cpu.exit_code, 0) << r.cpu.err;
        ASSERT_EQ(r.many.exit_code, 0) << r.many.err;
        EXPECT_NE(r.many.err.find("runs over " + std::to_string(np) + " ranks"), std::string::npos)
            << "the CUDA chain was split:\n"
            << r.many.err;
        EXPECT_EQ(r.many.err.find("runs whole on every rank"), std::string::npos) << r.many.err;
        ASSERT_FALSE(r.one_bytes.empty());
        EXPECT_TRUE(r.many_bytes == r.one_bytes) << ext << ": the ranks' file differs from one process's";
        EXPECT_TRUE(r.many_bytes == r.cpu_bytes) << ext << ": differs from the CPU kernels' file";
    }
}

TEST_P(MpiImageCuda, ACarriedNodeOnTheGpuRunsWholeOnEveryRankWithTheSameBits) {
    const int np = GetParam();
    TempDir t;
    auto r = run_cuda_split(t, node("g", "grayscale", "src") + node("fs", "floyd_steinberg", "g"), "fs", "pgm", np);
    ASSERT_EQ(r.one.exit_code, 0) << r.one.err;
    ASSERT_EQ(r.many.exit_code, 0) << r.many.err;
    EXPECT_NE(r.many.err.find("runs whole on every rank (carried node 'fs' runs on CUDA)"), std::string::npos)
        << r.many.err;
    EXPECT_TRUE(r.many_bytes == r.one_bytes);
    EXPECT_TRUE(r.many_bytes == r.cpu_bytes);
}

INSTANTIATE_TEST_SUITE_P(Ranks, MpiImageCuda, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return "np" + std::to_string(i.param); });
