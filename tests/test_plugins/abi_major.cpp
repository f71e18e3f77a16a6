// A plugin that declares ABI PIXFLOW_ABI_MAJOR + 1.PIXFLOW_ABI_MINOR: the loader must refuse it with both versions.
#include <pixflow/abi.h>
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d{
        sizeof(pf_plugin_desc), PIXFLOW_ABI_MAJOR + 1, PIXFLOW_ABI_MINOR, "abi_major", "0.0.1", nullptr, 0, nullptr};
    return &d;
}
