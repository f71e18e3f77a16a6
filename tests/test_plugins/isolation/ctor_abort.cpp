// A static constructor calls abort(): loading the library kills the process that loads it.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("ctor_abort")
namespace {
struct Abort {
    Abort() { std::abort(); }
} const aborts;
const pf_op_desc ops[] = {bad_plugin::op("tp_ctor_abort")};
} // namespace
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d = bad_plugin::plugin("ctor_abort", ops, 1);
    return &d;
}
