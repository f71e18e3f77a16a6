// compile/: the one compile step. parse (with --set / set() overrides) -> validate -> plan ->
// fuse, in this one place, for every caller: the CLI's run, bench, validate and graph, the batch
// runner (per image), the embedding API (pixflow::Pipeline) and the operator test harness.
// Nothing runs here; every user error is a UserError with file:line:col diagnostics.
#pragma once

#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pixflow::host {

struct CompileOptions {
    std::string backend; ///< --backend: the default for nodes that set none ("" keeps the pipeline's)
    bool fuse = true;    ///< false: --no-fuse
    int device = 0;      ///< the CUDA device to plan for (a bound device image sets it)
    /// Images bound to `memory` nodes, by node id: their shape and location (data unused). The
    /// node takes the image's shape (a declared one must agree) and runs where the image lies.
    std::map<std::string, pf_image> inputs;
    /// Outputs the caller reads itself, "node" or "node.port" (the embedding API's output()):
    /// no note says that no node reads them.
    std::set<std::string> outputs_read;
    /// false: no note when the pipeline has no sink (the embedding API, whose results are caller
    /// memory rather than files).
    bool note_no_sink = true;
    /// A value for a parameter on every node whose operator declares it and whose pipeline (or
    /// --set) does not set it: "max_pixels" -> 10000 from `--max-pixels 10000`. The value's
    /// SourceLoc names the option, so an error about it does.
    std::map<std::string, RawValue> param_defaults;
    /// Memory budgets of the run's buffers in bytes (--memory-limit, --device-memory-limit); 0:
    /// 3/4 of the host memory available now (MemAvailable) and of the device memory free now. A
    /// run whose estimate exceeds one streams its chains in strips (planner/strips.hpp), or is
    /// refused before anything runs when whole-image nodes alone exceed it.
    std::size_t memory_limit = 0, device_memory_limit = 0;
    /// Where each given budget came from, for messages; "": the option (--memory-limit,
    /// --device-memory-limit). A batch sets its own ("3/4 of ... when the batch started").
    std::string memory_limit_from, device_memory_limit_from;
    /// --strip-rows: every chain in strips of this many rows of its last output (0: as needed).
    int strip_rows = 0;
    /// false: no strips, whatever the budget (bench times each node on its whole images).
    bool strips = true;
    /// false: sinks never join a streamed chain (StripOptions::stream_sinks; one image over MPI ranks).
    bool stream_sinks = true;
    /// Tests: every node of a streamed chain is a pipeline stage of its own
    /// (StripOptions::stage_per_node), so CPU chains take the pipelined path too.
    bool strip_stage_per_node = false;
    /// --devices on one image: two or more GPUs, the first `device`, over which each streamed chain
    /// of CUDA nodes spreads its strips (StripOptions::devices).
    std::vector<int> strip_devices;
};

/// MemAvailable of /proc/meminfo in bytes (0 when it cannot be read): the default host budget
/// is 3/4 of it.
std::size_t available_host_bytes();

/// A size as --memory-limit takes it: bytes, or a number with K, M, G or T (powers of 1024,
/// optionally followed by "iB" or "B"): "512M", "1.5GiB", "4096". Throws UserError naming
/// `option` and what is accepted.
std::size_t parse_byte_size(const std::string& text, const std::string& option);

/// The graph as planned, and the plan, whose notes and warnings say what compiling noticed:
/// CUDA fallbacks, fused chains, outputs no node reads, a pipeline that writes nothing (notes);
/// nodes a fusion pairs that disagree (warnings).
struct Compiled {
    Graph graph;
    Plan plan;
};

/// validate -> plan -> fuse of a parsed pipeline.
Compiled compile(const PipelineSpec& spec, const Registry& reg, const CompileOptions& opt = {});
/// parse -> validate -> plan -> fuse of a pipeline file.
Compiled compile_file(const std::filesystem::path& file, const std::vector<std::string>& sets, const Registry& reg,
                      const CompileOptions& opt = {});

} // namespace pixflow::host
