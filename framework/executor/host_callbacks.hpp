// executor/ host callbacks: what a running operator sees of the host through pf_host (abi.h):
// scratch memory, the log, the cancellation flag and metrics. Every callback is thread-safe;
// none throws across the C boundary.
#pragma once

#include "executor/buffers.hpp"
#include "executor/persistent.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace pixflow::host {

/// What every step of one run shares: the log, cancellation, the first failure and the metrics.
class RunSignals {
  public:
    enum class Fault { none, user, internal };

    /// Before a run.
    void reset(std::size_t nodes, const std::function<void(int, const std::string&)>& log);
    /// level 0 debug, 1 info, 2 warning; without a log function: stderr from level 1.
    void log(int level, const std::string& message) const;
    /// Records the first failure (later ones are consequences) and cancels the run.
    void fail(Fault kind, Diagnostic d);
    bool cancelled() const { return m_cancelled; }
    const std::atomic<bool>& cancelled_flag() const { return m_cancelled; }
    /// Throws the first failure, if any.
    void rethrow() const;
    bool failed() const { return m_fault != Fault::none; }

    void metric(NodeId v, const char* key, double value);
    const std::map<std::string, double>& metrics(NodeId v) const { return m_metrics[v]; }

  private:
    std::function<void(int, const std::string&)> m_log;
    std::atomic<bool> m_cancelled{false};
    mutable std::mutex m_mu;
    Fault m_fault = Fault::none;
    Diagnostic m_error;
    NodeMap<std::map<std::string, double>> m_metrics;
};

/// The pf_host of one node's launch, the scratch memory it handed out and the persistent block
/// it lent (from `kept`, the Executor's store).
class StepHost {
  public:
    /// `stream` is the node's stream on CUDA, nullptr on the CPU (which gets no device scratch).
    StepHost(RunSignals& run, DeviceMemoryCounter& device_bytes, PersistentStore& kept, const Node& node, NodeId v,
             const Stream* stream);
    StepHost(const StepHost&) = delete;
    StepHost& operator=(const StepHost&) = delete;
    ~StepHost();

    const pf_host* table() const { return &m_table; }
    /// After the operator returned: frees its scratch; device scratch in stream order. Host
    /// scratch of a CUDA node may still be read by its queued work (an async copy from it), so
    /// the host waits for the stream first.
    void free_scratch();
    /// The scratch bytes the operator has taken in this call so far, host and device, its
    /// persistent block included.
    std::size_t scratch_taken();
    /// After the operator returned (ok: PF_OK, its work enqueued): the persistent block goes
    /// back to the store, to be zeroed before its next use unless ok.
    void return_persistent(bool ok);

  private:
    static void* cb_alloc(void* self, int32_t device, size_t bytes);
    static void cb_log(void* self, int32_t level, const char* msg);
    static int32_t cb_cancelled(void* self);
    static void cb_metric(void* self, const char* key, double value);
    static int32_t cb_persistent(void* self, int32_t device, size_t bytes, void** data, uint64_t** state);

    struct Scratch {
        void* ptr;
        bool device;
        std::size_t bytes;
    };
    RunSignals& m_run;
    DeviceMemoryCounter& m_device_bytes;
    PersistentStore& m_kept;
    PersistentStore::Block* m_block = nullptr; ///< the persistent block of this call, if it took one
    const Node& m_node;
    NodeId m_v;
    const Stream* m_stream;
    std::mutex m_mu;
    std::vector<Scratch> m_scratch;
    std::size_t m_taken = 0;
    pf_host m_table;
};

} // namespace pixflow::host
