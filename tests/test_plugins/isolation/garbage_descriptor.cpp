// Its entry point returns a descriptor whose header is right and whose every other byte is 0xA5:
// a count of -1515870811 operators and pointers to nowhere.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("garbage_descriptor")
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    alignas(pf_plugin_desc) static unsigned char bytes[sizeof(pf_plugin_desc)];
    std::memset(bytes, 0xA5, sizeof bytes);
    auto* d = reinterpret_cast<pf_plugin_desc*>(bytes);
    d->struct_size = sizeof(pf_plugin_desc);
    d->abi_major = PIXFLOW_ABI_MAJOR;
    d->abi_minor = PIXFLOW_ABI_MINOR;
    return d;
}
