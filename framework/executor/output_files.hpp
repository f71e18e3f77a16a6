// executor/ output files, written as one transaction (docs/guarantees.md, "Atomic outputs").
//
//   stage    every file a run writes (save's path, a --report, a --trace, graph -o) is first
//            written under a temporary name next to it, with the same extension so codecs still
//            choose the format by it: `.<stem>.pixflow-tmp-<pid>-<n><ext>`; missing folders
//            are created and remembered
//   commit   all or nothing: each temporary is renamed over its final path; a file that was
//            there is first kept under a backup name (a hard link, `.<stem>.pixflow-bak-...`).
//            When any rename fails, the ones already done are undone (the backups renamed back,
//            new files removed), every temporary is deleted and commit throws; on success the
//            backups go
//   rollback deletes the temporaries and the folders the transaction created (when empty)
//
// Every live transaction is known process-wide, so that SIGINT, SIGTERM and SIGHUP (after
// install_interrupt_cleanup) and an operator's exit() (under an ExitGuard) can roll them all back
// before the process ends. A commit holds the process-wide lock, so such an ending sees a commit
// either not begun or finished, never half done.
#pragma once

#include "pipeline/pipeline.hpp"

#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pixflow::host {

class FileTransaction {
  public:
    FileTransaction();
    /// Rolls back whatever was neither committed nor released.
    ~FileTransaction();
    FileTransaction(const FileTransaction&) = delete;
    FileTransaction& operator=(const FileTransaction&) = delete;

    /// Creates the missing folders of `final_path` (remembered for rollback) and returns a fresh
    /// temporary name next to it; nothing is written. Throws InternalError when a folder cannot
    /// be created.
    std::string stage(const std::filesystem::path& final_path);
    /// Stages `final_path` and writes `text` to its temporary now. Throws InternalError.
    void stage_text(const std::filesystem::path& final_path, const std::string& text);
    /// Takes over a temporary that another process staged (an isolated worker's).
    void adopt(const std::string& tmp, const std::string& final_path);
    /// Creates the missing folders of `dir`, remembered for rollback. Throws InternalError.
    void create_folders(const std::filesystem::path& dir);
    /// The final paths whose temporaries exist: what commit() would write.
    std::vector<std::string> written() const;
    /// Renames every temporary that exists into place, all or none (see the top of this file);
    /// returns the final paths. Throws InternalError, with nothing changed, when one cannot be.
    std::vector<std::string> commit();
    /// Deletes the temporaries and the folders created (when empty). Never throws.
    void rollback() noexcept;
    /// Forgets the temporaries without touching them: another process commits them.
    void release() noexcept;

    /// Called by stage(), with the temporary and the final path, before the name is handed out.
    std::function<void(const std::string& tmp, const std::string& final_path)> on_stage;

    struct Shared;

  private:
    void rollback_locked() noexcept;
    struct Entry {
        std::string tmp, final_path;
    };
    std::vector<Entry> m_entries;
    std::vector<std::filesystem::path> m_created_dirs;
    friend void abort_all_files(int) noexcept;
};

/// The output paths of one run: every output-path parameter (PF_PARAM_OUTPUT_PATH, save's path)
/// is replaced by a temporary of a FileTransaction, the Executor's own or the caller's.
class OutputFiles {
  public:
    /// Replaces the output paths of g's nodes (those of sinks too unless `skip_sinks`), staged in
    /// `into` (the caller commits it) or, when null, in a transaction of its own. Throws
    /// InternalError, after rolling back, when a folder cannot be created.
    void prepare(const Graph& g, bool skip_sinks, FileTransaction* into = nullptr);
    /// The parameters node v is run with: its own, or a copy with temporaries for its outputs.
    const pf_value* params(const Graph& g, NodeId v) const;
    /// Own transaction: commits it (all or nothing; throws InternalError) and returns the final
    /// paths. Caller's transaction: returns what it would write and leaves the commit to it.
    std::vector<std::string> commit();
    /// Rolls the transaction back (the caller's too: its run failed). Never throws.
    void rollback() noexcept;

  private:
    std::vector<std::pair<NodeId, std::vector<pf_value>>> m_params; ///< nodes with output paths
    std::deque<std::string> m_strings;
    std::unique_ptr<FileTransaction> m_own;
    FileTransaction* m_tx = nullptr;
};

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every thread created after
/// it, and starts a thread that waits for them. On one it prints `error: interrupted by SIGINT`,
/// runs the interrupt hooks (an isolated batch stops its workers), rolls back every live
/// FileTransaction (temporaries, backups, folders created) and ends the process with 128 + the
/// signal's number. A signal ignored when the process started (nohup) stays ignored. Call it
/// first in main, before any other thread exists. `announce`: print
/// the line (an isolated worker, stopped by its parent, does not).
void install_interrupt_cleanup(bool announce = true);

/// Takes the process-wide lock for good (no transaction stages, commits or rolls back any more,
/// so no other thread gets past its next one), runs the interrupt hooks, then rolls back every
/// live transaction; for a process that is about to _exit (`sig`: the signal that ends it, 0 for
/// none).
void abort_all_files(int sig) noexcept;

/// A function run when the process is interrupted, before the transactions are rolled back,
/// while this object lives. It runs on the interrupt thread, under the lock of every transaction:
/// it must not touch one.
class InterruptHook {
  public:
    explicit InterruptHook(std::function<void()> f);
    ~InterruptHook();
    InterruptHook(const InterruptHook&) = delete;
    InterruptHook& operator=(const InterruptHook&) = delete;

  private:
    int m_id;
};

/// While one lives, a call to exit() (by an operator: nothing of pixflow's calls it while running)
/// does not end the process as that call asked: it prints `message` when not empty, rolls back
/// every live transaction and ends the process with `code` (_exit). Nests; the innermost wins.
class ExitGuard {
  public:
    ExitGuard(std::string message, int code);
    ~ExitGuard();
    ExitGuard(const ExitGuard&) = delete;
    ExitGuard& operator=(const ExitGuard&) = delete;

  private:
    std::string m_message;
    int m_code;
    friend void on_exit_during_run();
};

/// "SIGSEGV", "SIGABRT", ...; "signal N" for one without a name here.
std::string signal_name(int sig);

} // namespace pixflow::host
