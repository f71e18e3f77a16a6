// executor/ launch: calling an operator's run_cpu or run_cuda. The only place pf_run_args is
// built: the views of the inputs and outputs, the parameters, the stream and the host callbacks.
// A CUDA launch is bracketed by the node's two events and returns once the work is enqueued; a CPU
// launch is timed on the host clock.
#pragma once

#include "executor/host_callbacks.hpp"
#include "executor/timing.hpp"

#include <vector>

namespace pixflow::host {

struct Launch {
    NodeId v;
    const Node& node;
    const pf_value* params; ///< one per schema parameter (output paths replaced)
    const std::vector<pf_image>& inputs;
    const std::vector<pf_image>& outputs;
    const Stream* stream;                      ///< the node's stream on CUDA; nullptr on the CPU
    const char* backend;                       ///< "cpu" or "cuda", for messages
    const pf_strip* strip = nullptr;           ///< a strip of a streamed chain: timed per strip
    const pf_collective* collective = nullptr; ///< a node run split over processes (ChainSplit)
};

/// "<op> on <backend>": how a failing node is named while running.
std::string launch_context(const Node& n, const char* backend);

/// Launches l.node's operator once. On failure the operator's message goes to run.fail (the
/// user's for PF_ERR_INVALID and PF_ERR_UNSUPPORTED) and launch returns false.
/// `kept` is the Executor's store of persistent blocks (pf_host.persistent).
bool launch(const Launch& l, RunSignals& run, DeviceMemoryCounter& device_bytes, PersistentStore& kept, Timings& t);

} // namespace pixflow::host
