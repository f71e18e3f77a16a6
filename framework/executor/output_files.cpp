// executor/ output files: transactions of temporaries (stage, commit all or none, roll back), the
// process-wide list of live transactions, and the endings that roll them back: SIGINT, SIGTERM,
// SIGHUP (an interrupt thread) and an operator's exit() (an atexit handler under an ExitGuard).
#include "executor/output_files.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <pthread.h>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pixflow::host {

/// What every transaction of the process shares. Never destroyed: the interrupt thread and the
/// atexit handler may use it while static objects are being destroyed.
struct FileTransaction::Shared {
    std::mutex mu; ///< guards every transaction's entries, and is held through a commit
    std::set<FileTransaction*> live;
    std::map<int, std::function<void()>> hooks;
    int next_hook = 0;
    std::mutex guards_mu;
    std::vector<const ExitGuard*> guards;
};

namespace {

FileTransaction::Shared& shared() {
    static auto* s = new FileTransaction::Shared;
    return *s;
}

std::string temp_name(const fs::path& final_path, const char* kind) {
    static std::atomic<int> counter{0};
    return (final_path.parent_path() /
            ("." + final_path.stem().string() + ".pixflow-" + kind + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter++) + final_path.extension().string()))
        .string();
}

bool exists_no_follow(const std::string& p) {
    struct stat st;
    return ::lstat(p.c_str(), &st) == 0;
}

} // namespace

FileTransaction::FileTransaction() {
    std::lock_guard lk(shared().mu);
    shared().live.insert(this);
}

FileTransaction::~FileTransaction() {
    std::lock_guard lk(shared().mu);
    rollback_locked();
    shared().live.erase(this);
}

void FileTransaction::create_folders(const fs::path& dir) {
    std::lock_guard lk(shared().mu);
    std::vector<fs::path> missing;
    std::error_code ec;
    for (fs::path d = dir; !d.empty() && !fs::exists(fs::symlink_status(d, ec)); d = d.parent_path())
        missing.push_back(d);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (!fs::create_directory(*it, ec) && ec)
            throw InternalError("cannot create the folder " + it->string() + ": " + ec.message());
        m_created_dirs.push_back(*it);
    }
}

std::string FileTransaction::stage(const fs::path& final_path) {
    create_folders(final_path.parent_path());
    std::string tmp = temp_name(final_path, "tmp");
    {
        std::lock_guard lk(shared().mu);
        m_entries.push_back({tmp, final_path.string()});
    }
    if (on_stage) on_stage(tmp, final_path.string());
    return tmp;
}

void FileTransaction::stage_text(const fs::path& final_path, const std::string& text) {
    std::string tmp = stage(final_path);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    bool ok = fd >= 0;
    int err = ok ? 0 : errno;
    for (std::size_t done = 0; ok && done < text.size();) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ok = false;
            err = errno;
            break;
        }
        done += std::size_t(n);
    }
    if (fd >= 0 && ::close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        ::unlink(tmp.c_str());
        throw InternalError("cannot write " + final_path.string() + ": " + std::strerror(err));
    }
}

void FileTransaction::adopt(const std::string& tmp, const std::string& final_path) {
    std::lock_guard lk(shared().mu);
    m_entries.push_back({tmp, final_path});
}

std::vector<std::string> FileTransaction::written() const {
    std::lock_guard lk(shared().mu);
    std::vector<std::string> out;
    for (const auto& e : m_entries)
        if (exists_no_follow(e.tmp)) out.push_back(e.final_path);
    return out;
}

std::vector<std::string> FileTransaction::commit() {
    std::lock_guard lk(shared().mu);
    struct Done {
        const Entry* e;
        std::string backup; ///< empty: there was no file
    };
    std::vector<Done> done;
    std::string failure;
    for (const Entry& e : m_entries) {
        if (!exists_no_follow(e.tmp)) continue; // the op chose to write nothing
        Done d{&e, {}};
        if (exists_no_follow(e.final_path)) {
            struct stat st;
            if (::stat(e.final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
                failure = "cannot write " + e.final_path + ": it is a folder";
                break;
            }
            // Keep the old file until every rename succeeded: a hard link where the file system
            // has them, else the file itself moved aside.
            d.backup = temp_name(e.final_path, "bak");
            if (::link(e.final_path.c_str(), d.backup.c_str()) != 0 &&
                ::rename(e.final_path.c_str(), d.backup.c_str()) != 0) {
                failure = "cannot keep a backup of " + e.final_path + ": " + std::strerror(errno);
                break;
            }
        }
        if (::rename(e.tmp.c_str(), e.final_path.c_str()) != 0) {
            int err = errno;
            if (!d.backup.empty() && ::rename(d.backup.c_str(), e.final_path.c_str()) != 0) ::unlink(d.backup.c_str());
            failure = "cannot move " + e.tmp + " to " + e.final_path + ": " + std::strerror(err);
            break;
        }
        done.push_back(d);
    }
    if (!failure.empty()) {
        for (auto it = done.rbegin(); it != done.rend(); ++it) {
            if (it->backup.empty())
                ::unlink(it->e->final_path.c_str());
            else
                ::rename(it->backup.c_str(), it->e->final_path.c_str());
        }
        rollback_locked();
        throw InternalError(failure + "; no output was written");
    }
    std::vector<std::string> out;
    for (const Done& d : done) {
        if (!d.backup.empty()) ::unlink(d.backup.c_str());
        out.push_back(d.e->final_path);
    }
    m_entries.clear();
    m_created_dirs.clear();
    return out;
}

void FileTransaction::rollback_locked() noexcept {
    for (const Entry& e : m_entries) ::unlink(e.tmp.c_str());
    for (auto it = m_created_dirs.rbegin(); it != m_created_dirs.rend(); ++it) ::rmdir(it->c_str()); // only if empty
    m_entries.clear();
    m_created_dirs.clear();
}

void FileTransaction::rollback() noexcept {
    std::lock_guard lk(shared().mu);
    rollback_locked();
}

void FileTransaction::release() noexcept {
    std::lock_guard lk(shared().mu);
    m_entries.clear();
    m_created_dirs.clear();
}

// ---- OutputFiles

void OutputFiles::prepare(const Graph& g, bool skip_sinks, FileTransaction* into) {
    m_params.clear();
    m_strings.clear();
    if (into)
        m_tx = into;
    else {
        if (!m_own) m_own = std::make_unique<FileTransaction>(); // once per Executor, not per run
        m_tx = m_own.get();
    }
    for (NodeId v : g.nodes.ids()) {
        const Node& n = g.nodes[v];
        if (!n.op || (skip_sinks && n.is_sink())) continue;
        std::vector<pf_value>* params = nullptr;
        for (int k = 0; k < n.op->desc->n_params; ++k) {
            const pf_value& value = n.params[std::size_t(k)];
            if (!(n.op->desc->params[k].flags & PF_PARAM_OUTPUT_PATH) || !value.s) continue;
            if (!params) params = &m_params.emplace_back(v, n.params).second;
            std::string tmp;
            try {
                tmp = m_tx->stage(value.s);
            } catch (const std::exception& e) {
                rollback();
                throw InternalError(Diagnostic{n.loc, n.id, e.what(), n.op->desc->name}.str());
            }
            (*params)[std::size_t(k)].s = m_strings.emplace_back(std::move(tmp)).c_str();
        }
    }
}

const pf_value* OutputFiles::params(const Graph& g, NodeId v) const {
    for (const auto& [node, params] : m_params)
        if (node == v) return params.data();
    return g.nodes[v].params.data();
}

std::vector<std::string> OutputFiles::commit() {
    FileTransaction* tx = m_tx;
    m_tx = nullptr;
    if (!tx) return {};
    return tx == m_own.get() ? tx->commit() : tx->written();
}

void OutputFiles::rollback() noexcept {
    if (m_tx) m_tx->rollback();
    m_tx = nullptr;
}

// ---- the endings of a process that roll every transaction back

void abort_all_files(int) noexcept {
    FileTransaction::Shared& s = shared();
    // Never unlocked: from here on no other thread stages, commits or rolls back anything, nor
    // gets past its next transaction to end the process its own way while the hooks run.
    s.mu.lock();
    for (auto& [id, h] : s.hooks) {
        try {
            h();
        } catch (...) {}
    }
    // A writer opens its temporary after stage() named it, so a thread that had its name may
    // create the file just after the rollback unlinked it (seen under mpirun: a rank ending
    // while its other images were being written left one). The names are kept, and unlinked
    // again once such an open has had time to happen; the caller ends the process right after.
    std::vector<std::string> tmps, dirs;
    try {
        for (FileTransaction* t : s.live) {
            for (const auto& e : t->m_entries) tmps.push_back(e.tmp);
            for (auto it = t->m_created_dirs.rbegin(); it != t->m_created_dirs.rend(); ++it)
                dirs.push_back(it->string());
        }
    } catch (...) {}
    for (FileTransaction* t : s.live) t->rollback_locked();
    if (tmps.empty()) return;
    ::usleep(20000);
    for (const auto& t : tmps) ::unlink(t.c_str());
    for (const auto& d : dirs) ::rmdir(d.c_str());
}

InterruptHook::InterruptHook(std::function<void()> f) {
    std::lock_guard lk(shared().mu);
    m_id = shared().next_hook++;
    shared().hooks.emplace(m_id, std::move(f));
}

InterruptHook::~InterruptHook() {
    std::lock_guard lk(shared().mu);
    shared().hooks.erase(m_id);
}

std::string signal_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGPIPE: return "SIGPIPE";
    case SIGQUIT: return "SIGQUIT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "signal " + std::to_string(sig);
    }
}

void install_interrupt_cleanup(bool announce) {
    sigset_t set;
    sigemptyset(&set);
    int handled = 0;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        // One ignored when pixflow started (nohup, a shell's background job) stays ignored: on
        // Linux a blocked signal is kept pending even when ignored, so it is not blocked here.
        struct sigaction old {};
        if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaddset(&set, sig);
        ++handled;
    }
    if (!handled) return;
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set, announce] {
        int sig = 0;
        while (sigwait(&set, &sig) != 0) {}
        abort_all_files(sig);
        // write(2), not stdio: another thread may hold stderr's lock forever.
        std::string line = std::string(::isatty(STDERR_FILENO) ? "\n" : "") + "error: interrupted by " +
                           signal_name(sig) + "; unfinished outputs and the folders made for them removed\n";
        if (announce) {
            ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
            (void)ignored;
        }
        ::_exit(128 + sig);
    }).detach();
}

// ---- exit() while a run is in progress

void on_exit_during_run() {
    FileTransaction::Shared& s = shared();
    std::string message;
    int code;
    {
        std::lock_guard lk(s.guards_mu);
        if (s.guards.empty()) return; // an ordinary exit
        message = s.guards.back()->m_message;
        code = s.guards.back()->m_code;
    }
    if (!message.empty()) {
        std::string line = "error: " + message + "\n";
        ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
        (void)ignored;
    }
    abort_all_files(0);
    ::_exit(code);
}

ExitGuard::ExitGuard(std::string message, int code) : m_message(std::move(message)), m_code(code) {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit([] { on_exit_during_run(); }); });
    std::lock_guard lk(shared().guards_mu);
    shared().guards.push_back(this);
}

ExitGuard::~ExitGuard() {
    std::lock_guard lk(shared().guards_mu);
    auto& g = shared().guards;
    for (auto it = g.rbegin(); it != g.rend(); ++it)
        if (*it == this) {
            g.erase(std::next(it).base());
            break;
        }
}

} // namespace pixflow::host
