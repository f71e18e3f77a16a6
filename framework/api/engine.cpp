// api/ pixflow::Engine: the registry (built-in operators, then every plugin on the search path),
// loaded once and shared, read-only, by every Pipeline made from it.
#include "api/state.hpp"
#include "builtin/builtin.hpp"
#include "pipeline/pipeline.hpp"

#include <fstream>
#include <sstream>

namespace pixflow {

Engine::Engine(const std::vector<std::filesystem::path>& plugin_paths) {
    auto s = std::make_shared<detail::EngineState>();
    host::load_registry(s->registry, plugin_paths);
    m = std::move(s);
}

bool detail::EngineState::cuda() const {
    std::call_once(m_cuda_once, [this] { m_cuda = host::cuda_usable(); });
    return m_cuda;
}

Pipeline Engine::load_string(std::string_view toml, std::string name) const {
    auto s = std::make_unique<detail::PipelineState>();
    s->engine = m;
    s->text = std::string(toml);
    s->file = std::move(name);
    host::parse_pipeline_text(s->text, s->file); // the format's errors now, not at the first run
    return Pipeline(std::move(s));
}

Pipeline Engine::load_file(const std::filesystem::path& toml) const {
    if (std::string kind = host::non_regular_file_kind(toml); !kind.empty()) // a FIFO would block
        throw UserError(Diagnostic{
            SourceLoc{toml.string(), 0, 0}, "", "the pipeline file is " + kind + "; expected a regular TOML file", {}});
    std::ifstream in(toml, std::ios::binary);
    if (!in)
        throw UserError(
            Diagnostic{SourceLoc{toml.string(), 0, 0}, "", "cannot open the pipeline file (does it exist?)", {}});
    std::stringstream ss;
    ss << in.rdbuf();
    return load_string(ss.str(), toml.string());
}

std::vector<std::string> Engine::operators() const {
    std::vector<std::string> names;
    for (const auto& [name, info] : m->registry.ops()) names.push_back(name);
    return names;
}

std::vector<std::string> Engine::rejected_plugins() const {
    std::vector<std::string> out;
    for (const auto& p : m->registry.plugins())
        if (!p.loaded) out.push_back(p.path.string() + ": " + p.reason);
    return out;
}

bool Engine::cuda_available() const { return m->cuda(); }

namespace {

std::vector<OperatorInfo::Port> ports(const pf_port_desc* p, int n) {
    std::vector<OperatorInfo::Port> out;
    for (int k = 0; k < n; ++k)
        out.push_back({p[k].name, host::describe_ports(p[k].dtypes, p[k].channels), p[k].doc ? p[k].doc : ""});
    return out;
}

} // namespace

OperatorInfo Engine::describe(std::string_view op) const {
    std::string name(op);
    const host::OpInfo* info = m->registry.find(name);
    if (!info) {
        auto close = m->registry.closest(name);
        throw UserError(Diagnostic{SourceLoc{"describe(\"" + name + "\")", 0, 0},
                                   "",
                                   "unknown op '" + name + "'" +
                                       (close.empty() ? "" : "; did you mean " + close.front() + "?") +
                                       ". Plugins are searched in " + m->registry.search_path_text(),
                                   {}});
    }
    const pf_op_desc& d = *info->desc;
    OperatorInfo o;
    o.name = d.name;
    o.doc = d.doc ? d.doc : "";
    o.plugin = info->plugin;
    o.path = info->path.string();
    o.backends = info->has_cuda() ? std::vector<std::string>{"cpu", "cuda"} : std::vector<std::string>{"cpu"};
    if (const host::FusionInfo* f = m->registry.fusion_of(name)) o.fuses = f->text();
    o.inputs = ports(d.inputs, d.n_inputs);
    o.outputs = ports(d.outputs, d.n_outputs);
    for (int k = 0; k < d.n_params; ++k) {
        const pf_param_desc& p = d.params[k];
        bool required = (p.flags & PF_PARAM_REQUIRED) != 0;
        o.params.push_back({p.name, host::param_type_name(p.type), required,
                            required ? "" : host::format_value(p.default_value), host::describe_limits(p),
                            p.doc ? p.doc : ""});
    }
    return o;
}

} // namespace pixflow
