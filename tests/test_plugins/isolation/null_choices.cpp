// A choice parameter with 3 choices and a NULL choices array: `pixflow describe` crashed on it.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("null_choices")
namespace {
pf_param_desc mode() {
    pf_param_desc p{};
    p.struct_size = sizeof(pf_param_desc);
    p.name = "mode";
    p.doc = "how";
    p.type = PF_PARAM_CHOICE;
    p.default_value.type = PF_PARAM_CHOICE;
    p.default_value.s = "fast";
    p.choices = nullptr;
    p.n_choices = 3;
    return p;
}
} // namespace
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_param_desc params[] = {mode()};
    static const pf_op_desc ops[] = {bad_plugin::op("tp_null_choices", params, 1)};
    static const pf_plugin_desc d = bad_plugin::plugin("null_choices", ops, 1);
    return &d;
}
