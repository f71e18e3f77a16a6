// A plugin built against ABI 1.0, before pf_plugin_desc grew `fusions` (1.1): its descriptor is
// the 1.0 layout, followed in memory by poison where the 1.1 fields would be. The loader must
// load it, read nothing past its struct_size, and run its operator.
#include <pixflow/abi.h>

#include <cstring>

namespace {

// pf_plugin_desc as ABI 1.0 declared it.
struct plugin_desc_1_0 {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const char* name;
    const char* version;
    const pf_op_desc* ops;
    int32_t n_ops;
    int32_t (*init)(char* error, size_t error_size);
};

int32_t infer(const pf_value*, int32_t, const pf_image* in, int32_t, pf_image* out, int32_t, char*, size_t) {
    out[0] = in[0];
    out[0].data = nullptr;
    return PF_OK;
}

// 255 - v for u8.
int32_t run(const pf_run_args* a) {
    const pf_image& in = a->inputs[0];
    const pf_image& out = a->outputs[0];
    for (int y = 0; y < in.height; ++y) {
        const auto* s = static_cast<const unsigned char*>(in.data) + y * in.pitch;
        auto* d = static_cast<unsigned char*>(out.data) + y * out.pitch;
        for (int x = 0; x < in.width * in.channels; ++x) d[x] = static_cast<unsigned char>(255 - s[x]);
    }
    return PF_OK;
}

const pf_port_desc in_port{sizeof(pf_port_desc), "in", "", PF_DTYPE_BIT(PF_U8), PF_ALL_CHANNELS};
const pf_port_desc out_port{sizeof(pf_port_desc), "out", "", PF_DTYPE_BIT(PF_U8), PF_ALL_CHANNELS};
const pf_op_desc op{sizeof(pf_op_desc),
                    "tp_v10_invert",
                    "test op from an ABI 1.0 plugin: 255 - v",
                    0,
                    &in_port,
                    1,
                    &out_port,
                    1,
                    nullptr,
                    0,
                    &infer,
                    &run,
                    nullptr};

struct Poisoned {
    plugin_desc_1_0 desc;
    unsigned char poison[64];
};

Poisoned make() {
    Poisoned p{};
    p.desc = {sizeof(plugin_desc_1_0), 1, 0, "abi_older_minor", "0.0.1", &op, 1, nullptr};
    std::memset(p.poison, 0xA5, sizeof p.poison);
    return p;
}

const Poisoned g_desc = make();

} // namespace

extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    return reinterpret_cast<const pf_plugin_desc*>(&g_desc.desc);
}
