// executor/ host callbacks: pf_host for each launch, and what the run's steps share.
#include "executor/host_callbacks.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace pixflow::host {

void RunSignals::reset(std::size_t nodes, const std::function<void(int, const std::string&)>& log) {
    if (log || m_log) m_log = log;
    m_cancelled = false;
    m_fault = Fault::none;
    m_error = {};
    if (m_metrics.size() != nodes) m_metrics.assign(nodes, {});
    for (auto& m : m_metrics) m.clear();
}

void RunSignals::log(int level, const std::string& message) const {
    if (m_log)
        m_log(level, message);
    else if (level >= 1)
        std::cerr << (level >= 2 ? "warning: " : "") << message << "\n";
}

void RunSignals::fail(Fault kind, Diagnostic d) {
    std::lock_guard lk(m_mu);
    if (m_fault == Fault::none) {
        m_fault = kind;
        m_error = std::move(d);
    }
    m_cancelled = true;
}

void RunSignals::rethrow() const {
    std::lock_guard lk(m_mu);
    if (m_fault == Fault::user) throw UserError(m_error);
    if (m_fault == Fault::internal) throw InternalError(m_error.str());
}

void RunSignals::metric(NodeId v, const char* key, double value) {
    std::lock_guard lk(m_mu);
    m_metrics[v][key] = value;
}

StepHost::StepHost(RunSignals& run, DeviceMemoryCounter& device_bytes, PersistentStore& kept, const Node& node,
                   NodeId v, const Stream* stream)
    : m_run(run), m_device_bytes(device_bytes), m_kept(kept), m_node(node), m_v(v),
      m_stream(stream), m_table{sizeof(pf_host), this, &cb_alloc, &cb_log, &cb_cancelled, &cb_metric, &cb_persistent} {}

StepHost::~StepHost() {
    try {
        return_persistent(false); // still held: the launch did not get as far as returning it
        free_scratch();
    } catch (...) { // already failing; the run reports the first error
    }
}

int32_t StepHost::cb_persistent(void* self, int32_t device, size_t bytes, void** data, uint64_t** state) {
    auto* c = static_cast<StepHost*>(self);
    try {
        if (!data || !state) return PF_ERR_INVALID;
        std::lock_guard lk(c->m_mu);
        const int32_t own = c->m_stream ? int32_t(c->m_stream->device()) : int32_t(PF_HOST);
        if (device != own || bytes == 0) return PF_ERR_INVALID;
        if (c->m_block && c->m_block->bytes != bytes) return PF_ERR_INVALID; // one block a call
        if (!c->m_block) {
            c->m_block = &c->m_kept.take(c->m_v, device, bytes, c->m_stream, c->m_device_bytes);
            c->m_taken += bytes; // the scratch estimate covers it
        }
        *data = c->m_block->data();
        *state = &c->m_block->state;
        return PF_OK;
    } catch (...) { return PF_ERR_RUNTIME; }
}

void StepHost::return_persistent(bool ok) {
    std::lock_guard lk(m_mu);
    if (!m_block) return;
    PersistentStore::Block* b = m_block;
    m_block = nullptr;
    m_kept.give_back(*b, m_stream, ok);
}

void* StepHost::cb_alloc(void* self, int32_t device, size_t bytes) {
    auto* c = static_cast<StepHost*>(self);
    try {
        std::lock_guard lk(c->m_mu);
        void* ptr;
        if (device == PF_HOST) {
            ptr = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
            if (!ptr) return nullptr;
        } else {
            if (!c->m_stream) return nullptr; // a CPU node gets no device memory
            ptr = device_alloc_async(bytes, *c->m_stream);
            c->m_device_bytes.add((long long)bytes);
        }
        c->m_scratch.push_back({ptr, device != PF_HOST, bytes});
        c->m_taken += bytes;
        return ptr;
    } catch (...) { return nullptr; }
}

void StepHost::cb_log(void* self, int32_t level, const char* msg) {
    auto* c = static_cast<StepHost*>(self);
    try {
        c->m_run.log(level, "[" + c->m_node.id + "] " + msg);
    } catch (...) {}
}

int32_t StepHost::cb_cancelled(void* self) { return static_cast<StepHost*>(self)->m_run.cancelled() ? 1 : 0; }

void StepHost::cb_metric(void* self, const char* key, double value) {
    auto* c = static_cast<StepHost*>(self);
    try {
        c->m_run.metric(c->m_v, key, value);
    } catch (...) {}
}

std::size_t StepHost::scratch_taken() {
    std::lock_guard lk(m_mu);
    return m_taken;
}

void StepHost::free_scratch() {
    if (m_scratch.empty()) return;
    bool host_scratch_on_stream = false;
    for (auto& s : m_scratch) host_scratch_on_stream |= !s.device && m_stream;
    if (host_scratch_on_stream) m_stream->synchronize();
    std::vector<Scratch> scratch;
    scratch.swap(m_scratch);
    for (auto& s : scratch) {
        if (s.device) {
            device_free_async(s.ptr, *m_stream);
            m_device_bytes.add(-(long long)s.bytes);
        } else {
            std::free(s.ptr);
        }
    }
}

} // namespace pixflow::host
