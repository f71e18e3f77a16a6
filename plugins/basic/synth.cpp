// synth.cpp: the synth operator (a source; CPU only).
#include "kernels/synth.hpp"
#include "ops.hpp"

namespace pixflow::basic {

Schema Synth::schema() {
    Schema s("synth", "deterministic test image: noise, gradient, checker or shapes");
    s.flags(PF_OP_SOURCE)
        .output("out", all_dtypes(), channels(1, 4))
        .param_choice("pattern", {"noise", "gradient", "checker", "shapes"}, "noise",
                      "noise: hashed per sample; gradient: ramps per channel; checker: 32-pixel "
                      "squares; shapes: discs and rectangles on a dark background, mild noise")
        .param_int("width", 512, 1, 65536, "width in pixels")
        .param_int("height", 512, 1, 65536, "height in pixels")
        .param_int("channels", 3, 1, 4, "samples per pixel")
        .param_choice("dtype", {"u8", "u16", "i16", "i32", "u32", "u64", "f32", "f64"}, "u8",
                      "sample type; values span 0..max for integers, 0..1 for floats")
        .param_int("seed", 1, 0, 0x7FFFFFFF, "noise and shape placement; same seed, same image");
    // Returned by name, not as the builder chain's Schema&: a copy would leave the param
    // descriptors pointing at the temporary's strings and choice lists.
    return s;
}

void Synth::infer(const Params& p, const Shapes&, Shapes& out) {
    out[0].width = int(p.i("width"));
    out[0].height = int(p.i("height"));
    out[0].channels = int(p.i("channels"));
    out[0].dtype = dtype_from_name(p.s("dtype"));
}

void Synth::run_cpu(Context& ctx) {
    const std::string_view name = ctx.params().s("pattern");
    const Pattern pattern = name == "gradient"  ? Pattern::gradient
                            : name == "checker" ? Pattern::checker
                            : name == "shapes"  ? Pattern::shapes
                                                : Pattern::noise;
    synth(ctx.output(0), pattern, std::uint64_t(ctx.params().i("seed")));
}

} // namespace pixflow::basic
