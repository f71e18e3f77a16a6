#include "support/op_harness.hpp"

#include "device/device.hpp"
#include "executor/run_op.hpp"
#include "support/paths.hpp"

#include <cstring>
#include <memory>
#include <mutex>

namespace pixflow::testing {

namespace {
const host::Registry& registry() {
    // The plugins the build produced, and nothing from the environment.
    static std::unique_ptr<host::Registry> reg = [] {
        auto r = std::make_unique<host::Registry>();
        r->load_all({plugin_dir()});
        return r;
    }();
    return *reg;
}
} // namespace

bool cuda_available() { return host::cuda_usable(nullptr); }

std::vector<Image> run_op(const std::string& op, const std::string& backend,
                          const std::vector<const Image*>& inputs,
                          const std::map<std::string, std::string>& params) {
    std::vector<pf_image> ins;
    for (const Image* im : inputs) ins.push_back(im->view().to_c());
    std::vector<host::HostImage> outs = host::run_single_op(registry(), op, backend, ins, params);
    std::vector<Image> result;
    for (auto& h : outs) {
        Image im = Image::make(h.shape.width, h.shape.height, h.shape.channels, DType(h.shape.dtype));
        std::memcpy(im.bytes.data(), h.bytes.data(), im.bytes.size());
        result.push_back(std::move(im));
    }
    return result;
}

} // namespace pixflow::testing
