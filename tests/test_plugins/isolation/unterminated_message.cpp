// Its init fails and fills the whole message buffer with 'y', leaving no terminating NUL.
#include "bad_plugin.hpp"
BAD_PLUGIN_MARKER("unterminated_message")
namespace {
int32_t init(char* err, size_t n) {
    std::memset(err, 'y', n);
    return PF_ERR_RUNTIME;
}
} // namespace
extern "C" PIXFLOW_EXPORT const pf_plugin_desc* pixflow_plugin_entry(void) {
    static const pf_op_desc ops[] = {bad_plugin::op("tp_unterminated_message")};
    static const pf_plugin_desc d = bad_plugin::plugin("unterminated_message", ops, 1, &init);
    return &d;
}
