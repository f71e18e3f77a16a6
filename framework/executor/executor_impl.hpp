// executor/ Executor::Impl: the parts of a run, one per file of executor/, held together.
//   executor.cpp       the run itself: set-up, the schedule's loop, finishing, results
//   steps.cpp          what one step does: a node (buffers in and out, launch) or a transfer
//   schedule.*         the step graph and the TBB loop over it
//   buffers.*          images in memory and device-memory accounting
//   launch.*           pf_run_args and the call into the operator
//   host_callbacks.*   pf_host: scratch, log, cancellation, metrics, persistent blocks
//   persistent.*       the blocks nodes keep between their calls (pf_host.persistent)
//   output_files.*     temporaries renamed into place when the run succeeded
//   report.*           the RunReport and trace spans
//   strips.cpp         a streamed chain: its nodes run strip by strip (planner/strips.hpp)
//   bench.cpp          `pixflow bench`: each node timed on its inputs in place
// Private to executor/.
#pragma once

#include "executor/buffers.hpp"
#include "executor/executor.hpp"
#include "executor/host_callbacks.hpp"
#include "executor/output_files.hpp"
#include "executor/persistent.hpp"
#include "executor/schedule.hpp"
#include "executor/timing.hpp"

#include <array>
#include <map>

namespace pixflow::host {

struct Executor::Impl {
    const Graph& g;
    const Plan& p;
    std::vector<Stream> streams;  ///< index = the plan's stream index
    Stream parked;                ///< our own stream 0 while a caller's stream stands in for it
    RunResources* lent = nullptr; ///< where the streams came from, and go back to
    bool streams_ready = false;
    std::string device_name;          ///< for the report (asking the driver is slow: once)
    std::vector<Event> join;          ///< caller's stream: each other stream's end, waited on by it
    Event fork;                       ///< caller's stream: its work so far, waited on by the others
    std::vector<Event> transfer_done; ///< per transfer: its copy, which the host waits for
    Buffers buffers;
    PersistentStore persistent; ///< what nodes keep between their calls
    Schedule schedule;
    Timings timings;
    RunSignals signals;
    OutputFiles files;
    const RunOptions* opt = nullptr;                    ///< during run()
    NodeMap<char> keep, external;                       ///< this run's kept outputs and external nodes
    NodeMap<std::vector<pf_image>> in_views, out_views; ///< reused launch arrays
    bool device_done = true;                            ///< the last run waited for all of its device work
    /// Streamed chains spread over several GPUs (StripChain::gpus): two streams on each GPU but
    /// the plan's own, made at the first run that needs them.
    std::map<int, std::array<Stream, 2>> spread_streams;

    Impl(const Graph& g_, const Plan& p_);

    // executor.cpp
    void take_streams(const RunOptions& o);
    void start(const RunOptions& o);
    void finish_device_work();
    void give_back_streams();
    bool keeps(NodeId v) const { return opt->keep_buffers || keep[v]; }
    // steps.cpp
    void step(int s);
    void run_node(NodeId v);
    void run_transfer(int t);
    bool launch_node(NodeId v);
    // strips.cpp
    void run_chain(int c);
};

} // namespace pixflow::host
