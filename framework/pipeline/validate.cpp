// PipelineSpec -> Graph: resolve ops and parameters against their schemas, wire inputs, find
// cycles, infer shapes in topological order and check every edge's dtype and channel count.
#include "pipeline/pipeline.hpp"

#include "loader/checked_size.hpp"

#include <pixflow/image.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace pixflow::host {

std::string format_value(const pf_value& v) {
    switch (v.type) {
    case PF_PARAM_BOOL: return v.b ? "true" : "false";
    case PF_PARAM_INT: return std::to_string(v.i);
    case PF_PARAM_FLOAT: {
        std::ostringstream o;
        o << v.f;
        return o.str();
    }
    default: return std::string("\"") + (v.s ? v.s : "") + "\"";
    }
}

/// A range bound as written: integers exactly (2147483647, not 2.14748e+09), other numbers
/// with as many digits as a double round-trips.
static std::string num(double x) {
    if (std::abs(x) < 9.007199254740992e15 && x == std::floor(x)) return std::to_string(std::int64_t(x));
    std::ostringstream o;
    o.precision(17);
    o << x;
    std::string shortest = o.str();
    for (int digits = 6; digits < 17; ++digits) { // the fewest digits that give x back
        std::ostringstream t;
        t.precision(digits);
        t << x;
        if (std::stod(t.str()) == x) return t.str();
    }
    return shortest;
}

std::string describe_accepted(const pf_param_desc& d) {
    switch (d.type) {
    case PF_PARAM_BOOL: return "true or false";
    case PF_PARAM_INT:
        return d.has_range ? "an integer in [" + num(d.min) + ", " + num(d.max) + "]" : "an integer";
    case PF_PARAM_FLOAT:
        return d.has_range ? "a number in [" + num(d.min) + ", " + num(d.max) + "]" : "a number";
    case PF_PARAM_CHOICE: {
        std::string s = "one of ";
        for (int k = 0; k < d.n_choices; ++k) s += (k ? ", " : "") + std::string(d.choices[k]);
        return s;
    }
    default: return "a string";
    }
}

std::string describe_ports(std::uint32_t dtypes, std::uint32_t channels) {
    std::string s;
    for (int d = PF_U8; d <= PF_F64; ++d)
        if (dtypes & PF_DTYPE_BIT(d)) s += (s.empty() ? "" : ", ") + std::string(dtype_name(DType(d)));
    std::vector<int> cs;
    for (int c = 1; c <= 4; ++c)
        if (channels & PF_CHANNELS_BIT(c)) cs.push_back(c);
    if (cs.empty()) return s + " with no channel count";
    bool contiguous = cs.back() - cs.front() + 1 == int(cs.size());
    if (cs.size() == 1) return s + " with " + std::to_string(cs[0]) + (cs[0] == 1 ? " channel" : " channels");
    if (contiguous) return s + " with " + std::to_string(cs.front()) + " to " + std::to_string(cs.back()) + " channels";
    s += " with ";
    for (std::size_t k = 0; k < cs.size(); ++k)
        s += std::to_string(cs[k]) + (k + 2 < cs.size() ? ", " : k + 2 == cs.size() ? " or " : "");
    return s + " channels";
}

std::string format_shape(const pf_image& im) {
    return std::to_string(im.width) + "x" + std::to_string(im.height) + " " +
           dtype_name(DType(im.dtype)) + " with " + std::to_string(im.channels) +
           (im.channels == 1 ? " channel" : " channels");
}

int Graph::find(const std::string& id) const {
    for (std::size_t k = 0; k < nodes.size(); ++k)
        if (nodes[k].id == id) return int(k);
    return -1;
}

std::vector<std::pair<int, int>> Graph::consumers(int node, int port) const {
    std::vector<std::pair<int, int>> out;
    for (std::size_t k = 0; k < nodes.size(); ++k)
        for (std::size_t i = 0; i < nodes[k].inputs.size(); ++i)
            if (nodes[k].inputs[i].node == node && nodes[k].inputs[i].port == port)
                out.emplace_back(int(k), int(i));
    return out;
}

std::vector<std::pair<std::string, std::string>> Node::paths(std::uint32_t flag) const {
    std::vector<std::pair<std::string, std::string>> out;
    if (!op) return out;
    for (int k = 0; k < op->desc->n_params; ++k)
        if ((op->desc->params[k].flags & flag) && params[std::size_t(k)].s && *params[std::size_t(k)].s)
            out.emplace_back(op->desc->params[k].name, params[std::size_t(k)].s);
    return out;
}

namespace {

std::string suggest(const std::string& name, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(2, name.size() / 2) + 1;
    for (const auto& c : candidates)
        if (auto d = edit_distance(name, c); d < best_d) best_d = d, best = c;
    return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string list(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "(none)" : s;
}

/// Checks one value against its declaration; returns the error text or "".
std::string resolve_param(const pf_param_desc& d, const RawValue& v, pf_value& out,
                          std::deque<std::string>& strings) {
    out = pf_value{};
    out.type = d.type;
    std::string given = d.name + std::string(" = ") + v.to_toml();
    std::string want = describe_accepted(d);
    switch (d.type) {
    case PF_PARAM_BOOL:
        if (v.kind != RawValue::Kind::boolean) return given + " is not a boolean; expected " + want;
        out.b = v.b;
        return "";
    case PF_PARAM_INT:
        if (v.kind != RawValue::Kind::integer) return given + " is not an integer; expected " + want;
        if (d.has_range && (double(v.i) < d.min || double(v.i) > d.max))
            return given + " is out of range; expected " + want;
        out.i = v.i;
        return "";
    case PF_PARAM_FLOAT: {
        double x;
        if (v.kind == RawValue::Kind::integer) x = double(v.i);
        else if (v.kind == RawValue::Kind::floating) x = v.f;
        else return given + " is not a number; expected " + want;
        if (!std::isfinite(x) || (d.has_range && (x < d.min || x > d.max)))
            return given + " is out of range; expected " + want;
        out.f = x;
        return "";
    }
    case PF_PARAM_CHOICE: {
        if (v.kind != RawValue::Kind::string) return given + " is not a string; expected " + want;
        std::vector<std::string> choices(d.choices, d.choices + d.n_choices);
        if (std::find(choices.begin(), choices.end(), v.s) == choices.end())
            return given + " is not " + want + suggest(v.s, choices);
        out.s = strings.emplace_back(v.s).c_str();
        return "";
    }
    default:
        if (v.kind != RawValue::Kind::string) return given + " is not a string; expected " + want;
        out.s = strings.emplace_back(v.s).c_str();
        return "";
    }
}

bool valid_backend(const std::string& b) { return b == "auto" || b == "cpu" || b == "cuda"; }

} // namespace

Graph build_graph(const PipelineSpec& spec, const Registry& reg) {
    Graph g;
    g.file = spec.file;
    g.name = spec.name;
    std::vector<Diagnostic> errs;
    auto err = [&](const SourceLoc& l, const std::string& node, std::string msg) {
        errs.push_back(Diagnostic{l, node, std::move(msg)});
    };
    if (!valid_backend(spec.backend))
        err(spec.backend_loc, "", "backend = \"" + spec.backend + "\" is not one of auto, cpu, cuda");

    std::vector<std::string> ids;
    for (const NodeSpec& ns : spec.nodes) ids.push_back(ns.id);
    std::vector<std::string> op_names;
    for (const auto& [name, info] : reg.ops()) op_names.push_back(name);

    // 1. ops and parameters
    for (const NodeSpec& ns : spec.nodes) {
        Node& n = g.nodes.emplace_back();
        n.id = ns.id;
        n.loc = ns.loc;
        n.backend = ns.backend.value_or(spec.backend);
        n.backend_loc = ns.backend ? ns.backend_loc : spec.backend_loc;
        n.backend_explicit = ns.backend.has_value();
        if (ns.backend && !valid_backend(*ns.backend))
            err(ns.backend_loc, n.id, "backend = \"" + *ns.backend + "\" is not one of auto, cpu, cuda");
        if (ns.external) {
            n.outputs = {*ns.external};
            continue;
        }
        if (ns.op.empty()) continue; // reported by the parser
        n.op = reg.find(ns.op);
        if (!n.op) {
            std::string msg = "unknown op '" + ns.op + "'";
            if (auto why = reg.rejected_reason_for(ns.op); !why.empty())
                msg += "; " + why;
            else {
                auto close = reg.closest(ns.op);
                msg += close.empty() ? "; see `pixflow ops` for the list"
                                     : "; did you mean " + list(close) + "? (see `pixflow ops`)";
                msg += ". Plugins are searched in " + reg.search_path_text() +
                       "; add a folder with --plugin-path DIR or $PIXFLOW_PLUGIN_PATH";
            }
            err(ns.op_loc, n.id, msg);
            continue;
        }
        const pf_op_desc& d = *n.op->desc;
        std::vector<std::string> pnames;
        for (int k = 0; k < d.n_params; ++k) pnames.emplace_back(d.params[k].name);
        for (const auto& [key, value] : ns.params)
            if (std::find(pnames.begin(), pnames.end(), key) == pnames.end())
                err(value.loc, n.id,
                    "unknown parameter '" + key + "' for op " + d.name + suggest(key, pnames) +
                        "; accepted: " + list(pnames) + (d.n_inputs ? ", input/inputs, backend" : ", backend"));
        n.params.resize(std::size_t(d.n_params));
        for (int k = 0; k < d.n_params; ++k) {
            const pf_param_desc& pd = d.params[k];
            auto it = std::find_if(ns.params.begin(), ns.params.end(),
                                   [&](auto& kv) { return kv.first == pd.name; });
            if (it == ns.params.end()) {
                if (pd.flags & PF_PARAM_REQUIRED) {
                    err(ns.loc, n.id, std::string("missing parameter '") + pd.name + "' of op " + d.name +
                                          "; expected " + describe_accepted(pd) + " (" + pd.doc + ")");
                    continue;
                }
                n.params[std::size_t(k)] = pd.default_value;
                n.params[std::size_t(k)].type = pd.type;
                if (pd.default_value.s) n.params[std::size_t(k)].s = n.strings->emplace_back(pd.default_value.s).c_str();
                continue;
            }
            n.param_locs[pd.name] = it->second.loc;
            if (auto e = resolve_param(pd, it->second, n.params[std::size_t(k)], *n.strings); !e.empty())
                err(it->second.loc, n.id, e);
        }
    }

    // 2. inputs
    for (std::size_t k = 0; k < spec.nodes.size(); ++k) {
        const NodeSpec& ns = spec.nodes[k];
        Node& n = g.nodes[k];
        if (!n.op) continue;
        const pf_op_desc& d = *n.op->desc;
        std::vector<std::string> ports;
        for (int p = 0; p < d.n_inputs; ++p) ports.emplace_back(d.inputs[p].name);
        n.inputs.assign(std::size_t(d.n_inputs), Node::Input{});
        if (d.n_inputs == 0 && !ns.inputs.empty()) {
            err(ns.inputs[0].loc, n.id, std::string("op ") + d.name + " takes no input");
            continue;
        }
        if (d.n_inputs > 1 && !ns.inputs_as_table && !ns.inputs.empty()) {
            err(ns.inputs[0].loc, n.id, std::string("op ") + d.name + " has several inputs; write inputs = { " +
                                            list(ports) + " = \"node\" } instead of input");
            continue;
        }
        for (const InputSpec& in : ns.inputs) {
            int port = 0;
            if (!in.port.empty()) {
                auto it = std::find(ports.begin(), ports.end(), in.port);
                if (it == ports.end()) {
                    err(in.loc, n.id, "op " + std::string(d.name) + " has no input '" + in.port + "'" +
                                          suggest(in.port, ports) + "; inputs: " + list(ports));
                    continue;
                }
                port = int(it - ports.begin());
            }
            int producer = g.find(in.node);
            if (producer < 0) {
                err(in.loc, n.id, "input '" + in.node + "' is not a node" + suggest(in.node, ids) +
                                      "; nodes: " + list(ids));
                continue;
            }
            if (producer == int(k)) {
                err(in.loc, n.id, "takes its own output as input");
                continue;
            }
            const Node& pn = g.nodes[std::size_t(producer)];
            int out_port = 0;
            if (!in.out_port.empty()) {
                std::vector<std::string> outs;
                if (pn.op)
                    for (int p = 0; p < pn.op->desc->n_outputs; ++p) outs.emplace_back(pn.op->desc->outputs[p].name);
                else
                    outs.emplace_back("out");
                auto it = std::find(outs.begin(), outs.end(), in.out_port);
                if (it == outs.end()) {
                    err(in.loc, n.id, "node '" + in.node + "' has no output '" + in.out_port + "'" +
                                          suggest(in.out_port, outs) + "; outputs: " + list(outs));
                    continue;
                }
                out_port = int(it - outs.begin());
            } else if (pn.op && pn.op->desc->n_outputs == 0) {
                err(in.loc, n.id, "node '" + in.node + "' (" + pn.op->desc->name + ") produces no image");
                continue;
            }
            n.inputs[std::size_t(port)] = Node::Input{producer, out_port, in.loc};
        }
        for (int p = 0; p < d.n_inputs; ++p)
            if (n.inputs[std::size_t(p)].node < 0 &&
                std::none_of(ns.inputs.begin(), ns.inputs.end(), [&](auto& i) {
                    return i.port == d.inputs[p].name || (i.port.empty() && p == 0);
                }))
                err(ns.loc, n.id, std::string("input '") + d.inputs[p].name + "' of op " + d.name +
                                      " is not connected; add " +
                                      (d.n_inputs == 1 ? "input = \"<node>\"" : "inputs = { " + std::string(d.inputs[p].name) + " = \"<node>\" }"));
    }
    if (!errs.empty()) throw UserError(errs);

    // 3. cycles and topological order (Kahn); what is left over lies on or behind a cycle.
    std::size_t N = g.nodes.size();
    std::vector<int> indeg(N, 0);
    for (std::size_t k = 0; k < N; ++k)
        for (const auto& in : g.nodes[k].inputs) indeg[k] += in.node >= 0;
    std::vector<int> ready;
    for (std::size_t k = 0; k < N; ++k)
        if (!indeg[k]) ready.push_back(int(k));
    while (!ready.empty()) {
        int v = ready.front();
        ready.erase(ready.begin());
        g.order.push_back(v);
        for (std::size_t k = 0; k < N; ++k)
            for (const auto& in : g.nodes[k].inputs)
                if (in.node == v && --indeg[k] == 0) ready.push_back(int(k));
    }
    if (g.order.size() != N) {
        // Walk predecessors from a leftover node until one repeats: that loop is the cycle.
        int v = -1;
        for (std::size_t k = 0; k < N; ++k)
            if (indeg[k]) v = int(k);
        std::vector<int> path;
        while (std::find(path.begin(), path.end(), v) == path.end()) {
            path.push_back(v);
            for (const auto& in : g.nodes[std::size_t(v)].inputs)
                if (in.node >= 0 && indeg[std::size_t(in.node)]) {
                    v = in.node;
                    break;
                }
        }
        std::vector<std::string> cycle;
        for (auto it = std::find(path.begin(), path.end(), v); it != path.end(); ++it)
            cycle.push_back(g.nodes[std::size_t(*it)].id);
        std::reverse(cycle.begin(), cycle.end());
        std::string s;
        for (const auto& c : cycle) s += c + " -> ";
        s += cycle.front();
        throw UserError(Diagnostic{g.nodes[std::size_t(v)].loc, g.nodes[std::size_t(v)].id,
                                   "the graph has a cycle: " + s + "; a pipeline must be acyclic"});
    }

    // 4. shapes, in order; each edge checked against the consumer's port
    for (int v : g.order) {
        Node& n = g.nodes[std::size_t(v)];
        if (!n.op) continue;
        const pf_op_desc& d = *n.op->desc;
        std::vector<pf_image> ins;
        bool ok = true;
        for (int p = 0; p < d.n_inputs; ++p) {
            const auto& in = n.inputs[std::size_t(p)];
            const Node& pn = g.nodes[std::size_t(in.node)];
            if (pn.outputs.size() <= std::size_t(in.port)) {
                ok = false; // producer failed inference: already reported
                continue;
            }
            pf_image s = pn.outputs[std::size_t(in.port)];
            const pf_port_desc& port = d.inputs[p];
            if (!(port.dtypes & PF_DTYPE_BIT(s.dtype)) || !(port.channels & PF_CHANNELS_BIT(s.channels))) {
                bool dtype_ok = port.dtypes & PF_DTYPE_BIT(s.dtype);
                std::string hint = !dtype_ok ? " (insert a convert node)"
                                   : (port.channels & PF_CHANNELS_BIT(1)) && s.channels >= 3 ? " (insert a grayscale node)"
                                                                                               : "";
                err(in.loc, n.id, std::string("input '") + port.name + "' gets " + format_shape(s) +
                                      " from '" + pn.id + "'; op " + d.name + " accepts " +
                                      describe_ports(port.dtypes, port.channels) + hint);
                ok = false;
            }
            ins.push_back(s);
        }
        if (!ok) continue;
        n.outputs.assign(std::size_t(d.n_outputs), pf_image{sizeof(pf_image), 0, 0, 0, 0, PF_HOST, 0, nullptr});
        char buf[1024] = {0};
        int32_t st = d.infer(n.params.data(), d.n_params, ins.data(), int32_t(ins.size()),
                             n.outputs.data(), d.n_outputs, buf, sizeof buf);
        buf[sizeof buf - 1] = '\0'; // the plugin may have left it unterminated
        if (st != PF_OK) {
            SourceLoc l = n.loc;
            // Point at the parameter the message names or quotes, if any.
            std::string msg(buf);
            for (int k = 0; k < d.n_params; ++k) {
                auto it = n.param_locs.find(d.params[k].name);
                if (it == n.param_locs.end()) continue;
                const char* val = n.params[std::size_t(k)].s;
                if (msg.find(d.params[k].name) != std::string::npos || (val && *val && msg.find(val) != std::string::npos))
                    l = it->second;
            }
            err(l, n.id, buf[0] ? buf : "shape inference failed");
            n.outputs.clear();
            continue;
        }
        for (int p = 0; p < d.n_outputs; ++p) {
            pf_image& o = n.outputs[std::size_t(p)];
            if (o.width < 1 || o.height < 1 || o.channels < 1 || o.channels > 4 || o.dtype < PF_U8 || o.dtype > PF_F64) {
                err(n.loc, n.id, std::string("internal: op ") + d.name + " inferred an invalid output " +
                                     std::to_string(o.width) + "x" + std::to_string(o.height));
                n.outputs.clear();
                break;
            }
            if (!checked_image_bytes(o)) { // w * h * channels * sample size must not wrap
                err(n.loc, n.id, std::string("op ") + d.name + " inferred an output of " + shape_for_message(o) +
                                     ", whose size in bytes overflows");
                n.outputs.clear();
                break;
            }
            o.data = nullptr;
            o.device = PF_HOST;
            o.pitch = 0;
        }
    }

    // 5. files: never overwrite what the pipeline reads, never write one file twice
    std::map<std::string, std::string> reads, writes;
    auto canon = [](const std::string& p) { std::error_code ec; return fs::weakly_canonical(p, ec).string(); };
    for (const Node& n : g.nodes)
        for (const auto& [key, path] : n.paths(PF_PARAM_INPUT_PATH)) reads[canon(path)] = n.id;
    for (const Node& n : g.nodes)
        for (const auto& [key, path] : n.paths(PF_PARAM_OUTPUT_PATH)) {
            SourceLoc l = n.param_locs.count(key) ? n.param_locs.at(key) : n.loc;
            std::string c = canon(path);
            if (auto it = reads.find(c); it != reads.end())
                err(l, n.id, key + " = \"" + path + "\" would overwrite the file that node '" + it->second +
                                 "' reads; write to another path");
            else if (auto w = writes.find(c); w != writes.end())
                err(l, n.id, key + " = \"" + path + "\" is also written by node '" + w->second + "'");
            writes[c] = n.id;
        }

    if (!errs.empty()) throw UserError(errs);
    return g;
}

} // namespace pixflow::host
