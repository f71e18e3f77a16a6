// Its entry point reads through a wild pointer (address 16, through a volatile so that the load
// really happens, and not null so that UBSan's null check does not turn the crash into an exit).
#include "bad_plugin.hpp"
#include <cstdint>
BAD_PLUGIN_MARKER("entry_segfault")
namespace {
const pf_plugin_desc* const* volatile table = reinterpret_cast<const pf_plugin_desc* const*>(std::uintptr_t(16));
}
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) { return *table; }
