// floyd_steinberg.cpp: the floyd_steinberg operator: its parameter, its schema and the thin
// adapters over kernels/.
#include "kernels/floyd_steinberg.hpp"

#include <pixflow/operator.hpp>

#include <tbb/task_arena.h>

#include <cstdint>

namespace pixflow::floyd_steinberg {

struct FloydSteinberg {
    struct Params {
        Schedule cpu_schedule = Schedule::wavefront;
    };

    static Schema schema() {
        return Schema("floyd_steinberg",
                      "Floyd-Steinberg error diffusion to 0/255 per channel, bit-exact with Pillow's "
                      "Image.convert('1')")
            // strips: each row once, in order, from the error row the strip above left
            .access(carried())
            .input("in", dtypes({DType::u8}), channels(1, 4), "each channel is halftoned on its own")
            .output("out", dtypes({DType::u8}), channels(1, 4), "same shape; every sample 0 or 255")
            .param(&Params::cpu_schedule, "cpu_schedule",
                   "CPU only, same result either way: wavefront runs channels and groups of rows in "
                   "parallel; sequential is the one-thread reference scan");
    }

    /// Strips: the state between bands is the errors that the band's last row diffuses into the
    /// next one (int16 per sample, channel by channel: kernels/floyd_steinberg.hpp).
    static std::size_t carry_bytes(const Params&, const Shapes&, const Shapes& out) {
        return floyd_steinberg::carry_bytes(out[0].width, out[0].channels);
    }

    /// Scratch of one call (run by strips: a strip's shapes), for the planner's memory estimate;
    /// the wavefront's grows with the threads of the arena it runs in. CUDA: planes for several
    /// channels; a caller's device image of unaligned rows (embedding) takes a plane more than
    /// its shape, which counts as aligned, says.
    static std::size_t cpu_scratch_bytes(const Params& p, const Shapes& in, const Shapes&) {
        return p.cpu_schedule == Schedule::sequential
                   ? sequential_scratch_bytes(in[0])
                   : wavefront_scratch_bytes(in[0], tbb::this_task_arena::max_concurrency());
    }
#ifdef PIXFLOW_WITH_CUDA
    static std::size_t cuda_scratch_bytes(const Params&, const Shapes& in, const Shapes& out) {
        return floyd_steinberg::cuda_scratch_bytes(in[0], out[0]);
    }
#endif

    /// On a band of rows (ctx.strip()), the kernels start from the carried errors of the row above
    /// the band (none for the band at the top) and leave the band's last row's in it.
    static void run_cpu(Context& ctx, const Params& p) {
        const ImageView in = ctx.input(), out = ctx.output();
        check_views(in, out, true);
        const Strip s = ctx.strip();
        const auto* above = s.out_row0 > 0 ? s.carry_as<const std::int16_t>() : nullptr;
        auto* last = s.carry_as<std::int16_t>();
        if (p.cpu_schedule == Schedule::sequential) {
            dither_sequential(in, out, ctx.alloc(sequential_scratch_bytes(in)), above, last);
            return;
        }
        const int workers = tbb::this_task_arena::max_concurrency();
        if (!dither_wavefront(
                in, out, workers, ctx.alloc(wavefront_scratch_bytes(in, workers)), [&] { return ctx.cancelled(); },
                above, last))
            throw Error("floyd_steinberg: cancelled", PF_ERR_CANCELLED);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params&) {
        const ImageView in = ctx.input(), out = ctx.output();
        check_views(in, out, false);
        const Strip s = ctx.strip();
        const std::size_t bytes = floyd_steinberg::cuda_scratch_bytes(in, out);
        dither_cuda(in, out, bytes ? ctx.alloc(bytes) : nullptr, ctx.stream(),
                    s.out_row0 > 0 ? s.carry_as<const std::int16_t>() : nullptr, s.carry_as<std::int16_t>());
    }
#endif
};

} // namespace pixflow::floyd_steinberg

PIXFLOW_PLUGIN("floyd_steinberg", "1.0.0", pixflow::floyd_steinberg::FloydSteinberg)
