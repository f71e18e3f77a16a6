// Its entry point throws a C++ exception across the C boundary.
#include "bad_plugin.hpp"
#include <stdexcept>
BAD_PLUGIN_MARKER("entry_throws")
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    throw std::runtime_error("the descriptor table is not ready");
}
