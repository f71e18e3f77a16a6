// A static constructor calls exit(0): every command that loaded it ended "successfully" with
// no output.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("ctor_exit")
namespace {
struct Exit {
    Exit() { std::exit(0); }
} const exits;
const pf_op_desc ops[] = {bad_plugin::op("tp_ctor_exit")};
} // namespace
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d = bad_plugin::plugin("ctor_exit", ops, 1);
    return &d;
}
