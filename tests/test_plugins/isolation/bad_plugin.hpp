// Shared by the plugins built to be rejected by the plugin scan (issue 15 item 1): a load marker,
// and a valid operator and plugin header to hang each fault on.
//
// The marker: when $PIXFLOW_TEST_LOAD_LOG is set, loading the plugin appends "<plugin> <program>"
// to that file, before any of the plugin's own static constructors run (it is the first object
// of each translation unit that includes this header first). The tests read it to prove that
// only pixflow-plugin-scanner ever loaded a rejected plugin, never pixflow or the test binary.
#pragma once

#include <pixflow/abi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace bad_plugin {

struct LoadMarker {
    explicit LoadMarker(const char* plugin) {
        const char* log = std::getenv("PIXFLOW_TEST_LOAD_LOG");
        if (!log || !*log) return;
        char exe[PATH_MAX] = {0};
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        std::string program = n > 0 ? std::string(exe, std::size_t(n)) : "?";
        program = program.substr(program.find_last_of('/') + 1);
        std::string line = std::string(plugin) + " " + program + "\n";
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return;
        [[maybe_unused]] ssize_t w = write(fd, line.data(), line.size());
        close(fd);
    }
};

inline int32_t infer_copy(const pf_value*, int32_t, const pf_image* in, int32_t n_in, pf_image* out, int32_t, char*,
                          size_t) {
    if (n_in > 0)
        out[0] = in[0];
    else
        out[0] = pf_image{sizeof(pf_image), 4, 4, 1, PF_U8, PF_HOST, 0, nullptr};
    out[0].data = nullptr;
    return PF_OK;
}
inline int32_t run_nothing(const pf_run_args*) { return PF_OK; }

inline const pf_port_desc in_port{sizeof(pf_port_desc), "in", "", PF_DTYPE_BIT(PF_U8), PF_ALL_CHANNELS};
inline const pf_port_desc out_port{sizeof(pf_port_desc), "out", "", PF_DTYPE_BIT(PF_U8), PF_ALL_CHANNELS};

/// A valid op named `name` with the given parameters.
inline pf_op_desc op(const char* name, const pf_param_desc* params = nullptr, int32_t n_params = 0) {
    return pf_op_desc{sizeof(pf_op_desc), name,        "a test op",  0,      &in_port, 1, &out_port, 1, params,
                      n_params,           &infer_copy, &run_nothing, nullptr};
}

/// A valid plugin header with `n` ops.
inline pf_plugin_desc plugin(const char* name, const pf_op_desc* ops, int32_t n,
                             int32_t (*init)(char*, size_t) = nullptr) {
    return pf_plugin_desc{
        sizeof(pf_plugin_desc), PIXFLOW_ABI_MAJOR, PIXFLOW_ABI_MINOR, name, "0.0.1", ops, n, init, nullptr, 0};
}

} // namespace bad_plugin

#define BAD_PLUGIN_MARKER(NAME) static const bad_plugin::LoadMarker bad_plugin_marker_{NAME};
