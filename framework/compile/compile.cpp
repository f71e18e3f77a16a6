// compile/: parse -> validate -> plan -> fuse, and the binding of caller images to memory nodes.
#include "compile/compile.hpp"

#include "builtin/builtin.hpp"
#include "device/device.hpp"

#include <pixflow/image.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

namespace pixflow::host {
namespace {

RawValue int_value(std::int64_t i, const SourceLoc& loc) {
    RawValue v;
    v.kind = RawValue::Kind::integer;
    v.i = i;
    v.loc = loc;
    return v;
}

RawValue string_value(std::string s, const SourceLoc& loc) {
    RawValue v;
    v.kind = RawValue::Kind::string;
    v.s = std::move(s);
    v.loc = loc;
    return v;
}

/// Gives memory node n the shape of the image bound to it, after checking what n declares.
void bind_memory(NodeSpec& n, const pf_image& im, std::vector<Diagnostic>& errs) {
    SourceLoc where{"input(\"" + n.id + "\")", 0, 0};
    const std::pair<const char*, RawValue> bound[] = {{"width", int_value(im.width, where)},
                                                      {"height", int_value(im.height, where)},
                                                      {"channels", int_value(im.channels, where)},
                                                      {"dtype", string_value(dtype_name(DType(im.dtype)), where)}};
    for (const auto& [key, value] : bound) {
        // [&key = key]: clang 14 (the fuzz build) cannot capture a structured binding itself.
        auto it = std::find_if(n.params.begin(), n.params.end(), [&key = key](auto& kv) { return kv.first == key; });
        if (it == n.params.end()) {
            n.params.emplace_back(key, value);
            continue;
        }
        const RawValue& declared = it->second;
        bool any = (declared.kind == RawValue::Kind::integer && declared.i == 0) ||
                   (declared.kind == RawValue::Kind::string && declared.s == "any");
        if (!any && declared.to_toml() != value.to_toml())
            errs.push_back({declared.loc,
                            n.id,
                            std::string(key) + " = " + declared.to_toml() + " but the bound image is " +
                                format_shape(im) + "; bind an image of the declared shape or change the declaration",
                            {}});
        it->second = value;
    }
    std::string want = im.device == PF_HOST ? "cpu" : "cuda";
    if (n.backend && *n.backend != "auto" && *n.backend != want)
        errs.push_back(
            {n.backend_loc,
             n.id,
             "backend = \"" + *n.backend + "\" but the bound image lies " +
                 (im.device == PF_HOST ? std::string("on the host") : "on CUDA device " + std::to_string(im.device)) +
                 "; a memory node runs where its image is (remove backend)",
             {}});
    n.backend = want;
    n.backend_loc = where;
}

/// The spec with every bound image in place; the plan's device from the bound device images.
PipelineSpec bind_inputs(const PipelineSpec& spec, const CompileOptions& opt, const PlanOptions& po, int& device) {
    PipelineSpec s = spec;
    std::vector<Diagnostic> errs;
    std::vector<std::string> memory_ids;
    for (const NodeSpec& n : s.nodes)
        if (n.op == kMemoryOp) memory_ids.push_back(n.id);
    int bound_device = -1;
    for (const auto& [id, im] : opt.inputs) {
        SourceLoc where{"input(\"" + id + "\")", 0, 0};
        auto it = std::find_if(s.nodes.begin(), s.nodes.end(), [&id = id](const NodeSpec& n) { return n.id == id; });
        std::string accepted = memory_ids.empty() ? "this pipeline has none (add a node with op = \"memory\")"
                                                  : "its memory nodes: " + [&] {
                                                        std::string l;
                                                        for (const auto& m : memory_ids)
                                                            l += (l.empty() ? "" : ", ") + m;
                                                        return l;
                                                    }();
        if (it == s.nodes.end()) {
            errs.push_back({where, "", "no node '" + id + "' to bind an image to; " + accepted, {}});
            continue;
        }
        if (it->op != kMemoryOp) {
            errs.push_back(
                {it->op_loc.line ? it->op_loc : it->loc,
                 id,
                 "is op = \"" + it->op + "\"; images are bound to memory nodes (op = \"memory\"); " + accepted,
                 {}});
            continue;
        }
        if (im.device != PF_HOST && !po.cuda_usable) {
            errs.push_back({where,
                            id,
                            "the image lies on CUDA device " + std::to_string(im.device) + " but " + po.cuda_why +
                                "; bind a host image",
                            {}});
            continue;
        }
        if (im.device != PF_HOST) {
            if (bound_device >= 0 && bound_device != im.device)
                errs.push_back({where,
                                id,
                                "the image lies on CUDA device " + std::to_string(im.device) +
                                    " but another bound image on device " + std::to_string(bound_device) +
                                    "; one pipeline runs on one device",
                                {}});
            bound_device = im.device;
        }
        bind_memory(*it, im, errs);
    }
    for (NodeSpec& n : s.nodes) // unbound memory stays on the host (its declared shape, for validate)
        if (n.op == kMemoryOp && !opt.inputs.count(n.id) && !n.backend) n.backend = "cpu";
    if (!errs.empty()) throw UserError(errs);
    if (bound_device >= 0) device = bound_device;
    return s;
}

/// The budgets and --strip-rows for plan_strips: given ones, else 3/4 of what is available.
StripOptions strip_options(const CompileOptions& opt, const Graph& g, const Plan& p) {
    StripOptions so;
    so.strip_rows = opt.strip_rows;
    so.stream_sinks = opt.stream_sinks;
    so.stage_per_node = opt.strip_stage_per_node;
    so.devices = opt.strip_devices;
    if (opt.memory_limit) {
        so.host_budget = opt.memory_limit;
        so.host_from = opt.memory_limit_from.empty() ? "--memory-limit" : opt.memory_limit_from;
    } else if (std::size_t avail = available_host_bytes()) {
        so.host_budget = avail / 4 * 3;
        so.host_limit = avail;
        so.host_from = "3/4 of the " + bytes_text(double(avail)) + " of host memory available; --memory-limit sets it";
    }
    if (p.n_streams > 0) {
        if (opt.device_memory_limit) {
            so.device_budget = opt.device_memory_limit;
            so.device_from =
                opt.device_memory_limit_from.empty() ? "--device-memory-limit" : opt.device_memory_limit_from;
        } else if (std::size_t free = device_free_bytes(p.device)) {
            so.device_budget = free / 4 * 3;
            so.device_limit = free;
            so.device_from =
                "3/4 of the " + bytes_text(double(free)) + " of device memory free; --device-memory-limit sets it";
        }
    }
    for (const std::string& o : opt.outputs_read) {
        NodeId v = g.find(o.substr(0, o.find('.')));
        if (v.valid()) so.read_by_caller.push_back(v);
    }
    return so;
}

} // namespace

std::size_t available_host_bytes() {
    std::ifstream f("/proc/meminfo");
    std::string key, unit;
    std::size_t kib = 0;
    while (f >> key >> kib) {
        std::getline(f, unit);
        if (key == "MemAvailable:") return kib * 1024;
    }
    return 0;
}

std::size_t parse_byte_size(const std::string& text, const std::string& option) {
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    std::string number = text.substr(0, i), unit = text.substr(i);
    for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
    double scale = 0;
    const std::pair<const char*, double> units[] = {{"", 1},
                                                    {"B", 1},
                                                    {"K", 1024.0},
                                                    {"KB", 1024.0},
                                                    {"KIB", 1024.0},
                                                    {"M", 1048576.0},
                                                    {"MB", 1048576.0},
                                                    {"MIB", 1048576.0},
                                                    {"G", 1073741824.0},
                                                    {"GB", 1073741824.0},
                                                    {"GIB", 1073741824.0},
                                                    {"T", 1099511627776.0},
                                                    {"TB", 1099511627776.0},
                                                    {"TIB", 1099511627776.0}};
    for (const auto& [name, s] : units)
        if (unit == name) scale = s;
    char* end = nullptr;
    double v = number.empty() ? -1 : std::strtod(number.c_str(), &end);
    if (scale == 0 || number.empty() || end != number.c_str() + number.size() || !(v > 0) || v * scale >= 9.0e18)
        throw UserError(std::vector<Diagnostic>{{{option, 0, 0},
                                                 "",
                                                 "\"" + escape_control(text) +
                                                     "\" is not a size; accepted: a positive number of bytes, or "
                                                     "with K, M, G or T (powers of 1024, KiB and KB alike), e.g. "
                                                     "512M or 1.5G",
                                                 {}}});
    return std::size_t(std::llround(v * scale));
}

namespace {
/// The spec with opt.param_defaults given to every node that declares the parameter and does not
/// set it already.
PipelineSpec with_param_defaults(const PipelineSpec& spec, const Registry& reg, const CompileOptions& opt,
                                 std::set<std::string>& declared_somewhere) {
    PipelineSpec s = spec;
    for (NodeSpec& n : s.nodes) {
        const OpInfo* op = reg.find(n.op);
        if (!op) continue; // validation names the unknown op
        for (const auto& entry : opt.param_defaults) {
            const std::string& name = entry.first; // not a structured binding: clang 14 cannot capture those
            const RawValue& value = entry.second;
            bool declared = false;
            for (int k = 0; k < op->desc->n_params && !declared; ++k) declared = name == op->desc->params[k].name;
            bool set = std::any_of(n.params.begin(), n.params.end(), [&](const auto& p) { return p.first == name; });
            if (declared) declared_somewhere.insert(name);
            if (declared && !set) n.params.emplace_back(name, value);
        }
    }
    return s;
}
} // namespace

Compiled compile(const PipelineSpec& spec_in, const Registry& reg, const CompileOptions& opt) {
    std::set<std::string> declared;
    const PipelineSpec defaulted =
        opt.param_defaults.empty() ? PipelineSpec{} : with_param_defaults(spec_in, reg, opt, declared);
    const PipelineSpec& spec = opt.param_defaults.empty() ? spec_in : defaulted;
    PlanOptions po;
    po.backend_override = opt.backend;
    po.device = opt.device;
    po.cuda_usable = cuda_usable(&po.cuda_why);
    bool has_memory =
        std::any_of(spec.nodes.begin(), spec.nodes.end(), [](const NodeSpec& n) { return n.op == kMemoryOp; });
    Compiled c;
    c.graph = has_memory || !opt.inputs.empty() ? build_graph(bind_inputs(spec, opt, po, po.device), reg)
                                                : build_graph(spec, reg);
    // What is valid but computed for nothing, or most likely not meant: on the graph as written
    // (before fusion renames nodes), with or without --no-fuse.
    std::vector<Diagnostic> warnings = fusion_disagreements(c.graph, reg);
    std::vector<std::string> notes;
    std::vector<Diagnostic> unread = unread_outputs(c.graph, opt.outputs_read);
    const std::size_t shown = 20; // a generated pipeline can leave thousands unread
    for (std::size_t k = 0; k < unread.size() && k < shown; ++k) notes.push_back(unread[k].str());
    if (unread.size() > shown)
        notes.push_back("... and " + std::to_string(unread.size() - shown) + " more outputs that no node reads (" +
                        std::to_string(unread.size()) + " in all)");
    if (opt.note_no_sink && opt.outputs_read.empty() && !writes_something(c.graph))
        notes.push_back(spec.file + ": the pipeline writes nothing: no node saves a file or has another effect, so "
                                    "its results are dropped; add a save node (op = \"save\")");
    c.plan = make_plan(c.graph, po);
    if (opt.fuse) fuse(c.graph, c.plan, po, reg);
    if (opt.strip_rows < 0)
        throw UserError(std::vector<Diagnostic>{
            {{"--strip-rows", 0, 0}, "", std::to_string(opt.strip_rows) + " rows; accepted: 1 or more", {}}});
    if (opt.strips) plan_strips(c.graph, c.plan, strip_options(opt, c.graph, c.plan));
    c.plan.warnings = std::move(warnings);
    c.plan.notes.insert(c.plan.notes.end(), notes.begin(), notes.end());
    for (const auto& [name, value] : opt.param_defaults) // an option that changes nothing says so
        if (!declared.count(name))
            c.plan.notes.push_back(value.loc.file + ": no node of this pipeline has a parameter " + name +
                                   ", so it changes nothing");
    return c;
}

Compiled compile_file(const std::filesystem::path& file, const std::vector<std::string>& sets, const Registry& reg,
                      const CompileOptions& opt) {
    return compile(parse_pipeline_file(file, sets), reg, opt);
}

} // namespace pixflow::host
