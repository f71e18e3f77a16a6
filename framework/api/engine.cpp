// api/ pixflow::Engine: the registry (built-in operators, then every plugin on the search path),
// loaded once and shared, read-only, by every Pipeline made from it.
#include "api/state.hpp"
#include "builtin/builtin.hpp"

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
        throw UserError(Diagnostic{SourceLoc{toml.string(), 0, 0}, "",
                                   "the pipeline file is " + kind + "; expected a regular TOML file", {}});
    std::ifstream in(toml, std::ios::binary);
    if (!in)
        throw UserError(Diagnostic{SourceLoc{toml.string(), 0, 0}, "", "cannot open the pipeline file (does it exist?)", {}});
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

} // namespace pixflow
