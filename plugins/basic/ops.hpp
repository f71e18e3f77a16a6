// ops.hpp: the operators of the basic plugin. Each is a thin adapter (schema, shape inference,
// parameter parsing) over a pure kernel in kernels/; synth.cpp, convert.cpp and grayscale.cpp
// define them, basic.cpp registers them.
#pragma once

#include <pixflow/operator.hpp>

#include <string_view>

namespace pixflow::basic {

/// Deterministic test images (kernels/synth.hpp).
struct Synth {
    static Schema schema();
    static void infer(const Params& p, const Shapes& in, Shapes& out);
    static void run_cpu(Context& ctx);
};

/// Change of dtype with scale, offset, rounding and saturation (kernels/convert.hpp).
struct Convert {
    static Schema schema();
    static void infer(const Params& p, const Shapes& in, Shapes& out);
    static void run_cpu(Context& ctx);
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx);
#endif
};

/// BT.601 luma (kernels/grayscale.hpp).
struct Grayscale {
    static Schema schema();
    static void infer(const Params& p, const Shapes& in, Shapes& out);
    static void run_cpu(Context& ctx);
#ifdef PIXFLOW_WITH_CUDA
    static void run_cuda(Context& ctx);
#endif
};

/// The dtype named by a choice parameter ("u8", "f32"...); the host already checked the choice.
inline DType dtype_from_name(std::string_view name) {
    for (int d = PF_U8; d <= PF_F64; ++d)
        if (name == dtype_name(DType(d))) return DType(d);
    throw Error("internal: unknown dtype '" + std::string(name) + "'", PF_ERR_RUNTIME);
}

} // namespace pixflow::basic
