// The phases of build_graph (validate.cpp), one per file: resolve.cpp (1. ops and parameters),
// wiring.cpp (2. inputs, 3. cycles and order), shapes.cpp (4. shapes, 5. file paths). Private.
#pragma once

#include "pipeline/pipeline.hpp"

#include <string>
#include <vector>

namespace pixflow::host::validate {

/// The diagnostics of one phase, thrown together.
using Errors = std::vector<Diagnostic>;
inline void add(Errors& errs, const SourceLoc& l, const std::string& node, std::string msg) {
    errs.push_back(Diagnostic{l, node, std::move(msg), {}});
}

/// " (did you mean 'x'?)" for the candidate closest to `name`, or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);
/// "a, b, c", or "(none)"; past `limit` names, ", ... (N in all)" (a pipeline of 40,000 nodes
/// must not print them all in one message).
std::string join_list(const std::vector<std::string>& v, std::size_t limit = 50);
bool valid_backend(const std::string& b);

/// 1. The op of one node and each of its parameters.
void resolve_node(const PipelineSpec& spec, const NodeSpec& ns, const Registry& reg, Node& n, Errors& errs);
/// 2. The inputs of node v.
void wire_inputs(const NodeSpec& ns, NodeId v, Graph& g, const std::vector<std::string>& ids, Errors& errs);
/// 3. g.order, or a UserError naming a cycle.
void order_nodes(Graph& g);
/// 4. Output shapes, in order.
void infer_shapes(Graph& g, Errors& errs);
/// 5. Output paths.
void check_paths(const Graph& g, Errors& errs);

} // namespace pixflow::host::validate
