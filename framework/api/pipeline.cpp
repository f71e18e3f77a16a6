// api/ pixflow::Pipeline: what to compile, compiling (through the one compile step), running.
#include "api/state.hpp"

#include <cstring>

namespace pixflow {
namespace detail {

/// The output "node" or "node.port" of the compiled graph, or a UserError saying what exists.
OutputSlot resolve_output(const host::Graph& g, const std::string& name) {
    SourceLoc where{"output(\"" + name + "\")", 0, 0};
    std::string node = name, port;
    host::NodeId v = g.find(node);
    if (!v.valid() && name.find('.') != std::string::npos) {
        node = name.substr(0, name.rfind('.'));
        port = name.substr(name.rfind('.') + 1);
        v = g.find(node);
    }
    if (!v.valid()) {
        for (const host::Node& n : g.nodes)
            for (const std::string& r : n.replaced)
                if (r == node)
                    throw UserError(Diagnostic{where,
                                               "",
                                               "node '" + node + "' was fused into '" + n.id +
                                                   "' (its image no longer exists); ask for '" + n.id +
                                                   "', or call fuse(false)",
                                               {}});
        std::string ids;
        for (const host::Node& n : g.nodes) ids += (ids.empty() ? "" : ", ") + n.id;
        throw UserError(Diagnostic{where, "", "no node '" + node + "'; nodes: " + ids, {}});
    }
    const host::Node& n = g.nodes[v];
    if (n.outputs.empty()) throw UserError(Diagnostic{where, n.id, "produces no image (a sink)", {}});
    OutputSlot slot;
    slot.node = v;
    if (port.empty()) return slot;
    std::string ports;
    for (int k = 0; k < n.op->desc->n_outputs; ++k) {
        if (port == n.op->desc->outputs[k].name) {
            slot.port = k;
            return slot;
        }
        ports += (ports.empty() ? "" : ", ") + std::string(n.op->desc->outputs[k].name);
    }
    throw UserError(Diagnostic{where, n.id, "has no output '" + port + "'; outputs: " + ports, {}});
}

PipelineState::~PipelineState() {
    executor.reset(); // before the graph it runs, and before the streams it borrowed go
}

pf_image pf_shape_of(const ImageView& v) {
    pf_image im = packed_pitch(v).to_c();
    im.data = nullptr;
    return im;
}

ImageView packed_pitch(ImageView v) {
    if (v.pitch == 0) v.pitch = std::int64_t(v.row_bytes());
    return v;
}

void compile_state(PipelineState& s) {
    s.executor.reset();
    s.compiled.reset();
    s.slots.clear();
    s.staging.clear();
    s.run_options = {};
    host::CompileOptions co = s.options;
    co.inputs.clear();
    for (const auto& [id, view] : s.inputs) co.inputs[id] = pf_shape_of(view);
    for (const auto& [name, dest] : s.outputs) co.outputs_read.insert(name); // read by the caller: no note
    co.note_no_sink = false; // results land in caller memory, not in files
    host::PipelineSpec spec = host::parse_pipeline_text(s.text, s.file, {}, s.overrides);
    auto c = std::make_unique<host::Compiled>(host::compile(spec, s.engine->registry, co));
    std::map<std::string, OutputSlot> slots;
    for (const auto& [name, dest] : s.outputs) {
        OutputSlot slot = resolve_output(c->graph, name);
        slot.dest = dest;
        slots[name] = slot;
    }
    if (c->plan.n_streams > 0) {
        if (!s.pinned || s.resources.device != c->plan.device) {
            s.resources = host::RunResources{};
            s.resources.device = c->plan.device;
            s.pinned = std::make_unique<host::PinnedCache>();
            s.resources.pinned = s.pinned.get();
        }
        host::keep_device_pool(c->plan.device); // freed buffers stay in the pool for the next run
    }
    s.executor = std::make_unique<host::Executor>(c->graph, c->plan);
    s.compiled = std::move(c);
    s.slots = std::move(slots);
    s.compiled_inputs = co.inputs;
    s.dirty = false;
    ++s.compiles;
}

/// Whether the bound inputs still have the shapes and locations compiled for.
bool inputs_changed(const PipelineState& s) {
    if (s.inputs.size() != s.compiled_inputs.size()) return true;
    for (const auto& [id, view] : s.inputs) {
        auto it = s.compiled_inputs.find(id);
        pf_image now = pf_shape_of(view);
        if (it == s.compiled_inputs.end() || it->second.width != now.width || it->second.height != now.height ||
            it->second.channels != now.channels || it->second.dtype != now.dtype || it->second.device != now.device)
            return true;
    }
    return false;
}

} // namespace detail

Pipeline::Pipeline(std::unique_ptr<detail::PipelineState> s) : m(std::move(s)) {}
Pipeline::Pipeline(Pipeline&& o) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&& o) noexcept = default;
Pipeline::~Pipeline() = default;

Pipeline& Pipeline::set(std::string_view assignment) {
    m->overrides.push_back(host::parse_override(std::string(assignment)));
    m->dirty = true;
    return *this;
}

Pipeline& Pipeline::set_value(std::string_view key, char kind, long long i, double f, std::string_view s) {
    std::string k(key);
    auto dot = k.find('.');
    host::RawValue v;
    switch (kind) {
    case 'b': v.kind = host::RawValue::Kind::boolean, v.b = i != 0; break;
    case 'i': v.kind = host::RawValue::Kind::integer, v.i = i; break;
    case 'f': v.kind = host::RawValue::Kind::floating, v.f = f; break;
    default: v.kind = host::RawValue::Kind::string, v.s = std::string(s); break;
    }
    v.loc = SourceLoc{"set(\"" + k + "\", " + v.to_toml() + ")", 0, 0};
    if (dot == std::string::npos || dot == 0 || dot + 1 == k.size())
        throw UserError(Diagnostic{v.loc, "", "expected a key node.key (or pipeline.key)", {}});
    m->overrides.push_back(host::Override{k.substr(0, dot), k.substr(dot + 1), v});
    m->dirty = true;
    return *this;
}

Pipeline& Pipeline::backend(std::string_view backend) {
    std::string b(backend);
    if (b != "auto" && b != "cpu" && b != "cuda")
        throw UserError(
            Diagnostic{SourceLoc{"backend(\"" + b + "\")", 0, 0}, "", "backend is one of auto, cpu, cuda", {}});
    m->options.backend = b == "auto" ? "" : b;
    m->dirty = true;
    return *this;
}

Pipeline& Pipeline::fuse(bool on) {
    m->options.fuse = on;
    m->dirty = true;
    return *this;
}

Pipeline& Pipeline::input(std::string_view node, const ImageView& image) {
    std::string id(node);
    ImageView v = detail::packed_pitch(image);
    bool known_dtype = v.dtype >= DType::u8 && v.dtype <= DType::f64;
    if (v.width < 1 || v.height < 1 || v.channels < 1 || v.channels > 4 || !known_dtype || !v.data ||
        v.pitch < std::int64_t(v.row_bytes()) || (v.device != PF_HOST && v.device < 0))
        throw UserError(
            Diagnostic{SourceLoc{"input(\"" + id + "\")", 0, 0},
                       id,
                       "the image must be at least 1x1 with 1 to 4 channels of a known dtype, non-null data, "
                       "a pitch of at least one row and device PF_HOST or a CUDA ordinal",
                       {}});
    m->inputs[id] = v;
    return *this;
}

Pipeline& Pipeline::output(std::string_view node_port) {
    std::string name(node_port);
    m->outputs[name] = std::nullopt;
    if (m->compiled && !m->dirty) m->slots[name] = detail::resolve_output(m->compiled->graph, name);
    return *this;
}

Pipeline& Pipeline::output(std::string_view node_port, const ImageView& dest) {
    std::string name(node_port);
    ImageView d = detail::packed_pitch(dest);
    if (!d.data || d.pitch < std::int64_t(d.row_bytes()) || (d.device != PF_HOST && d.device < 0))
        throw UserError(
            Diagnostic{SourceLoc{"output(\"" + name + "\")", 0, 0},
                       "",
                       "the buffer needs non-null data, a pitch of at least one row and device PF_HOST or a "
                       "CUDA ordinal",
                       {}});
    m->outputs[name] = d;
    if (m->compiled && !m->dirty) {
        detail::OutputSlot slot = detail::resolve_output(m->compiled->graph, name);
        slot.dest = d;
        m->slots[name] = slot;
    }
    return *this;
}

Pipeline& Pipeline::stream(CUstream_st* stream) {
    m->stream = stream;
    return *this;
}

void Pipeline::compile() { detail::compile_state(*m); }

RunReport Pipeline::run() {
    detail::PipelineState& s = *m;
    if (s.dirty || !s.executor || detail::inputs_changed(s)) detail::compile_state(s);
    detail::bind_inputs(s);
    detail::bind_outputs(s);
    s.ran = false;
    s.last = s.executor->run(s.run_options);
    s.last.notes.insert(s.last.notes.end(), s.copies.begin(), s.copies.end());
    s.ran = true;
    if (detail::copy_outputs(s)) s.executor->device_times(s.last); // the device is done: times are known
    return s.last;
}

RunReport Pipeline::report() {
    if (m->ran) m->executor->device_times(m->last);
    return m->last;
}

Image Pipeline::result(std::string_view node_port) const {
    ImageView v = view(node_port);
    detail::OutputSlot slot = detail::resolve_output(m->compiled->graph, std::string(node_port));
    host::HostImage h = m->executor->fetch(slot.node, slot.port);
    Image out(v.width, v.height, v.channels, v.dtype);
    std::memcpy(out.data(), h.bytes.data(), out.size_bytes());
    return out;
}

ImageView Pipeline::view(std::string_view node_port) const {
    std::string name(node_port);
    SourceLoc where{"result(\"" + name + "\")", 0, 0};
    if (!m->ran) throw UserError(Diagnostic{where, "", "no run yet: call run() first", {}});
    detail::OutputSlot slot = detail::resolve_output(m->compiled->graph, name);
    if (!m->executor->kept(slot.node, slot.port))
        throw UserError(
            Diagnostic{where, "", "not an output; ask for it with output(\"" + name + "\") before run()", {}});
    return ImageView(m->executor->output(slot.node, slot.port));
}

std::vector<std::string> Pipeline::results() const {
    if (m->dirty || !m->compiled || detail::inputs_changed(*m)) detail::compile_state(*m);
    const host::Graph& g = m->compiled->graph;
    host::NodeMap<char> read(g.nodes.size(), 0);
    for (const host::Node& n : g.nodes)
        for (const auto& in : n.inputs) read[in.node] = 1;
    std::vector<std::string> out;
    for (host::NodeId v : g.order) {
        const host::Node& n = g.nodes[v];
        if (!n.op || n.outputs.empty() || n.is_sink() || read[v] || m->inputs.count(n.id)) continue;
        if (n.outputs.size() == 1)
            out.push_back(n.id);
        else
            for (int k = 0; k < n.op->desc->n_outputs; ++k) out.push_back(n.id + "." + n.op->desc->outputs[k].name);
    }
    return out;
}

ImageView Pipeline::shape(std::string_view node_port) const {
    if (m->dirty || !m->compiled || detail::inputs_changed(*m)) detail::compile_state(*m);
    detail::OutputSlot slot = detail::resolve_output(m->compiled->graph, std::string(node_port));
    const host::Node& n = m->compiled->graph.nodes[slot.node];
    ImageView v(n.outputs[std::size_t(slot.port)]);
    auto bound = m->inputs.find(n.id);
    v.device = bound != m->inputs.end()                 ? bound->second.device
               : m->compiled->plan.on_device(slot.node) ? m->compiled->plan.device
                                                        : PF_HOST;
    v.pitch = std::int64_t(v.row_bytes());
    v.data = nullptr;
    return v;
}

std::vector<std::string> Pipeline::notes() const {
    if (m->dirty || !m->compiled) detail::compile_state(*m);
    return m->compiled->plan.notes;
}

std::vector<Diagnostic> Pipeline::warnings() const {
    if (m->dirty || !m->compiled) detail::compile_state(*m);
    return m->compiled->plan.warnings;
}

std::string Pipeline::graphviz() const {
    if (m->dirty || !m->compiled) detail::compile_state(*m);
    return host::plan_to_dot(m->compiled->graph, m->compiled->plan);
}

} // namespace pixflow
