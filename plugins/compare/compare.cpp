// compare.cpp: the compare operator: schema, shape checks and the adapter to kernels/compare.hpp.
// A sink: it produces no image, only metrics in the run report.
#include "kernels/compare.hpp"

#include <pixflow/operator.hpp>

#include <string>

namespace {

using namespace pixflow;

constexpr std::uint32_t kDtypes = dtypes({DType::u8, DType::u16, DType::f32, DType::f64});

std::string shape(const ImageView& v) {
    return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" +
           std::to_string(v.channels) + " " + dtype_name(v.dtype);
}

struct Compare {
    static Schema schema() {
        Schema s("compare",
                 "how far b is from a: metrics psnr (dB; peak 255 for u8, 65535 for u16, 1.0 "
                 "for floats; inf when equal, null in JSON), max_abs_diff, mean_abs_diff");
        s.flags(PF_OP_SINK)
            .input("a", kDtypes, channels(1, 4), "reference image")
            .input("b", kDtypes, channels(1, 4),
                   "image to compare; same size, channels and dtype as a");
        return s;
    }

    static void infer(const Params&, const Shapes& in, Shapes&) {
        const ImageView& a = in[0];
        const ImageView& b = in[1];
        if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.dtype != b.dtype)
            throw Error("compare: a is " + shape(a) + " and b is " + shape(b) +
                        "; they need the same size, channels and dtype");
    }

    // Metrics: psnr in dB, with the peak 255 for u8, 65535 for u16 and 1.0 for f32/f64 (float
    // images are taken to lie in [0, 1]); +inf for identical images, which `pixflow run` prints
    // as "inf" and the JSON report, having no infinity, writes as null (max_abs_diff = 0 then
    // says the images are equal). A NaN sample makes all three NaN (null in JSON).
    static void run_cpu(Context& ctx) {
        const compare::Stats s = compare::compare_cpu(ctx.input(0), ctx.input(1));
        ctx.metric("psnr", s.psnr);
        ctx.metric("max_abs_diff", s.max_abs_diff);
        ctx.metric("mean_abs_diff", s.mean_abs_diff);
    }
};

} // namespace

PIXFLOW_PLUGIN("compare", "1.0.0", Compare)
