// Operators for strip tests (tests/strip_test.cpp) that the built-in ones do not cover: a sink
// that runs in strips (the last node of a chain with no output, as a streaming writer is) and
// carries a state across them, and a source that makes its rows in order only (as a streaming
// reader of a compressed file does). tp_row_sum adds up every sample weighted by its row in the whole
// image, so a strip handed at the wrong row, twice, out of order or not at all changes the sum;
// the sum goes to the report when the last strip is done. tp_strip_fault fails in one strip.
// tp_scratch copies through scratch memory it declares (ABI 1.5), for the memory estimate's tests.
#include <pixflow/operator.hpp>

#include <cstdint>
#include <cstring>

using namespace pixflow;

struct TpRowSum {
    static Schema schema() {
        return Schema("tp_row_sum", "test sink: sum of (row + 1) * sample over the image, as metric 'sum'")
            .flags(PF_OP_SINK)
            .access(carried())
            .input("in", dtypes({DType::u8}), channels(1, 4));
    }
    static std::size_t carry_bytes(const Shapes&, const Shapes&) { return 2 * sizeof(std::uint64_t); }
    static void run_cpu(Context& ctx) {
        const ImageView in = ctx.input();
        const Strip s = ctx.strip();
        std::uint64_t state[2] = {0, 0}; // the sum, and the next row expected
        if (s.carry) std::memcpy(state, s.carry, sizeof state);
        if (std::uint64_t(s.in_row0) != state[1])
            throw InternalError("tp_row_sum: strip " + std::to_string(s.index) + " starts at row " +
                                std::to_string(s.in_row0) + ", expected " + std::to_string(state[1]));
        for (int y = 0; y < in.height; ++y)
            for (std::size_t i = 0; i < in.row_samples(); ++i)
                state[0] += std::uint64_t(s.in_row0 + y + 1) * in.row<std::uint8_t>(y)[i];
        state[1] = std::uint64_t(s.in_row0 + in.height);
        if (s.carry) std::memcpy(s.carry, state, sizeof state);
        if (state[1] == std::uint64_t(s.in_height)) ctx.metric("sum", double(state[0]));
    }
};

/// A source that makes its rows in order only, as a file read from the start: sample (x, y, c) is
/// (7x + 3y + c) mod 251; a strip that does not continue where the last one ended is an error.
struct TpOrderedSource {
    struct Params {
        int width = 16;
        int height = 16;
    };
    static Schema schema() {
        return Schema("tp_ordered_src", "test source: rows in order, (7x + 3y + c) mod 251, 2 channels")
            .flags(PF_OP_SOURCE)
            .access(carried())
            .output("out", dtypes({DType::u8}), channels(2, 2))
            .param(&Params::width, "width", range(1, 4096), "width")
            .param(&Params::height, "height", range(1, 4096), "height");
    }
    static void infer(const Params& p, const Shapes&, Shapes& out) {
        out[0].width = p.width;
        out[0].height = p.height;
        out[0].channels = 2;
        out[0].dtype = DType::u8;
    }
    static std::size_t carry_bytes(const Params&, const Shapes&, const Shapes&) { return sizeof(std::int64_t); }
    static void run_cpu(Context& ctx, const Params&) {
        const ImageView out = ctx.output();
        const Strip s = ctx.strip();
        std::int64_t next = 0;
        if (s.carry) std::memcpy(&next, s.carry, sizeof next);
        if (s.out_row0 != next)
            throw InternalError("tp_ordered_src: asked for row " + std::to_string(s.out_row0) + ", the next is " +
                                std::to_string(next));
        for (int y = 0; y < out.height; ++y)
            for (int x = 0; x < out.width; ++x)
                for (int c = 0; c < 2; ++c)
                    out.row<std::uint8_t>(y)[2 * x + c] = std::uint8_t((7 * x + 3 * (s.out_row0 + y) + c) % 251);
        next = s.out_row0 + out.height;
        if (s.carry) std::memcpy(s.carry, &next, sizeof next);
    }
};

/// A pointwise copy that fails in one strip (tests of a failure in the middle of a pipeline).
struct TpStripFault {
    struct Params {
        int at_strip = 0;
    };
    static Schema schema() {
        return Schema("tp_strip_fault", "test op: copies its input; strip `at_strip` fails")
            .access(pointwise())
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param(&Params::at_strip, "at_strip", range(0, 1 << 20), "the strip that fails");
    }
    static void run_cpu(Context& ctx, const Params& p) {
        const ImageView in = ctx.input(), out = ctx.output();
        if (ctx.strip().index == p.at_strip) throw Error("strip " + std::to_string(p.at_strip) + " failed on purpose");
        for (int y = 0; y < in.height; ++y)
            std::memcpy(out.row<std::uint8_t>(y), in.row<std::uint8_t>(y), in.row_samples());
    }
};

/// A pointwise copy through scratch memory of `per_row` bytes per row of its call (ABI 1.5: the
/// planner counts it; tests of the memory estimate). Each row goes out through the scratch.
struct TpScratch {
    struct Params {
        int per_row = 4096;
    };
    static Schema schema() {
        return Schema("tp_scratch", "test op: copies its input through per_row bytes of scratch per row")
            .access(pointwise())
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param(&Params::per_row, "per_row", range(0, 1 << 20), "scratch bytes per row of a call");
    }
    static std::size_t cpu_scratch_bytes(const Params& p, const Shapes& in, const Shapes&) {
        return std::size_t(p.per_row) * std::size_t(in[0].height);
    }
    static void run_cpu(Context& ctx, const Params& p) {
        const ImageView in = ctx.input(), out = ctx.output();
        const std::size_t per_row = std::size_t(p.per_row), n = in.row_samples();
        auto* scratch = per_row ? static_cast<std::uint8_t*>(ctx.alloc(per_row * std::size_t(in.height))) : nullptr;
        for (int y = 0; y < in.height; ++y) {
            std::uint8_t* row = scratch ? scratch + std::size_t(y) * per_row : nullptr;
            if (row && n <= per_row) {
                std::memcpy(row, in.row<std::uint8_t>(y), n);
                std::memcpy(out.row<std::uint8_t>(y), row, n);
            } else {
                std::memcpy(out.row<std::uint8_t>(y), in.row<std::uint8_t>(y), n);
            }
        }
    }
};

PIXFLOW_PLUGIN("strip_ops", "0.0.1", TpRowSum, TpOrderedSource, TpStripFault, TpScratch)
