// Scanning plugins in child processes and caching the verdicts (see plugin_scan.hpp).
#include "loader/plugin_scan.hpp"

#include "loader/scan_protocol.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include <pixflow/abi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <poll.h>
#include <pwd.h>
#include <random>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PIXFLOW_SCANNER_RELPATH
#define PIXFLOW_SCANNER_RELPATH "pixflow/pixflow-plugin-scanner"
#endif

extern char** environ;

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

bool is_off(const std::string& v) { return v == "off" || v == "0" || v == "no" || v == "none"; }

const char* signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return nullptr;
    }
}

std::string signal_text(int sig) {
    const char* n = signal_name(sig);
    return n ? n : "signal " + std::to_string(sig);
}

/// Where the scanner was when it stopped, as the end of a sentence.
std::string phase_text(const std::string& phase) {
    if (phase == "load") return "while loading it (in a static constructor or a library it needs)";
    if (phase == "entry") return "in its entry point " PIXFLOW_ENTRY_SYMBOL "()";
    if (phase == "check") return "while its descriptor was read (it holds an invalid pointer)";
    if (phase == "init") return "in its init()";
    if (phase == "unload") return "while unloading it (in a static destructor)";
    return "before loading it";
}

/// Duplicates fd to a number >= 10 (close-on-exec), so that the child's dup2 onto 2 and 3 never
/// meets itself (dup2(3, 3) would keep close-on-exec set).
int high_fd(int fd) {
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    ::close(fd);
    return h;
}

struct Child {
    std::size_t index = 0;
    pid_t pid = -1;
    int report_fd = -1, err_fd = -1;
    std::string report, err;
    Clock::time_point deadline;
    bool reaped = false, timed_out = false;
    int status = 0;
};

constexpr std::size_t report_cap = 1 << 20, err_cap = 8192;

/// Reads what is there without blocking; closes fd at end of file.
void drain(int& fd, std::string& into, std::size_t cap, bool keep_tail) {
    if (fd < 0) return;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            into.append(buf, std::size_t(n));
            if (into.size() > cap) {
                if (keep_tail)
                    into.erase(0, into.size() - cap);
                else
                    into.resize(cap);
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            ::close(fd);
            fd = -1;
        }
        return;
    }
}

std::string last_message(const std::string& err) {
    std::string last;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);)
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    for (char& c : last)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
    if (last.size() > 200) last = last.substr(0, 197) + "...";
    return last.empty() ? "" : "; its last message: \"" + last + "\"";
}

ScanVerdict verdict_of(const Child& c, const ScanSettings& st) {
    ScanVerdict v;
    std::string phase, result;
    bool hello = false, done = false, have_result = false;
    std::istringstream in(c.report);
    for (std::string line; std::getline(in, line);) {
        if (in.eof()) break; // a line without its '\n': cut off by a crash
        auto sp = line.find(' ');
        std::string key = line.substr(0, sp), val = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (line == scan_protocol::hello)
            hello = true;
        else if (key == "phase")
            phase = val;
        else if (key == "plugin")
            v.name = scan_protocol::unescape(val);
        else if (key == "version")
            v.version = scan_protocol::unescape(val);
        else if (key == "abi")
            std::sscanf(val.c_str(), "%u %u", &v.abi_major, &v.abi_minor);
        else if (key == "op")
            v.ops.push_back(scan_protocol::unescape(val));
        else if (key == "result" && !have_result) {
            have_result = true;
            result = val;
        } else if (key == "done")
            done = true;
    }
    if (!hello && !c.timed_out && !(WIFSIGNALED(c.status))) {
        // The scanner itself did not start (exec failed: exit 127): nothing is known about the plugin.
        v.cacheable = false;
        v.reason = "the plugin scanner " + st.scanner.string() + " did not run (exit status " +
                   std::to_string(WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1) + ")" + last_message(c.err);
        return v;
    }
    bool rejected = have_result && result.rfind("rejected ", 0) == 0;
    if (rejected) v.reason = scan_protocol::unescape(result.substr(9));
    if (c.timed_out) {
        char t[32];
        std::snprintf(t, sizeof t, "%g", st.timeout_s);
        v.reason = std::string("the scan did not finish within ") + t + " s: it hangs " + phase_text(phase) +
                   last_message(c.err);
    } else if (WIFSIGNALED(c.status)) {
        // A plugin rejected for a reason and then crashing when unloaded keeps the first reason.
        if (!rejected)
            v.reason = "the plugin crashed during the scan (" + signal_text(WTERMSIG(c.status)) + ") " +
                       phase_text(phase) + last_message(c.err);
    } else if (!done || WEXITSTATUS(c.status) != 0 || !have_result) {
        v.reason = "the plugin ended the scan with exit status " + std::to_string(WEXITSTATUS(c.status)) + " " +
                   phase_text(phase) + "; a plugin must not call exit()" + last_message(c.err);
    } else if (result == "ok") {
        v.ok = true;
    } else if (!rejected) {
        v.reason = "the plugin scanner answered '" + scan_protocol::escape(result) + "'";
    }
    if (!v.ok && v.reason.empty()) v.reason = "the scan failed";
    return v;
}

bool start(Child& c, const fs::path& file, const ScanSettings& st) {
    int rep[2], err[2];
    if (pipe2(rep, O_CLOEXEC) != 0) return false;
    if (pipe2(err, O_CLOEXEC) != 0) {
        ::close(rep[0]);
        ::close(rep[1]);
        return false;
    }
    for (int* fd : {&rep[0], &rep[1], &err[0], &err[1]}) *fd = high_fd(*fd);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_adddup2(&fa, rep[1], scan_protocol::report_fd);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own process group (a hang is killed with everything it started), default signal handling
    // and an empty mask whatever the host set.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL})
        sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::string exe = st.scanner.string(), parent = std::to_string(getpid()), path = file.string();
    std::string a0 = exe, a1 = "--parent";
    char* argv[] = {a0.data(), a1.data(), parent.data(), path.data(), nullptr};
    int rc = posix_spawn(&c.pid, exe.c_str(), &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(rep[1]);
    ::close(err[1]);
    if (rc != 0) {
        ::close(rep[0]);
        ::close(err[0]);
        c.pid = -1;
        errno = rc;
        return false;
    }
    c.report_fd = rep[0];
    c.err_fd = err[0];
    fcntl(c.report_fd, F_SETFL, O_NONBLOCK);
    fcntl(c.err_fd, F_SETFL, O_NONBLOCK);
    c.deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(st.timeout_s));
    return true;
}

} // namespace

ScanSettings ScanSettings::from_environment() {
    ScanSettings s;
    std::string scanner = env("PIXFLOW_PLUGIN_SCANNER");
    if (is_off(scanner)) {
        // scanning off: plugins are loaded in-process only (debugging a plugin in gdb)
    } else {
        fs::path p = !scanner.empty()
                         ? fs::path(scanner)
                         : fs::path(boost::dll::this_line_location().parent_path().string()) / PIXFLOW_SCANNER_RELPATH;
        if (::access(p.c_str(), X_OK) == 0)
            s.scanner = p;
        else
            s.missing = p;
    }
    if (std::string t = env("PIXFLOW_PLUGIN_SCAN_TIMEOUT"); !t.empty()) {
        char* end = nullptr;
        double v = std::strtod(t.c_str(), &end);
        if (end && *end == '\0' && v > 0 && v < 1e6) s.timeout_s = v;
    }
    std::string cache = env("PIXFLOW_PLUGIN_CACHE");
    if (!is_off(cache)) {
        if (!cache.empty())
            s.cache = cache;
        else if (std::string x = env("XDG_CACHE_HOME"); !x.empty() && x[0] == '/')
            s.cache = fs::path(x) / "pixflow/plugin-scan-v1.json";
        else if (std::string h = env("HOME"); !h.empty())
            s.cache = fs::path(h) / ".cache/pixflow/plugin-scan-v1.json";
        else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir && *pw->pw_dir)
            s.cache = fs::path(pw->pw_dir) / ".cache/pixflow/plugin-scan-v1.json";
    }
    return s;
}

std::vector<ScanVerdict> scan_in_child_processes(const std::vector<fs::path>& files, const ScanSettings& st) {
    std::vector<ScanVerdict> out(files.size());
    std::vector<Child> running;
    std::size_t next = 0;
    unsigned parallel = std::max(1u, st.parallel);
    while (next < files.size() || !running.empty()) {
        while (running.size() < parallel && next < files.size()) {
            Child c;
            c.index = next++;
            if (start(c, files[c.index], st)) {
                running.push_back(std::move(c));
            } else {
                ScanVerdict& v = out[c.index];
                v.cacheable = false;
                v.reason =
                    "the plugin scanner " + st.scanner.string() + " could not be started: " + std::strerror(errno);
            }
        }
        if (running.empty()) continue;
        // Wait for output or the nearest deadline; a child whose pipes are closed is polled for
        // its exit every few ms (a grandchild may hold the pipes, so EOF is not the signal).
        std::vector<pollfd> fds;
        auto now = Clock::now();
        auto wake = now + std::chrono::seconds(1);
        for (const Child& c : running) {
            for (int fd : {c.report_fd, c.err_fd})
                if (fd >= 0) fds.push_back({fd, POLLIN, 0});
            wake = std::min(wake, c.deadline);
            if (c.report_fd < 0 && c.err_fd < 0) wake = std::min(wake, now + std::chrono::milliseconds(2));
        }
        int ms =
            int(std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1));
        if (fds.empty())
            ::usleep(useconds_t(std::min(ms, 2) * 1000));
        else
            ::poll(fds.data(), fds.size(), ms);

        now = Clock::now();
        for (auto it = running.begin(); it != running.end();) {
            Child& c = *it;
            drain(c.report_fd, c.report, report_cap, false);
            drain(c.err_fd, c.err, err_cap, true);
            pid_t r = waitpid(c.pid, &c.status, WNOHANG);
            if (r == c.pid)
                c.reaped = true;
            else if (now >= c.deadline) {
                kill(-c.pid, SIGKILL);
                kill(c.pid, SIGKILL);
                while (waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR) {}
                c.reaped = c.timed_out = true;
            } else if (r < 0 && errno != EINTR) {
                c.reaped = true; // not our child any more (SIGCHLD ignored by the host)
                c.status = 0;
            }
            if (!c.reaped) {
                ++it;
                continue;
            }
            // Everything it wrote before exiting is in the pipes now.
            drain(c.report_fd, c.report, report_cap, false);
            drain(c.err_fd, c.err, err_cap, true);
            for (int* fd : {&c.report_fd, &c.err_fd})
                if (*fd >= 0) {
                    ::close(*fd);
                    *fd = -1;
                }
            out[c.index] = verdict_of(c, st);
            it = running.erase(it);
        }
    }
    return out;
}

std::optional<FileIdentity> identify(const fs::path& file) {
    struct stat sb {};
    if (::stat(file.c_str(), &sb) != 0) return std::nullopt;
    FileIdentity id;
    id.size = std::uintmax_t(sb.st_size);
    id.mtime_ns = std::int64_t(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec;
    id.inode = std::uint64_t(sb.st_ino);
    id.device = std::uint64_t(sb.st_dev);
    return id;
}

namespace {
std::string identity_text(const fs::path& file) {
    auto id = identify(file);
    return id ? std::to_string(id->size) + ":" + std::to_string(id->mtime_ns) + ":" + std::to_string(id->inode) : "";
}
} // namespace

ScannerStamp ScannerStamp::of(const fs::path& scanner) {
    return ScannerStamp{std::string(PIXFLOW_VERSION) + ", ABI " + std::to_string(PIXFLOW_ABI_MAJOR) + "." +
                            std::to_string(PIXFLOW_ABI_MINOR),
                        scanner.string(), identity_text(scanner)};
}

// ---- the cache file ----------------------------------------------------------------------------
//
// {"format": "pixflow plugin scan cache", "entries": [
//   {"plugin": "/abs/p.so", "size": N, "mtime_ns": N, "inode": N, "device": N,
//    "pixflow": "0.1.0, ABI 1.1", "scanner": "/abs/pixflow-plugin-scanner", "scanner_id": "N:N:N",
//    "ok": true, "reason": "", "name": "", "version": "", "abi": [1, 1], "ops": ["..."]}, ...]}

namespace {
constexpr const char* cache_format = "pixflow plugin scan cache";
constexpr std::size_t max_entries = 4096;
} // namespace

ScanCache::ScanCache(fs::path file, ScannerStamp stamp) : m_file(std::move(file)), m_stamp(std::move(stamp)) {
    if (m_file.empty()) return;
    std::ifstream in(m_file, std::ios::binary);
    if (!in) return; // none yet: written after the first scan
    try {
        nlohmann::json j = nlohmann::json::parse(in);
        if (j.at("format") != cache_format) throw std::runtime_error("another format");
        for (const auto& e : j.at("entries")) {
            Entry en;
            en.path = e.at("plugin").get<std::string>();
            en.id.size = e.at("size").get<std::uintmax_t>();
            en.id.mtime_ns = e.at("mtime_ns").get<std::int64_t>();
            en.id.inode = e.at("inode").get<std::uint64_t>();
            en.id.device = e.at("device").get<std::uint64_t>();
            en.stamp.pixflow = e.at("pixflow").get<std::string>();
            en.stamp.scanner = e.at("scanner").get<std::string>();
            en.stamp.identity = e.at("scanner_id").get<std::string>();
            en.verdict.ok = e.at("ok").get<bool>();
            en.verdict.reason = e.at("reason").get<std::string>();
            en.verdict.name = e.at("name").get<std::string>();
            en.verdict.version = e.at("version").get<std::string>();
            en.verdict.abi_major = e.at("abi").at(0).get<unsigned>();
            en.verdict.abi_minor = e.at("abi").at(1).get<unsigned>();
            en.verdict.ops = e.at("ops").get<std::vector<std::string>>();
            if (!en.verdict.ok && en.verdict.reason.empty()) throw std::runtime_error("rejected without a reason");
            m_entries.push_back(std::move(en));
        }
    } catch (const std::exception&) {
        // Corrupt (truncated, edited, another format): ignored, and rewritten at save().
        m_entries.clear();
        m_dirty = true;
    }
}

const ScanVerdict* ScanCache::find(const fs::path& plugin, const FileIdentity& id) const {
    for (const Entry& e : m_entries)
        if (e.path == plugin.string() && e.stamp == m_stamp && e.id == id) return &e.verdict;
    return nullptr;
}

void ScanCache::put(const fs::path& plugin, const FileIdentity& id, const ScanVerdict& v) {
    if (m_file.empty() || !v.cacheable) return;
    auto it = std::find_if(m_entries.begin(), m_entries.end(),
                           [&](const Entry& e) { return e.path == plugin.string() && e.stamp == m_stamp; });
    if (it == m_entries.end()) it = m_entries.insert(m_entries.end(), Entry{});
    *it = Entry{plugin.string(), m_stamp, id, v};
    m_dirty = true;
}

void ScanCache::save() {
    if (m_file.empty() || !m_dirty) return;
    m_dirty = false;
    // Drop what can never match again: deleted plugins, scanners deleted or rebuilt (ours too:
    // its stamp was taken when this run started). Beyond the cap, the oldest go first.
    std::map<std::string, std::string> scanner_now;
    std::erase_if(m_entries, [&](const Entry& e) {
        std::error_code ec;
        if (!fs::exists(e.path, ec)) return true;
        auto [it, fresh] = scanner_now.try_emplace(e.stamp.scanner);
        if (fresh) it->second = identity_text(e.stamp.scanner);
        return it->second != e.stamp.identity;
    });
    if (m_entries.size() > max_entries) m_entries.erase(m_entries.begin(), m_entries.end() - max_entries);
    nlohmann::json entries = nlohmann::json::array();
    for (const Entry& e : m_entries)
        entries.push_back({{"plugin", e.path},
                           {"size", e.id.size},
                           {"mtime_ns", e.id.mtime_ns},
                           {"inode", e.id.inode},
                           {"device", e.id.device},
                           {"pixflow", e.stamp.pixflow},
                           {"scanner", e.stamp.scanner},
                           {"scanner_id", e.stamp.identity},
                           {"ok", e.verdict.ok},
                           {"reason", e.verdict.reason},
                           {"name", e.verdict.name},
                           {"version", e.verdict.version},
                           {"abi", {e.verdict.abi_major, e.verdict.abi_minor}},
                           {"ops", e.verdict.ops}});
    nlohmann::json j = {{"format", cache_format}, {"entries", entries}};
    // Paths and plugin strings may be any bytes: replace what is not UTF-8 rather than fail.
    std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::error_code ec;
    fs::create_directories(m_file.parent_path(), ec);
    std::random_device rd;
    fs::path tmp = m_file;
    tmp += ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(rd());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        out.close();
        if (!out) {
            fs::remove(tmp, ec);
            return;
        }
    }
    fs::rename(tmp, m_file, ec); // atomic: a concurrent reader sees the old file or the new one
    if (ec) fs::remove(tmp, ec);
}

} // namespace pixflow::host
