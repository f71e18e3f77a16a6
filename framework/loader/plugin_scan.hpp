// loader/plugin_scan.hpp: scanning plugin files in child processes (the pixflow-plugin-scanner
// executable, framework/scanner/) before any is loaded into the host, and caching the verdicts
// by file identity so that a second run starts no child at all.
//
//   Registry::load_all
//     -> ScanCache::find(path, identity)        hit: the verdict of an earlier scan
//     -> scan_in_child_processes(misses)        one scanner per file, several at once, a timeout
//     -> ScanCache::save()                      atomically, only when something changed
//     -> dlopen in-process only what was accepted
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pixflow::host {

/// What a scan found out about one plugin file.
struct ScanVerdict {
    bool ok = false;
    /// false when the scan itself could not be done (the scanner would not start): such a
    /// verdict says nothing about the plugin and is not cached.
    bool cacheable = true;
    std::string reason; ///< why it is rejected (empty when ok)
    std::string name, version;
    unsigned abi_major = 0, abi_minor = 0;
    std::vector<std::string> ops;
};

/// Where and how plugins are scanned; from the environment unless a caller says otherwise.
struct ScanSettings {
    /// The scanner executable; empty when scanning is off ($PIXFLOW_PLUGIN_SCANNER=off) or the
    /// executable was not found (then `missing` names where it was looked for).
    std::filesystem::path scanner;
    std::filesystem::path missing;
    double timeout_s = 10;  ///< per plugin file: $PIXFLOW_PLUGIN_SCAN_TIMEOUT (seconds)
    unsigned parallel = 8;  ///< scanners running at once
    /// The cache file; empty when caching is off ($PIXFLOW_PLUGIN_CACHE=off, or no $HOME).
    std::filesystem::path cache;

    /// $PIXFLOW_PLUGIN_SCANNER (a path, or "off"), else <libdir>/pixflow/pixflow-plugin-scanner
    /// next to the framework library; $PIXFLOW_PLUGIN_CACHE (a file, or "off"), else
    /// $XDG_CACHE_HOME/pixflow/plugin-scan-v1.json, else ~/.cache/pixflow/plugin-scan-v1.json.
    static ScanSettings from_environment();
};

/// Scans each file in a child process, at most settings.parallel at once, each killed after
/// settings.timeout_s. One verdict per file, in order. `settings.scanner` must be set.
std::vector<ScanVerdict> scan_in_child_processes(const std::vector<std::filesystem::path>& files,
                                                 const ScanSettings& settings);

/// The identity of a file as the cache keys it: a plugin that was rebuilt, replaced or touched
/// has another one.
struct FileIdentity {
    std::uintmax_t size = 0;
    std::int64_t mtime_ns = 0;
    std::uint64_t inode = 0, device = 0;
    bool operator==(const FileIdentity&) const = default;
};
std::optional<FileIdentity> identify(const std::filesystem::path& file);

/// Verdicts of earlier scans, kept in a JSON file. The file records the pixflow version, the ABI
/// and the scanner's own identity: an upgrade (or a rebuilt scanner) starts from an empty cache.
/// A missing, unreadable or corrupt file counts as empty and is rewritten. Entries of files that
/// no longer exist are dropped when the cache is saved.
class ScanCache {
  public:
    /// `file` empty: a cache that remembers nothing and saves nothing.
    ScanCache(std::filesystem::path file, std::string stamp);
    const ScanVerdict* find(const std::filesystem::path& plugin, const FileIdentity& id) const;
    void put(const std::filesystem::path& plugin, const FileIdentity& id, const ScanVerdict& v);
    /// Writes the file (temporary + rename) when an entry was added or the file was corrupt;
    /// failures are ignored: the cache only saves time.
    void save();

  private:
    struct Entry {
        FileIdentity id;
        ScanVerdict verdict;
    };
    std::filesystem::path m_file;
    std::string m_stamp;
    std::vector<std::pair<std::string, Entry>> m_entries; ///< by plugin path
    bool m_dirty = false;
};

/// The stamp a cache must carry to be used: pixflow version, ABI, and the scanner's identity.
std::string scan_cache_stamp(const std::filesystem::path& scanner);

} // namespace pixflow::host
