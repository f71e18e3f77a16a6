// Fusion: a graph rewrite between planning and running. A plugin declares (pf_fusion_desc)
// that one of its operators computes a chain of operators in one pass; each place in the graph
// where that chain appears, with nothing else reading the intermediate images and one backend
// for all its nodes, becomes one node of the fused operator. Nothing else changes: the fused node
// reads the chain's inputs, produces its outputs under the last node's id, and the plan is redone.
#include "planner/plan.hpp"

#include <cstring>
#include <set>
#include <tuple>

namespace pixflow::host {

namespace {

int param_index(const pf_op_desc& d, const char* name) {
    for (int k = 0; k < d.n_params; ++k)
        if (std::strcmp(d.params[k].name, name) == 0) return k;
    return -1;
}

bool same_value(const pf_value& a, const pf_value& b) {
    if (a.type != b.type) return false;
    switch (a.type) {
    case PF_PARAM_BOOL: return (a.b != 0) == (b.b != 0);
    case PF_PARAM_INT: return a.i == b.i;
    case PF_PARAM_FLOAT: return a.f == b.f;
    default: return std::strcmp(a.s ? a.s : "", b.s ? b.s : "") == 0;
    }
}

/// The nodes of `f`'s chain starting at `first`, or empty when the graph does not match there.
std::vector<NodeId> match(const Graph& g, const Plan& p, const FusionInfo& f, NodeId first,
                          const std::set<NodeId>& taken) {
    std::vector<NodeId> chain{first};
    for (std::size_t k = 0;; ++k) {
        NodeId v = chain.back();
        const Node& n = g.nodes[v];
        if (taken.count(v) || !n.op || n.op->desc->name != f.chain[k]) return {};
        if (p.backend[v] != p.backend[first]) return {};
        if (k + 1 == f.chain.size()) break;
        // An intermediate: its first output feeds exactly the next node's first input, and no
        // other output of it is read.
        if (n.is_sink() || n.outputs.empty()) return {};
        for (std::size_t port = 1; port < n.outputs.size(); ++port)
            if (!g.consumers(v, int(port)).empty()) return {};
        auto cons = g.consumers(v, 0);
        if (cons.size() != 1 || cons[0].second != 0) return {};
        if (g.nodes[cons[0].first].inputs.size() != 1) return {};
        chain.push_back(cons[0].first);
    }
    return chain;
}

/// The fused node for `chain`, or nullopt (with `why`) when parameters or shapes do not allow it.
std::optional<Node> fused_node(const Graph& g, const Plan& p, const FusionInfo& f, const std::vector<NodeId>& chain,
                               std::string& why) {
    const pf_fusion_desc& fd = *f.desc;
    const pf_op_desc& op = *f.fused->desc;
    auto node = [&](int k) -> const Node& { return g.nodes[chain[std::size_t(k)]]; };
    auto value = [&](int k, const char* param) -> const pf_value* {
        int i = param_index(*node(k).op->desc, param);
        return i < 0 ? nullptr : &node(k).params[std::size_t(i)];
    };
    for (int j = 0; j < fd.n_same; ++j) {
        const pf_fusion_same& c = fd.same[j];
        const pf_value* a = value(c.node_a, c.param_a);
        const pf_value* b = value(c.node_b, c.param_b);
        if (!a || !b) {
            why = "fusion " + std::string(fd.fused_op) + " names a parameter its chain does not have";
            return std::nullopt;
        }
        if (!same_value(*a, *b)) return std::nullopt; // a legitimate mismatch: run unfused
    }
    if (p.backend[chain[0]] == Backend::cuda && !f.fused->has_cuda()) return std::nullopt;

    const Node& last = node(int(chain.size()) - 1);
    Node n;
    n.id = last.id;
    n.op = f.fused;
    n.loc = node(0).loc;
    n.inputs = node(0).inputs;
    n.outputs = last.outputs;
    n.backend = backend_name(p.backend[chain[0]]);
    n.backend_loc = node(0).backend_loc;
    n.backend_explicit = true; // the chain's planned backend, whatever asked for it
    n.param_locs = last.param_locs;
    for (NodeId k : chain) n.replaced.push_back(g.nodes[k].id);
    n.params.resize(std::size_t(op.n_params));
    for (int k = 0; k < op.n_params; ++k) n.params[std::size_t(k)] = op.params[k].default_value;
    for (int j = 0; j < fd.n_binds; ++j) {
        const pf_fusion_bind& b = fd.binds[j];
        int dst = param_index(op, b.fused_param);
        const pf_value* src = value(b.node, b.param);
        if (dst < 0 || !src || src->type != op.params[dst].type) {
            why = "fusion " + std::string(fd.fused_op) + " binds parameter '" + b.fused_param +
                  "' to a missing or differently typed parameter";
            return std::nullopt;
        }
        pf_value v = *src;
        if (v.s) v.s = n.strings->emplace_back(v.s).c_str();
        n.params[std::size_t(dst)] = v;
    }
    // The fused operator must agree on the shapes it will produce.
    std::vector<pf_image> in;
    for (const auto& i : n.inputs) in.push_back(g.nodes[i.node].outputs[std::size_t(i.port)]);
    std::vector<pf_image> out(std::size_t(op.n_outputs));
    char err[512] = {0};
    if (int(in.size()) != op.n_inputs || op.n_outputs != int(last.outputs.size()) ||
        op.infer(n.params.data(), op.n_params, in.data(), int32_t(in.size()), out.data(), int32_t(out.size()), err,
                 sizeof err) != PF_OK) {
        err[sizeof err - 1] = '\0'; // the plugin may have left it unterminated
        why = "fusion " + std::string(fd.fused_op) + " refused the chain ending at '" + last.id + "'" +
              (err[0] ? std::string(": ") + err : std::string());
        return std::nullopt;
    }
    for (std::size_t k = 0; k < out.size(); ++k)
        if (out[k].width != last.outputs[k].width || out[k].height != last.outputs[k].height ||
            out[k].channels != last.outputs[k].channels || out[k].dtype != last.outputs[k].dtype) {
            why = "fusion " + std::string(fd.fused_op) + " would change the shape at '" + last.id + "'";
            return std::nullopt;
        }
    return n;
}

/// Where parameter `param` of node n got its value: its line, or the node's for a default.
std::string value_where(const Node& n, const std::string& param, const pf_value& v, SourceLoc& loc) {
    auto it = n.param_locs.find(param);
    loc = it != n.param_locs.end() ? it->second : n.loc;
    return param + " = " + format_value(v) + (it != n.param_locs.end() ? "" : " (the default)");
}

/// Every chain of `f`'s operators that starts at `first`, following each consumer of the first
/// output that reads it as its first input (a node may feed several: each path is a chain).
void chains_from(const Graph& g, const FusionInfo& f, std::vector<NodeId>& chain,
                 std::vector<std::vector<NodeId>>& found) {
    if (chain.size() == f.chain.size()) {
        found.push_back(chain);
        return;
    }
    for (const auto& [k, input] : g.consumers(chain.back(), 0)) {
        const Node& n = g.nodes[k];
        if (input != 0 || !n.op || n.op->desc->name != f.chain[chain.size()]) continue;
        chain.push_back(k);
        chains_from(g, f, chain, found);
        chain.pop_back();
    }
}

} // namespace

std::vector<Diagnostic> fusion_disagreements(const Graph& g, const Registry& reg) {
    std::vector<Diagnostic> out;
    std::set<std::tuple<NodeId, std::string, NodeId, std::string>> reported; // a pair once, however many chains
    for (const FusionInfo& f : reg.fusions()) {
        const pf_fusion_desc& fd = *f.desc;
        for (NodeId v : g.order) {
            const Node& first = g.nodes[v];
            if (!first.op || first.op->desc->name != f.chain[0]) continue;
            std::vector<NodeId> chain{v};
            std::vector<std::vector<NodeId>> found;
            chains_from(g, f, chain, found);
            for (const auto& c : found)
                for (int j = 0; j < fd.n_same; ++j) {
                    const pf_fusion_same& s = fd.same[j];
                    if (s.node_a < 0 || s.node_b < 0 || std::size_t(s.node_a) >= c.size() ||
                        std::size_t(s.node_b) >= c.size())
                        continue;
                    const Node& a = g.nodes[c[std::size_t(s.node_a)]];
                    const Node& b = g.nodes[c[std::size_t(s.node_b)]];
                    int ia = param_index(*a.op->desc, s.param_a), ib = param_index(*b.op->desc, s.param_b);
                    if (ia < 0 || ib < 0) continue; // a bad declaration: fuse() says so
                    const pf_value& va = a.params[std::size_t(ia)];
                    const pf_value& vb = b.params[std::size_t(ib)];
                    if (same_value(va, vb) ||
                        !reported.emplace(c[std::size_t(s.node_a)], s.param_a, c[std::size_t(s.node_b)], s.param_b)
                             .second)
                        continue;
                    SourceLoc la, lb;
                    std::string wa = value_where(a, s.param_a, va, la), wb = value_where(b, s.param_b, vb, lb);
                    out.push_back(Diagnostic{lb,
                                             b.id,
                                             wb + " but node '" + a.id + "' (" + la.str() + ") has " + wa + "; " +
                                                 a.op->desc->name + " and " + b.op->desc->name +
                                                 " belong together: plugin " + f.fused->plugin + " fuses " + f.text() +
                                                 " into " + fd.fused_op +
                                                 " only when they agree, so these nodes run one by one and the "
                                                 "result is most likely not the one meant; set both to the same value",
                                             {}});
                }
        }
    }
    return out;
}

int fuse(Graph& g, Plan& p, const PlanOptions& opt, const Registry& reg) {
    std::set<NodeId> taken;          // nodes already in a fused chain
    std::map<NodeId, Node> fused_at; // last node of a chain -> its fused node
    std::vector<std::string> notes;
    for (const FusionInfo& f : reg.fusions())
        for (NodeId v : g.order) {
            std::vector<NodeId> chain = match(g, p, f, v, taken);
            if (chain.empty()) continue;
            std::string why;
            std::optional<Node> n = fused_node(g, p, f, chain, why);
            if (!n) {
                if (!why.empty()) notes.push_back(why + "; running the nodes one by one");
                continue;
            }
            std::string ids;
            for (NodeId k : chain) ids += (ids.empty() ? "" : ", ") + g.nodes[k].id;
            notes.push_back("fused " + ids + " into one " + f.fused->desc->name + " node (" +
                            backend_name(p.backend[v]) + "); --no-fuse runs them one by one");
            taken.insert(chain.begin(), chain.end());
            fused_at.emplace(chain.back(), std::move(*n));
        }
    if (fused_at.empty()) {
        p.notes.insert(p.notes.end(), notes.begin(), notes.end());
        return 0;
    }

    // Rebuild: drop the chains' nodes, put each fused node where its last node was (that keeps
    // the file order topological), and renumber every input.
    Graph out;
    out.file = g.file;
    out.name = g.name;
    NodeMap<NodeId> new_id(g.nodes.size());
    for (NodeId k : g.nodes.ids()) {
        auto it = fused_at.find(k);
        if (it != fused_at.end()) {
            new_id[k] = out.nodes.next_id();
            out.nodes.push_back(std::move(it->second));
        } else if (!taken.count(k)) {
            new_id[k] = out.nodes.next_id();
            out.nodes.push_back(g.nodes[k]);
        }
    }
    for (Node& n : out.nodes)
        for (auto& in : n.inputs) in.node = new_id[in.node];
    for (NodeId v : g.order)
        if (new_id[v].valid()) out.order.push_back(new_id[v]);
    g = std::move(out);
    g.index();
    p = make_plan(g, opt);
    p.notes.insert(p.notes.end(), notes.begin(), notes.end());
    return int(fused_at.size());
}

} // namespace pixflow::host
