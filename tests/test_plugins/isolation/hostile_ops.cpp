// A valid plugin (the scan accepts it) whose operators answer badly at run time:
//  - tp_huge:      a source whose infer claims 2147483647 x 2147483647 x 4 f64 (2^67 bytes; the
//                  size wrapped to a small allocation);
//  - tp_bad_infer: a source whose infer fails and fills the whole message buffer with 'z',
//                  leaving no terminating NUL.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("hostile_ops")
namespace {
int32_t infer_huge(const pf_value*, int32_t, const pf_image*, int32_t, pf_image* out, int32_t, char*, size_t) {
    out[0] = pf_image{sizeof(pf_image), INT_MAX, INT_MAX, 4, PF_F64, PF_HOST, 0, nullptr};
    return PF_OK;
}
int32_t infer_unterminated(const pf_value*, int32_t, const pf_image*, int32_t, pf_image*, int32_t, char* err,
                           size_t n) {
    std::memset(err, 'z', n);
    return PF_ERR_INVALID;
}
pf_op_desc source(const char* name, pf_infer_fn infer) {
    pf_op_desc d = bad_plugin::op(name);
    d.flags = PF_OP_SOURCE;
    d.inputs = nullptr;
    d.n_inputs = 0;
    d.infer = infer;
    return d;
}
} // namespace
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_op_desc ops[] = {source("tp_huge", &infer_huge), source("tp_bad_infer", &infer_unterminated)};
    static const pf_plugin_desc d = bad_plugin::plugin("hostile_ops", ops, 2);
    return &d;
}
