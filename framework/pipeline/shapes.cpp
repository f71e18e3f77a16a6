// Phases 4 and 5 of build_graph: output shapes from each op's infer, in topological order, with
// every edge checked against the consumer's port; then the file paths the pipeline reads and writes.
#include "pipeline/validate_phases.hpp"
#include "loader/checked_size.hpp"

#include <filesystem>

namespace fs = std::filesystem;

namespace pixflow::host::validate {
namespace {

/// The input shapes of node v, each checked against its port; nullopt when one does not fit (the
/// error added) or its producer failed before.
std::optional<std::vector<pf_image>> input_shapes(const Graph& g, const Node& n, Errors& errs) {
    const pf_op_desc& d = *n.op->desc;
    std::vector<pf_image> ins;
    bool ok = true;
    for (int p = 0; p < d.n_inputs; ++p) {
        const auto& in = n.inputs[std::size_t(p)];
        const Node& pn = g.nodes[in.node];
        if (pn.outputs.size() <= std::size_t(in.port)) {
            ok = false; // the producer's inference failed: already reported
            continue;
        }
        pf_image s = pn.outputs[std::size_t(in.port)];
        const pf_port_desc& port = d.inputs[p];
        if (!(port.dtypes & PF_DTYPE_BIT(s.dtype)) || !(port.channels & PF_CHANNELS_BIT(s.channels))) {
            bool dtype_ok = port.dtypes & PF_DTYPE_BIT(s.dtype);
            std::string hint = !dtype_ok                                                 ? " (insert a convert node)"
                               : (port.channels & PF_CHANNELS_BIT(1)) && s.channels >= 3 ? " (insert a grayscale node)"
                                                                                         : "";
            add(errs, in.loc, n.id,
                std::string("input '") + port.name + "' gets " + format_shape(s) + " from '" + pn.id + "'; op " +
                    d.name + " accepts " + describe_ports(port.dtypes, port.channels) + hint);
            ok = false;
        }
        ins.push_back(s);
    }
    if (!ok) return std::nullopt;
    return ins;
}

/// Whether every file node n reads is a regular file (or missing: its op says so). Its infer
/// reads the header, and a FIFO or a device such as /dev/zero would block or never end there.
bool readable_kinds(const Node& n, Errors& errs) {
    bool ok = true;
    for (const auto& [key, path] : n.paths(PF_PARAM_INPUT_PATH))
        if (std::string kind = non_regular_file_kind(path); !kind.empty()) {
            auto it = n.param_locs.find(key);
            add(errs, it != n.param_locs.end() ? it->second : n.loc, n.id,
                key + " = \"" + escape_control(path) + "\" is " + kind +
                    "; expected a regular file (or a symbolic link to one)");
            ok = false;
        }
    return ok;
}

} // namespace

/// 4. Each node's output shapes from its op's infer, in topological order.
void infer_shapes(Graph& g, Errors& errs) {
    for (NodeId v : g.order) {
        Node& n = g.nodes[v];
        if (!n.op) continue;
        const pf_op_desc& d = *n.op->desc;
        auto ins = input_shapes(g, n, errs);
        if (!ins || !readable_kinds(n, errs)) continue;
        n.outputs.assign(std::size_t(d.n_outputs), pf_image{sizeof(pf_image), 0, 0, 0, 0, PF_HOST, 0, nullptr});
        char buf[1024] = {0};
        int32_t st = d.infer(n.params.data(), d.n_params, ins->data(), int32_t(ins->size()), n.outputs.data(),
                             d.n_outputs, buf, sizeof buf);
        buf[sizeof buf - 1] = '\0'; // the plugin may have left it unterminated
        if (st != PF_OK) {
            // Point at the parameter the message names or quotes, if any.
            SourceLoc l = n.loc;
            std::string msg(buf);
            for (int k = 0; k < d.n_params; ++k) {
                auto it = n.param_locs.find(d.params[k].name);
                if (it == n.param_locs.end()) continue;
                const char* val = n.params[std::size_t(k)].s;
                if (msg.find(d.params[k].name) != std::string::npos ||
                    (val && *val && msg.find(val) != std::string::npos))
                    l = it->second;
            }
            add(errs, l, n.id, buf[0] ? buf : "shape inference failed");
            n.outputs.clear();
            continue;
        }
        for (pf_image& o : n.outputs) {
            if (o.width < 1 || o.height < 1 || o.channels < 1 || o.channels > 4 || o.dtype < PF_U8 || o.dtype > PF_F64)
                throw InternalError(n.loc.str() + ": node '" + n.id + "': op " + d.name + " of plugin " + n.op->plugin +
                                    " inferred an invalid output (" + std::to_string(o.width) + "x" +
                                    std::to_string(o.height) + ", " + std::to_string(o.channels) + " channels, dtype " +
                                    std::to_string(o.dtype) + "): a bug in the plugin");
            if (!checked_image_bytes(o)) { // w * h * channels * sample size must not wrap
                add(errs, n.loc, n.id,
                    std::string("op ") + d.name + " inferred an output of " + shape_for_message(o) +
                        ", whose size in bytes overflows");
                n.outputs.clear();
                break;
            }
            o.data = nullptr;
            o.device = PF_HOST;
            o.pitch = 0;
        }
    }
}

/// 5. Files: never overwrite what the pipeline reads, never write one file twice.
void check_paths(const Graph& g, Errors& errs) {
    std::map<std::string, std::string> reads, writes;
    auto canon = [](const std::string& p) {
        std::error_code ec;
        return fs::weakly_canonical(p, ec).string();
    };
    for (const Node& n : g.nodes)
        for (const auto& [key, path] : n.paths(PF_PARAM_INPUT_PATH)) reads[canon(path)] = n.id;
    for (const Node& n : g.nodes)
        for (const auto& [key, path] : n.paths(PF_PARAM_OUTPUT_PATH)) {
            SourceLoc l = n.param_locs.count(key) ? n.param_locs.at(key) : n.loc;
            std::string c = canon(path);
            if (auto it = reads.find(c); it != reads.end())
                add(errs, l, n.id,
                    key + " = \"" + path + "\" would overwrite the file that node '" + it->second +
                        "' reads; write to another path");
            else if (auto w = writes.find(c); w != writes.end())
                add(errs, l, n.id, key + " = \"" + path + "\" is also written by node '" + w->second + "'");
            writes[c] = n.id;
        }
}

} // namespace pixflow::host::validate
