// mpi/ a batch over the ranks of an mpirun: `mpirun -np N pixflow run P.toml --input ... --output DIR`
// (docs/mpi.md). The batch runner (batch/) runs in every rank as in one process; this class is its
// Distribution: it decides which rank runs which input and gathers what they did.
//
//   checks   every rank checks the batch itself; the verdicts are agreed on before anything is
//            created (verdict.hpp), so an error is printed once and every rank exits with its code
//   balance  dynamic: a rank asks rank 0 for its next input whenever it has room for one more
//            image in flight (--max-in-flight per rank, by default twice its threads), so a rank
//            that drew large images simply asks less often. Rank 0 answers from a server thread
//            and runs images itself meanwhile, taking its own from the same counter without MPI.
//            Asking costs one round trip per image (tens of microseconds on one machine, well
//            under a millisecond over TCP), against images that take milliseconds to seconds.
//            Why not an MPI one-sided counter (MPI_Fetch_and_op on a window at rank 0): over TCP
//            Open MPI does such atomics in software at the target, which makes progress only
//            when rank 0 enters MPI, and rank 0 is busy running images; a server thread makes
//            progress itself, and the same messages carry the results, the output lines and
//            --fail-fast's stop, which a counter could not
//   results  a rank sends each finished image's result (and its output lines) to rank 0 at once:
//            rank 0 prints the lines and draws the progress of the whole run, and holds every
//            result when the last rank is done. --fail-fast: after the first failure rank 0
//            hands out no more inputs
//   the end  rank 0 merges the results into one report (in input order, each image with the
//            rank that ran it), writes --report and --trace, prints the one summary, and sends
//            the totals to every rank: every rank exits with the code a single process would
//   faults   a failing image fails alone, as in one process (and with --isolate a crashing
//            operator takes down only its worker). A rank that fails outside an image prints its
//            rank, host and cause and ends the run (MPI_Abort): mpirun stops the other ranks with
//            SIGTERM, and each removes its unfinished outputs (docs/guarantees.md, "Signals")
//   placement the rank's GPU (local rank modulo the machine's devices) and its CPU threads
//            (placement.hpp): the batch runs in a TBB arena of that many threads
#pragma once

#include "batch/batch.hpp"
#include "batch/progress.hpp"
#include "mpi/session.hpp"

#include <mpi.h>

#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace pixflow::mpi {

class RankBatch final : public host::Distribution {
  public:
    /// Collective over every rank (duplicates the world communicator).
    explicit RankBatch(const Session& s);
    /// A rank that leaves before the ranks agreed on the checks (an error outside the batch)
    /// ends the run: the others would wait for it.
    ~RankBatch() override;
    RankBatch(const RankBatch&) = delete;
    RankBatch& operator=(const RankBatch&) = delete;

    int command(const host::Registry& reg, const std::string& file, const std::vector<std::string>& sets,
                const host::BatchOptions& opt) override;
    bool root() const override { return m_s.rank() == 0; }
    std::string name() const override { return m_s.who(); }
    void start(const std::vector<host::BatchInput>& inputs,
               const std::vector<std::vector<std::string>>& out_paths) override;
    std::optional<std::size_t> next() override;
    void finished(std::size_t i, const host::ImageResult& r) override;
    void print(const std::string& line) override;
    bool end(host::BatchReport& report, std::string& trace) override;

  private:
    enum class Stage { checking, running, ended };
    /// Thrown by start() where another rank failed its checks (rank 0 printed why).
    struct StoppedElsewhere {};
    /// Rank 0: the next input for `rank`, or nullopt; under m_mu.
    std::optional<std::size_t> take_locked(int rank);
    /// Rank 0: input i finished on `rank`; progress and --fail-fast.
    void record(std::size_t i, host::ImageResult r, int rank);
    /// Rank 0: prints a line once every rank's copy of a note is one.
    void print_line(const std::string& line);
    /// Rank 0's server thread: answers requests and takes results until every other rank is done.
    void serve();
    host::RankSummary summary(const host::BatchReport& report) const;

    const Session& m_s;
    MPI_Comm m_comm = MPI_COMM_NULL;
    host::BatchOptions m_opt;
    Stage m_stage = Stage::checking;
    int m_verdict = 0;

    // rank 0
    std::mutex m_mu;
    std::size_t m_n = 0, m_next = 0;
    bool m_stop = false;                      ///< --fail-fast after a failure
    std::vector<int> m_owner;                 ///< per input: the rank it went to, -1 none
    std::vector<host::ImageResult> m_results; ///< per input, from the other ranks
    int m_done = 0, m_failed = 0;
    std::unique_ptr<host::ProgressBar> m_bar;
    std::set<std::string> m_notes;
    std::vector<host::RankSummary> m_summaries;
    std::vector<std::string> m_traces;
    std::thread m_server;

    // the other ranks: one thread at a time in MPI (MPI_THREAD_SERIALIZED)
    std::mutex m_mpi_mu;
};

} // namespace pixflow::mpi
