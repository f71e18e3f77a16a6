// Fake operators for planner and executor tests. tp_dual claims a CUDA implementation (a CPU
// function standing in for it), so plans can be checked on machines without a GPU.
#include <pixflow/operator.hpp>

#include <atomic>
#include <cstring>

using namespace pixflow;

namespace {
void copy_plus(Context& ctx, int add) {
    ImageView in = ctx.input(0), out = ctx.output(0);
    for (int y = 0; y < in.height; ++y)
        for (std::size_t x = 0; x < in.row_samples(); ++x)
            out.row<std::uint8_t>(y)[x] = std::uint8_t(in.row<std::uint8_t>(y)[x] + add);
}
} // namespace

struct TpSource {
    static Schema schema() {
        return Schema("tp_src", "test source: a u8 ramp")
            .flags(PF_OP_SOURCE)
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_int("width", 8, 1, 4096, "width")
            .param_int("height", 4, 1, 4096, "height")
            // Built on a temporary and copied out: its strings must survive the copy.
            .param_choice("mode", {"ramp", "flat"}, "ramp", "test choice")
            .param_string("label", "a label longer than the small-string buffer", "test string");
    }
    static void infer(const Params& p, const Shapes&, Shapes& out) {
        out[0].width = int(p.i("width"));
        out[0].height = int(p.i("height"));
        out[0].channels = 1;
        out[0].dtype = DType::u8;
    }
    static void run_cpu(Context& ctx) {
        ImageView o = ctx.output(0);
        for (int y = 0; y < o.height; ++y)
            for (int x = 0; x < o.width; ++x) o.at<std::uint8_t>(x, y) = std::uint8_t(x + y);
    }
};

struct TpDual {
    static Schema schema() {
        return Schema("tp_dual", "test op: adds 1; claims a CUDA implementation")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4));
    }
    static void run_cpu(Context& ctx) { copy_plus(ctx, 1); }
    static void run_cuda(Context&) { throw Error("tp_dual has no real CUDA implementation"); }
};

struct TpCpu {
    static Schema schema() {
        return Schema("tp_cpu", "test op: adds 2, CPU only")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4));
    }
    static void run_cpu(Context& ctx) { copy_plus(ctx, 2); }
};

struct TpFail {
    static Schema schema() {
        return Schema("tp_fail", "test op: always fails at run time")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4));
    }
    static void run_cpu(Context&) { throw Error("tp_fail failed on purpose"); }
};

struct TpTwo {
    static Schema schema() {
        return Schema("tp_two", "test op: a + b (two inputs), claims CUDA")
            .input("a", dtypes({DType::u8}), channels(1, 4))
            .input("b", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4));
    }
    static void run_cpu(Context& ctx) {
        ImageView a = ctx.input(0), b = ctx.input(1), o = ctx.output(0);
        for (int y = 0; y < o.height; ++y)
            for (std::size_t x = 0; x < o.row_samples(); ++x)
                o.row<std::uint8_t>(y)[x] = std::uint8_t(a.row<std::uint8_t>(y)[x] + b.row<std::uint8_t>(y)[x]);
    }
    static void run_cuda(Context&) { throw Error("no real CUDA implementation"); }
};

/// Numbers its calls across the process: a run that executes a node twice shows as a gap.
struct TpCount {
    static Schema schema() {
        return Schema("tp_count", "test op: copies its input and records a process-wide call number")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4));
    }
    static void run_cpu(Context& ctx) {
        static std::atomic<long> calls{0};
        copy_plus(ctx, 0);
        ctx.metric("call", double(++calls));
    }
};

PIXFLOW_PLUGIN("planner_ops", "0.0.1", TpSource, TpDual, TpCpu, TpFail, TpTwo, TpCount)
