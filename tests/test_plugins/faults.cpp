// A test operator that misbehaves at run time on purpose, to check that pixflow contains it
// (tests/isolation_test.cpp, tests/atomic_outputs_test.cpp): tp_fault copies its input, and
// with `fault` set crashes, aborts, calls exit(0), overflows its stack, hangs or throws. With
// `on_width` it does so only for images of that width, so one image of a batch can be the bad one.
// tp_fault_rows does the same row by row (pointwise): it runs in a chain's strips, so it can fail
// in the middle of a chain (tests/mpi/mpi_image_test.cpp: one rank failing in its band).
#include <pixflow/operator.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

using namespace pixflow;

namespace {

// Deep enough to overflow any thread's stack; the work after the call keeps it from being a loop.
[[gnu::noinline]] int recurse(volatile char* prev, int depth) {
    volatile char frame[4096];
    frame[0] = char(depth);
    frame[1] = prev ? prev[0] : 0;
    if (depth < 0) return 0;
    return recurse(frame, depth + 1) + frame[1];
}

volatile std::uintptr_t bad_address = 8;

} // namespace

struct TpFault {
    static Schema schema() {
        return Schema("tp_fault", "test op: copies its input, or fails as `fault` says")
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_choice("fault", {"none", "segv", "abort", "exit", "stack_overflow", "hang", "throw"}, "none",
                          "how to fail")
            .param_int("on_width", 0, 0, 1 << 20, "fail only for images of this width (0: every image)");
    }
    static void run_cpu(Context& ctx) {
        ImageView in = ctx.input(0), out = ctx.output(0);
        std::string fault(ctx.params().s("fault"));
        std::int64_t on_width = ctx.params().i("on_width");
        if (fault != "none" && (on_width == 0 || on_width == in.width)) {
            if (fault == "segv") *reinterpret_cast<volatile int*>(bad_address) = 1;
            if (fault == "abort") std::abort();
            if (fault == "exit") std::exit(0);
            if (fault == "stack_overflow") recurse(nullptr, 0);
            if (fault == "hang")
                for (;;) std::this_thread::sleep_for(std::chrono::seconds(1)); // deaf to cancellation too
            if (fault == "throw") throw Error("tp_fault failed on purpose");
        }
        for (int y = 0; y < in.height; ++y)
            for (std::size_t x = 0; x < in.row_samples(); ++x) out.row<std::uint8_t>(y)[x] = in.row<std::uint8_t>(y)[x];
    }
};

struct TpFaultRows {
    static Schema schema() {
        return Schema("tp_fault_rows", "test op: copies its input rows, or throws or calls exit(0) in its strip")
            .access(pointwise())
            .input("in", dtypes({DType::u8}), channels(1, 4))
            .output("out", dtypes({DType::u8}), channels(1, 4))
            .param_choice("fault", {"none", "exit", "throw"}, "none", "how to fail");
    }
    static void run_cpu(Context& ctx) {
        ImageView in = ctx.input(0), out = ctx.output(0);
        std::string fault(ctx.params().s("fault"));
        if (fault == "exit") std::exit(0);
        if (fault == "throw") throw Error("tp_fault_rows failed on purpose");
        for (int y = 0; y < in.height; ++y)
            for (std::size_t x = 0; x < in.row_samples(); ++x) out.row<std::uint8_t>(y)[x] = in.row<std::uint8_t>(y)[x];
    }
};

PIXFLOW_PLUGIN("faults", "0.0.1", TpFault, TpFaultRows)
