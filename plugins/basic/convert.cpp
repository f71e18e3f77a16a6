// convert.cpp: the convert operator.
#include "kernels/convert.hpp"
#include "ops.hpp"

namespace pixflow::basic {

Schema Convert::schema() {
    Schema s("convert",
             "change dtype: out = saturate(round(in * scale + offset)) for integer outputs");
    s.input("in", all_dtypes(), channels(1, 4))
        .output("out", all_dtypes(), channels(1, 4))
        .param_choice("dtype", {"u8", "u16", "i16", "i32", "u32", "u64", "f32", "f64"}, "f32",
                      "output sample type")
        .param_float("scale", 1.0, -1e30, 1e30,
                     "multiplier applied first (1/255 takes u8 to 0..1, 255 takes 0..1 to u8)")
        .param_float("offset", 0.0, -1e30, 1e30,
                     "added after scaling; integer outputs then round half away from zero, "
                     "saturate, and map NaN to 0");
    // Returned by name, not as the builder chain's Schema&: a copy would leave the param
    // descriptors pointing at the temporary's strings and choice lists.
    return s;
}

void Convert::infer(const Params& p, const Shapes& in, Shapes& out) {
    out[0] = in[0];
    out[0].dtype = dtype_from_name(p.s("dtype"));
}

void Convert::run_cpu(Context& ctx) {
    convert_cpu(ctx.input(0), ctx.output(0), ctx.params().f("scale"), ctx.params().f("offset"));
}

#ifdef PIXFLOW_WITH_CUDA
void Convert::run_cuda(Context& ctx) {
    convert_cuda(ctx.input(0), ctx.output(0), ctx.params().f("scale"), ctx.params().f("offset"),
                 ctx.stream());
}
#endif

} // namespace pixflow::basic
