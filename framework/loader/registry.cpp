#include "loader/registry.hpp"

#include "loader/descriptor_check.hpp"
#include "loader/plugin_scan.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

namespace fs = std::filesystem;

namespace pixflow::host {

struct Registry::Library {
    boost::dll::shared_library lib;
};

struct Registry::Scan {
    ScanSettings settings;
    std::optional<ScanCache> cache;
    /// By canonical path: the verdict and where it came from.
    std::map<std::string, std::pair<ScanVerdict, PluginRecord::Scan>> verdicts;
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
    std::vector<fs::path> files;
    for (const fs::path& dir : dirs) {
        m_searched.push_back(dir);
        std::error_code ec;
        if (fs::is_regular_file(dir, ec)) {
            if (seen.insert(fs::weakly_canonical(dir, ec)).second) files.push_back(dir);
            continue;
        }
        if (!fs::is_directory(dir, ec)) continue;
        std::vector<fs::path> in_dir;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_regular_file() && entry.path().extension() == ".so") in_dir.push_back(entry.path());
        std::sort(in_dir.begin(), in_dir.end());
        for (const fs::path& f : in_dir)
            if (seen.insert(fs::weakly_canonical(f, ec)).second) files.push_back(f);
    }
    scan(files); // all at once: the scanners run in parallel
    for (const fs::path& f : files) load_file(f);
}

std::string Registry::search_path_text() const {
    if (m_searched.empty()) return "(no folder: no plugins were loaded)";
    std::string s;
    for (const auto& d : m_searched) s += (s.empty() ? "" : ", ") + d.string();
    return s;
}

namespace {
fs::path scan_key(const fs::path& file) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(file, ec), ec);
    return ec ? fs::absolute(file, ec) : p;
}
} // namespace

void Registry::scan(const std::vector<fs::path>& files) {
    if (!m_scan) {
        m_scan = std::make_unique<Scan>();
        m_scan->settings = ScanSettings::from_environment();
    }
    Scan& S = *m_scan;
    if (S.settings.scanner.empty()) {
        static std::atomic<bool> warned{false};
        if (!S.settings.missing.empty() && !warned.exchange(true))
            std::fprintf(stderr,
                         "warning: the plugin scanner %s is missing; plugins are loaded without isolation "
                         "(set PIXFLOW_PLUGIN_SCANNER to its path, or to 'off' to silence this)\n",
                         S.settings.missing.c_str());
        return;
    }
    if (!S.cache) S.cache.emplace(S.settings.cache, ScannerStamp::of(S.settings.scanner));
    std::vector<fs::path> todo;
    std::vector<FileIdentity> ids;
    for (const fs::path& f : files) {
        fs::path key = scan_key(f);
        if (S.verdicts.count(key.string())) continue;
        auto id = identify(key);
        if (!id) continue; // gone or unreadable: the in-process load says why
        if (const ScanVerdict* v = S.cache->find(key, *id)) {
            S.verdicts[key.string()] = {*v, PluginRecord::Scan::cache};
        } else if (std::find(todo.begin(), todo.end(), key) == todo.end()) {
            todo.push_back(key);
            ids.push_back(*id);
        }
    }
    if (!todo.empty()) {
        std::vector<ScanVerdict> vs = scan_in_child_processes(todo, S.settings);
        for (std::size_t k = 0; k < todo.size(); ++k) {
            S.cache->put(todo[k], ids[k], vs[k]);
            S.verdicts[todo[k].string()] = {std::move(vs[k]), PluginRecord::Scan::scanner};
        }
    }
    S.cache->save();
}

const PluginRecord& Registry::load_file(const fs::path& file) {
    PluginRecord& rec = m_plugins.emplace_back();
    rec.path = file;
    scan({file}); // nothing to do when load_all scanned it
    if (m_scan) {
        auto it = m_scan->verdicts.find(scan_key(file).string());
        if (it != m_scan->verdicts.end()) {
            const auto& [v, source] = it->second;
            rec.scan = source;
            if (!v.ok) {
                // Never dlopen'ed here: the scanner rejected it (or crashed on it).
                rec.loaded = false;
                rec.reason = v.reason;
                rec.name = v.name;
                rec.version = v.version;
                rec.abi_major = v.abi_major;
                rec.abi_minor = v.abi_minor;
                return rec;
            }
        }
    }
    return load_in_process(rec, file);
}

const PluginRecord& Registry::load_in_process(PluginRecord& rec, const fs::path& file) {
    auto reject = [&](std::string why) -> const PluginRecord& {
        rec.loaded = false;
        rec.reason = std::move(why);
        return rec;
    };

    auto lib = std::make_unique<Library>();
    try {
        // RTLD_NODELETE: the file stays mapped after the registry lets it go (its static
        // destructors run at the process's exit instead). A TBB worker can still be in a
        // plugin's code for a few instructions after the parallel loop it ran has returned
        // (the task's epilogue, after it released the waiting thread); unmapped under it, the
        // worker jumps to nothing (seen under AddressSanitizer on a loaded machine: SEGV with
        // pc == address after a CPU run, and LeakSanitizer's tracer hitting a crashed thread).
        lib->lib.load(boost::dll::fs::path(file.string()), boost::dll::load_mode::rtld_now |
                                                               boost::dll::load_mode::rtld_local |
                                                               static_cast<boost::dll::load_mode::type>(RTLD_NODELETE));
    } catch (const std::exception& e) { return reject(std::string("cannot be loaded: ") + e.what()); }
    if (!lib->lib.has(PIXFLOW_ENTRY_SYMBOL))
        return reject("not a pixflow plugin: it exports no '" PIXFLOW_ENTRY_SYMBOL "' symbol");

    auto entry = lib->lib.get<const pf_plugin_desc*()>(PIXFLOW_ENTRY_SYMBOL);
    const pf_plugin_desc* d = nullptr;
    try {
        d = entry();
    } catch (const std::exception& e) {
        return reject(std::string("its entry point threw an exception (") + e.what() +
                      "); a C entry point must return a descriptor or NULL");
    } catch (...) {
        return reject("its entry point threw an exception of an unknown type; a C entry point must not throw");
    }
    if (d && d->struct_size >= offsetof(pf_plugin_desc, name)) {
        rec.abi_major = d->abi_major;
        rec.abi_minor = d->abi_minor;
    }
    // The same checks the scanner made: defence in depth, and the only checks when scanning is
    // off. Everything below may trust the descriptor's shape.
    if (std::string why = check_plugin_descriptor(d); !why.empty()) return reject(why);
    rec.name = d->name;
    rec.version = d->version;

    for (int k = 0; k < d->n_ops; ++k)
        if (auto it = m_ops.find(d->ops[k].name); it != m_ops.end())
            return reject("duplicate operator '" + std::string(d->ops[k].name) + "', already provided by " +
                          it->second.path.string());
    // ABI 1.1: fusions, only when the plugin's descriptor is long enough to have them.
    std::vector<FusionInfo> fusions;
    if (d->struct_size >= offsetof(pf_plugin_desc, n_fusions) + sizeof(d->n_fusions) && d->abi_minor >= 1) {
        for (int k = 0; k < d->n_fusions; ++k) {
            FusionInfo info;
            info.desc = &d->fusions[k];
            for (int j = 0; j < d->fusions[k].n_chain; ++j) info.chain.emplace_back(d->fusions[k].chain[j]);
            fusions.push_back(std::move(info));
        }
    }
    if (d->init) {
        char err[512] = {0};
        int32_t s = PF_OK;
        try {
            s = d->init(err, sizeof err);
        } catch (const std::exception& e) {
            return reject(std::string("its init threw an exception (") + e.what() + ")");
        } catch (...) { return reject("its init threw an exception of an unknown type"); }
        // The plugin may have left the buffer unterminated: read at most its size - 1 bytes.
        std::string msg = terminated_message(err, sizeof err);
        if (s != PF_OK) return reject("its init failed: " + (msg.empty() ? std::string("no message") : msg));
    }
    // ABI 1.2: access patterns, likewise; an operator without one is whole-image.
    const bool has_access = has_access_patterns(*d);
    // ABI 1.5: scratch estimates; an operator without one is taken to take no scratch.
    const bool has_scratch = has_scratch_estimates(*d);
    for (int k = 0; k < d->n_ops; ++k) {
        OpInfo info{&d->ops[k], rec.name, file};
        for (int j = 0; has_access && j < d->n_access; ++j)
            if (std::strcmp(access_entry(*d, j).op, d->ops[k].name) == 0) info.access = &access_entry(*d, j);
        for (int j = 0; has_scratch && j < d->n_scratch; ++j)
            if (std::strcmp(d->scratch[j].op, d->ops[k].name) == 0) info.scratch = &d->scratch[j];
        m_ops[d->ops[k].name] = info;
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
        if (!p.loaded)
            return "no loaded plugin provides it, and " + p.path.string() + " was rejected (" + p.reason + ")";
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
