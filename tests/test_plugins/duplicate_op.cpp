// Provides an operator named like one of the built-in plugins ("synth"): rejected as a duplicate
// when the built-in plugins were loaded first.
#include <pixflow/operator.hpp>
struct FakeSynth {
    static pixflow::Schema schema() {
        return pixflow::Schema("tp_src", "a second tp_src")
            .flags(PF_OP_SOURCE)
            .output("out", pixflow::dtypes({pixflow::DType::u8}), pixflow::channels(1, 1));
    }
    static void infer(const pixflow::Params&, const pixflow::Shapes&, pixflow::Shapes& out) {
        out[0].width = out[0].height = out[0].channels = 1;
    }
    static void run_cpu(pixflow::Context&) {}
};
PIXFLOW_PLUGIN("duplicate_op", "0.0.1", FakeSynth)
