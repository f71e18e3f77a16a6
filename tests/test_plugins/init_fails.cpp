// A plugin whose init reports a failure: rejected with the plugin's own message.
#include <pixflow/abi.h>
#include <cstdio>
static int32_t init(char* err, size_t n) {
    std::snprintf(err, n, "license file not found");
    return PF_ERR_RUNTIME;
}
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_plugin_desc d{
        sizeof(pf_plugin_desc), PIXFLOW_ABI_MAJOR, PIXFLOW_ABI_MINOR, "init_fails", "0.0.1", nullptr, 0, &init};
    return &d;
}
