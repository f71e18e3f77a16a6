// executor/: runs a Plan.
//
// Every node and every transfer is a step; a step starts (as a TBB task) when the steps it
// depends on are done, so independent branches run concurrently. A CUDA step only enqueues work
// on its stream and records an event; the host blocks only on transfers (a download must land
// before a CPU consumer reads it; an upload's staging buffer must be read before it is reused).
// Memory: device buffers come from the stream-ordered pool (cudaMallocAsync) and host buffers
// that cross to or from the device are pinned; every buffer is released after its last consumer.
// Files: each output path is written under a temporary name and renamed only when the whole run
// succeeded, so a failure leaves no partial output.
#pragma once

#include "device/device.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pixflow::host {

/// An owning, tightly packed copy of an image on the host.
struct HostImage {
    pf_image shape{};
    std::vector<std::byte> bytes;
};

struct NodeReport {
    std::string id, op, backend;
    double ms = 0;
    std::map<std::string, double> metrics;
    std::vector<std::string> replaced; ///< nodes a fused node stands for (none yet)
};

struct RunReport {
    std::string pipeline, file, device;
    std::vector<NodeReport> nodes;
    int h2d_count = 0, d2h_count = 0;
    double h2d_bytes = 0, d2h_bytes = 0;
    double peak_device_bytes = 0;
    double wall_ms = 0;
    std::vector<std::string> notes;
    std::vector<std::string> outputs; ///< files written

    nlohmann::json to_json() const;
    std::string table() const; ///< for --profile
};

/// A failure while running: the node, where it is in the file, and the operator's message.
class RunError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// One timed piece of a run, for traces (RunOptions::on_span): a node, or a transfer.
struct Span {
    std::string kind;    ///< "node", "upload" or "download"
    int node = -1;       ///< the node; for a transfer, the producer of the image it moves
    std::string id, op;  ///< node id and op name (a transfer: the producer's id, and kind)
    std::string backend; ///< "cpu" or "cuda"
    int device = -1;     ///< the CUDA device of a CUDA node or a transfer; -1 on the CPU
    int stream = -1;     ///< the plan's stream index; -1 on the CPU
    const void* stream_handle = nullptr; ///< the CUDA stream itself: unique while it lives
    std::thread::id thread;              ///< the thread that ran a CPU node
    /// CPU nodes: wall time around run_cpu. CUDA nodes and transfers: the times of their
    /// events on the GPU, mapped onto this clock through an event synchronised at the start.
    std::chrono::steady_clock::time_point start, end;
};

/// What consecutive runs can share instead of creating their own (batch runs): the streams,
/// created on first use and kept, and a cache of pinned host buffers. A run borrows the
/// streams while its Executor lives; one RunResources serves one run at a time.
struct RunResources {
    int device = 0;                ///< the device the streams belong to
    std::vector<Stream> streams;   ///< grown to the plan's stream count on first use
    PinnedCache* pinned = nullptr; ///< where pinned staging buffers come from and go back to
};

struct RunOptions {
    bool keep_buffers = false; ///< keep every output (tests, bench); nothing released early
    bool skip_sinks = false;   ///< bench: run no save/compare nodes
    /// Data of the graph's external input nodes (host, tightly packed or with pitch).
    std::map<int, pf_image> externals;
    std::function<void(int level, const std::string&)> log; ///< default: stderr
    /// Shared streams and pinned buffers (nullptr: the run creates and frees its own).
    RunResources* resources = nullptr;
    /// Called at the end of run(), on the calling thread, once for every node and transfer
    /// that ran (also when the run failed). Unset: no span is measured.
    std::function<void(const Span&)> on_span;
};

struct BenchRow {
    std::string id, op, backend;
    double median_ms = 0, bytes = 0, gbps = 0, floor_ms = 0, x_floor = 0;
};

class Executor {
  public:
    Executor(const Graph& g, const Plan& p);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    /// Runs the whole plan once. Throws RunError (nothing written) on failure.
    RunReport run(const RunOptions& opt = {});
    /// After run() with keep_buffers: a host copy of a node's output.
    HostImage fetch(int node, int port = 0);
    /// After run() with keep_buffers and skip_sinks: times every compute node `repeat` times on
    /// its inputs in place (after warm-up) and compares with the memory floor.
    std::vector<BenchRow> bench(int repeat, double device_bw, double host_bw);

  private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

/// Host memory bandwidth, bytes/s counting read plus write, of a multithreaded copy.
double measure_host_copy_bandwidth();

} // namespace pixflow::host
