// Strips (issue 16, docs/strips.md): every operator that declares an access pattern gives, run in
// horizontal strips, the very bytes of its whole-image run: for every dtype, strip heights that do
// not divide the image, strips smaller than a stencil's halo, 1-row images, chains of stencils,
// maxpool2x2's odd last row, integral's carried sums, floyd_steinberg's carried error row, and
// chains mixing CPU and CUDA nodes (CUDA cases skip without a GPU). The memory budget is kept
// (peak figures from the run report), and a whole-image operator that cannot fit is an error
// before anything runs. The reference is always the same pipeline compiled without strips.
#include "compile/compile.hpp"
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/descriptor_check.hpp"
#include "loader/registry.hpp"
#include "planner/plan.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

using namespace pixflow::host;

namespace {

const Registry& reg() {
    static Registry r;
    static bool loaded = (r.load_all({pixflow::testing::plugin_dir(), pixflow::testing::test_plugin("abi_older_minor"),
                                      pixflow::testing::test_plugin("strip_ops")}),
                          true);
    (void)loaded;
    return r;
}

struct Result {
    HostImage image;
    RunReport report;
    std::vector<StripChain> chains;
};

/// Compiles `text` with `co`, runs it, and returns node `tail`'s output.
Result run(const std::string& text, const CompileOptions& co, const std::string& tail) {
    Compiled c = compile(parse_pipeline_text(text, "strip.toml"), reg(), co);
    Executor ex(c.graph, c.plan);
    RunOptions o;
    o.keep = {c.graph.find(tail)};
    o.log = [](int, const std::string&) {};
    Result r;
    r.report = ex.run(o);
    r.image = ex.fetch(c.graph.find(tail));
    r.chains = c.plan.strips.chains;
    return r;
}

CompileOptions whole_image(const std::string& backend) {
    CompileOptions co;
    co.backend = backend;
    co.strips = false;
    return co;
}
CompileOptions in_strips(const std::string& backend, int rows) {
    CompileOptions co;
    co.backend = backend;
    co.strip_rows = rows;
    return co;
}

std::string synth(int w, int h, int channels, const std::string& dtype, const std::string& pattern = "noise") {
    return "[nodes.src]\nop = \"synth\"\npattern = \"" + pattern + "\"\nwidth = " + std::to_string(w) +
           "\nheight = " + std::to_string(h) + "\nchannels = " + std::to_string(channels) + "\ndtype = \"" + dtype +
           "\"\nseed = 7\n";
}
std::string node(const std::string& id, const std::string& op, const std::string& input,
                 const std::string& params = "") {
    return "[nodes." + id + "]\nop = \"" + op + "\"\ninput = \"" + input + "\"\n" + params;
}

/// Runs `text` whole and in strips of each height in `rows`; every run's output of `tail` must be
/// the whole run's, byte for byte, and node `tail` must have run in strips.
void expect_strips_match(const std::string& text, const std::string& tail, const std::vector<int>& rows,
                         const std::string& backend = "cpu") {
    SCOPED_TRACE(text);
    const Result whole = run(text, whole_image(backend), tail);
    ASSERT_TRUE(whole.chains.empty());
    for (int r : rows)
        for (bool pipelined : {false, true}) {
            // pipelined: every node a stage of its own, so the strips flow through the pipeline of
            // executor/strips.cpp (several strips in flight, each in its own set of buffers)
            SCOPED_TRACE("--strip-rows " + std::to_string(r) + (pipelined ? ", a stage per node" : ""));
            CompileOptions co = in_strips(backend, r);
            co.strip_stage_per_node = pipelined;
            const Result s = run(text, co, tail);
            ASSERT_FALSE(s.report.strips.empty()) << "nothing ran in strips";
            bool tail_streamed = false;
            for (const auto& n : s.report.nodes) tail_streamed |= n.id == tail && n.strips > 0;
            EXPECT_TRUE(tail_streamed) << "node '" << tail << "' did not run in strips";
            for (const StripChain& c : s.chains)
                if (pipelined && c.count() > 1 && c.nodes.size() > 1) {
                    EXPECT_EQ(c.n_stages, int(c.nodes.size()));
                    EXPECT_GE(c.sets, std::min(3, int(c.nodes.size()))); // 3 with nodes on both sides
                    EXPECT_LE(c.sets, 3);
                }
            ASSERT_EQ(s.image.bytes.size(), whole.image.bytes.size());
            EXPECT_TRUE(s.image.bytes == whole.image.bytes) << "the strips differ from the whole image";
        }
}

bool have_gpu() { return cuda_usable(); }

const std::vector<int> kRows = {1, 2, 3, 5, 8, 13, 64};
const std::vector<int> kHeights = {1, 2, 3, 7, 16, 37};

} // namespace

// ---- declarations -------------------------------------------------------------------------------

TEST(StripAccess, EveryBuiltInOperatorDeclaresHowItReadsRows) {
    auto kind = [](const char* op) {
        const OpInfo* info = reg().find(op);
        EXPECT_NE(info, nullptr) << op;
        return info ? info->access_kind() : pf_access_kind(-1);
    };
    EXPECT_EQ(kind("synth"), PF_ACCESS_POINTWISE);
    EXPECT_EQ(kind("convert"), PF_ACCESS_POINTWISE);
    EXPECT_EQ(kind("grayscale"), PF_ACCESS_POINTWISE);
    EXPECT_EQ(kind("gauss5x5"), PF_ACCESS_STENCIL);
    EXPECT_EQ(reg().find("gauss5x5")->access->halo, 2);
    EXPECT_EQ(kind("maxpool2x2"), PF_ACCESS_BLOCKS);
    EXPECT_EQ(reg().find("maxpool2x2")->access->in_rows, 2);
    EXPECT_EQ(reg().find("maxpool2x2")->access->out_rows, 1);
    for (const char* op : {"dct8x8", "quantize", "dequantize", "idct8x8", "jpeg_roundtrip8x8"}) {
        EXPECT_EQ(kind(op), PF_ACCESS_BLOCKS) << op;
        EXPECT_EQ(reg().find(op)->access->in_rows, 8) << op;
    }
    for (const char* op : {"integral", "floyd_steinberg", "save"}) {
        EXPECT_EQ(kind(op), PF_ACCESS_CARRIED) << op;
        EXPECT_NE(reg().find(op)->access->carry_bytes, nullptr) << op;
    }
    EXPECT_EQ(kind("load"), PF_ACCESS_POINTWISE); // by rows for .npy, PGM/PPM, PFM (tests/stream_test.cpp)
    for (const char* op : {"chan_vese", "compare"}) EXPECT_EQ(kind(op), PF_ACCESS_WHOLE) << op;
}

TEST(StripAccess, APluginOfAnOlderAbiIsWholeImageAndStillRuns) {
    const OpInfo* op = reg().find("tp_v10_invert");
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->access, nullptr);
    const std::string text = synth(9, 11, 1, "u8") + node("inv", "tp_v10_invert", "src");
    const Result whole = run(text, whole_image("cpu"), "inv");
    const Result s = run(text, in_strips("cpu", 4), "inv");
    ASSERT_EQ(s.chains.size(), 1u); // synth alone streams; the old operator reads its whole output
    EXPECT_EQ(s.chains[0].nodes.size(), 1u);
    EXPECT_TRUE(s.image.bytes == whole.image.bytes);
}

namespace {

// A plugin descriptor of the current ABI around operators of one input and one output that do
// nothing: what the validator tests change one part of.
int32_t noop_infer(const pf_value*, int32_t, const pf_image*, int32_t, pf_image*, int32_t, char*, size_t) {
    return PF_OK;
}
int32_t noop_run(const pf_run_args*) { return PF_OK; }
pf_op_desc noop_op(const char* name) {
    static const pf_port_desc in{sizeof(pf_port_desc), "in", "", PF_ALL_DTYPES, PF_ALL_CHANNELS};
    static const pf_port_desc out{sizeof(pf_port_desc), "out", "", PF_ALL_DTYPES, PF_ALL_CHANNELS};
    return {sizeof(pf_op_desc), name, "doc", 0, &in, 1, &out, 1, nullptr, 0, noop_infer, noop_run, nullptr};
}
pf_plugin_desc plugin_of(const std::vector<pf_op_desc>& ops) {
    pf_plugin_desc d{};
    d.struct_size = sizeof d;
    d.abi_major = PIXFLOW_ABI_MAJOR;
    d.abi_minor = PIXFLOW_ABI_MINOR;
    d.name = "p";
    d.version = "1";
    d.ops = ops.data();
    d.n_ops = int32_t(ops.size());
    return d;
}

} // namespace

TEST(StripAccess, TheValidatorRefusesBadAccessDeclarations) {
    auto carry = [](const pf_value*, int32_t, const pf_image*, int32_t, const pf_image*, int32_t) -> size_t {
        return 8;
    };
    const std::vector<pf_op_desc> ops{noop_op("op")};
    auto check = [&](pf_access_desc a) {
        pf_plugin_desc d = plugin_of(ops);
        d.access = &a;
        d.n_access = 1;
        return check_plugin_descriptor(&d);
    };
    const uint32_t sz = sizeof(pf_access_desc);
    EXPECT_EQ(check({sz, "op", PF_ACCESS_STENCIL, 2, 0, 0, nullptr}), "");
    EXPECT_EQ(check({sz, "op", PF_ACCESS_CARRIED, 0, 0, 0, carry}), "");
    EXPECT_NE(check({sz, "op", PF_ACCESS_STENCIL, 0, 0, 0, nullptr}).find("halo of 0 rows"), std::string::npos);
    EXPECT_NE(check({sz, "op", PF_ACCESS_BLOCKS, 0, 2, 0, nullptr}).find("blocks of 2 -> 0"), std::string::npos);
    EXPECT_NE(check({sz, "op", PF_ACCESS_CARRIED, 0, 0, 0, nullptr}).find("no carry_bytes"), std::string::npos);
    EXPECT_NE(check({sz, "op", PF_ACCESS_POINTWISE, 0, 0, 0, carry}).find("not carried"), std::string::npos);
    EXPECT_NE(check({sz, "nope", PF_ACCESS_POINTWISE, 0, 0, 0, nullptr}).find("does not declare"), std::string::npos);
    EXPECT_NE(check({sz, "op", 9, 0, 0, 0, nullptr}).find("unknown kind 9"), std::string::npos);
    EXPECT_NE(check({sz - 8, "op", PF_ACCESS_POINTWISE, 0, 0, 0, nullptr}).find("struct_size"), std::string::npos);
}

TEST(StripAccess, TheValidatorRefusesBadScratchEstimates) {
    auto bytes = [](const pf_value*, int32_t, const pf_image*, int32_t, const pf_image*, int32_t, int32_t, size_t* h,
                    size_t* d) { *h = *d = 0; };
    const std::vector<pf_op_desc> ops{noop_op("op")};
    auto check = [&](std::vector<pf_scratch_desc> sc, uint32_t minor = PIXFLOW_ABI_MINOR) {
        pf_plugin_desc d = plugin_of(ops);
        d.abi_minor = minor;
        d.scratch = sc.data();
        d.n_scratch = int32_t(sc.size());
        return check_plugin_descriptor(&d);
    };
    const uint32_t sz = sizeof(pf_scratch_desc);
    EXPECT_EQ(check({{sz, "op", bytes}}), "");
    EXPECT_EQ(check({}), "");
    EXPECT_NE(check({{sz, "nope", bytes}}).find("does not declare"), std::string::npos);
    EXPECT_NE(check({{sz, "op", nullptr}}).find("has no function"), std::string::npos);
    EXPECT_NE(check({{sz, "op", bytes}, {sz, "op", bytes}}).find("declared twice"), std::string::npos);
    EXPECT_NE(check({{sz - 8, "op", bytes}}).find("struct_size"), std::string::npos);
    // an ABI 1.4 plugin has no scratch estimates: whatever lies there is not read
    EXPECT_EQ(check({{sz, "nope", nullptr}}, 4), "");
}

TEST(StripAccess, AnAbi12PluginsAccessPatternsAreReadAtTheirOwnStride) {
    // pf_access_desc as ABI 1.2 declared it: no whole_reason, so its entries lie closer together
    // than this ABI's; the host must not index them with its own sizeof
    struct access_1_2 {
        uint32_t struct_size;
        const char* op;
        int32_t kind, halo, in_rows, out_rows;
        pf_carry_bytes_fn carry_bytes;
    };
    static_assert(sizeof(access_1_2) == offsetof(pf_access_desc, whole_reason));
    const std::vector<pf_op_desc> ops{noop_op("a"), noop_op("b"), noop_op("c")};
    const uint32_t sz = sizeof(access_1_2);
    const access_1_2 access[] = {{sz, "a", PF_ACCESS_POINTWISE, 0, 0, 0, nullptr},
                                 {sz, "b", PF_ACCESS_STENCIL, 2, 0, 0, nullptr},
                                 {sz, "c", PF_ACCESS_BLOCKS, 0, 2, 1, nullptr}};
    pf_plugin_desc d = plugin_of(ops);
    d.struct_size = offsetof(pf_plugin_desc, scratch); // the 1.2 layout ends after n_access
    d.abi_minor = 2;
    d.access = reinterpret_cast<const pf_access_desc*>(access);
    d.n_access = 3;
    EXPECT_EQ(check_plugin_descriptor(&d), "");
    EXPECT_EQ(std::string(access_entry(d, 1).op), "b");
    EXPECT_EQ(access_entry(d, 1).halo, 2);
    EXPECT_EQ(std::string(access_entry(d, 2).op), "c");
    EXPECT_EQ(access_entry(d, 2).out_rows, 1);
}

// ---- bit for bit, operator by operator -----------------------------------------------------------

TEST(Strips, SynthMakesAnyBandOfRowsAsInTheWholeImage) {
    for (const char* pattern : {"noise", "gradient", "checker", "shapes"})
        for (const char* dtype : {"u8", "u16", "f32", "f64"})
            expect_strips_match(synth(23, 37, 3, dtype, pattern), "src", {1, 5, 36});
}

TEST(Strips, PointwiseOperatorsMatchTheWholeImage) {
    for (int h : kHeights) {
        for (const char* dtype : {"u8", "u16", "i16", "i32", "u32", "u64", "f32", "f64"})
            expect_strips_match(synth(19, h, 2, dtype) +
                                    node("conv", "convert", "src", "dtype = \"f32\"\nscale = 0.37\noffset = -3.0\n"),
                                "conv", kRows);
        for (const char* dtype : {"u8", "u16", "f32"})
            expect_strips_match(synth(19, h, 3, dtype) + node("gray", "grayscale", "src"), "gray", kRows);
    }
}

TEST(Strips, Gauss5x5MatchesTheWholeImageForEveryBorderAndDtype) {
    for (int h : kHeights)
        for (const char* dtype : {"u8", "u16", "f32"})
            for (const char* border : {"reflect101", "replicate", "zero"})
                expect_strips_match(
                    synth(17, h, 3, dtype) +
                        node("blur", "gauss5x5", "src", "sigma = 1.7\nborder = \"" + std::string(border) + "\"\n"),
                    "blur", kRows);
}

TEST(Strips, StripsSmallerThanTheHaloOfAChainOfStencilsMatch) {
    // five stencils: 10 rows of halo, recomputed in every strip of 1 or 2 rows
    std::string text = synth(21, 41, 1, "u8") + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1") +
                       node("b3", "gauss5x5", "b2", "border = \"replicate\"\n") + node("b4", "gauss5x5", "b3") +
                       node("b5", "gauss5x5", "b4", "border = \"zero\"\n");
    expect_strips_match(text, "b5", {1, 2, 3, 9, 40});
}

TEST(Strips, Maxpool2x2KeepsItsOddLastRowRule) {
    for (int h : {2, 3, 5, 9, 33})
        for (const char* dtype : {"u8", "i16", "u32", "u64", "f32", "f64"})
            expect_strips_match(synth(11, h, 2, dtype) + node("pool", "maxpool2x2", "src"), "pool", {1, 2, 3, 4, 7});
}

TEST(Strips, StencilsAndPoolsInOneChainMatch) {
    std::string text = synth(31, 45, 3, "u8") + node("b1", "gauss5x5", "src") + node("p1", "maxpool2x2", "b1") +
                       node("b2", "gauss5x5", "p1") + node("p2", "maxpool2x2", "b2") + node("b3", "gauss5x5", "p2");
    expect_strips_match(text, "b3", {1, 2, 3, 5, 11});
}

TEST(Strips, IntegralCarriesItsColumnSumsAcrossStrips) {
    for (int h : kHeights) {
        for (const char* dtype : {"u8", "u16", "u32"})
            for (const char* out : {"auto", "u32", "u64", "f64"})
                expect_strips_match(synth(13, h, 3, dtype) +
                                        node("sum", "integral", "src", "dtype = \"" + std::string(out) + "\"\n"),
                                    "sum", kRows);
        expect_strips_match(synth(13, h, 1, "f32") + node("sum", "integral", "src"), "sum", kRows);
    }
}

TEST(Strips, FloydSteinbergCarriesItsErrorRowAcrossStrips) {
    // both CPU schedules (the wavefront: SSE2 on x86-64), 1 and 3 channels, strips of 1, 2 and 7
    // rows and heights they do not divide, more and fewer rows than a row group of 16, 1 row
    for (int h : {1, 2, 7, 16, 37})
        for (int channels : {1, 3})
            for (const char* schedule : {"wavefront", "sequential"})
                expect_strips_match(
                    synth(23, h, channels, "u8") +
                        node("dither", "floyd_steinberg", "src", "cpu_schedule = \"" + std::string(schedule) + "\"\n"),
                    "dither", {1, 2, 7, 16, 17});
    // after a stencil, and a stencil after it (its rows are read again, not recomputed)
    expect_strips_match(synth(45, 50, 1, "u8", "gradient") + node("blur", "gauss5x5", "src") +
                            node("dither", "floyd_steinberg", "blur") + node("blur2", "gauss5x5", "dither"),
                        "blur2", {1, 3, 7, 20});
}

TEST(Strips, RowsOfACarriedNodeThatAStencilReadsAgainAreKeptNotRecomputed) {
    // integral -> convert -> gauss5x5: the blur reads 2 rows of each strip's integral again
    std::string text = synth(15, 29, 1, "u8") + node("sum", "integral", "src", "dtype = \"f64\"\n") +
                       node("f", "convert", "sum", "dtype = \"f32\"\nscale = 0.001\n") + node("blur", "gauss5x5", "f") +
                       node("pool", "maxpool2x2", "blur");
    expect_strips_match(text, "pool", {1, 2, 3, 6, 14});
    // and a stencil before it: the integral sees each blurred row once, in order
    std::string before = synth(15, 29, 1, "u8") + node("blur", "gauss5x5", "src") + node("sum", "integral", "blur");
    expect_strips_match(before, "sum", {1, 2, 5});
}

TEST(Strips, TheJpegChainMatchesFusedAndUnfused) {
    for (int h : {1, 7, 8, 13, 16, 29})
        for (const char* dtype : {"u8", "f32"}) {
            std::string text = synth(19, h, 1, dtype) + node("dct", "dct8x8", "src") +
                               node("q", "quantize", "dct", "quality = 40\n") +
                               node("dq", "dequantize", "q", "quality = 40\n") +
                               node("idct", "idct8x8", "dq", std::string("dtype = \"") + dtype + "\"\n");
            expect_strips_match(text, "idct", {1, 8, 9, 17}); // fused into jpeg_roundtrip8x8
            CompileOptions unfused_whole = whole_image("cpu");
            unfused_whole.fuse = false;
            const Result whole = run(text, unfused_whole, "idct");
            for (int rows : {1, 5, 8, 24}) {
                CompileOptions co = in_strips("cpu", rows);
                co.fuse = false;
                const Result s = run(text, co, "idct");
                ASSERT_EQ(s.chains.size(), 1u);
                EXPECT_EQ(s.chains[0].nodes.size(), 5u); // synth and the four jpeg nodes
                EXPECT_TRUE(s.image.bytes == whole.image.bytes) << "h " << h << " " << dtype << " rows " << rows;
            }
            expect_strips_match(synth(19, h, 2, dtype) + node("dct", "dct8x8", "src"), "dct", {1, 8, 9});
        }
}

TEST(Strips, AChainBetweenWholeImagesReadsAndWritesThemInPlace) {
    // synth feeds two nodes, so its image is whole and the chain after it starts at the blur
    std::string text = synth(25, 31, 3, "u8") + node("blur", "gauss5x5", "src") + node("pool", "maxpool2x2", "blur") +
                       node("other", "convert", "src", "dtype = \"f32\"\n");
    expect_strips_match(text, "pool", {1, 4, 6});
    const Result s = run(text, in_strips("cpu", 4), "pool");
    // synth on its own (it makes its whole image), the chain after it, and the other reader
    ASSERT_EQ(s.report.strips.size(), 3u);
    EXPECT_EQ(s.report.strips[0].nodes, std::vector<std::string>{"src"});
    EXPECT_EQ(s.report.strips[1].nodes, (std::vector<std::string>{"blur", "pool"}));
    EXPECT_EQ(s.report.strips[2].nodes, std::vector<std::string>{"other"});
}

TEST(Strips, ASinkRunsInStripsInOrderWithItsState) {
    // the last node of the chain has no output: it gets each strip once, in order, at its row
    std::string text = synth(29, 45, 2, "u8") + node("blur", "gauss5x5", "src") + node("pool", "maxpool2x2", "blur") +
                       node("sum", "tp_row_sum", "pool");
    auto sum_of = [&](const CompileOptions& co) {
        Compiled c = compile(parse_pipeline_text(text, "sink.toml"), reg(), co);
        Executor ex(c.graph, c.plan);
        RunOptions o;
        o.log = [](int, const std::string&) {};
        RunReport r = ex.run(o);
        for (const auto& n : r.nodes)
            if (n.id == "sum") return std::make_pair(n.metrics.at("sum"), n.strips);
        return std::make_pair(-1.0, -1);
    };
    const auto whole = sum_of(whole_image("cpu"));
    EXPECT_GT(whole.first, 0.0);
    EXPECT_EQ(whole.second, 0);
    for (int rows : {1, 2, 3, 7, 22})
        for (bool pipelined : {false, true}) {
            CompileOptions co = in_strips("cpu", rows);
            co.strip_stage_per_node = pipelined;
            const auto s = sum_of(co);
            EXPECT_EQ(s.first, whole.first) << rows;
            EXPECT_EQ(s.second, (22 + rows - 1) / rows) << rows; // 22 rows of pool output
        }
}

TEST(StripPipeline, AStripThatFailsStopsThePipelineWithItsError) {
    // strip 3 of 12 fails in the middle stage while the stage before has moved on: the run ends
    // with that node's error, and no later strip reaches the sink
    std::string text = synth(16, 48, 1, "u8") + node("blur", "gauss5x5", "src") +
                       node("bad", "tp_strip_fault", "blur", "at_strip = 3\n") + node("sum", "tp_row_sum", "bad");
    for (bool pipelined : {false, true}) {
        CompileOptions co = in_strips("cpu", 4);
        co.strip_stage_per_node = pipelined;
        Compiled c = compile(parse_pipeline_text(text, "fault.toml"), reg(), co);
        ASSERT_EQ(c.plan.strips.chains.size(), 1u);
        EXPECT_EQ(c.plan.strips.chains[0].n_stages, pipelined ? 4 : 1);
        Executor ex(c.graph, c.plan);
        RunOptions o;
        o.log = [](int, const std::string&) {};
        try {
            ex.run(o);
            ADD_FAILURE() << "the run did not fail";
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find("strip 3 failed on purpose"), std::string::npos) << e.what();
        }
    }
}

TEST(StripPipeline, EachSetOfBuffersCountsAgainstTheBudget) {
    // the same chain with a stage per node holds three sets of strip buffers: three times the bytes
    std::string text = synth(64, 256, 1, "u8") + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1");
    CompileOptions one = in_strips("cpu", 16), three = one;
    three.strip_stage_per_node = true;
    Compiled a = compile(parse_pipeline_text(text, "sets.toml"), reg(), one);
    Compiled b = compile(parse_pipeline_text(text, "sets.toml"), reg(), three);
    ASSERT_EQ(a.plan.strips.chains.size(), 1u);
    ASSERT_EQ(b.plan.strips.chains.size(), 1u);
    EXPECT_EQ(a.plan.strips.chains[0].sets, 1);
    EXPECT_EQ(b.plan.strips.chains[0].sets, 3);
    EXPECT_EQ(b.plan.strips.chains[0].host_bytes, 3 * a.plan.strips.chains[0].host_bytes);
}

TEST(Strips, ASourceThatReadsInOrderStartsAChain) {
    std::string text = "[nodes.src]\nop = \"tp_ordered_src\"\nwidth = 23\nheight = 41\n" +
                       node("blur", "gauss5x5", "src") + node("pool", "maxpool2x2", "blur");
    expect_strips_match(text, "pool", {1, 2, 3, 8, 19});
}

TEST(Strips, OneRowImagesRunInOneStrip) {
    std::string text = synth(40, 1, 3, "u8") + node("blur", "gauss5x5", "src") + node("sum", "integral", "blur");
    const Result whole = run(text, whole_image("cpu"), "sum");
    const Result s = run(text, in_strips("cpu", 1), "sum");
    ASSERT_EQ(s.report.strips.size(), 1u);
    EXPECT_EQ(s.report.strips[0].count, 1);
    EXPECT_TRUE(s.image.bytes == whole.image.bytes);
}

// ---- the memory budget ----------------------------------------------------------------------------

TEST(StripBudget, ARunThatFitsIsNotStreamed) {
    std::string text = synth(64, 64, 3, "u8") + node("blur", "gauss5x5", "src");
    CompileOptions co;
    co.backend = "cpu";
    co.memory_limit = std::size_t(64) << 20;
    const Result r = run(text, co, "blur");
    EXPECT_TRUE(r.chains.empty());
    EXPECT_TRUE(r.report.strips.empty());
}

TEST(StripBudget, TheRunStaysUnderItsHostMemoryBudget) {
    // 512 x 1024 x 3 u8: 1.5 MiB an image; whole, the chain holds three at once (4.5 MiB)
    std::string text = synth(512, 1024, 3, "u8") + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1") +
                       node("pool", "maxpool2x2", "b2");
    const Result whole = run(text, whole_image("cpu"), "pool");
    EXPECT_GE(whole.report.peak_host_bytes, 3.0 * (1 << 20)); // two whole images at once
    for (std::size_t budget : {std::size_t(1) << 20, std::size_t(600) << 10}) {
        CompileOptions co;
        co.backend = "cpu";
        co.memory_limit = budget;
        const Result s = run(text, co, "pool");
        ASSERT_EQ(s.report.strips.size(), 1u) << budget;
        EXPECT_GT(s.report.strips[0].count, 1);
        EXPECT_LE(s.report.peak_host_bytes, double(budget)) << "strips of " << s.report.strips[0].rows << " rows";
        EXPECT_TRUE(s.image.bytes == whole.image.bytes);
    }
}

namespace {

/// The first diagnostic of compiling `text` with `co`, which must fail.
pixflow::Diagnostic compile_error(const std::string& text, const CompileOptions& co) {
    try {
        compile(parse_pipeline_text(text, "seg.toml"), reg(), co);
    } catch (const pixflow::UserError& e) {
        if (!e.diagnostics().empty()) return e.diagnostics()[0];
    }
    ADD_FAILURE() << "expected an error with a diagnostic";
    return {};
}

} // namespace

TEST(StripBudget, AWholeImageOperatorThatDoesNotFitIsAnErrorBeforeAnythingRuns) {
    pixflow::testing::TempDir dir;
    const std::string out = dir / "seg.pgm";
    std::string text = synth(256, 256, 1, "u8") + node("blur", "gauss5x5", "src") + node("seg", "chan_vese", "blur") +
                       "[nodes.save]\nop = \"save\"\ninput = \"seg\"\npath = \"" + out + "\"\n";
    CompileOptions co;
    co.backend = "cpu";
    co.memory_limit = 100 << 10; // chan_vese alone holds 256 KiB of phi
    const pixflow::Diagnostic d = compile_error(text, co);
    EXPECT_EQ(d.node, "seg");
    EXPECT_NE(d.message.find("chan_vese runs on whole images only"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("256x256 f32"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("budget is 100.0 KiB"), std::string::npos) << d.message;
    EXPECT_NE(d.loc.line, 0);
    EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(StripBudget, ADefaultBudgetStreamsButRefusesOnlyARunThatCannotFitAtAll) {
    std::string text = synth(256, 256, 1, "u8") + node("blur", "gauss5x5", "src") + node("seg", "chan_vese", "blur");
    Compiled c = compile(parse_pipeline_text(text, "seg.toml"), reg(), whole_image("cpu"));
    StripOptions so;
    so.host_budget = 100 << 10; // 3/4 of what there is, say: over it, the run goes on with a note
    so.host_limit = 4 << 20;
    so.host_from = "3/4 of the 4.0 MiB of host memory available";
    EXPECT_NO_THROW(plan_strips(c.graph, c.plan, so));
    bool noted = false;
    for (const auto& n : c.plan.notes) noted |= n.find("running anyway") != std::string::npos;
    EXPECT_TRUE(noted);
    so.host_limit = 200 << 10; // all there is: the run cannot fit
    EXPECT_THROW(plan_strips(c.graph, c.plan, so), pixflow::UserError);
}

// ---- operators' scratch memory (ABI 1.5) ----------------------------------------------------------

namespace {

/// What node `id`'s operator says one call takes (host, or device when `cuda`), for the whole
/// images, or with `in_rows` input and `out_rows` output rows (a strip).
std::size_t estimated_scratch(const Compiled& c, const std::string& id, bool cuda, int in_rows = -1,
                              int out_rows = -1) {
    return node_scratch(c.graph, c.graph.nodes[c.graph.find(id)], cuda, in_rows, out_rows)[cuda ? 1 : 0];
}

} // namespace

TEST(StripScratch, TheMemoryEstimateCountsAnOperatorsScratch) {
    // 256 x 256 gray u8: 64 KiB an image; tp_scratch takes 4 KiB a row, 1 MiB on the whole image
    const std::string with = synth(256, 256, 1, "u8") + node("copy", "tp_scratch", "src");
    const std::string without = synth(256, 256, 1, "u8") + node("copy", "tp_scratch", "src", "per_row = 0\n");
    CompileOptions co;
    co.backend = "cpu";
    co.memory_limit = 512 << 10;
    // without scratch the two images fit whole
    EXPECT_TRUE(compile(parse_pipeline_text(without, "s.toml"), reg(), co).plan.strips.chains.empty());
    Compiled c = compile(parse_pipeline_text(with, "s.toml"), reg(), co);
    EXPECT_GE(c.plan.strips.whole_host_peak, (std::size_t(1) << 20) + (std::size_t(128) << 10));
    ASSERT_EQ(c.plan.strips.chains.size(), 1u) << "1 MiB of scratch does not fit 512 KiB: the chain streams";
    const StripChain& ch = c.plan.strips.chains[0];
    EXPECT_GT(ch.count(), 2);
    EXPECT_EQ(ch.host_scratch, std::size_t(4096) * std::size_t(ch.rows)); // one set: a CPU chain
    EXPECT_LE(c.plan.strips.host_peak, std::size_t(512) << 10);
    // what the calls took, as the host counted it
    const Result r = run(with, co, "copy");
    const Result whole = run(without, whole_image("cpu"), "copy");
    for (const auto& n : r.report.nodes)
        if (n.id == "copy") {
            EXPECT_GT(n.strips, 2);
            EXPECT_EQ(n.scratch_bytes, 4096.0 * ch.rows);
        }
    EXPECT_LE(r.report.peak_host_bytes + 4096.0 * ch.rows, double(512 << 10));
    EXPECT_TRUE(r.image.bytes == whole.image.bytes);
    auto j = nlohmann::json::parse(r.report.to_json());
    EXPECT_EQ(j["nodes"][1]["scratch_bytes"].get<double>(), 4096.0 * ch.rows);
    EXPECT_FALSE(j["nodes"][0].contains("scratch_bytes")); // synth takes none
}

TEST(StripScratch, AWholeImageOperatorsScratchIsNamedWhenTheRunCannotFit) {
    std::string text = synth(256, 256, 1, "u8") + node("seg", "chan_vese", "src");
    CompileOptions co;
    co.backend = "cpu";
    co.memory_limit = 600 << 10; // the images (64 + 64 + 256 KiB) fit; 520 KiB of scratch more do not
    const pixflow::Diagnostic d = compile_error(text, co);
    EXPECT_EQ(d.node, "seg");
    EXPECT_NE(d.message.find("scratch 520.0 KiB"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("budget is 600.0 KiB"), std::string::npos) << d.message;
    co.memory_limit = 1 << 20; // images and scratch fit
    EXPECT_NO_THROW(compile(parse_pipeline_text(text, "seg.toml"), reg(), co));
}

namespace {

/// Runs `text` on `backend` whole and in strips of `rows`; every node of an operator that takes
/// scratch must have taken some, and at most what its operator estimated for the images (or the
/// strip) of its calls.
void expect_scratch_estimates_hold(const std::string& text, const std::string& id, const std::string& backend,
                                   int rows) {
    SCOPED_TRACE(text);
    const bool cuda = backend == "cuda";
    for (int r : {0, rows}) {
        SCOPED_TRACE(r ? "--strip-rows " + std::to_string(r) : std::string("whole images"));
        const CompileOptions co = r ? in_strips(backend, r) : whole_image(backend);
        Compiled c = compile(parse_pipeline_text(text, "s.toml"), reg(), co);
        // whole: one call on the whole images; in strips: the most over the strips' calls, and
        // what the plan counts for the chain (one set: these chains hold one carried node)
        std::size_t estimate = r ? 0 : estimated_scratch(c, id, cuda);
        const StripChain* chain = nullptr;
        for (const StripChain& ch : c.plan.strips.chains)
            for (std::size_t i = 0; i < ch.nodes.size(); ++i)
                if (c.graph.nodes[ch.nodes[i]].id == id) {
                    chain = &ch;
                    for (const auto& strip : ch.strips)
                        if (strip[i].out1 > strip[i].out0)
                            estimate = std::max(estimate, estimated_scratch(c, id, cuda, strip[i].in1 - strip[i].in0,
                                                                            strip[i].out1 - strip[i].out0));
                }
        if (r) {
            ASSERT_NE(chain, nullptr) << id << " did not run in strips";
            EXPECT_GE(cuda ? chain->device_scratch : chain->host_scratch, estimate);
        }
        Executor ex(c.graph, c.plan);
        RunOptions o;
        o.log = [](int, const std::string&) {};
        const RunReport rep = ex.run(o);
        bool found = false;
        for (const auto& n : rep.nodes)
            if (n.id == id) {
                found = true;
                EXPECT_GT(n.scratch_bytes, 0.0);
                EXPECT_LE(n.scratch_bytes, double(estimate));
            }
        EXPECT_TRUE(found);
    }
}

void expect_every_estimate_holds(const std::string& backend) {
    for (int ch : {1, 3}) {
        expect_scratch_estimates_hold(synth(301, 97, ch, "u8") + node("fs", "floyd_steinberg", "src"), "fs", backend,
                                      29);
        if (backend == "cpu")
            expect_scratch_estimates_hold(synth(301, 97, ch, "u8") +
                                              node("fs", "floyd_steinberg", "src", "cpu_schedule = \"sequential\"\n"),
                                          "fs", backend, 29);
        for (const char* dtype : {"u32", "u64"})
            expect_scratch_estimates_hold(
                synth(301, 97, ch, "u8") + node("sat", "integral", "src", "dtype = \"" + std::string(dtype) + "\"\n"),
                "sat", backend, 29);
    }
    // chan_vese is whole-image: the strips' run is its whole run again
    expect_scratch_estimates_hold(synth(64, 48, 1, "u8") + node("seg", "chan_vese", "src", "max_iter = 3\n"), "seg",
                                  backend, 0);
}

} // namespace

TEST(StripScratch, EveryBuiltInEstimateCoversWhatItsCpuCallsTake) { expect_every_estimate_holds("cpu"); }

TEST(StripScratch, EveryBuiltInEstimateCoversWhatItsCudaCallsTake) {
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    expect_every_estimate_holds("cuda");
}

TEST(StripBudget, TheCliTakesSizesAndRefusesNonsense) {
    EXPECT_EQ(parse_byte_size("512M", "--memory-limit"), std::size_t(512) << 20);
    EXPECT_EQ(parse_byte_size("1.5GiB", "--memory-limit"), std::size_t(3) << 29);
    EXPECT_EQ(parse_byte_size("4096", "--memory-limit"), 4096u);
    EXPECT_EQ(parse_byte_size("64kb", "--memory-limit"), 65536u);
    for (const char* bad : {"", "M", "-1G", "12Q", "1e3", "0"})
        EXPECT_THROW(parse_byte_size(bad, "--memory-limit"), pixflow::UserError) << bad;
}

// ---- what reports, traces, graphs and describe show --------------------------------------------

TEST(StripReport, TheReportCountsStripsAndSumsEachNodesTime) {
    std::string text = synth(33, 50, 1, "f32") + node("blur", "gauss5x5", "src") + node("pool", "maxpool2x2", "blur");
    const Result s = run(text, in_strips("cpu", 8), "pool");
    ASSERT_EQ(s.report.strips.size(), 1u);
    EXPECT_EQ(s.report.strips[0].nodes, (std::vector<std::string>{"src", "blur", "pool"}));
    EXPECT_EQ(s.report.strips[0].rows, 8);
    EXPECT_EQ(s.report.strips[0].count, 4); // 25 rows of output
    for (const auto& n : s.report.nodes) {
        EXPECT_EQ(n.strips, 4) << n.id;
        EXPECT_GE(n.ms, 0.0);
    }
    auto j = nlohmann::json::parse(s.report.to_json());
    EXPECT_EQ(j["strips"][0]["count"], 4);
    EXPECT_EQ(j["nodes"][1]["strips"], 4);
    EXPECT_GT(j["peak_host_bytes"].get<double>(), 0.0);
    EXPECT_NE(s.report.table().find("strips: src -> blur -> pool: 4 strips of 8 rows"), std::string::npos);
}

TEST(StripReport, TracesHaveASpanPerStrip) {
    std::string text = synth(16, 20, 1, "u8") + node("blur", "gauss5x5", "src");
    Compiled c = compile(parse_pipeline_text(text, "t.toml"), reg(), in_strips("cpu", 5));
    Executor ex(c.graph, c.plan);
    std::vector<std::string> ids;
    RunOptions o;
    o.on_span = [&](const Span& s) { ids.push_back(s.id); };
    ex.run(o);
    EXPECT_EQ(ids.size(), 8u); // two nodes, four strips
    EXPECT_NE(std::find(ids.begin(), ids.end(), "blur strip 4/4"), ids.end());
}

TEST(StripReport, GraphAndDescribeShowStrips) {
    pixflow::testing::TempDir dir;
    pixflow::testing::write_text(dir / "p.toml", synth(16, 20, 1, "u8") + node("blur", "gauss5x5", "src"));
    auto g = pixflow::testing::run_pixflow("graph " + (dir / "p.toml") + " --strip-rows 6");
    EXPECT_EQ(g.exit_code, 0) << g.err;
    EXPECT_NE(g.out.find("streamed: 4 strips of 6 rows"), std::string::npos) << g.out;
    auto d = pixflow::testing::run_pixflow("describe maxpool2x2 integral");
    EXPECT_NE(d.out.find("access:   blocks of 2 -> 1 row"), std::string::npos) << d.out;
    EXPECT_NE(d.out.find("access:   carried"), std::string::npos) << d.out;
    // integral declares its scratch, maxpool2x2 takes none
    const std::size_t scratch_line = d.out.find("scratch:  says what one call takes");
    EXPECT_NE(scratch_line, std::string::npos) << d.out;
    EXPECT_GT(scratch_line, d.out.find("integral:")) << d.out;
    // validate prints the estimate, whole images here: src (16 x 20 u8) and blur, 320 B each, on
    // the host (with a GPU, `auto` would put blur there)
    auto v = pixflow::testing::run_pixflow("validate " + (dir / "p.toml") + " --backend cpu");
    EXPECT_EQ(v.exit_code, 0) << v.err;
    EXPECT_NE(v.out.find("p.toml: estimated peak 640 B host, 0 B device"), std::string::npos) << v.out;
    auto bad = pixflow::testing::run_pixflow("run " + (dir / "p.toml") + " --memory-limit lots");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("\"lots\" is not a size"), std::string::npos) << bad.err;
}

// ---- CUDA, and chains mixing CPU and CUDA nodes ---------------------------------------------------

TEST(StripsCuda, EveryOperatorMatchesTheWholeImageOnTheGpu) {
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (int h : {1, 3, 16, 37}) {
        expect_strips_match(synth(19, h, 3, "u8") + node("blur", "gauss5x5", "src"), "blur", kRows, "cuda");
        expect_strips_match(synth(19, h, 3, "f32") + node("gray", "grayscale", "src") +
                                node("blur", "gauss5x5", "gray"),
                            "blur", kRows, "cuda");
        for (const char* out : {"u32", "u64", "f64"})
            expect_strips_match(synth(19, h, 2, "u8") +
                                    node("sum", "integral", "src", "dtype = \"" + std::string(out) + "\"\n"),
                                "sum", kRows, "cuda");
        if (h >= 2)
            expect_strips_match(synth(19, h, 1, "u16") + node("pool", "maxpool2x2", "src"), "pool", kRows, "cuda");
        for (int channels : {1, 3})
            expect_strips_match(synth(19, h, channels, "u8") + node("dither", "floyd_steinberg", "src"), "dither",
                                {1, 2, 7, 16}, "cuda");
        expect_strips_match(synth(19, h, 1, "u8") + node("dct", "dct8x8", "src") + node("q", "quantize", "dct") +
                                node("dq", "dequantize", "q") + node("idct", "idct8x8", "dq"),
                            "idct", {1, 8, 9}, "cuda");
    }
}

TEST(StripsCuda, FloydSteinbergCarriesItsErrorRowOnTheGpu) {
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    // bands of 32 rows per warp on the GPU: strips of 1, 2, 7 rows, around and across a band, a
    // height that is not a whole number of bands or strips, 1 and 3 channels (the byte path), a
    // width of whole 16-byte vectors (the vector path), and 1 row
    for (auto [w, h] : {std::pair{19, 1}, std::pair{64, 70}, std::pair{301, 97}})
        for (int channels : {1, 3})
            expect_strips_match(synth(w, h, channels, "u8") + node("dither", "floyd_steinberg", "src"), "dither",
                                {1, 2, 7, 31, 32, 33, 50}, "cuda");
    // the strips of the GPU give the CPU's whole image
    const std::string text = synth(301, 97, 3, "u8") + node("dither", "floyd_steinberg", "src");
    EXPECT_TRUE(run(text, in_strips("cuda", 7), "dither").image.bytes ==
                run(text, whole_image("cpu"), "dither").image.bytes);
}

TEST(StripsCuda, ChainsMixingCpuAndCudaNodesMatch) {
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    std::string text = synth(37, 45, 3, "u8") + node("blur", "gauss5x5", "src", "backend = \"cuda\"\n") +
                       node("pool", "maxpool2x2", "blur", "backend = \"cpu\"\n") +
                       node("blur2", "gauss5x5", "pool", "backend = \"cuda\"\n") +
                       node("sum", "integral", "blur2", "backend = \"cpu\"\n");
    expect_strips_match(text, "sum", {1, 2, 5, 8}, "auto");
}

TEST(StripsCuda, AGpuChainIsUploadedAndDownloadedOncePerStrip) {
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    std::string text = synth(64, 96, 1, "u8") + node("b1", "gauss5x5", "src") + node("b2", "gauss5x5", "b1") +
                       node("pool", "maxpool2x2", "b2");
    const Result s = run(text, in_strips("cuda", 16), "pool");
    ASSERT_EQ(s.report.strips.size(), 1u); // synth (CPU) and the CUDA nodes: one chain
    EXPECT_EQ(s.report.h2d_count, 3);      // 48 rows of output in strips of 16
    EXPECT_EQ(s.report.d2h_count, 0);      // the result stays on the device
}

// ---- one image over several GPUs (--devices 0,1 without --input) ---------------------------------

TEST(StripsMultiGpu, AChainSpreadOverTwoGpusGivesTheOneGpuBits) {
    const int n = cuda_usable() ? cuda_device_count() : 0;
    if (n < 2) GTEST_SKIP() << "needs two CUDA devices; this machine has " << n;
    // CUDA chains between host images: strip k on GPU k % 2, each GPU its own streams and buffers;
    // each chain ends on the host (a CPU node: the test fetches the last node's output, and one
    // kept on the device is written by GPU 0 alone)
    const std::string cpu_copy = "backend = \"cpu\"\ndtype = \"u8\"\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {synth(301, 517, 3, "u8") + node("b1", "gauss5x5", "src", "backend = \"cuda\"\n") +
             node("b2", "gauss5x5", "b1", "backend = \"cuda\"\n") +
             node("pool", "maxpool2x2", "b2", "backend = \"cuda\"\n") + node("c", "convert", "pool", cpu_copy),
         "c"},
        {synth(200, 301, 1, "u8") + node("dct", "dct8x8", "src", "backend = \"cuda\"\n") +
             node("q", "quantize", "dct", "backend = \"cuda\"\n") +
             node("dq", "dequantize", "q", "backend = \"cuda\"\n") +
             node("idct", "idct8x8", "dq", "backend = \"cuda\"\n") + node("c", "convert", "idct", cpu_copy),
         "c"},
        {synth(257, 190, 3, "u16") + node("gray", "grayscale", "src", "backend = \"cuda\"\n") +
             node("blur", "gauss5x5", "gray", "backend = \"cuda\"\n") +
             node("f", "convert", "blur", "backend = \"cpu\"\ndtype = \"f32\"\n"),
         "f"},
    };
    for (const auto& [text, tail] : cases) {
        SCOPED_TRACE(text);
        const Result whole = run(text, whole_image("cuda"), tail);
        for (int rows : {0, 7, 64}) { // 0: as the planner spreads it (a few strips per GPU)
            CompileOptions co = in_strips("auto", rows);
            co.strip_devices = {0, 1};
            const Result s = run(text, co, tail);
            bool spread = false;
            for (const StripChain& c : s.chains) spread |= c.gpus == std::vector<int>{0, 1} && c.count() >= 2;
            EXPECT_TRUE(spread) << "no chain was spread over GPUs 0 and 1 (rows " << rows << ")";
            ASSERT_EQ(s.image.bytes.size(), whole.image.bytes.size());
            EXPECT_TRUE(s.image.bytes == whole.image.bytes) << "rows " << rows;
        }
    }
    // a chain whose output stays on the device (kept for the caller): GPU 0 alone, the same bits
    const std::string kept = synth(64, 200, 1, "u8") + node("b1", "gauss5x5", "src", "backend = \"cuda\"\n");
    CompileOptions co = in_strips("auto", 16);
    co.strip_devices = {0, 1};
    EXPECT_TRUE(run(kept, co, "b1").image.bytes == run(kept, whole_image("cuda"), "b1").image.bytes);
}

TEST(Strips, AChainFeedingAnotherThroughAnUploadIsReadOnceAndFreedAfterBoth) {
    // synth (a chain of its own: it is read by two nodes) -> gauss5x5 on the GPU and a CPU pool:
    // the GPU chain takes synth's rows itself; synth's chain fills no upload buffer for it
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    std::string text = synth(64, 300, 3, "u8") + node("b", "gauss5x5", "src", "backend = \"cuda\"\n") +
                       node("c", "convert", "b", "backend = \"cpu\"\ndtype = \"u8\"\n") +
                       node("p", "maxpool2x2", "src", "backend = \"cpu\"\n");
    expect_strips_match(text, "c", {1, 16, 64}, "auto");
    expect_strips_match(text, "p", {1, 16, 64}, "auto");
    const Result s = run(text, in_strips("auto", 16), "c");
    EXPECT_EQ(s.report.h2d_bytes, 64.0 * 3 * (300 + 2 * 2 * (300 / 16))); // each strip and its halo rows, once
}
