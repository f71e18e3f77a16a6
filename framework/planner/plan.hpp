// planner/: decides where each node runs and where data must move.
//
//   backend: the node's own, else --backend, else the pipeline's; auto = CUDA when a device is
//            usable and the op has a CUDA implementation. A pipeline-wide "cuda" puts every op
//            that has a CUDA implementation there (CPU-only ops such as load stay on the CPU);
//            "cuda" on a node whose op has none, or without a usable device, is an error.
//   transfers: exactly where a consumer's location differs from its producer's, one per
//            (producer output, destination), shared by every consumer there. A chain of CUDA
//            nodes therefore costs one upload where it starts and one download where it ends.
//   streams: a CUDA node continues the stream of its first device-side producer that has not
//            handed it on yet; siblings get new streams, so independent branches overlap.
//   strips:  (strips.hpp, after fusion) chains of nodes that run in horizontal strips when the
//            run would not fit its memory budget, or when asked.
#pragma once

#include "pipeline/pipeline.hpp"
#include "planner/strips.hpp"

#include <string>
#include <vector>

namespace pixflow::host {

enum class Backend { cpu, cuda };
inline const char* backend_name(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

struct PlanOptions {
    std::string backend_override; ///< replaces the pipeline's default backend ("" = keep)
    bool cuda_usable = false;
    std::string cuda_why; ///< why CUDA is not usable
    int device = 0;
};

struct Transfer {
    NodeId node;           ///< the producer ...
    int port = 0;          ///< ... and its output
    bool to_device = true; ///< upload (host -> device) or download
    int device = 0;
    int stream = -1;                               ///< stream the copy is ordered on
    std::vector<std::pair<NodeId, int>> consumers; ///< (node, input index)
};

struct Plan {
    NodeMap<Backend> backend; ///< per node
    NodeMap<int> stream;      ///< per node: stream index, -1 on the CPU
    int n_streams = 0;
    int device = 0;
    std::vector<Transfer> transfers;
    /// per node, per input: index into transfers, or -1 when read in place
    NodeMap<std::vector<int>> input_transfer;
    std::vector<std::string> notes; ///< e.g. "auto: no usable CUDA device (...); running on CPU"
    /// What is valid but most likely not meant (nodes a fusion pairs that disagree); the CLI
    /// prints them as `warning: <file:line:col>: node 'x': ...`. Set by compile().
    std::vector<Diagnostic> warnings;
    /// Chains that run in horizontal strips (planner/strips.hpp); empty unless plan_strips ran
    /// and a memory budget or --strip-rows asked for them.
    StripPlan strips;

    bool on_device(NodeId node) const { return backend[node] == Backend::cuda; }
    int uploads() const;
    int downloads() const;
};

/// Throws UserError for impossible requests (backend = "cuda" without a device or without a
/// CUDA implementation).
Plan make_plan(const Graph& g, const PlanOptions& opt);

/// Graphviz dot of the planned graph: nodes coloured by backend, transfers as labelled edges.
std::string plan_to_dot(const Graph& g, const Plan& p);

} // namespace pixflow::host

namespace pixflow::host {

/// Fusion: replaces each chain of nodes that a plugin declared a fused operator for (see
/// pf_fusion_desc) by one node of that operator, when every intermediate output has no other
/// consumer and the chain shares one backend that the fused operator also has. The fused node
/// keeps the last node's id and lists the nodes it replaced; the plan is redone for the new graph.
/// Returns the number of chains fused.
int fuse(Graph& g, Plan& p, const PlanOptions& opt, const Registry& reg);

/// Nodes that belong together and disagree: for each chain in `g` that matches a fusion a plugin
/// declares (the same operators, each one's first output feeding the next one's first input),
/// one warning per `same` constraint of that fusion the chain violates, at the second node's
/// parameter, naming both nodes, both values and where each was set. Such a chain is valid and
/// runs unfused, but its result is rarely the one meant (quantize at 20, dequantize at 75).
std::vector<Diagnostic> fusion_disagreements(const Graph& g, const Registry& reg);

} // namespace pixflow::host
