// floyd_steinberg.cpp: the floyd_steinberg operator: its parameter, its schema and the thin
// adapters over kernels/.
#include "kernels/floyd_steinberg.hpp"

#include <pixflow/operator.hpp>

#include <tbb/task_arena.h>

namespace pixflow::floyd_steinberg {

struct FloydSteinberg {
    struct Params {
        Schedule cpu_schedule = Schedule::wavefront;
    };

    static Schema schema() {
        return Schema("floyd_steinberg",
                      "Floyd-Steinberg error diffusion to 0/255 per channel, bit-exact with Pillow's "
                      "Image.convert('1')")
            // carried by nature (its error row), but its kernels offer no carry-in/out entry yet
            .access(whole_image())
            .input("in", dtypes({DType::u8}), channels(1, 4), "each channel is halftoned on its own")
            .output("out", dtypes({DType::u8}), channels(1, 4), "same shape; every sample 0 or 255")
            .param(&Params::cpu_schedule, "cpu_schedule",
                   "CPU only, same result either way: wavefront runs channels and groups of rows in "
                   "parallel; sequential is the one-thread reference scan");
    }

    static void run_cpu(Context& ctx, const Params& p) {
        const ImageView in = ctx.input(), out = ctx.output();
        check_views(in, out, true);
        if (p.cpu_schedule == Schedule::sequential) {
            dither_sequential(in, out, ctx.alloc(sequential_scratch_bytes(in)));
            return;
        }
        const int workers = tbb::this_task_arena::max_concurrency();
        if (!dither_wavefront(in, out, workers, ctx.alloc(wavefront_scratch_bytes(in, workers)),
                              [&] { return ctx.cancelled(); }))
            throw Error("floyd_steinberg: cancelled", PF_ERR_CANCELLED);
    }

#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx, const Params&) {
        const ImageView in = ctx.input(), out = ctx.output();
        check_views(in, out, false);
        const std::size_t bytes = cuda_scratch_bytes(in);
        dither_cuda(in, out, bytes ? ctx.alloc(bytes) : nullptr, ctx.stream());
    }
#endif
};

} // namespace pixflow::floyd_steinberg

PIXFLOW_PLUGIN("floyd_steinberg", "1.0.0", pixflow::floyd_steinberg::FloydSteinberg)
