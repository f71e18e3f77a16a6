#include "planner/plan.hpp"

#include <pixflow/image.hpp>

#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace pixflow::host {

int Plan::uploads() const {
    int n = 0;
    for (const auto& t : transfers) n += t.to_device;
    return n;
}
int Plan::downloads() const {
    int n = 0;
    for (const auto& t : transfers) n += !t.to_device;
    return n;
}

namespace {
// A build without CUDA builds no op's CUDA implementation, so "auto" never meets an op that has
// one; it still falls back (to the CPU, for every node), and says so once.
#ifdef PIXFLOW_HOST_WITH_CUDA
constexpr bool kHostHasCuda = true;
#else
constexpr bool kHostHasCuda = false;
#endif
} // namespace

Plan make_plan(const Graph& g, const PlanOptions& opt) {
    Plan p;
    p.device = opt.device;
    std::size_t N = g.nodes.size();
    p.backend.assign(N, Backend::cpu);
    p.stream.assign(N, -1);
    p.input_transfer.resize(N);
    std::vector<Diagnostic> errs;
    bool noted_fallback = false;

    // A pipeline-wide "cuda" (--backend or [pipeline] backend) without a usable device is an
    // error even when no op of this build has a CUDA implementation (a build without CUDA has
    // none): otherwise it would run on the CPU and succeed, which is what "cuda" rules out.
    if (!opt.cuda_usable)
        for (NodeId k : g.nodes.ids()) {
            const Node& n = g.nodes[k];
            if (!n.op || n.backend_explicit) continue;
            bool from_option = !opt.backend_override.empty();
            if ((from_option ? opt.backend_override : n.backend) != "cuda") continue;
            SourceLoc where = from_option ? SourceLoc{"--backend cuda", 0, 0} : n.backend_loc;
            errs.push_back({where, "", "backend = \"cuda\" but " + opt.cuda_why + "; accepted: \"cpu\" or \"auto\""});
            break;
        }

    for (NodeId k : g.nodes.ids()) {
        const Node& n = g.nodes[k];
        if (!n.op) continue; // external inputs live on the host
        std::string want = n.backend;
        if (!n.backend_explicit && !opt.backend_override.empty()) want = opt.backend_override;
        bool has_cuda = n.op->has_cuda();
        if (want == "cuda" && !has_cuda && !n.backend_explicit) {
            // A pipeline-wide or --backend "cuda" means CUDA wherever the op has it; I/O and
            // other CPU-only ops stay on the CPU.
        } else if (want == "cuda") {
            if (!n.backend_explicit && !opt.cuda_usable) {
                // reported once above, for the whole pipeline
            } else if (!has_cuda)
                errs.push_back({n.backend_loc.line ? n.backend_loc : n.loc, n.id,
                                std::string("backend = \"cuda\" but op ") + n.op->desc->name +
                                    " has no CUDA implementation; accepted: \"cpu\" or \"auto\""});
            else if (!opt.cuda_usable)
                errs.push_back({n.backend_loc.line ? n.backend_loc : n.loc, n.id,
                                "backend = \"cuda\" but " + opt.cuda_why + "; accepted: \"cpu\" or \"auto\""});
            else
                p.backend[k] = Backend::cuda;
        } else if (want == "auto") {
            if (has_cuda && opt.cuda_usable)
                p.backend[k] = Backend::cuda;
            else if ((has_cuda || !kHostHasCuda) && !noted_fallback) {
                p.notes.push_back("backend auto: " + opt.cuda_why + "; running on the CPU");
                noted_fallback = true;
            }
        }
    }
    if (!errs.empty()) throw UserError(errs);

    // transfers: one per (producer, port, direction), found through an index rather than a scan
    // of all transfers so far (a wide graph has as many transfers as nodes)
    std::map<std::tuple<NodeId, int, bool>, int> transfer_of;
    for (NodeId v : g.order) {
        const Node& n = g.nodes[v];
        p.input_transfer[v].assign(n.inputs.size(), -1);
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
            const auto& in = n.inputs[i];
            bool want_dev = p.on_device(v), have_dev = p.on_device(in.node);
            if (want_dev == have_dev) continue;
            auto [it, added] = transfer_of.try_emplace({in.node, in.port, want_dev}, int(p.transfers.size()));
            int t = it->second;
            if (added) p.transfers.push_back(Transfer{in.node, in.port, want_dev, opt.device, -1, {}});
            p.transfers[std::size_t(t)].consumers.emplace_back(v, int(i));
            p.input_transfer[v][i] = t;
        }
    }

    // streams, in topological order
    NodeMap<char> handed_on(N, 0);
    std::vector<bool> transfer_handed_on(p.transfers.size(), false);
    for (NodeId v : g.order) {
        if (!p.on_device(v)) continue;
        const Node& n = g.nodes[v];
        int s = -1;
        for (std::size_t i = 0; i < n.inputs.size() && s < 0; ++i) {
            int t = p.input_transfer[v][i];
            if (t >= 0) {
                Transfer& tr = p.transfers[std::size_t(t)];
                if (tr.stream < 0) tr.stream = p.n_streams++;
                if (!transfer_handed_on[std::size_t(t)]) {
                    transfer_handed_on[std::size_t(t)] = true;
                    s = tr.stream;
                }
            } else {
                NodeId u = n.inputs[i].node;
                if (p.on_device(u) && !handed_on[u]) {
                    handed_on[u] = 1;
                    s = p.stream[u];
                }
            }
        }
        p.stream[v] = s >= 0 ? s : p.n_streams++;
    }
    for (Transfer& t : p.transfers) {
        if (t.stream >= 0) continue;
        t.stream = t.to_device ? p.n_streams++ : p.stream[t.node];
    }
    return p;
}

namespace {

/// `s` as the inside of a DOT double-quoted string. In DOT only \" is an escape in a quoted
/// string, but the scanner also reads \\ as one unit, so an escaped backslash can never escape
/// the closing quote. Newlines become \n (a line break in a label) and other control characters
/// \xNN, so the graph stays one statement per line; every backslash of `s` is doubled, so no two
/// ids can escape to the same text.
std::string dot_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        unsigned char u = static_cast<unsigned char>(c);
        if (c == '"')
            out += "\\\"";
        else if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (u < 0x20 || u == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(u));
            out += hex;
        } else
            out += c;
    }
    return out;
}

std::string dot_quoted(const std::string& s) { return "\"" + dot_escape(s) + "\""; }

} // namespace

std::string plan_to_dot(const Graph& g, const Plan& p) {
    std::ostringstream o;
    auto bytes = [](const pf_image& im) {
        double b = double(im.width) * im.height * im.channels * double(dtype_size(DType(im.dtype)));
        std::ostringstream s;
        s.precision(3);
        if (b >= 1e6)
            s << b / 1e6 << " MB";
        else
            s << b / 1e3 << " kB";
        return s.str();
    };
    o << "digraph " << dot_quoted(g.name.empty() ? "pipeline" : g.name) << " {\n"
      << "  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
    o << "  subgraph cluster_legend { label=\"legend\"; fontsize=10; "
         "legend_cpu [label=\"cpu\", fillcolor=\"#cfe2ff\"]; "
         "legend_cuda [label=\"cuda\", fillcolor=\"#c7f0c2\"]; }\n";
    for (NodeId k : g.nodes.ids()) {
        const Node& n = g.nodes[k];
        bool dev = p.on_device(k);
        std::string op = n.op ? n.op->desc->name : "input";
        std::string shape = n.outputs.empty() ? "" : "\\n" + format_shape(n.outputs[0]);
        std::string fused;
        for (const std::string& r : n.replaced) fused += (fused.empty() ? "\\nfused: " : " + ") + dot_escape(r);
        o << "  " << dot_quoted(n.id) << " [label=\"" << dot_escape(n.id) << "\\n"
          << dot_escape(op) << " (" << (dev ? "cuda" : "cpu") << ")" << shape << fused << "\", fillcolor=\""
          << (dev ? "#c7f0c2" : "#cfe2ff") << "\"" << (fused.empty() ? "" : ", peripheries=2") << "];\n";
    }
    // Streamed chains: a dashed box around their nodes, saying how many strips of how many rows.
    for (std::size_t c = 0; c < p.strips.chains.size(); ++c) {
        const StripChain& ch = p.strips.chains[c];
        o << "  subgraph cluster_strips_" << c << " { label=\"streamed: " << ch.count()
          << (ch.count() == 1 ? " strip" : " strips") << " of " << ch.rows
          << " rows\"; style=dashed; color=\"#9467bd\"; fontcolor=\"#9467bd\"; fontsize=10;";
        for (NodeId v : ch.nodes) o << " " << dot_quoted(g.nodes[v].id) << ";";
        o << " }\n";
    }
    for (NodeId k : g.nodes.ids()) {
        const Node& n = g.nodes[k];
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
            const auto& in = n.inputs[i];
            int t = p.input_transfer[k][i];
            std::string port = n.op ? n.op->desc->inputs[i].name : "in";
            if (t < 0) {
                o << "  " << dot_quoted(g.nodes[in.node].id) << " -> " << dot_quoted(n.id)
                  << " [label=" << dot_quoted(port) << "];\n";
            } else {
                const Transfer& tr = p.transfers[std::size_t(t)];
                const pf_image& im = g.nodes[in.node].outputs[std::size_t(in.port)];
                bool by_strips = !p.strips.absorbed.empty() && p.strips.absorbed[std::size_t(t)];
                o << "  " << dot_quoted(g.nodes[in.node].id) << " -> " << dot_quoted(n.id)
                  << " [color=\"#d62728\", penwidth=2, fontcolor=\"#d62728\", label=\""
                  << (tr.to_device ? "upload H2D " : "download D2H ") << bytes(im) << (by_strips ? " by strips" : "")
                  << "\"];\n";
            }
        }
    }
    o << "}\n";
    return o.str();
}

} // namespace pixflow::host
