// executor/ launch: pf_run_args, events around CUDA work, host time around CPU work.
#include "executor/launch.hpp"

#include <algorithm>

namespace pixflow::host {

std::string launch_context(const Node& n, const char* backend) {
    return std::string(n.op ? n.op->desc->name : "input") + " on " + backend;
}

bool launch(const Launch& l, RunSignals& run, DeviceMemoryCounter& device_bytes, PersistentStore& kept, Timings& t) {
    const pf_op_desc& d = *l.node.op->desc;
    StepHost host(run, device_bytes, kept, l.node, l.v, l.stream);
    char err[2048] = {0};
    pf_run_args a{sizeof(pf_run_args),
                  l.params,
                  d.n_params,
                  l.inputs.data(),
                  int32_t(l.inputs.size()),
                  l.outputs.data(),
                  int32_t(l.outputs.size()),
                  l.stream ? l.stream->get() : nullptr,
                  host.table(),
                  err,
                  sizeof err,
                  l.strip,
                  l.collective};
    int32_t status;
    t.launched[l.v] = 1;
    const std::size_t k = l.strip ? std::size_t(l.strip->index) : 0;
    if (l.strip) {
        std::lock_guard<std::mutex> lock(t.strip_mu); // strips of one node may run at once
        ++t.strips[l.v];
    }
    if (l.stream) {
        Event& start = l.strip ? t.strip_start[l.v][k] : t.start[l.v];
        Event& end = l.strip ? t.strip_end[l.v][k] : t.end[l.v];
        start.record(*l.stream);
        status = d.run_cuda(&a);
        end.record(*l.stream);
        if (l.strip) t.strip_ran[l.v][k] = 1; // one strip, one thread: no lock needed
    } else {
        auto t0 = Clock::now();
        status = d.run_cpu(&a);
        const double ms = ms_since(t0);
        if (l.strip) {
            std::lock_guard<std::mutex> lock(t.strip_mu);
            t.cpu_ms[l.v] += ms;
        } else
            t.cpu_ms[l.v] = ms;
        if (t.spans) {
            auto t1 = Clock::now();
            if (l.strip) {
                t.strip_cpu[l.v][k] = {t0, t1, std::this_thread::get_id()};
            } else {
                t.cpu_t0[l.v] = t0;
                t.cpu_t1[l.v] = t1;
                t.cpu_thread[l.v] = std::this_thread::get_id();
            }
        }
    }
    if (l.strip) { // strips of one node may run at once
        std::lock_guard<std::mutex> lock(t.strip_mu);
        t.scratch[l.v] = std::max(t.scratch[l.v], host.scratch_taken());
    } else {
        t.scratch[l.v] = host.scratch_taken();
    }
    host.return_persistent(status == PF_OK);
    host.free_scratch();
    err[sizeof err - 1] = '\0'; // the plugin may have left it unterminated
    if (status == PF_OK) return true;
    bool users = status == PF_ERR_INVALID || status == PF_ERR_UNSUPPORTED;
    run.fail(users ? RunSignals::Fault::user : RunSignals::Fault::internal,
             Diagnostic{l.node.loc, l.node.id, err[0] ? err : "failed with status " + std::to_string(status),
                        launch_context(l.node, l.backend)});
    return false;
}

} // namespace pixflow::host
