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

#include <pixflow/report.hpp>

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

class FileTransaction; // executor/output_files.hpp

/// Splits the streamed chains of a run among cooperating processes (mpi/image.hpp: one image
/// over the ranks of an mpirun). Each process runs a contiguous range of a chain's strips; after
/// them the splitter completes the chain's whole output from the others' rows.
class ChainSplit {
  public:
    virtual ~ChainSplit() = default;
    /// The strips [first, second) of chain `ci` (Plan::strips.chains) this process runs.
    virtual std::pair<int, int> strips(int ci) = 0;
    /// After this process's strips of chain `ci`: `out` (the chain's whole output, on the host;
    /// data null when nothing holds it) has its rows [r0, r1). Throws to fail the run.
    virtual void done(int ci, const pf_image& out, int r0, int r1) = 0;
    /// Carried node `i` of chain `ci`, before this process's first strip of it: `carry` (its
    /// state, `bytes` bytes on the host, zero-filled) may be given the state that the strips
    /// above, run by another process, left. Throws to fail the run.
    virtual void carry_in(int /*ci*/, int /*i*/, void* /*carry*/, std::size_t /*bytes*/) {}
    /// ... and after its last strip: the state the strips below start from.
    virtual void carry_out(int /*ci*/, int /*i*/, const void* /*carry*/, std::size_t /*bytes*/) {}
    /// Before node `i + 1` of chain `ci` reads node i's rows in strip `k`: `window` (node i's
    /// strip buffer on the host, rows [win0, win1) of its output) may have rows outside the ones
    /// computed here [out0, out1) filled by the processes that computed them (halo exchange).
    /// Throws to fail the run.
    virtual void halo(int /*ci*/, int /*i*/, int /*k*/, const pf_image& /*window*/) {}
    /// A whole-image CPU node: the collective to run it split with (its op declared PF_OP_SPLIT,
    /// abi.h), or nullptr to run it whole here.
    virtual const pf_collective* collective(NodeId /*v*/) { return nullptr; }
    /// After a node run with a collective (`ok`: it succeeded): completes its outputs `outs`
    /// from the other processes' rows. Throws to fail the run.
    virtual void node_done(NodeId /*v*/, const std::vector<pf_image>& /*outs*/, bool /*ok*/) {}
};

using pixflow::NodeReport;
using pixflow::RunReport;

/// One timed piece of a run, for traces (RunOptions::on_span): a node, or a transfer.
struct Span {
    std::string kind;                    ///< "node", "upload" or "download"
    NodeId node;                         ///< the node; for a transfer, the producer of the image it moves
    std::string id, op;                  ///< node id and op name (a transfer: the producer's id, and kind)
    std::string backend;                 ///< "cpu" or "cuda"
    int device = -1;                     ///< the CUDA device of a CUDA node or a transfer; -1 on the CPU
    int stream = -1;                     ///< the plan's stream index; -1 on the CPU
    const void* stream_handle = nullptr; ///< the CUDA stream itself: unique while it lives
    std::thread::id thread;              ///< the thread that ran a CPU node
    /// CPU nodes: wall time around run_cpu. CUDA nodes and transfers: the times of their
    /// events on the GPU, mapped onto this clock through an event synchronised at the start.
    std::chrono::steady_clock::time_point start, end;
};

/// What consecutive Executors can share instead of creating their own (batch runs): the streams,
/// created on first use and kept, and a cache of pinned host buffers. An Executor borrows the
/// streams from its first run until it is destroyed; one RunResources serves one Executor at a time.
struct RunResources {
    int device = 0;                ///< the device the streams belong to
    std::vector<Stream> streams;   ///< grown to the plan's stream count on first use
    PinnedCache* pinned = nullptr; ///< where pinned staging buffers come from and go back to
};

struct RunOptions {
    bool keep_buffers = false; ///< keep every output (tests, bench); nothing released early
    /// Keep these nodes' outputs after the run (for fetch() and output()) until the next run; a
    /// node no other node reads is always kept.
    std::vector<NodeId> keep;
    bool skip_sinks = false; ///< bench: run no save/compare nodes
    /// The images of external nodes (op-less inputs and bound `memory` nodes): caller memory,
    /// on the host or on the plan's device (in place; never freed or written).
    std::map<NodeId, pf_image> externals;
    /// Outputs a node writes straight into caller memory instead of a buffer of its own; each
    /// must lie where the node runs, with the host's or the device's layout rules (see
    /// Executor::can_write_into).
    std::map<std::pair<NodeId, int>, pf_image> write_into;
    std::function<void(int level, const std::string&)> log; ///< default: stderr
    /// Shared streams and pinned buffers (nullptr: the Executor creates and frees its own).
    RunResources* resources = nullptr;
    /// A caller's CUDA stream (cudaStream_t): the plan's first stream is that stream, every other
    /// stream starts after the work already on it, and it ends after all of the run's device
    /// work. run() then returns without waiting for the device (the host still waits where a
    /// CPU step reads a download). nullptr: the Executor's own streams; run() waits for them.
    void* stream = nullptr;
    /// Called at the end of run(), on the calling thread, once for every node and transfer
    /// that ran (also when the run failed). Unset: no span is measured.
    std::function<void(const Span&)> on_span;
    /// Stage the output files in this transaction and leave the commit to the caller, who adds
    /// its own files (a report) to it; run() then returns the paths it would write. nullptr:
    /// the Executor commits its outputs itself when the run succeeded.
    FileTransaction* files = nullptr;
    /// Called on the thread of the step, right before a node's operator is called (true) and
    /// right after it returned (false); an isolated worker tells its parent which node runs.
    std::function<void(NodeId, bool started)> on_node;
    /// Streamed chains split among processes (mpi/image.hpp); nullptr: every strip runs here.
    ChainSplit* split = nullptr;
};

struct BenchRow {
    std::string id, op, backend;
    double median_ms = 0, bytes = 0, gbps = 0, floor_ms = 0, x_floor = 0;
};

/// Runs one Graph with its Plan, any number of times: buffers, events, streams and the step
/// graph are set up once; each run() only allocates from the pools and launches.
class Executor {
  public:
    Executor(const Graph& g, const Plan& p);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    /// Runs the whole plan once; throws UserError (an operator refused its input or parameters)
    /// or InternalError, with nothing written. With opt.stream the CUDA nodes' times are NaN
    /// until device_times() fills them in.
    RunReport run(const RunOptions& opt = {});
    /// Waits for the last run's device work and fills in its CUDA nodes' times.
    void device_times(RunReport& r);
    /// After run(), for a kept output: the buffer itself (host or device), valid until the next
    /// run, and a host copy of it.
    const pf_image& output(NodeId node, int port = 0) const;
    bool kept(NodeId node, int port = 0) const;
    HostImage fetch(NodeId node, int port = 0);
    /// The stream a kept device output was produced on, ordered after the run (the caller's
    /// stream when one was given).
    const Stream& final_stream() const;
    /// Whether `dest` can be the very buffer node `node` writes its output into (RunOptions::
    /// write_into): where the node runs, 64-byte aligned and packed on the host, 256-byte aligned
    /// rows on the device.
    bool can_write_into(NodeId node, const pf_image& dest) const;
    /// After run() with keep_buffers and skip_sinks: times every compute node `repeat` times on
    /// its inputs in place (after warm-up) and compares with the memory floor.
    std::vector<BenchRow> bench(int repeat, double device_bw, double host_bw);

    struct Impl;

  private:
    std::unique_ptr<Impl> m;
};

/// Host memory bandwidth, bytes/s counting read plus write, of a multithreaded copy.
double measure_host_copy_bandwidth();

} // namespace pixflow::host
