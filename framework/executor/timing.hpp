// executor/ timing: what each step of a run measured, for the report and the trace spans. CUDA
// nodes are timed by events around their launch (read once the device got there); CPU nodes by
// the host clock. Transfers count their bytes, and with spans their own events.
#pragma once

#include "device/device.hpp"
#include "pipeline/node_id.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace pixflow::host {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Timings {
    NodeMap<Event> start, end; ///< CUDA nodes: recorded around the launch; other nodes: empty
    NodeMap<double> cpu_ms;    ///< CPU nodes: wall time of run_cpu
    NodeMap<char> launched;    ///< whether the node's operator ran in the last run
    std::atomic<int> h2d{0}, d2h{0};
    std::atomic<long long> h2d_bytes{0}, d2h_bytes{0};

    // Spans (only when a run asks for them): CPU nodes' wall times and threads, transfers'
    // events, and an event synchronised at the start that maps GPU times onto the host clock.
    bool spans = false;
    NodeMap<Clock::time_point> cpu_t0, cpu_t1;
    NodeMap<std::thread::id> cpu_thread;
    NodeMap<char> node_ran;
    std::vector<char> transfer_ran;
    std::vector<Event> transfer_start, transfer_end;
    Event ref;
    Clock::time_point t_ref;

    // Nodes of streamed chains (planner/strips.hpp): per node, the strips it ran in this run, and
    // per strip the events around a CUDA launch (kept across runs, grown as needed) or, with
    // spans, a CPU launch's wall times and thread. cpu_ms sums the strips.
    NodeMap<int> strips;
    std::mutex strip_mu; ///< strips, cpu_ms and scratch of a node whose strips run at once (a parallel stage)
    /// Per node: the most scratch memory (pf_host.alloc, host and device) one of its calls took.
    NodeMap<std::size_t> scratch;
    NodeMap<std::vector<Event>> strip_start, strip_end;
    /// Per node and strip of its chain: 1 when a CUDA launch of that strip recorded its events in
    /// this run (a process of a split chain runs only its band's strips; a carried node skips
    /// strips with nothing new), so that only recorded events are timed.
    NodeMap<std::vector<char>> strip_ran;
    struct CpuStrip {
        Clock::time_point t0, t1;
        std::thread::id thread;
    };
    NodeMap<std::vector<CpuStrip>> strip_cpu;
    /// Per streamed chain: the host time of its step, and of the part before its first strip
    /// (its strip buffers allocated: pinning host memory and growing the device pool).
    std::vector<double> chain_ms, chain_setup_ms;
};

} // namespace pixflow::host
