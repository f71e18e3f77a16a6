// An operator for tests of memory a node keeps between its calls (ABI 1.6, pf_host.persistent;
// tests/persistent_test.cpp). tp_persistent copies its input and counts its calls twice over, in
// the block's first 8 bytes and in the host word beside it; every other byte of the block holds
// the low byte of the count that the last call left, and each call checks that it finds them so
// (zero in a new block). Metrics: "data_calls" and "state_calls" (the counts after this call),
// "tail_ok" (1 when the rest of the block was as the last call left it). The call whose count
// reaches `fail_at` fails after updating the block and the word, as a half-done call would.
// With `ask_twice` the call asks again for the same bytes (metric "same": 1 when it is the same
// block) and then for other bytes ("other_refused": 1 when that is refused).
#include <pixflow/operator.hpp>

#include <cstdint>
#include <cstring>
#include <string>

using namespace pixflow;

struct TpPersistent {
    struct Params {
        int bytes = 64;
        int fail_at = 0;
        bool ask_twice = false;
    };
    static Schema schema() {
        return Schema("tp_persistent", "test op: copies its input and counts its calls in memory kept between them")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param(&Params::bytes, "bytes", range(8, 1 << 20), "bytes kept")
            .param(&Params::fail_at, "fail_at", range(0, 1 << 20), "the call (count) that fails; 0: none")
            .param(&Params::ask_twice, "ask_twice", "ask again for the block, and for other bytes");
    }
    static std::size_t cpu_scratch_bytes(const Params& p, const Shapes&, const Shapes&) { return std::size_t(p.bytes); }
    static void run_cpu(Context& ctx, const Params& p) {
        const ImageView in = ctx.input(), out = ctx.output();
        for (int y = 0; y < in.height; ++y)
            std::memcpy(out.row<std::uint8_t>(y), in.row<std::uint8_t>(y), in.row_samples());
        const std::size_t bytes = std::size_t(p.bytes);
        const PersistentBlock b = ctx.persistent(bytes);
        auto* data = static_cast<std::uint8_t*>(b.data);
        std::uint64_t count = 0;
        std::memcpy(&count, data, sizeof count);
        bool tail_ok = true;
        for (std::size_t i = 8; i < bytes; ++i) tail_ok &= data[i] == std::uint8_t(count);
        ++count;
        std::memcpy(data, &count, sizeof count);
        std::memset(data + 8, int(count & 0xFF), bytes - 8);
        ++*b.state;
        ctx.metric("data_calls", double(count));
        ctx.metric("state_calls", double(*b.state));
        ctx.metric("tail_ok", tail_ok ? 1.0 : 0.0);
        if (p.ask_twice) {
            const PersistentBlock again = ctx.persistent(bytes);
            ctx.metric("same", again.data == b.data && again.state == b.state ? 1.0 : 0.0);
            bool refused = false;
            try {
                (void)ctx.persistent(bytes + 8);
            } catch (const Error& e) {
                refused = e.status() == PF_ERR_RUNTIME && std::string(e.what()).find("refused") != std::string::npos;
            }
            ctx.metric("other_refused", refused ? 1.0 : 0.0);
        }
        if (p.fail_at > 0 && count == std::uint64_t(p.fail_at))
            throw Error("call " + std::to_string(count) + " failed on purpose", PF_ERR_INVALID);
    }
};

PIXFLOW_PLUGIN("persistent_ops", "0.0.1", TpPersistent)
