// The exported C host API (pixflow/host_api.h) over run_single_op.
#include <pixflow/host_api.h>

#include "builtin/builtin.hpp"
#include "device/device.hpp"
#include "executor/run_op.hpp"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

using namespace pixflow::host;

namespace {
/// One registry per plugin path, loaded once: plugins stay loaded for the life of the process.
const Registry& registry_for(const std::string& path) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<Registry>> cache;
    std::lock_guard lk(mu);
    auto& r = cache[path];
    if (!r) {
        r = std::make_unique<Registry>();
        std::vector<std::filesystem::path> dirs;
        std::size_t start = 0;
        while (start < path.size()) {
            std::size_t end = path.find(':', start);
            if (end == std::string::npos) end = path.size();
            if (end > start) dirs.emplace_back(path.substr(start, end - start));
            start = end + 1;
        }
        load_registry(*r, dirs);
    }
    return *r;
}
} // namespace

extern "C" PIXFLOW_EXPORT int32_t pixflow_host_cuda_usable(void) { return cuda_usable(nullptr) ? 1 : 0; }

extern "C" PIXFLOW_EXPORT int32_t pixflow_host_run_op(const char* plugin_path, const char* op, const char* backend,
                                                      const pf_image* inputs, int32_t n_inputs,
                                                      const char* const* params, int32_t n_params, pf_image** outputs,
                                                      int32_t* n_outputs, char* error, size_t error_size) {
    auto fail = [&](int32_t status, const std::string& msg) {
        if (error && error_size) std::snprintf(error, error_size, "%s", msg.c_str());
        return status;
    };
    try {
        std::map<std::string, std::string> p;
        for (int32_t k = 0; k < n_params; ++k) {
            std::string kv = params[k];
            auto eq = kv.find('=');
            if (eq == std::string::npos) return fail(PF_ERR_INVALID, "parameter '" + kv + "' is not key=value");
            p[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        std::vector<pf_image> ins(inputs, inputs + n_inputs);
        auto outs = run_single_op(registry_for(plugin_path ? plugin_path : ""), op, backend, ins, p);
        auto* arr = new pf_image[outs.size()];
        for (std::size_t k = 0; k < outs.size(); ++k) {
            arr[k] = outs[k].shape;
            arr[k].data = new std::byte[outs[k].bytes.size() ? outs[k].bytes.size() : 1];
            std::memcpy(arr[k].data, outs[k].bytes.data(), outs[k].bytes.size());
        }
        *outputs = arr;
        *n_outputs = int32_t(outs.size());
        return PF_OK;
    } catch (const UserError& e) { return fail(PF_ERR_INVALID, e.what()); } catch (const std::exception& e) {
        return fail(PF_ERR_RUNTIME, e.what());
    }
}

extern "C" PIXFLOW_EXPORT void pixflow_host_free_outputs(pf_image* outputs, int32_t n_outputs) {
    if (!outputs) return;
    for (int32_t k = 0; k < n_outputs; ++k) delete[] static_cast<std::byte*>(outputs[k].data);
    delete[] outputs;
}
