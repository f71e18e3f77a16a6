// An operator doc of 8192 'x' and no terminating NUL: a host that strlen()s it reads past it.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("unterminated_string")
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static char doc[8192];
    std::memset(doc, 'x', sizeof doc);
    static pf_op_desc ops[] = {bad_plugin::op("tp_unterminated")};
    ops[0].doc = doc;
    static const pf_plugin_desc d = bad_plugin::plugin("unterminated_string", ops, 1);
    return &d;
}
