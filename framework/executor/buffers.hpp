// executor/ buffers: every image of a run and what it costs on the device.
//
// One Buf per node output and per transfer, made once per Executor. A run allocates a Buf just
// before its producer runs and releases it right after its last consumer: device buffers from
// the stream-ordered pool (cudaMallocAsync, pitch a multiple of 256 bytes), host buffers 64-byte
// aligned and tightly packed, pinned when they cross to or from the device. A device buffer read
// on other streams is freed only after every reader's work (their events). External buffers
// (caller memory) are never allocated or freed here.
#pragma once

#include "device/device.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace pixflow::host {

std::size_t row_bytes(const pf_image& im);
std::size_t image_bytes(const pf_image& im);

enum class Mem { none, host, pinned, device, external };

/// One image in memory, with the count of consumers still to read it.
struct Buf {
    pf_image im{};
    Mem mem = Mem::none;
    int stream = -1; ///< device buffers: the stream that allocated it
    std::atomic<int> remaining{0};
    std::mutex mu;
    std::vector<std::pair<int, const Event*>> readers; ///< (stream, done event) of device consumers
};

/// Live bytes of a run and their high-water mark (the report's peak_device_bytes and
/// peak_host_bytes).
class DeviceMemoryCounter {
  public:
    void add(long long delta) {
        long long now = m_live += delta;
        long long peak = m_peak.load();
        while (now > peak && !m_peak.compare_exchange_weak(peak, now)) {}
    }
    void reset_peak() { m_peak = m_live.load(); }
    long long peak() const { return m_peak; }

  private:
    std::atomic<long long> m_live{0}, m_peak{0};
};

class Buffers {
  public:
    /// `streams` is the Executor's stream table (index = the plan's stream index); it is read at
    /// each allocation, so it may be filled after construction.
    Buffers(const Graph& g, const Plan& p, const std::vector<Stream>& streams);

    Buf& out(NodeId v, int port) { return *m_outs[v][std::size_t(port)]; }
    const Buf& out(NodeId v, int port) const { return *m_outs[v][std::size_t(port)]; }
    Buf& transfer(int t) { return *m_transfers[std::size_t(t)]; }
    /// What node v reads at input i: its producer's output, or the transfer that moved it.
    Buf& input(NodeId v, std::size_t i);
    /// Whether node v's output `port` feeds an upload (so its host buffer is pinned).
    bool feeds_upload(NodeId v, int port) const { return m_feeds_upload[v][std::size_t(port)]; }

    /// Before a run: every Buf empty, each with its count of consumers.
    void reset_counts();
    /// Points b at caller memory for this run.
    static void set_external(Buf& b, const pf_image& im);
    void alloc(Buf& b, const pf_image& shape, bool device, int stream, bool pinned);
    /// Frees b; device memory is freed on `stream` (-1: its own) after every reader's work.
    void release(Buf& b, int stream);
    /// One consumer on `stream` is done with b (its work ends at `ev`, device consumers only);
    /// the last one frees it unless `keep`.
    void consumed(Buf& b, int stream, const Event* ev, bool keep);
    /// Frees whatever is still allocated, stream-ordered (nobody waits here).
    void free_all();

    DeviceMemoryCounter& device_memory() { return m_device_bytes; }
    /// Live host bytes of the run's buffers (host and pinned) and their high-water mark.
    DeviceMemoryCounter& host_memory() { return m_host_bytes; }
    void set_pinned_cache(PinnedCache* c) { m_pinned = c; }
    const std::vector<Stream>& streams() const { return m_streams; }

  private:
    const Graph& m_g;
    const Plan& m_p;
    const std::vector<Stream>& m_streams;
    PinnedCache* m_pinned = nullptr;
    NodeMap<std::vector<std::unique_ptr<Buf>>> m_outs;
    std::vector<std::unique_ptr<Buf>> m_transfers;
    NodeMap<std::vector<int>> m_consumers;     ///< per node, per output port: readers in place + transfers
    NodeMap<std::vector<char>> m_feeds_upload; ///< per node, per output port
    DeviceMemoryCounter m_device_bytes, m_host_bytes;
};

} // namespace pixflow::host
