#include "loader/registry.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace fs = std::filesystem;

namespace pixflow::host {

struct Registry::Library {
    boost::dll::shared_library lib;
};

Registry::Registry() = default;
Registry::~Registry() = default;

std::vector<fs::path> Registry::search_path(const std::vector<fs::path>& explicit_dirs) {
    std::vector<fs::path> out(explicit_dirs.begin(), explicit_dirs.end());
    if (const char* env = std::getenv("PIXFLOW_PLUGIN_PATH")) {
        std::string s(env);
        std::size_t start = 0;
        while (start <= s.size()) {
            std::size_t end = s.find(':', start);
            if (end == std::string::npos) end = s.size();
            if (end > start) out.emplace_back(s.substr(start, end - start));
            start = end + 1;
        }
    }
    // The installation's plugin folder, relative to the executable (build tree and install
    // tree have the same layout), and relative to this library for programs elsewhere that
    // link it (an author's test binary).
    fs::path exe_dir = boost::dll::program_location().parent_path().string();
    fs::path from_exe = (exe_dir / ".." / PIXFLOW_PLUGIN_SUBDIR).lexically_normal();
    out.push_back(from_exe);
    fs::path lib_dir = boost::dll::this_line_location().parent_path().string();
    fs::path from_lib = (lib_dir / ".." / PIXFLOW_PLUGIN_SUBDIR).lexically_normal();
    if (from_lib != from_exe) out.push_back(from_lib);
    return out;
}

void Registry::load_all(const std::vector<fs::path>& dirs) {
    std::set<fs::path> seen;
    for (const fs::path& dir : dirs) {
        m_searched.push_back(dir);
        std::error_code ec;
        if (fs::is_regular_file(dir, ec)) {
            if (seen.insert(fs::weakly_canonical(dir, ec)).second) load_file(dir);
            continue;
        }
        if (!fs::is_directory(dir, ec)) continue;
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_regular_file() && entry.path().extension() == ".so")
                files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        for (const fs::path& f : files)
            if (seen.insert(fs::weakly_canonical(f, ec)).second) load_file(f);
    }
}

std::string Registry::search_path_text() const {
    if (m_searched.empty()) return "(no folder: no plugins were loaded)";
    std::string s;
    for (const auto& d : m_searched) s += (s.empty() ? "" : ", ") + d.string();
    return s;
}

const PluginRecord& Registry::load_file(const fs::path& file) {
    PluginRecord& rec = m_plugins.emplace_back();
    rec.path = file;
    auto reject = [&](std::string why) -> const PluginRecord& {
        rec.loaded = false;
        rec.reason = std::move(why);
        return rec;
    };

    auto lib = std::make_unique<Library>();
    try {
        lib->lib.load(boost::dll::fs::path(file.string()),
                      boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
        return reject(std::string("cannot be loaded: ") + e.what());
    }
    if (!lib->lib.has(PIXFLOW_ENTRY_SYMBOL))
        return reject("not a pixflow plugin: it exports no '" PIXFLOW_ENTRY_SYMBOL "' symbol");

    auto entry = lib->lib.get<const pf_plugin_desc*()>(PIXFLOW_ENTRY_SYMBOL);
    const pf_plugin_desc* d = entry();
    if (!d) return reject("its entry point returned no descriptor");
    rec.abi_major = d->abi_major;
    rec.abi_minor = d->abi_minor;
    std::string versions = "plugin ABI " + std::to_string(d->abi_major) + "." +
                           std::to_string(d->abi_minor) + ", pixflow ABI " +
                           std::to_string(PIXFLOW_ABI_MAJOR) + "." + std::to_string(PIXFLOW_ABI_MINOR);
    if (d->abi_major != PIXFLOW_ABI_MAJOR)
        return reject("ABI major version differs (" + versions + "); rebuild it against this SDK");
    if (d->abi_minor > PIXFLOW_ABI_MINOR)
        return reject("built for a newer ABI (" + versions + "); upgrade pixflow");
    if (d->struct_size < offsetof(pf_plugin_desc, init) + sizeof(d->init))
        return reject("descriptor too small (struct_size " + std::to_string(d->struct_size) + ")");
    rec.name = d->name ? d->name : "";
    rec.version = d->version ? d->version : "";

    for (int k = 0; k < d->n_ops; ++k) {
        const pf_op_desc& op = d->ops[k];
        if (!op.name || !op.run_cpu || !op.infer)
            return reject("operator #" + std::to_string(k) + " lacks a name, infer or run_cpu");
        if (auto it = m_ops.find(op.name); it != m_ops.end())
            return reject("duplicate operator '" + std::string(op.name) + "', already provided by " +
                          it->second.path.string());
        for (int j = 0; j < k; ++j)
            if (std::string(d->ops[j].name) == op.name)
                return reject("declares operator '" + std::string(op.name) + "' twice");
    }
    // ABI 1.1: fusions, only when the plugin's descriptor is long enough to have them.
    std::vector<FusionInfo> fusions;
    if (d->struct_size >= offsetof(pf_plugin_desc, n_fusions) + sizeof(d->n_fusions) && d->abi_minor >= 1) {
        for (int k = 0; k < d->n_fusions; ++k) {
            const pf_fusion_desc& f = d->fusions[k];
            std::string where = "fusion #" + std::to_string(k);
            const pf_op_desc* fused = nullptr;
            for (int j = 0; j < d->n_ops; ++j)
                if (f.fused_op && std::string(d->ops[j].name) == f.fused_op) fused = &d->ops[j];
            if (!fused)
                return reject(where + " names fused operator '" + (f.fused_op ? f.fused_op : "(null)") +
                              "', which this plugin does not declare");
            if (f.n_chain < 2) return reject(where + " ('" + f.fused_op + "') has a chain of fewer than 2 operators");
            FusionInfo info;
            info.desc = &f;
            for (int j = 0; j < f.n_chain; ++j) info.chain.emplace_back(f.chain[j] ? f.chain[j] : "");
            for (int j = 0; j < f.n_binds; ++j) {
                const pf_fusion_bind& b = f.binds[j];
                bool known = false;
                for (int q = 0; q < fused->n_params; ++q)
                    known |= b.fused_param && std::string(fused->params[q].name) == b.fused_param;
                if (!known || b.node < 0 || b.node >= f.n_chain || !b.param)
                    return reject(where + " ('" + f.fused_op + "') binds an unknown parameter or node");
            }
            for (int j = 0; j < f.n_same; ++j)
                if (f.same[j].node_a < 0 || f.same[j].node_a >= f.n_chain || f.same[j].node_b < 0 ||
                    f.same[j].node_b >= f.n_chain || !f.same[j].param_a || !f.same[j].param_b)
                    return reject(where + " ('" + f.fused_op + "') has a bad `same` constraint");
            fusions.push_back(std::move(info));
        }
    }
    if (d->init) {
        char err[512] = {0};
        if (int32_t s = d->init(err, sizeof err); s != PF_OK)
            return reject(std::string("its init failed: ") + (err[0] ? err : "no message"));
    }
    for (int k = 0; k < d->n_ops; ++k) {
        m_ops[d->ops[k].name] = OpInfo{&d->ops[k], rec.name, file};
        rec.ops.emplace_back(d->ops[k].name);
    }
    for (FusionInfo& f : fusions) {
        f.fused = &m_ops[f.desc->fused_op];
        m_fusions.push_back(std::move(f));
    }
    rec.loaded = true;
    m_libs.push_back(std::move(lib));
    return rec;
}

const PluginRecord& Registry::add_builtin(const pf_plugin_desc& d, const fs::path& where) {
    PluginRecord& rec = m_plugins.emplace_back();
    rec = PluginRecord{where, true, "", d.name, d.version, d.abi_major, d.abi_minor, {}};
    for (int k = 0; k < d.n_ops; ++k) {
        m_ops[d.ops[k].name] = OpInfo{&d.ops[k], rec.name, where};
        rec.ops.emplace_back(d.ops[k].name);
    }
    return rec;
}

const OpInfo* Registry::find(const std::string& op) const {
    auto it = m_ops.find(op);
    return it == m_ops.end() ? nullptr : &it->second;
}

const FusionInfo* Registry::fusion_of(const std::string& op) const {
    for (const FusionInfo& f : m_fusions)
        if (f.desc->fused_op == op) return &f;
    return nullptr;
}

std::string FusionInfo::text() const {
    std::string s;
    for (const std::string& c : chain) s += (s.empty() ? "" : " -> ") + c;
    return s;
}

std::string Registry::rejected_reason_for(const std::string& op) const {
    // A rejected plugin's ops are unknown; guess from the file name (pixflow_<op>.so).
    for (const PluginRecord& p : m_plugins)
        if (!p.loaded && p.path.stem().string().find(op) != std::string::npos)
            return "its plugin " + p.path.string() + " was rejected: " + p.reason;
    for (const PluginRecord& p : m_plugins)
        if (!p.loaded) return "no loaded plugin provides it, and " + p.path.string() + " was rejected (" + p.reason + ")";
    return {};
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::vector<std::string> Registry::closest(const std::string& name) const {
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& [op, info] : m_ops) scored.emplace_back(edit_distance(name, op), op);
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> out;
    for (const auto& [d, op] : scored)
        if (out.size() < 3 && d <= std::max<std::size_t>(2, name.size() / 2)) out.push_back(op);
    return out;
}

} // namespace pixflow::host
