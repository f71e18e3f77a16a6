// A plugin that declares ABI PIXFLOW_ABI_MAJOR.PIXFLOW_ABI_MINOR + 1: the loader must refuse it with both versions.
#include <pixflow/abi.h>
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d{sizeof(pf_plugin_desc),
                                  PIXFLOW_ABI_MAJOR,
                                  PIXFLOW_ABI_MINOR + 1,
                                  "abi_newer_minor",
                                  "0.0.1",
                                  nullptr,
                                  0,
                                  nullptr};
    return &d;
}
