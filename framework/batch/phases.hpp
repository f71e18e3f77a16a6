// batch/ the phases of run_batch (runner.cpp), each in the file named here. Private to batch/.
//   checks.cpp   1. one load node, at least one save node; 2. the inputs and their output names;
//                3. the devices and one full compile with the first input whose header reads
//   workers.cpp  4. the CPU, or one worker per CUDA device, with what each reuses
//   runner.cpp   5. output folders; 6. the images through a tbb::parallel_pipeline (isolate.cpp:
//                in worker processes); 7. the totals
#pragma once

#include "batch/batch.hpp"
#include "batch/memory_budget.hpp"
#include "compile/compile.hpp"
#include "device/device.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pixflow::host::batch {

/// A node whose path parameter the batch rewrites per image.
struct PathNode {
    std::size_t index; ///< in spec.nodes
    std::string id;
    std::string param; ///< the path parameter's name
    std::string ext;   ///< saves: the extension of the configured path (".png")
};

/// What phases 1 to 3 decide before any image runs.
struct BatchPlan {
    PathNode load;
    std::vector<PathNode> saves;
    std::vector<BatchInput> inputs;
    std::vector<std::vector<std::string>> out_paths; ///< per input, per save node
    CompileOptions compile;                          ///< --backend, --no-fuse, budgets, --strip-rows
    Budget host_budget, device_budget;               ///< of all the images in flight (memory_budget.hpp)
    std::vector<int> devices;                        ///< CUDA devices to use
    bool uses_cuda = false;
    std::vector<std::string> notes;
    std::vector<std::string> warnings; ///< the plan's (operators that disagree), for every image

    /// The spec of image i: its input, its outputs.
    PipelineSpec spec_for(const PipelineSpec& spec, std::size_t i) const;
};

/// Phases 1 to 3; throws UserError for what is wrong before any image runs.
BatchPlan check_batch(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt);

/// The files a batch reads and writes: the pipeline file, the inputs and @lists, the outputs.
std::vector<NamedPath> batch_files(const PipelineSpec& spec, const BatchOptions& opt, const BatchPlan& b);

/// The next image this process runs: the next input in order (`next` counts them), or the
/// distribution's choice (opt.distribution); nullopt when none is left.
inline std::optional<std::size_t> next_image(const BatchOptions& opt, std::size_t& next, std::size_t n) {
    if (opt.distribution) return opt.distribution->next();
    if (next >= n) return std::nullopt;
    return next++;
}

/// A UserError's diagnostics on one line, "; "-separated.
inline std::string error_text(const UserError& e) {
    std::string s;
    for (const auto& d : e.diagnostics()) s += (s.empty() ? "" : "; ") + d.str();
    return s;
}

/// A stream set with its worker's pinned cache: what one image in flight on a device uses.
struct Lane {
    RunResources res;
    bool busy = false;
};

/// The CPU, or one CUDA device with everything it reuses from image to image.
struct Worker {
    int device = -1; ///< -1: the CPU
    std::string name;
    std::unique_ptr<PinnedCache> pinned;
    std::vector<std::unique_ptr<Lane>> lanes;
    int active = 0;
};

/// Phase 4: the workers of a batch, and the choice of one per image.
class Workers {
  public:
    /// The CPU, or one worker per device (each keeping its device pool); their names go to `names`.
    Workers(const BatchPlan& plan, std::vector<std::string>& names);
    /// The worker with the fewest images in flight, and a free lane of it.
    std::pair<Worker*, Lane*> acquire();
    void release(Worker* w, Lane* l);
    const std::vector<std::unique_ptr<Worker>>& all() const { return m_all; }

  private:
    std::vector<std::unique_ptr<Worker>> m_all;
    std::mutex m_mu;
};

} // namespace pixflow::host::batch
