// compare.cpp: the compare operator: schema, shape check and the adapter to kernels/compare.hpp.
// A sink: it produces no image, only metrics in the run report. No parameters.
#include "kernels/compare.hpp"

#include <pixflow/operator.hpp>

namespace pixflow::compare {

struct Compare {
    static Schema schema() {
        constexpr std::uint32_t kDtypes = dtypes({DType::u8, DType::u16, DType::f32, DType::f64});
        return Schema("compare",
                      "how far b is from a: metrics psnr (dB; peak 255 for u8, 65535 for u16, 1.0 "
                      "for floats; inf when equal, null in JSON), max_abs_diff, mean_abs_diff")
            .flags(PF_OP_SINK)
            .access(whole_image()) // its metrics are over the whole image
            .input("a", kDtypes, channels(1, 4), "reference image")
            .input("b", kDtypes, channels(1, 4), "image to compare; same size, channels and dtype as a");
    }

    static void infer(const Shapes& in, Shapes&) { check_same_shape(in[0], in[1]); }

    // Metrics: psnr in dB, with the peak 255 for u8, 65535 for u16 and 1.0 for f32/f64 (float
    // images are taken to lie in [0, 1]); +inf for identical images, which `pixflow run` prints
    // as "inf" and the JSON report, having no infinity, writes as null (max_abs_diff = 0 then
    // says the images are equal). A NaN sample makes all three NaN (null in JSON).
    static void run_cpu(Context& ctx) {
        const Stats s = compare_cpu(ctx.input(0), ctx.input(1));
        ctx.metric("psnr", s.psnr);
        ctx.metric("max_abs_diff", s.max_abs_diff);
        ctx.metric("mean_abs_diff", s.mean_abs_diff);
    }
};

} // namespace pixflow::compare

PIXFLOW_PLUGIN("compare", "1.0.0", pixflow::compare::Compare)
