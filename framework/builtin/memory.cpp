// builtin/ memory: the source operator whose image is caller memory. Written against the C ABI
// (abi.h) like any plugin; infer turns the declared (or bound) shape into the output, and run is
// reached only when nothing was bound, which it reports.
#include "builtin/builtin.hpp"

#include <cstdio>
#include <cstring>

namespace pixflow::host {
namespace {

const char* const kDtypes[] = {"any", "u8", "u16", "i16", "i32", "u32", "u64", "f32", "f64"};
constexpr int kNDtypes = int(sizeof kDtypes / sizeof kDtypes[0]);

const pf_port_desc kOut[] = {
    {sizeof(pf_port_desc), "out", "the caller's image, in place", PF_ALL_DTYPES, PF_ALL_CHANNELS}};

pf_param_desc int_param(const char* name, const char* doc, double max) {
    pf_param_desc d{};
    d.struct_size = sizeof(pf_param_desc);
    d.name = name;
    d.doc = doc;
    d.type = PF_PARAM_INT;
    d.default_value.type = PF_PARAM_INT;
    d.has_range = 1;
    d.min = 0;
    d.max = max;
    return d;
}

const pf_param_desc* params() {
    static const pf_param_desc p[] = {
        int_param("width", "declared width; 0: the bound image's", 1 << 30),
        int_param("height", "declared height; 0: the bound image's", 1 << 30),
        int_param("channels", "declared channel count; 0: the bound image's", 4),
        [] {
            pf_param_desc d{};
            d.struct_size = sizeof(pf_param_desc);
            d.name = "dtype";
            d.doc = "declared sample type; any: the bound image's";
            d.type = PF_PARAM_CHOICE;
            d.default_value.type = PF_PARAM_CHOICE;
            d.default_value.s = "any";
            d.choices = kDtypes;
            d.n_choices = kNDtypes;
            return d;
        }(),
    };
    return p;
}

int32_t infer(const pf_value* p, int32_t, const pf_image*, int32_t, pf_image* out, int32_t, char* err, size_t n) {
    int dtype = 0;
    for (int k = 1; k < kNDtypes; ++k)
        if (p[3].s && std::strcmp(p[3].s, kDtypes[k]) == 0) dtype = k; // choices follow pf_dtype's order
    if (p[0].i < 1 || p[1].i < 1 || p[2].i < 1 || dtype == 0) {
        std::snprintf(err, n,
                      "no image is bound to this memory node and its shape is not declared; bind one with "
                      "Pipeline::input (docs/embedding.md) or declare width, height, channels and dtype");
        return PF_ERR_INVALID;
    }
    out[0].width = int32_t(p[0].i);
    out[0].height = int32_t(p[1].i);
    out[0].channels = int32_t(p[2].i);
    out[0].dtype = dtype;
    return PF_OK;
}

int32_t run(const pf_run_args* a) {
    std::snprintf(a->error, a->error_size,
                  "no image is bound to this memory node; it reads the caller's memory, so "
                  "run the pipeline through the embedding API (Pipeline::input, docs/embedding.md)");
    return PF_ERR_INVALID;
}

} // namespace

const pf_plugin_desc& builtin_plugin() {
    static const pf_op_desc ops[] = {
        {sizeof(pf_op_desc), kMemoryOp,
         "The caller's image (host or CUDA memory), bound by node id through the embedding API", PF_OP_SOURCE, nullptr,
         0, kOut, 1, params(), 4, &infer, &run, &run}};
    static const pf_plugin_desc desc{sizeof(pf_plugin_desc),
                                     PIXFLOW_ABI_MAJOR,
                                     PIXFLOW_ABI_MINOR,
                                     "builtin",
                                     PIXFLOW_VERSION,
                                     ops,
                                     1,
                                     nullptr,
                                     nullptr,
                                     0};
    return desc;
}

void load_registry(Registry& reg, const std::vector<std::filesystem::path>& plugin_paths) {
    reg.add_builtin(builtin_plugin(), kBuiltinPlugin);
    reg.load_all(Registry::search_path(plugin_paths));
}

} // namespace pixflow::host
