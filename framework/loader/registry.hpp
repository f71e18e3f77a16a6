// loader/: finds plugin files, scans each in a child process first (plugin_scan.hpp: a plugin that
// crashes, exits, hangs or answers garbage is rejected there, and the verdict is cached by file
// identity), loads the accepted ones with Boost.DLL, validates their descriptors again
// (descriptor_check.hpp) and indexes their operators by name. A bad file never stops the others:
// it is kept with its reason.
#pragma once

#include <pixflow/abi.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pixflow::host {

/// One plugin file on the search path, loaded or rejected.
struct PluginRecord {
    std::filesystem::path path;
    bool loaded = false;
    std::string reason; ///< why it was rejected (empty when loaded)
    std::string name, version;
    unsigned abi_major = 0, abi_minor = 0;
    std::vector<std::string> ops;
    /// Where the verdict came from: a scanner process, the scan cache, or only the in-process
    /// checks (scanning off, or the scanner missing).
    enum class Scan { in_process, scanner, cache } scan = Scan::in_process;
};

/// An operator as the host sees it: the plugin's descriptor plus where it came from.
struct OpInfo {
    const pf_op_desc* desc = nullptr;
    std::string plugin;
    std::filesystem::path path;
    /// ABI 1.2: how it reads its input rows; nullptr for whole-image (also every older plugin).
    const pf_access_desc* access = nullptr;
    /// ABI 1.5: the most scratch memory one run call takes; nullptr: none (also every older plugin).
    const pf_scratch_desc* scratch = nullptr;
    bool has_cuda() const { return desc->run_cuda != nullptr; }
    pf_access_kind access_kind() const { return access ? pf_access_kind(access->kind) : PF_ACCESS_WHOLE; }
};

/// A chain of operators that a plugin implements as one fused operator (ABI 1.1).
struct FusionInfo {
    const pf_fusion_desc* desc = nullptr;
    const OpInfo* fused = nullptr;
    std::vector<std::string> chain;
    std::string text() const; ///< "dct8x8 -> quantize -> ..."
};

class Registry {
  public:
    Registry();
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    /// The search path: explicit dirs, then $PIXFLOW_PLUGIN_PATH (':'-separated), then the
    /// installation's plugin folder next to the executable (<exe>/../lib/pixflow/plugins).
    static std::vector<std::filesystem::path> search_path(const std::vector<std::filesystem::path>& explicit_dirs);
    /// Loads every plugin file (*.so) of every folder on the path, in order; a file can also be
    /// named directly. Files the scan cache does not know are scanned first, in parallel child
    /// processes; only those the scanner accepted are loaded into this process.
    void load_all(const std::vector<std::filesystem::path>& dirs);
    /// Loads one plugin file (scanned first, as above); returns its record (rejected ones too).
    const PluginRecord& load_file(const std::filesystem::path& file);
    /// Registers operators the host itself provides (no file; `where` names them), before any
    /// file is loaded so that no plugin can take their names.
    const PluginRecord& add_builtin(const pf_plugin_desc& desc, const std::filesystem::path& where);

    const OpInfo* find(const std::string& op) const;
    const std::map<std::string, OpInfo>& ops() const { return m_ops; }
    const std::vector<PluginRecord>& plugins() const { return m_plugins; }
    const std::vector<FusionInfo>& fusions() const { return m_fusions; }
    /// The fusion whose fused operator is `op`, if any.
    const FusionInfo* fusion_of(const std::string& op) const;
    /// The rejected plugin that claimed to provide `op`, if any (for error messages).
    std::string rejected_reason_for(const std::string& op) const;
    /// The folders and files load_all searched, in order, as one line ("a, b, c"), for messages
    /// that must say where plugins come from.
    std::string search_path_text() const;
    /// Up to 3 known op names closest to `name` (edit distance), for "did you mean".
    std::vector<std::string> closest(const std::string& name) const;

  private:
    struct Library;
    struct Scan;
    /// Scan verdicts for `files` (from the cache, else from scanner processes) into m_scan.
    void scan(const std::vector<std::filesystem::path>& files);
    const PluginRecord& load_in_process(PluginRecord& rec, const std::filesystem::path& file);
    std::unique_ptr<Scan> m_scan;
    std::vector<std::unique_ptr<Library>> m_libs;
    std::vector<PluginRecord> m_plugins;
    std::map<std::string, OpInfo> m_ops;
    std::vector<FusionInfo> m_fusions;
    std::vector<std::filesystem::path> m_searched;
};

/// Levenshtein distance, used for suggestions everywhere.
std::size_t edit_distance(const std::string& a, const std::string& b);

} // namespace pixflow::host
