// Operators for strip tests (tests/strip_test.cpp) that the built-in ones do not cover: a sink
// that runs in strips (the last node of a chain with no output, as a streaming writer is) and
// carries a state across them. tp_row_sum adds up every sample weighted by its row in the whole
// image, so a strip handed at the wrong row, twice, out of order or not at all changes the sum;
// the sum goes to the report when the last strip is done.
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

PIXFLOW_PLUGIN("strip_ops", "0.0.1", TpRowSum)
