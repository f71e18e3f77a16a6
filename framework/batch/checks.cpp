// batch/ phases 1 to 3 of run_batch: everything that can be wrong before any image runs.
#include "batch/phases.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace pixflow::host::batch {
namespace {

const pf_param_desc* path_param(const OpInfo& op, std::uint32_t flag) {
    for (int k = 0; k < op.desc->n_params; ++k)
        if (op.desc->params[k].flags & flag) return &op.desc->params[k];
    return nullptr;
}

void set_param(NodeSpec& n, const std::string& key, const std::string& value) {
    for (auto& [k, v] : n.params)
        if (k == key) {
            v.kind = RawValue::Kind::string;
            v.s = value;
            return;
        }
    RawValue v;
    v.kind = RawValue::Kind::string;
    v.s = value;
    v.loc = n.loc;
    n.params.emplace_back(key, v);
}

std::string join_ids(const std::vector<PathNode>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n.id;
    return s;
}

/// 1. Exactly one load node (what reads each input) and at least one save node.
void find_path_nodes(const PipelineSpec& spec, const Registry& reg, BatchPlan& b) {
    for (const NodeSpec& n : spec.nodes)
        if (!n.external && !reg.find(n.op)) compile(spec, reg); // reports the unknown op
    std::vector<PathNode> loads;
    for (std::size_t k = 0; k < spec.nodes.size(); ++k) {
        const NodeSpec& n = spec.nodes[k];
        const OpInfo* op = n.external ? nullptr : reg.find(n.op);
        if (!op) continue;
        if (const pf_param_desc* d = path_param(*op, PF_PARAM_INPUT_PATH)) loads.push_back({k, n.id, d->name, ""});
        const pf_param_desc* d = path_param(*op, PF_PARAM_OUTPUT_PATH);
        if (!d) continue;
        PathNode s{k, n.id, d->name, ""};
        SourceLoc where = n.loc;
        for (const auto& [key, v] : n.params)
            if (key == d->name) {
                where = v.loc;
                if (v.kind == RawValue::Kind::string) s.ext = fs::path(v.s).extension().string();
            }
        if (s.ext.empty())
            throw UserError(Diagnostic{where,
                                       n.id,
                                       std::string("a batch run (--input) names this node's outputs after its ") +
                                           d->name + ", whose extension picks the format; set " + d->name +
                                           " = \"<name>.<ext>\" (for example \"out/x.png\")",
                                       {}});
        b.saves.push_back(s);
    }
    const std::string need =
        "a batch run (--input) needs a pipeline with exactly one load node, which reads each input file; ";
    if (loads.empty())
        throw UserError(Diagnostic{
            SourceLoc{spec.file, 0, 0}, "", need + "this pipeline has none (add a node with op = \"load\")", {}});
    if (loads.size() > 1)
        throw UserError(Diagnostic{spec.nodes[loads[1].index].loc,
                                   "",
                                   need + "this pipeline has " + std::to_string(loads.size()) + ": " + join_ids(loads),
                                   {}});
    if (b.saves.empty())
        throw UserError(Diagnostic{SourceLoc{spec.file, 0, 0},
                                   "",
                                   "a batch run (--input) writes each image through the pipeline's save nodes; "
                                   "this pipeline has none (add a node with op = \"save\")",
                                   {}});
    b.load = loads[0];
}

/// 2. The inputs, and the output names of each: unique, and never an input.
void name_outputs(const BatchOptions& opt, BatchPlan& b) {
    if (opt.output_dir.empty())
        throw UserError(Diagnostic{SourceLoc{"--input", 0, 0}, "", "a batch run needs --output <folder>", {}});
    b.inputs = expand_inputs(opt.inputs, opt.output_dir);
    b.out_paths.assign(b.inputs.size(), {});
    std::map<fs::path, std::size_t> owner, in_canon;
    for (std::size_t i = 0; i < b.inputs.size(); ++i) in_canon.emplace(fs::weakly_canonical(b.inputs[i].path), i);
    std::vector<Diagnostic> errs;
    SourceLoc where{"--output " + opt.output_dir, 0, 0};
    for (std::size_t i = 0; i < b.inputs.size(); ++i)
        for (const PathNode& s : b.saves) {
            fs::path o = batch_output_path(opt.output_dir, b.inputs[i], b.saves.size() > 1 ? s.id : "", s.ext);
            b.out_paths[i].push_back(o.string());
            fs::path c = fs::weakly_canonical(o);
            auto [it, fresh] = owner.emplace(c, i);
            if (!fresh && errs.size() < 10)
                errs.push_back({where,
                                "",
                                "inputs '" + b.inputs[it->second].path.string() + "' and '" +
                                    b.inputs[i].path.string() + "' would both write '" + o.string() +
                                    "'; give them different names or run them separately",
                                {}});
            auto in = in_canon.find(c);
            if (in != in_canon.end() && errs.size() < 10)
                errs.push_back({where,
                                "",
                                "the output '" + o.string() + "' of '" + b.inputs[i].path.string() +
                                    "' would overwrite the input '" + b.inputs[in->second].path.string() +
                                    "'; write to another folder",
                                {}});
        }
    if (!errs.empty()) throw UserError(errs);
}

/// " (input 'a.png')", " (inputs 'a.png', 'b.png' and 3 more)".
std::string naming(const BatchPlan& b, const std::vector<std::size_t>& which) {
    std::string s;
    for (std::size_t k = 0; k < which.size() && k < 3; ++k)
        s += (k ? ", '" : "'") + b.inputs[which[k]].path.string() + "'";
    if (which.size() > 3) s += " and " + std::to_string(which.size() - 3) + " more";
    return (which.size() == 1 ? " (input " : " (inputs ") + s + ")";
}

/// 3. The devices, and the whole pipeline checked (every phase) with each input in turn until
/// one passes. An input that fails there is not the pipeline's fault: it fails alone when its
/// turn comes, named like every failing image. Only when no readable input passes is it an
/// error here (nothing runs), naming the inputs; so the outcome does not depend on which input
/// sorts first. An input whose header cannot be read at all only fails itself, later.
void check_once(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt, BatchPlan& b) {
    std::string why;
    bool cuda = cuda_usable(&why);
    b.devices = !cuda                 ? std::vector<int>{0}
                : opt.devices.empty() ? std::vector<int>{opt.default_device % cuda_device_count()}
                                      : parse_devices(opt.devices, cuda_device_count());
    bool checked = false;
    std::vector<std::pair<std::string, std::vector<Diagnostic>>> failures; // grouped by their text
    std::vector<std::vector<std::size_t>> failed_inputs;
    for (std::size_t i = 0; i < b.inputs.size() && !checked; ++i) {
        PipelineSpec only_load;
        only_load.file = spec.file;
        only_load.name = spec.name;
        only_load.backend = "cpu";
        only_load.nodes.push_back(spec.nodes[b.load.index]);
        only_load.nodes[0].inputs.clear();
        only_load.nodes[0].backend.reset();
        set_param(only_load.nodes[0], b.load.param, b.inputs[i].path.string());
        try {
            CompileOptions header_only;
            header_only.param_defaults = b.compile.param_defaults; // --max-pixels applies to the header
            compile(only_load, reg, header_only);                  // reads the header only
        } catch (const UserError&) {
            continue; // unreadable: this input fails on its own, later
        }
        CompileOptions co = b.compile;
        co.device = b.devices.front();
        try {
            Compiled c = compile(b.spec_for(spec, i), reg, co);
            checked = true;
            b.uses_cuda = c.plan.n_streams > 0;
            b.notes = c.plan.notes;
            b.warnings.clear();
            for (const auto& w : c.plan.warnings) b.warnings.push_back(w.str());
        } catch (const UserError& e) {
            std::string text = error_text(e);
            std::size_t g = 0;
            while (g < failures.size() && failures[g].first != text) ++g;
            if (g == failures.size()) {
                failures.emplace_back(text, e.diagnostics());
                failed_inputs.emplace_back();
            }
            failed_inputs[g].push_back(i);
        }
    }
    if (!checked && !failures.empty()) {
        std::vector<Diagnostic> errs;
        for (std::size_t g = 0; g < failures.size(); ++g)
            for (std::size_t k = 0; k < failures[g].second.size(); ++k) {
                Diagnostic d = failures[g].second[k];
                if (k + 1 == failures[g].second.size()) d.message += naming(b, failed_inputs[g]);
                errs.push_back(std::move(d));
            }
        throw UserError(errs);
    }
    if (!opt.devices.empty() && !cuda)
        b.notes.push_back("--devices " + opt.devices + " ignored: " + why + "; running on the CPU");
    else if (!opt.devices.empty() && checked && !b.uses_cuda)
        b.notes.push_back("--devices " + opt.devices + " ignored: no node of this pipeline runs on CUDA");
}

} // namespace

std::vector<int> parse_devices(const std::string& text, int count) {
    auto bad = [&](const std::string& msg) -> std::vector<int> {
        throw UserError(Diagnostic{SourceLoc{"--devices " + text, 0, 0}, "", msg, {}});
    };
    std::vector<int> devs;
    if (text.empty()) return {0};
    if (text == "all") {
        for (int d = 0; d < count; ++d) devs.push_back(d);
        return devs;
    }
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');) {
        char* end = nullptr;
        long d = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || d < 0)
            return bad("'" + item + "' is not a device number; expected all or numbers such as 0,1");
        if (d >= count)
            return bad("there is no CUDA device " + item + "; this machine has " + std::to_string(count) +
                       (count == 1 ? " (device 0)" : " (devices 0 to " + std::to_string(count - 1) + ")"));
        if (std::find(devs.begin(), devs.end(), int(d)) == devs.end()) devs.push_back(int(d));
    }
    if (devs.empty()) return bad("no device given; expected all or numbers such as 0,1");
    return devs;
}

PipelineSpec BatchPlan::spec_for(const PipelineSpec& spec, std::size_t i) const {
    PipelineSpec s = spec;
    set_param(s.nodes[load.index], load.param, inputs[i].path.string());
    for (std::size_t k = 0; k < saves.size(); ++k) set_param(s.nodes[saves[k].index], saves[k].param, out_paths[i][k]);
    return s;
}

BatchPlan check_batch(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt) {
    BatchPlan b;
    b.compile.backend = opt.backend_override;
    b.compile.fuse = !opt.no_fuse;
    b.compile.param_defaults = opt.param_defaults;
    b.compile.strip_rows = opt.strip_rows;
    // The host budget is the batch's, decided once: every image is planned under it.
    b.host_budget = host_budget(opt.memory_limit);
    b.compile.memory_limit = b.host_budget.bytes;
    b.compile.memory_limit_from = b.host_budget.from;
    b.compile.device_memory_limit = opt.device_memory_limit;
    find_path_nodes(spec, reg, b);
    name_outputs(opt, b);
    check_once(spec, reg, opt, b);
    b.device_budget = device_budget(opt.device_memory_limit, b.uses_cuda, b.devices.front());
    b.compile.device_memory_limit = b.device_budget.bytes;
    b.compile.device_memory_limit_from = b.device_budget.from;
    return b;
}

} // namespace pixflow::host::batch
