// pixflow/report.hpp: what one run did, as `pixflow run --report FILE` writes it and
// Pipeline::run() returns it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pixflow {

struct NodeReport {
    std::string id, op;
    std::string backend; ///< "cpu" or "cuda"
    /// CPU nodes: wall time of the operator's run. CUDA nodes: GPU time between the events
    /// around its launch; NaN until the device has done the work (see Pipeline::report()).
    double ms = 0;
    std::map<std::string, double> metrics; ///< what the operator recorded (ctx.metric)
    std::vector<std::string> replaced;     ///< a fused node: the nodes it stands for
    /// A node of a streamed chain: the strips it ran in (its ms is their sum); 0 on whole images.
    int strips = 0;
    /// The most scratch memory (ctx.alloc, and ctx.persistent's kept block; host and device) one of
    /// its run calls took, in bytes.
    double scratch_bytes = 0;
};

/// A chain of nodes that ran in horizontal strips (docs/strips.md).
struct StripReport {
    std::vector<std::string> nodes; ///< in data-flow order
    int count = 0;                  ///< strips
    int rows = 0;                   ///< rows of the last node's output per strip
    double ms = 0;                  ///< host time of the chain's step (with setup_ms)
    double setup_ms = 0;            ///< of which before its first strip: its buffers allocated
    std::vector<int> gpus;          ///< the GPUs its strips were spread over (--devices); empty: one
};

struct RunReport {
    std::string pipeline;             ///< [pipeline] name
    std::string file;                 ///< the pipeline's file (or the name given to a string)
    std::string device;               ///< the CUDA device used, "" when none
    std::vector<NodeReport> nodes;    ///< in execution (topological) order
    int h2d_count = 0, d2h_count = 0; ///< uploads and downloads
    double h2d_bytes = 0, d2h_bytes = 0;
    double peak_device_bytes = 0;    ///< high-water mark of the run's device buffers
    double peak_host_bytes = 0;      ///< high-water mark of the run's host image buffers
    std::vector<StripReport> strips; ///< the streamed chains; empty: all on whole images
    double wall_ms = 0;              ///< host time of the whole run
    /// The planner's notes (an auto fallback, a fusion); from Pipeline::run(), also each bound
    /// input copied into a staging buffer and each output copied into the caller's buffer, and why.
    std::vector<std::string> notes;
    /// What is most likely not meant but runs (operators that belong together disagreeing, say),
    /// one diagnostic each: "file:line:col: node 'x': ...". The CLI prints them as `warning:`.
    std::vector<std::string> warnings;
    std::vector<std::string> outputs; ///< files written, each renamed into place

    /// The JSON object of `--report` (keys in alphabetical order, 2-space indent, no newline).
    std::string to_json() const;
    /// The table of `--profile`.
    std::string table() const;
};

} // namespace pixflow
