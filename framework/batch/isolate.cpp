// batch/ isolated batches, the parent's side (isolate.hpp has the design): workers started,
// images handed out, the workers' messages read in one poll() loop on the calling thread, a dead
// or timed-out worker's image failed with the reason and its temporaries removed.
#include "batch/isolate.hpp"
#include "batch/protocol.hpp"
#include "builtin/builtin.hpp"
#include "executor/output_files.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <set>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace pixflow::host::batch {
namespace {

using Clock = std::chrono::steady_clock;

/// The installation's plugin folders, as Registry::search_path finds them (build and install
/// trees have the same layout).
std::vector<fs::path> installation_plugin_dirs() {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (fs::path base : {fs::path(boost::dll::program_location().parent_path().string()),
                          fs::path(boost::dll::this_line_location().parent_path().string())}) {
        fs::path d = fs::weakly_canonical(base / ".." / PIXFLOW_PLUGIN_SUBDIR, ec);
        if (!ec) dirs.push_back(d);
    }
    return dirs;
}

fs::path worker_executable(const BatchOptions& opt) {
    if (!opt.worker_exe.empty()) return opt.worker_exe;
    return (fs::path(boost::dll::this_line_location().parent_path().string()) / ".." / "bin" / "pixflow")
        .lexically_normal();
}

/// The live workers' pids, shared with the interrupt hook (which may outlive nothing: it is
/// removed before the Supervisor goes).
struct LivePids {
    std::mutex mu;
    std::set<pid_t> pids;
    bool stopping = false;
};

/// SIGTERM to every worker (each removes its own temporaries), a wait of up to 5 s, then SIGKILL.
void stop_workers(LivePids& live) {
    std::set<pid_t> pids;
    {
        std::lock_guard lk(live.mu);
        live.stopping = true;
        pids = live.pids;
        for (pid_t p : pids) ::kill(p, SIGTERM);
    }
    auto until = Clock::now() + std::chrono::seconds(5);
    while (!pids.empty() && Clock::now() < until) {
        for (auto it = pids.begin(); it != pids.end();) {
            int st;
            pid_t r = ::waitpid(*it, &st, WNOHANG);
            it = (r == *it || (r < 0 && errno == ECHILD)) ? pids.erase(it) : std::next(it);
        }
        if (!pids.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::lock_guard lk(live.mu);
    for (pid_t p : pids)
        if (live.pids.count(p)) ::kill(p, SIGKILL);
}

struct Proc {
    int slot = 0;
    int device = -1; ///< -1: the CPU
    std::string name;
    pid_t pid = -1;
    int fd = -1;
    Inbox inbox;
    long job = -1;
    bool begun = false;
    Clock::time_point dispatched, begun_at;
    std::vector<std::string> nodes; ///< the nodes whose operator runs now
    std::unique_ptr<FileTransaction> tx;
    std::string fault;    ///< why the parent stopped trusting it (it is being killed)
    bool retried = false; ///< its image already had a second worker (the first died before taking it)
};

class Supervisor {
  public:
    Supervisor(const BatchOptions& opt, const BatchPlan& b, const PipelineSpec& spec, int workers, BatchReport& report,
               ProgressBar& bar, TraceWriter* trace)
        : m_opt(opt), m_b(b), m_spec(spec), m_report(report), m_bar(bar), m_trace(trace),
          m_live(std::make_shared<LivePids>()), m_exe(worker_executable(opt)),
          m_hook([live = m_live] { stop_workers(*live); }) {
        int hw = std::max(1, tbb::this_task_arena::max_concurrency()); // under mpirun: this rank's share
        m_threads = std::max(1, hw / workers);
        // Each worker runs one image at a time, planned under its share of the batch's budgets, so
        // that together they stay under them (memory_budget.hpp).
        m_compile = b.compile;
        int per_device = (workers + int(b.devices.size()) - 1) / int(b.devices.size());
        if (b.host_budget.bytes) {
            m_compile.memory_limit = b.host_budget.bytes / std::size_t(workers);
            m_compile.memory_limit_from = "1/" + std::to_string(workers) + " of the batch's host memory budget (" +
                                          b.host_budget.from + ") for each of its worker processes";
        }
        if (b.device_budget.bytes && b.uses_cuda) {
            m_compile.device_memory_limit = b.device_budget.bytes / std::size_t(per_device);
            m_compile.device_memory_limit_from = "1/" + std::to_string(per_device) +
                                                 " of the batch's device memory budget (" + b.device_budget.from +
                                                 ") for each of the worker processes on a device";
        }
        for (int k = 0; k < workers; ++k) {
            Proc& p = m_procs.emplace_back();
            p.slot = k;
            p.device = b.uses_cuda ? b.devices[std::size_t(k) % b.devices.size()] : -1;
            p.name = p.device >= 0 ? "cuda:" + std::to_string(p.device) : "cpu";
        }
    }

    ~Supervisor() {
        for (Proc& p : m_procs)
            if (p.fd >= 0) ::close(p.fd); // the end of the stream: an idle worker exits
        auto until = Clock::now() + std::chrono::seconds(10);
        for (Proc& p : m_procs) {
            while (p.pid > 0 && !reap(p, WNOHANG)) {
                if (Clock::now() > until) ::kill(p.pid, SIGKILL);
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        }
    }

    void run() {
        const std::size_t n = m_b.inputs.size();
        std::size_t next = 0;
        for (;;) {
            for (Proc& p : m_procs) {
                if (p.job >= 0) continue;
                if (m_stop || m_exhausted) break;
                std::optional<std::size_t> i = next_image(m_opt, next, n);
                if (!i) {
                    m_exhausted = true;
                    break;
                }
                dispatch(p, *i);
            }
            if (m_busy == 0) break;
            wait_and_read();
            check_deadlines();
        }
        if (!m_opt.distribution)
            for (std::size_t i = next; i < n; ++i) m_report.images[i].status = ImageResult::Status::skipped;
    }

  private:
    /// Starts p's process and sends it the configuration; false (and `why`) when it cannot.
    bool spawn(Proc& p, std::string& why) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            why = std::string("socketpair: ") + std::strerror(errno);
            return false;
        }
        int child = sv[1];
        if (child == 3) { // dup2(3, 3) would keep FD_CLOEXEC
            child = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
            ::close(sv[1]);
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, child, 3);
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        sigset_t none, defaults;
        sigemptyset(&none);
        sigemptyset(&defaults);
        for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &defaults);
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
        std::vector<std::string> args{m_exe.string()};
        for (const auto& d : m_opt.plugin_paths) {
            args.push_back("--plugin-path");
            args.push_back(d);
        }
        for (std::string a : {std::string("__worker"), std::string("--parent"), std::to_string(::getpid())})
            args.push_back(a);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int rc;
        {
            std::lock_guard lk(m_live->mu);
            if (m_live->stopping)
                rc = ECANCELED;
            else {
                rc = ::posix_spawn(&p.pid, m_exe.c_str(), &fa, &at, argv.data(), environ);
                if (rc == 0) m_live->pids.insert(p.pid);
            }
        }
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        ::close(child);
        if (rc != 0) {
            ::close(sv[0]);
            p.pid = -1;
            why = "cannot start " + m_exe.string() + ": " + std::strerror(rc);
            return false;
        }
        p.fd = sv[0];
        ::fcntl(p.fd, F_SETFL, ::fcntl(p.fd, F_GETFL) | O_NONBLOCK);
        p.inbox = Inbox();
        MessageOut cfg(MsgType::config);
        cfg.compile_options(m_compile).i64(p.device).i64(m_threads).u64(m_trace != nullptr);
        send_message(p.fd, cfg); // a worker that died at once is found by the read loop
        return true;
    }

    void dispatch(Proc& p, std::size_t i) {
        auto now = Clock::now();
        int in_flight = ++m_busy;
        m_report.max_in_flight_seen = std::max(m_report.max_in_flight_seen, in_flight);
        if (m_trace) m_trace->add_in_flight(in_flight, now);
        if (m_opt.on_in_flight) m_opt.on_in_flight(in_flight);
        p.job = long(i);
        p.begun = false;
        p.dispatched = now;
        p.nodes.clear();
        p.tx = std::make_unique<FileTransaction>();
        m_report.images[i].worker = p.name;
        p.retried = false;
        send_job(p);
    }

    /// Sends p its image, starting its process first when it has none.
    void send_job(Proc& p) {
        std::string why;
        if (p.pid < 0 && !spawn(p, why)) return finish(p, false, "the worker could not be started: " + why);
        MessageOut job(MsgType::job);
        try {
            job.u64(std::uint64_t(p.job)).spec(m_b.spec_for(m_spec, std::size_t(p.job)));
        } catch (const std::exception& e) { return finish(p, false, e.what()); }
        send_message(p.fd, job); // when it died meanwhile, the read loop says how
    }

    /// Blocks until a busy worker says something or the nearest deadline, at most 1 s.
    void wait_and_read() {
        std::vector<pollfd> fds;
        std::vector<Proc*> who;
        int wait_ms = 1000;
        auto now = Clock::now();
        for (Proc& p : m_procs) {
            if (p.job < 0 || p.fd < 0) continue;
            fds.push_back({p.fd, POLLIN, 0});
            who.push_back(&p);
            if (m_opt.timeout_s > 0) {
                auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline(p) - now).count();
                wait_ms = int(std::clamp<long long>(left + 1, 0, wait_ms));
            }
        }
        if (fds.empty()) return;
        int r = ::poll(fds.data(), fds.size(), wait_ms);
        if (r <= 0) return;
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (!fds[k].revents) continue;
            Proc& p = *who[k];
            bool open = p.inbox.fill(p.fd);
            handle_messages(p);
            if (!open) died(p, false);
        }
    }

    Clock::time_point deadline(const Proc& p) const {
        auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(m_opt.timeout_s));
        // Until the worker took the image (starting a process, loading plugins), a minute more.
        return p.begun ? p.begun_at + limit : p.dispatched + std::chrono::seconds(60) + limit;
    }

    void check_deadlines() {
        if (m_opt.timeout_s <= 0) return;
        auto now = Clock::now();
        for (Proc& p : m_procs)
            if (p.job >= 0 && p.pid > 0 && now >= deadline(p)) {
                ::kill(p.pid, SIGKILL);
                died(p, true);
            }
    }

    void handle_messages(Proc& p) {
        while (p.pid > 0 || p.job >= 0) {
            if (!p.fault.empty()) return;
            std::optional<MessageIn> m = p.inbox.next();
            if (!m) return;
            try {
                handle(p, *m);
            } catch (const InternalError& e) { // a malformed message: the worker is not trusted
                p.fault = std::string("the worker sent a malformed message (") + e.what() + ")";
                if (p.pid > 0) ::kill(p.pid, SIGKILL); // its end of stream comes next
                return;
            }
        }
    }

    void handle(Proc& p, MessageIn& m) {
        if (p.job < 0) return; // nothing of a finished image matters any more
        const std::string& input = m_report.images[std::size_t(p.job)].input;
        switch (m.type()) {
        case MsgType::begin:
            p.begun = true;
            p.begun_at = Clock::now();
            break;
        case MsgType::staged: {
            std::string tmp = m.str(), fin = m.str();
            p.tx->adopt(tmp, fin);
            break;
        }
        case MsgType::node: {
            std::string id = m.str();
            bool started = m.u64() != 0;
            if (started)
                p.nodes.push_back(id);
            else if (auto it = std::find(p.nodes.begin(), p.nodes.end(), id); it != p.nodes.end())
                p.nodes.erase(it);
            break;
        }
        case MsgType::log: {
            int level = int(m.i64());
            std::string text = m.str();
            if (level >= 1) m_bar.print((level >= 2 ? "warning: " : "") + input + ": " + text);
            break;
        }
        case MsgType::span: {
            SpanRecord s;
            s.id = m.str();
            s.op = m.str();
            s.backend = m.str();
            s.category = m.str();
            s.device = int(m.i64());
            s.lane = std::to_string(p.pid) + " " + m.str();
            s.start = Clock::time_point(Clock::duration(m.i64()));
            s.end = Clock::time_point(Clock::duration(m.i64()));
            s.image = input;
            if (m_trace) m_trace->add(s);
            break;
        }
        case MsgType::done: {
            bool ok = m.u64() != 0;
            std::string error = m.str();
            finish(p, ok, error); // the outputs are what the adopted temporaries commit to
            break;
        }
        default: throw InternalError("unknown message type " + std::to_string(int(m.type())));
        }
    }

    /// Reaps p's process (`flags`: 0 or WNOHANG); true when it is gone. Keeps the status.
    bool reap(Proc& p, int flags) {
        if (p.pid <= 0) return true;
        siginfo_t info{};
        // Wait without reaping first, so that the pid is never free while the interrupt hook may
        // still signal it.
        if (::waitid(P_PID, id_t(p.pid), &info, WEXITED | WNOWAIT | flags) != 0) {
            if (errno == EINTR) return false;
            info.si_pid = p.pid; // ECHILD: already gone
        }
        if (info.si_pid == 0) return false; // WNOHANG, still running
        std::lock_guard lk(m_live->mu);
        int st = 0;
        if (::waitpid(p.pid, &st, 0) == p.pid)
            m_status = st;
        else
            m_status = -1;
        m_live->pids.erase(p.pid);
        p.pid = -1;
        return true;
    }

    /// p's process ended (or was just killed for its deadline): its image fails with the reason,
    /// unless its result had arrived; its temporaries go; the next image gets a new worker.
    void died(Proc& p, bool timed_out) {
        m_status = -1;
        if (p.pid > 0 && !timed_out) {
            // The end of its stream: it is exiting. One that closed its socket and lives on is
            // not trusted with another image.
            auto until = Clock::now() + std::chrono::seconds(2);
            while (!reap(p, WNOHANG) && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            if (p.pid > 0) ::kill(p.pid, SIGKILL);
        }
        if (p.pid > 0) reap(p, 0);
        int st = m_status;
        if (p.fd >= 0) p.inbox.drain(p.fd); // what it wrote before it died: the names of its temporaries
        handle_messages(p);
        if (p.fd >= 0) ::close(p.fd);
        p.fd = -1;
        p.inbox = Inbox();
        std::string fault = std::move(p.fault);
        p.fault.clear();
        if (p.job < 0) return; // it had finished its image
        if (!p.begun && !timed_out && fault.empty() && !p.retried) {
            // It died before it took the image (it had died idle, say): the image gets one more
            // worker before it is failed.
            p.retried = true;
            p.nodes.clear();
            p.tx->rollback();
            return send_job(p);
        }
        std::string where;
        if (!p.nodes.empty()) {
            where = " in node '" + p.nodes[0] + "'";
            for (std::size_t k = 1; k < p.nodes.size(); ++k) where += " or '" + p.nodes[k] + "'";
        } else if (!p.begun)
            where = " before it took the image";
        std::string why;
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", m_opt.timeout_s);
        if (!fault.empty())
            why = fault + where;
        else if (timed_out)
            why = std::string("timed out after ") + secs + " s" + where + "; the worker was killed";
        else if (st >= 0 && WIFSIGNALED(st))
            why = "the worker died of " + signal_name(WTERMSIG(st)) + where;
        else if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == kWorkerExitCalled)
            why = "an operator ended the worker by calling exit()" + where;
        else if (st >= 0 && WIFEXITED(st))
            why = "the worker exited with status " + std::to_string(WEXITSTATUS(st)) + where;
        else
            why = "the worker was lost" + where;
        finish(p, false, why);
    }

    /// p's image is done: committed (all its outputs or none) or rolled back, and accounted for.
    void finish(Proc& p, bool ok, std::string error) {
        std::size_t i = std::size_t(p.job);
        ImageResult& res = m_report.images[i];
        auto now = Clock::now();
        res.ms = std::chrono::duration<double, std::milli>(now - p.dispatched).count();
        if (ok) {
            try {
                res.outputs = p.tx->commit();
                res.status = ImageResult::Status::ok;
            } catch (const std::exception& e) {
                ok = false;
                error = e.what();
            }
        }
        if (!ok) {
            p.tx->rollback();
            res.status = ImageResult::Status::failed;
            res.error = std::move(error);
        }
        p.tx.reset();
        p.job = -1;
        p.nodes.clear();
        int in_flight = --m_busy;
        if (m_trace) {
            m_trace->add_in_flight(in_flight, now);
            m_trace->add_image(res.input, p.slot, p.dispatched, now, ok);
        }
        if (m_opt.on_in_flight) m_opt.on_in_flight(in_flight);
        ++m_done;
        if (!ok) {
            ++m_failed;
            m_bar.print("error: " + res.input + ": " + res.error);
            if (m_opt.fail_fast) m_stop = true;
        }
        m_bar.update(m_done, m_failed);
        if (m_opt.distribution) m_opt.distribution->finished(i, res);
    }

    const BatchOptions& m_opt;
    const BatchPlan& m_b;
    const PipelineSpec& m_spec;
    BatchReport& m_report;
    ProgressBar& m_bar;
    TraceWriter* m_trace;
    std::shared_ptr<LivePids> m_live;
    fs::path m_exe;
    InterruptHook m_hook;
    std::vector<Proc> m_procs;
    int m_threads = 1;
    CompileOptions m_compile; ///< what every worker compiles with
    int m_busy = 0, m_done = 0, m_failed = 0;
    int m_status = -1;
    bool m_stop = false;
    bool m_exhausted = false; ///< no image left for this process
};

} // namespace

std::string isolation_reason(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt) {
    if (opt.isolate == BatchOptions::Isolation::off) return "";
    if (opt.isolate == BatchOptions::Isolation::on) return "--isolate";
    if (opt.timeout_s > 0) return "--timeout";
    std::vector<fs::path> trusted = installation_plugin_dirs();
    for (const NodeSpec& n : spec.nodes) {
        const OpInfo* op = n.external ? nullptr : reg.find(n.op);
        if (!op || op->path == kBuiltinPlugin) continue;
        std::error_code ec;
        fs::path dir = fs::weakly_canonical(op->path, ec).parent_path();
        if (std::find(trusted.begin(), trusted.end(), dir) == trusted.end())
            return "node '" + n.id + "' runs op " + n.op + " of " + op->path.string() +
                   ", a plugin from outside the installation";
    }
    return "";
}

void run_images_isolated(const BatchOptions& opt, const BatchPlan& b, const PipelineSpec& spec, int workers,
                         BatchReport& report, ProgressBar& bar, TraceWriter* trace) {
    Supervisor s(opt, b, spec, workers, report, bar, trace);
    s.run();
}

} // namespace pixflow::host::batch
