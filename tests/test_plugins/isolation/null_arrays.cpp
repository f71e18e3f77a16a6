// Declares 3 operators and gives no array for them (the host read ops[0] from address 0).
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("null_arrays")
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d = bad_plugin::plugin("null_arrays", nullptr, 3);
    return &d;
}
