// compile/: parse -> validate -> plan -> fuse, and the binding of caller images to memory nodes.
#include "compile/compile.hpp"

#include "builtin/builtin.hpp"
#include "device/device.hpp"

#include <pixflow/image.hpp>

#include <algorithm>

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
    const std::pair<const char*, RawValue> bound[] = {
        {"width", int_value(im.width, where)},
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
            errs.push_back({declared.loc, n.id,
                            std::string(key) + " = " + declared.to_toml() + " but the bound image is " + format_shape(im) +
                                "; bind an image of the declared shape or change the declaration",
                            {}});
        it->second = value;
    }
    std::string want = im.device == PF_HOST ? "cpu" : "cuda";
    if (n.backend && *n.backend != "auto" && *n.backend != want)
        errs.push_back({n.backend_loc, n.id,
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
                                                        for (const auto& m : memory_ids) l += (l.empty() ? "" : ", ") + m;
                                                        return l;
                                                    }();
        if (it == s.nodes.end()) {
            errs.push_back({where, "", "no node '" + id + "' to bind an image to; " + accepted, {}});
            continue;
        }
        if (it->op != kMemoryOp) {
            errs.push_back({it->op_loc.line ? it->op_loc : it->loc, id,
                            "is op = \"" + it->op + "\"; images are bound to memory nodes (op = \"memory\"); " + accepted, {}});
            continue;
        }
        if (im.device != PF_HOST && !po.cuda_usable) {
            errs.push_back({where, id, "the image lies on CUDA device " + std::to_string(im.device) + " but " + po.cuda_why +
                                           "; bind a host image", {}});
            continue;
        }
        if (im.device != PF_HOST) {
            if (bound_device >= 0 && bound_device != im.device)
                errs.push_back({where, id,
                                "the image lies on CUDA device " + std::to_string(im.device) + " but another bound image on device " +
                                    std::to_string(bound_device) + "; one pipeline runs on one device",
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

} // namespace

Compiled compile(const PipelineSpec& spec, const Registry& reg, const CompileOptions& opt) {
    PlanOptions po;
    po.backend_override = opt.backend;
    po.device = opt.device;
    po.cuda_usable = cuda_usable(&po.cuda_why);
    bool has_memory = std::any_of(spec.nodes.begin(), spec.nodes.end(), [](const NodeSpec& n) { return n.op == kMemoryOp; });
    Compiled c;
    c.graph = has_memory || !opt.inputs.empty() ? build_graph(bind_inputs(spec, opt, po, po.device), reg) : build_graph(spec, reg);
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
    c.plan.warnings = std::move(warnings);
    c.plan.notes.insert(c.plan.notes.end(), notes.begin(), notes.end());
    return c;
}

Compiled compile_file(const std::filesystem::path& file, const std::vector<std::string>& sets, const Registry& reg,
                      const CompileOptions& opt) {
    return compile(parse_pipeline_file(file, sets), reg, opt);
}

} // namespace pixflow::host
