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
    double timeout_s = 10; ///< per plugin file: $PIXFLOW_PLUGIN_SCAN_TIMEOUT (seconds)
    unsigned parallel = 8; ///< scanners running at once
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

/// Who scanned: the pixflow version and ABI, and the scanner executable with its identity. A
/// verdict counts only for the same scanner of the same pixflow: an upgrade or a rebuilt scanner
/// scans every plugin again.
struct ScannerStamp {
    std::string pixflow;  ///< "0.1.0, ABI 1.1"
    std::string scanner;  ///< its path
    std::string identity; ///< "size:mtime_ns:inode" of that file
    bool operator==(const ScannerStamp&) const = default;
    static ScannerStamp of(const std::filesystem::path& scanner);
};

/// Verdicts of earlier scans, kept in one JSON file for every pixflow of the user: several build
/// trees or installations share it without evicting each other's verdicts. A missing,
/// unreadable or corrupt file counts as empty and is rewritten. When the file is saved, entries
/// are dropped whose plugin no longer exists or whose scanner is gone or was rebuilt.
class ScanCache {
  public:
    /// `file` empty: a cache that remembers nothing and saves nothing.
    ScanCache(std::filesystem::path file, ScannerStamp stamp);
    const ScanVerdict* find(const std::filesystem::path& plugin, const FileIdentity& id) const;
    void put(const std::filesystem::path& plugin, const FileIdentity& id, const ScanVerdict& v);
    /// Writes the file (temporary + rename) when an entry was added or the file was corrupt;
    /// failures are ignored: the cache only saves time.
    void save();

  private:
    struct Entry {
        std::string path;
        ScannerStamp stamp;
        FileIdentity id;
        ScanVerdict verdict;
    };
    std::filesystem::path m_file;
    ScannerStamp m_stamp;
    std::vector<Entry> m_entries;
    bool m_dirty = false;
};

} // namespace pixflow::host
