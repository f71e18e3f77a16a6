// What a valid pipeline computes for nothing: outputs that no node reads, and a pipeline with no
// sink (no node that writes a file or has another effect), whose whole run leaves no trace.
// These are notes, not errors: a pipeline under construction is often like that.
#include "pipeline/pipeline.hpp"

#include <algorithm>

namespace pixflow::host {

std::vector<Diagnostic> unread_outputs(const Graph& g, const std::set<std::string>& read_by_caller) {
    std::vector<Diagnostic> out;
    NodeMap<std::vector<char>> read(g.nodes.size());
    for (NodeId v : g.nodes.ids()) read[v].assign(g.nodes[v].outputs.size(), 0);
    for (const Node& n : g.nodes)
        for (const auto& in : n.inputs)
            if (in.node.valid() && std::size_t(in.port) < read[in.node].size()) read[in.node][std::size_t(in.port)] = 1;
    for (NodeId v : g.nodes.ids()) {
        const Node& n = g.nodes[v];
        if (n.is_external()) continue; // an image the caller handed in
        for (std::size_t p = 0; p < n.outputs.size(); ++p) {
            std::string port = n.op->desc->outputs[p].name;
            if (read[v][p] || read_by_caller.count(n.id + "." + port) || (p == 0 && read_by_caller.count(n.id)))
                continue;
            out.push_back(Diagnostic{n.loc,
                                     n.id,
                                     "output '" + port + "' (" + n.op->desc->name +
                                         ") is read by no node, so it is computed "
                                         "for nothing; read it from another node (input = \"" +
                                         n.id + (p ? "." + port : std::string()) + "\") or remove the node",
                                     {}});
        }
    }
    return out;
}

bool writes_something(const Graph& g) {
    return std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.is_sink(); });
}

} // namespace pixflow::host
