// Refers to a function no library defines: loading it with RTLD_NOW must fail cleanly.
#include <pixflow/abi.h>
extern "C" void pixflow_test_function_that_does_not_exist(void);
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    pixflow_test_function_that_does_not_exist();
    return nullptr;
}
