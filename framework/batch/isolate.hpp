// batch/ isolated batches (docs/guarantees.md, "Isolation"): the images run in worker processes
// (`pixflow __worker`, worker.cpp) that the main process starts and supervises (isolate.cpp).
//
//   start     posix_spawn of pixflow itself (exec: nothing of the parent's threads, TBB arena or
//             CUDA context is inherited), in its own process group (a Ctrl-C reaches the parent,
//             which stops the workers), with the signal mask and dispositions reset; each worker
//             binds one CUDA device and limits its TBB threads to its share of the CPU
//   one image the parent sends the image's spec; the worker compiles and runs it, telling the
//             parent each temporary it stages (before anything can write it) and each node it
//             enters and leaves; when the run succeeded the parent commits the temporaries
//   a fault   a worker that dies (a signal, exit(), a lost socket) or passes --timeout (SIGKILL)
//             fails its image with the reason and the node it was in; its temporaries are
//             removed, a new worker takes the next image, and the batch goes on
//   the end   the parent closes the sockets; the workers see the end of the stream and exit; on
//             SIGINT/SIGTERM/SIGHUP the parent stops them (SIGTERM, then SIGKILL after 5 s)
//             before it removes its own temporaries. A worker whose parent vanished cleans up
//             and exits within 0.2 s.
#pragma once

#include "batch/phases.hpp"
#include "batch/progress.hpp"
#include "batch/trace.hpp"

namespace pixflow::host::batch {

/// A worker's exit status when an operator called exit() in it (its ExitGuard).
inline constexpr int kWorkerExitCalled = 86;

/// Why this batch runs isolated, or "" when it runs in-process: --isolate, --timeout, or a node
/// whose operator comes from a plugin outside the installation's own plugin folder.
std::string isolation_reason(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt);

/// Phase 6, isolated: every image in one of `workers` worker processes; results, progress,
/// failures and --fail-fast as in-process.
void run_images_isolated(const BatchOptions& opt, const BatchPlan& b, const PipelineSpec& spec, int workers,
                         BatchReport& report, ProgressBar& bar, TraceWriter* trace);

} // namespace pixflow::host::batch
