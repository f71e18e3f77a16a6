// integral.cpp: the integral operator: its parameter, its schema, the output dtype rule, and
// adapters from the context to the kernels in kernels/integral.hpp.
#include "kernels/integral.hpp"

#include <pixflow/operator.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace pixflow::integral {
namespace {

/// The `dtype` parameter: the output dtype, or the rule below.
enum class OutputDtype { automatic, u32, u64, f64 };
constexpr std::array<const char*, 4> pixflow_choices(OutputDtype) { return {"auto", "u32", "u64", "f64"}; }

/// Largest sample value of an integer dtype.
std::uint64_t dtype_max(DType d) {
    switch (d) {
    case DType::u8: return 0xFF;
    case DType::u16: return 0xFFFF;
    default: return 0xFFFFFFFF; // u32
    }
}

/// dtype = auto: u32 when every sum fits (width * height * largest value <= 2^32 - 1), else
/// u64 (which always fits: at most 2^32 pixels times 2^32 - 1); f64 for a float input.
DType auto_dtype(const ImageView& in) {
    if (dtype_is_float(in.dtype)) return DType::f64;
    const std::uint64_t pixels = std::uint64_t(in.width) * std::uint64_t(in.height);
    return pixels <= 0xFFFFFFFFull / dtype_max(in.dtype) ? DType::u32 : DType::u64;
}

} // namespace

struct Integral {
    struct Params {
        OutputDtype dtype = OutputDtype::automatic;
    };

    static Schema schema() {
        return Schema("integral", "inclusive integral image per channel, same size: out(x,y) = sum of in(i,j) over "
                                  "i <= x, j <= y. An explicit u32 output wraps modulo 2^32 on large images; box "
                                  "sums taken from it in u32 arithmetic stay exact while the true box sum is below "
                                  "2^32. f64: each row summed left to right, then each column top to bottom, the "
                                  "same additions on every backend")
            .access(carried())
            .input("in", dtypes({DType::u8, DType::u16, DType::u32, DType::f32}), channels(1, 4))
            .output("out", dtypes({DType::u32, DType::u64, DType::f64}), channels(1, 4),
                    "same size and channels, dtype as the parameter says")
            .param(&Params::dtype, "dtype",
                   "output dtype; auto: u32 when width * height * (largest value of the input dtype) "
                   "<= 4294967295, else u64; f64 for an f32 input");
    }

    static void infer(const Params& p, const Shapes& in, Shapes& out) {
        out[0] = in[0];
        switch (p.dtype) {
        case OutputDtype::automatic: out[0].dtype = auto_dtype(in[0]); break;
        case OutputDtype::f64: out[0].dtype = DType::f64; break;
        default:
            PIXFLOW_USER_CHECK(!dtype_is_float(in[0].dtype),
                               std::string("integral: dtype = \"") + pixflow_choices(p.dtype)[std::size_t(p.dtype)] +
                                   "\" needs an integer input, got " + dtype_name(in[0].dtype) +
                                   "; accepted for it: auto or f64");
            out[0].dtype = p.dtype == OutputDtype::u32 ? DType::u32 : DType::u64;
        }
    }

    /// Strips: the state between bands is the output row above the next band (see run_cpu).
    static std::size_t carry_bytes(const Params&, const Shapes&, const Shapes& out) {
        return out[0].row_samples() * dtype_size(out[0].dtype);
    }

    /// Scratch of one call (run by strips: a strip's shapes), for the planner's memory estimate.
    static std::size_t cpu_scratch_bytes(const Shapes& in, const Shapes& out) {
        return integral_cpu_scratch_bytes(in[0], out[0]);
    }
#ifdef PIXFLOW_WITH_CUDA
    static std::size_t cuda_scratch_bytes(const Shapes& in, const Shapes& out) {
        return integral_cuda_scratch_bytes(in[0], out[0]);
    }
#endif

    /// On a band of rows (ctx.strip()), the carried state is the whole image's output row just
    /// above the band: the kernels start from it (none for the band at the top) and leave the
    /// band's last row in it.
    static void run_cpu(Context& ctx, const Params&) {
        const ImageView in = ctx.input(), out = ctx.output();
        const Strip s = ctx.strip();
        const std::size_t bytes = integral_cpu_scratch_bytes(in, out);
        integral_cpu(in, out, bytes ? ctx.alloc(bytes) : nullptr, s.out_row0 > 0 ? s.carry : nullptr, s.carry);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params&) {
        const ImageView in = ctx.input(), out = ctx.output();
        const Strip s = ctx.strip();
        // The one-pass kernel's flags in memory the node keeps (ABI 1.6): cleared only when the
        // layout changes, not before every launch (the memset and its gap: 4-7 us of the 0.32 ms
        // of 8192^2 RGB).
        const std::size_t bytes = integral_cuda_scratch_bytes(in, out), kept = integral_cuda_kept_bytes(in, out);
        const PersistentBlock block = kept ? ctx.persistent(kept) : PersistentBlock{};
        integral_cuda(in, out, bytes > kept ? ctx.alloc(bytes - kept) : nullptr, ctx.stream(),
                      s.out_row0 > 0 ? s.carry : nullptr, s.carry, block.data, block.state);
    }
#endif
};

} // namespace pixflow::integral

PIXFLOW_PLUGIN("integral", "1.0.0", pixflow::integral::Integral)
