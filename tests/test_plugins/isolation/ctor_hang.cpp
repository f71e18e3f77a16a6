// A static constructor never returns (waits for a signal that never comes).
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("ctor_hang")
namespace {
struct Hang {
    Hang() {
        for (;;) pause();
    }
} const hangs;
const pf_op_desc ops[] = {bad_plugin::op("tp_ctor_hang")};
} // namespace
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d = bad_plugin::plugin("ctor_hang", ops, 1);
    return &d;
}
