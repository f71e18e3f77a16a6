// The batch's memory budget (framework/batch/memory_budget.hpp, docs/guarantees.md "Limits"):
// the images in flight together stay under --memory-limit; an image larger than the budget runs
// in strips with the same output; one that cannot fit even so fails alone, naming the budget;
// isolated workers get --max-pixels and their share of the budget. CPU only, small images.
#include "batch/batch.hpp"
#include "batch/memory_budget.hpp"
#include "compile/compile.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <future>
#include <random>
#include <thread>

using namespace pixflow::host;
using pixflow::testing::q;
using pixflow::testing::slurp;
using pixflow::testing::write_ppm;
using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
using pixflow::testing::write_text;
namespace fs = std::filesystem;

namespace {

const Registry& registry() {
    static Registry reg;
    static bool loaded = (reg.load_all({pixflow::testing::plugin_dir()}), true);
    (void)loaded;
    return reg;
}

/// load -> gauss5x5 -> gauss5x5 -> save, CPU: the two blurs can run in strips.
std::string two_blurs(const TempDir& t) {
    std::string p = t / "blur2.toml";
    write_text(p, "[pipeline]\nbackend = \"cpu\"\n"
                  "[nodes.src]\nop = \"load\"\npath = \"in.ppm\"\n"
                  "[nodes.b1]\nop = \"gauss5x5\"\ninput = \"src\"\n"
                  "[nodes.b2]\nop = \"gauss5x5\"\ninput = \"b1\"\n"
                  "[nodes.out]\nop = \"save\"\ninput = \"b2\"\npath = \"out.ppm\"\n");
    return p;
}

/// load -> gauss5x5 -> gauss5x5 -> maxpool2x2 -> save, CPU: streaming the chain saves memory
/// (whole: two full images at once; in strips: the input, a quarter-size output and strips).
std::string blur_and_pool(const TempDir& t) {
    std::string p = t / "pool.toml";
    write_text(p, "[pipeline]\nbackend = \"cpu\"\n"
                  "[nodes.src]\nop = \"load\"\npath = \"in.ppm\"\n"
                  "[nodes.b1]\nop = \"gauss5x5\"\ninput = \"src\"\n"
                  "[nodes.b2]\nop = \"gauss5x5\"\ninput = \"b1\"\n"
                  "[nodes.pool]\nop = \"maxpool2x2\"\ninput = \"b2\"\n"
                  "[nodes.out]\nop = \"save\"\ninput = \"pool\"\npath = \"out.ppm\"\n");
    return p;
}

/// The planner's estimate of one run of `pipeline` on `image`: whole-image and as planned.
StripPlan estimate(const std::string& pipeline, const std::string& image, std::size_t budget = 0) {
    PipelineSpec spec = parse_pipeline_file(pipeline, {"src.path=\"" + image + "\""});
    CompileOptions co;
    co.memory_limit = budget;
    return compile(spec, registry(), co).plan.strips;
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

} // namespace

TEST(MemoryBudget, AReservationThatDoesNotFitWaitsUntilAnotherIsReleased) {
    batch::MemoryBudget budget({100, "test"}, {});
    auto a = budget.reserve(70, -1, 0);
    std::atomic<bool> released{false};
    auto b = std::async(std::launch::async, [&] {
        auto h = budget.reserve(50, -1, 0); // 70 + 50 > 100: waits for a
        return released.load();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // give b the chance to run too early
    released = true;
    a.release();
    EXPECT_TRUE(b.get()) << "the second reservation ran while the first held too much";
    EXPECT_EQ(budget.waited(), 1);
    EXPECT_EQ(budget.peak_host(), 70u);
}

TEST(MemoryBudget, AReservationLargerThanTheBudgetRunsWhenNothingElseHoldsMemory) {
    batch::MemoryBudget budget({100, "test"}, {1000, "test"});
    { auto h = budget.reserve(250, 0, 10); } // alone: never waits (compile planned it under the budget)
    auto x = budget.reserve(60, 0, 600);
    auto y = budget.reserve(30, 1, 900); // another device: its own budget
    EXPECT_EQ(budget.waited(), 0);
    EXPECT_EQ(budget.peak_host(), 250u);
    EXPECT_EQ(budget.peak_device(), 900u);
}

TEST(BatchMemory, ImagesInFlightTogetherStayUnderTheBudget) {
    TempDir t;
    std::string p = two_blurs(t);
    for (int k = 0; k < 10; ++k) write_ppm(t.path / ("in/i" + std::to_string(k) + ".ppm"), 64, 48, unsigned(k));
    const std::size_t one = estimate(p, t / "in/i0.ppm").host_peak;
    ASSERT_GT(one, 0u);
    // Room for one image in flight, not two: they must run one after the other.
    std::size_t budget = one + one / 2;
    auto r =
        run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out") +
                    " --max-in-flight 4 --memory-limit " + std::to_string(budget) + " --report " + q(t / "r.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = read_json(t.path / "r.json");
    EXPECT_EQ(j["ok"], 10);
    EXPECT_EQ(j["memory"]["host_budget_bytes"], budget);
    EXPECT_EQ(j["memory"]["host_budget_from"], "--memory-limit");
    EXPECT_EQ(j["memory"]["peak_host_reserved_bytes"], one) << "two images held memory at once";

    // Without the limit, the default is 3/4 of the memory available, said so in the report.
    auto d = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out2") + " --report " +
                         q(t / "d.json"));
    ASSERT_EQ(d.exit_code, 0) << d.err;
    nlohmann::json k = read_json(t.path / "d.json");
    EXPECT_NE(k["memory"]["host_budget_from"].get<std::string>().find("3/4 of the"), std::string::npos);
    EXPECT_GE(k["memory"]["peak_host_reserved_bytes"].get<std::size_t>(), one);
    for (int i = 0; i < 10; ++i) {
        std::string name = "i" + std::to_string(i) + ".ppm";
        EXPECT_EQ(slurp(t.path / "out" / name), slurp(t.path / "out2" / name)) << name;
    }
}

TEST(BatchMemory, AnImageLargerThanTheBudgetRunsInStripsWithTheSameOutput) {
    TempDir t;
    std::string p = blur_and_pool(t);
    write_ppm(t.path / "in/small.ppm", 40, 30, 1);
    write_ppm(t.path / "in/big.ppm", 200, 300, 2);
    StripPlan whole = estimate(p, t / "in/big.ppm");
    // 80% of the big image's whole-image peak: above its input and its quarter-size output, so
    // the blurs and the pool fit in strips.
    std::size_t budget = whole.whole_host_peak / 5 * 4;
    StripPlan streamed = estimate(p, t / "in/big.ppm", budget);
    ASSERT_FALSE(streamed.chains.empty()) << "the big image should need strips under " << budget;
    auto r = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out") + " --memory-limit " +
                         std::to_string(budget) + " --report " + q(t / "r.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LE(read_json(t.path / "r.json")["memory"]["peak_host_reserved_bytes"].get<std::size_t>(), budget);
    auto u = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "whole"));
    ASSERT_EQ(u.exit_code, 0) << u.err;
    for (const char* name : {"small.ppm", "big.ppm"}) {
        std::string a = slurp(t.path / "out" / name);
        EXPECT_FALSE(a.empty()) << name;
        EXPECT_EQ(a, slurp(t.path / "whole" / name)) << name;
    }
}

TEST(BatchMemory, AnImageThatCannotFitEvenInStripsFailsAloneNamingTheBudget) {
    TempDir t;
    std::string p = two_blurs(t);
    write_ppm(t.path / "in/a.ppm", 20, 10, 1);
    write_ppm(t.path / "in/b.ppm", 400, 400, 2); // its load and save images alone exceed the budget
    write_ppm(t.path / "in/c.ppm", 24, 12, 3);
    std::size_t budget = estimate(p, t / "in/c.ppm").host_peak * 2;
    ASSERT_LT(budget, std::size_t(400) * 400 * 3);
    auto r = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out") + " --memory-limit " +
                         std::to_string(budget));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("b.ppm"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--memory-limit"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::exists(t.path / "out/a.ppm"));
    EXPECT_TRUE(fs::exists(t.path / "out/c.ppm"));
    EXPECT_FALSE(fs::exists(t.path / "out/b.ppm"));
}

TEST(BatchMemory, IsolatedWorkersApplyMaxPixelsAndTheirShareOfTheBudget) {
    TempDir t;
    std::string p = two_blurs(t);
    write_ppm(t.path / "in/a.ppm", 8, 6, 1);   // 48 pixels: checked first, within the limit
    write_ppm(t.path / "in/b.ppm", 40, 30, 2); // 1200 pixels: over --max-pixels
    auto r = run_pixflow("run " + q(p) + " --input " + q(t / "in") + " --output " + q(t / "out") +
                         " --isolate --max-pixels 100 --memory-limit 64M --report " + q(t / "r.json"));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("b.ppm"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--max-pixels"), std::string::npos) << "the worker ignored --max-pixels: " << r.err;
    EXPECT_TRUE(fs::exists(t.path / "out/a.ppm"));
    EXPECT_FALSE(fs::exists(t.path / "out/b.ppm"));

    // Each of the 2 workers gets half the budget, too little for a whole-image operator's images
    // (chan_vese: its input, mask and level set whole): the images fail in their workers, naming
    // the share (the parent's check had the whole budget).
    std::string seg = t / "seg.toml";
    write_text(seg, "[pipeline]\nbackend = \"cpu\"\n"
                    "[nodes.src]\nop = \"load\"\npath = \"in.ppm\"\n"
                    "[nodes.gray]\nop = \"grayscale\"\ninput = \"src\"\n"
                    "[nodes.seg]\nop = \"chan_vese\"\ninput = \"gray\"\nmax_iter = 2\n"
                    "[nodes.out]\nop = \"save\"\ninput = \"seg\"\npath = \"out.pgm\"\n");
    write_ppm(t.path / "in2/c.ppm", 300, 300, 3);
    write_ppm(t.path / "in2/d.ppm", 300, 300, 4);
    std::size_t one = estimate(seg, t / "in2/c.ppm").host_peak;
    auto s = run_pixflow("run " + q(seg) + " --input " + q(t / "in2") + " --output " + q(t / "out2") +
                         " --isolate --max-in-flight 2 --memory-limit " + std::to_string(one));
    EXPECT_EQ(s.exit_code, 2) << s.out << s.err;
    EXPECT_NE(s.err.find("1/2 of the batch's host memory budget"), std::string::npos) << s.err;
}
