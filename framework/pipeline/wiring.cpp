// Phases 2 and 3 of build_graph: every input wired to a (producer, port), then the topological
// order (Kahn's algorithm), or the cycle that prevents one.
#include "pipeline/validate_phases.hpp"

#include <algorithm>

namespace pixflow::host::validate {
namespace {

/// The output port of `producer` that `in` names, or -1 (with the error added).
int producer_port(const InputSpec& in, const Node& consumer, const Node& pn, Errors& errs) {
    if (in.out_port.empty()) {
        if (pn.op && pn.op->desc->n_outputs == 0) {
            add(errs, in.loc, consumer.id, "node '" + in.node + "' (" + pn.op->desc->name + ") produces no image");
            return -1;
        }
        return 0;
    }
    std::vector<std::string> outs;
    if (pn.op)
        for (int p = 0; p < pn.op->desc->n_outputs; ++p) outs.emplace_back(pn.op->desc->outputs[p].name);
    else
        outs.emplace_back("out");
    auto it = std::find(outs.begin(), outs.end(), in.out_port);
    if (it != outs.end()) return int(it - outs.begin());
    add(errs, in.loc, consumer.id,
        "node '" + in.node + "' has no output '" + in.out_port + "'" + did_you_mean(in.out_port, outs) +
            "; outputs: " + join_list(outs));
    return -1;
}

} // namespace

/// 2. The inputs of node v: each (producer, port) it reads, every input port connected.
void wire_inputs(const NodeSpec& ns, NodeId v, Graph& g, const std::vector<std::string>& ids, Errors& errs) {
    Node& n = g.nodes[v];
    if (!n.op) return;
    const pf_op_desc& d = *n.op->desc;
    std::vector<std::string> ports;
    for (int p = 0; p < d.n_inputs; ++p) ports.emplace_back(d.inputs[p].name);
    n.inputs.assign(std::size_t(d.n_inputs), Node::Input{});
    if (d.n_inputs == 0 && !ns.inputs.empty()) {
        add(errs, ns.inputs[0].loc, n.id, std::string("op ") + d.name + " takes no input");
        return;
    }
    if (d.n_inputs > 1 && !ns.inputs_as_table && !ns.inputs.empty()) {
        add(errs, ns.inputs[0].loc, n.id,
            std::string("op ") + d.name + " has several inputs; write inputs = { " + join_list(ports) +
                " = \"node\" } instead of input");
        return;
    }
    for (const InputSpec& in : ns.inputs) {
        int port = 0;
        if (!in.port.empty()) {
            auto it = std::find(ports.begin(), ports.end(), in.port);
            if (it == ports.end()) {
                add(errs, in.loc, n.id,
                    "op " + std::string(d.name) + " has no input '" + in.port + "'" + did_you_mean(in.port, ports) +
                        "; inputs: " + join_list(ports));
                continue;
            }
            port = int(it - ports.begin());
        }
        NodeId producer = g.find(in.node);
        if (!producer.valid()) {
            add(errs, in.loc, n.id,
                "input '" + in.node + "' is not a node" + did_you_mean(in.node, ids) + "; nodes: " + join_list(ids));
            continue;
        }
        if (producer == v) {
            add(errs, in.loc, n.id, "takes its own output as input");
            continue;
        }
        int out_port = producer_port(in, n, g.nodes[producer], errs);
        if (out_port >= 0) n.inputs[std::size_t(port)] = Node::Input{producer, out_port, in.loc};
    }
    for (int p = 0; p < d.n_inputs; ++p)
        if (!n.inputs[std::size_t(p)].node.valid() && std::none_of(ns.inputs.begin(), ns.inputs.end(), [&](auto& i) {
                return i.port == d.inputs[p].name || (i.port.empty() && p == 0);
            }))
            add(errs, ns.loc, n.id,
                std::string("input '") + d.inputs[p].name + "' of op " + d.name + " is not connected; add " +
                    (d.n_inputs == 1 ? "input = \"<node>\""
                                     : "inputs = { " + std::string(d.inputs[p].name) + " = \"<node>\" }"));
}

/// 3. Kahn's algorithm: g.order, or a UserError naming a cycle (what is left over lies on or
/// behind one). Linear in nodes and edges: each node's consumers are listed once up front, in
/// node order, so the order is the same as visiting every node for each one taken.
void order_nodes(Graph& g) {
    NodeMap<int> indeg(g.nodes.size(), 0);
    NodeMap<std::vector<NodeId>> consumers(g.nodes.size());
    for (NodeId v : g.nodes.ids())
        for (const auto& in : g.nodes[v].inputs)
            if (in.node.valid()) {
                ++indeg[v];
                consumers[in.node].push_back(v); // once per input: two inputs from one node, twice
            }
    std::vector<NodeId> ready; // a FIFO: taken from `next` on
    for (NodeId v : g.nodes.ids())
        if (!indeg[v]) ready.push_back(v);
    for (std::size_t next = 0; next < ready.size(); ++next) {
        NodeId v = ready[next];
        g.order.push_back(v);
        for (NodeId k : consumers[v])
            if (--indeg[k] == 0) ready.push_back(k);
    }
    if (g.order.size() == g.nodes.size()) return;
    // Walk predecessors from a leftover node until one repeats: that loop is the cycle.
    NodeId v;
    for (NodeId k : g.nodes.ids())
        if (indeg[k]) v = k;
    std::vector<NodeId> path;
    NodeMap<char> on_path(g.nodes.size(), 0);
    while (!on_path[v]) {
        on_path[v] = 1;
        path.push_back(v);
        for (const auto& in : g.nodes[v].inputs)
            if (in.node.valid() && indeg[in.node]) {
                v = in.node;
                break;
            }
    }
    std::vector<std::string> cycle;
    for (auto it = std::find(path.begin(), path.end(), v); it != path.end(); ++it) cycle.push_back(g.nodes[*it].id);
    std::reverse(cycle.begin(), cycle.end());
    std::string s;
    for (const auto& c : cycle) s += c + " -> ";
    s += cycle.front();
    throw UserError(
        Diagnostic{g.nodes[v].loc, g.nodes[v].id, "the graph has a cycle: " + s + "; a pipeline must be acyclic", {}});
}

} // namespace pixflow::host::validate
