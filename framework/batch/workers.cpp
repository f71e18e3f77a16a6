// batch/ phase 4 of run_batch: the workers. Each CUDA worker keeps its device's memory pool
// (release threshold: keep everything), its pinned buffers and a stream set per image in flight,
// all reused from image to image.
#include "batch/phases.hpp"

#include <algorithm>

namespace pixflow::host::batch {

Workers::Workers(const BatchPlan& plan, std::vector<std::string>& names) {
    if (!plan.uses_cuda) {
        auto w = std::make_unique<Worker>();
        w->name = "cpu";
        names.push_back("cpu");
        m_all.push_back(std::move(w));
        return;
    }
    if (plan.devices.size() > 1) init_devices(plan.devices); // at once, before any image waits for one
    for (int d : plan.devices) {
        auto w = std::make_unique<Worker>();
        w->device = d;
        w->name = "cuda:" + std::to_string(d);
        w->pinned = std::make_unique<PinnedCache>();
        keep_device_pool(d);
        names.push_back(w->name + " (" + cuda_device_name(d) + ")");
        m_all.push_back(std::move(w));
    }
}

std::pair<Worker*, Lane*> Workers::acquire() {
    std::lock_guard lk(m_mu);
    Worker* w = m_all.front().get();
    for (auto& x : m_all)
        if (x->active < w->active) w = x.get();
    ++w->active;
    for (auto& l : w->lanes)
        if (!l->busy) {
            l->busy = true;
            return {w, l.get()};
        }
    auto& l = w->lanes.emplace_back(std::make_unique<Lane>());
    l->res.device = std::max(w->device, 0);
    l->res.pinned = w->pinned.get();
    l->busy = true;
    return {w, l.get()};
}

void Workers::release(Worker* w, Lane* l) {
    std::lock_guard lk(m_mu);
    --w->active;
    l->busy = false;
}

} // namespace pixflow::host::batch
