// mpi/ the MPI side of one `pixflow` process started by mpirun (docs/mpi.md).
//
//   when     MPI is started only when this process is a rank of an mpirun: Open MPI's launcher
//            (OMPI_COMM_WORLD_SIZE) or a PMIx one such as srun --mpi=pmix (PMIX_RANK) set its
//            variables. Run without them, the MPI build touches nothing of MPI and behaves as a
//            build without it; an isolated batch's worker (`pixflow __worker`, which inherits
//            them) never starts MPI either
//   threads  MPI_THREAD_SERIALIZED: a rank calls MPI from one thread at a time (rank 0's server
//            thread while its main thread runs images; elsewhere under a lock, mpi/ranks.cpp)
//   waiting  a rank that waits for another never spins a core (Open MPI's blocking calls poll):
//            wait_gently() tests a request with sleeps of 20 us growing to 1 ms, so ranks that
//            share a machine leave its cores to the ranks that compute
//   the end  ~Session: a barrier waited for gently, then MPI_Finalize
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

namespace pixflow::mpi {

/// Whether the environment says that mpirun (or a PMIx launcher) started this process.
bool launched_by_mpirun();

class Session {
  public:
    /// MPI, when launched_by_mpirun() and `allowed` (false for an isolated batch's worker);
    /// null otherwise. Throws std::runtime_error when MPI cannot give MPI_THREAD_SERIALIZED.
    static std::unique_ptr<Session> start_if_launched(bool allowed);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }
    /// This rank among the ranks of its machine (MPI_COMM_TYPE_SHARED), and how many they are.
    int local_rank() const { return m_local_rank; }
    int local_size() const { return m_local_size; }
    const std::string& host() const { return m_host; }
    /// "rank 2 on node7"
    std::string who() const;
    /// How many CPU threads this rank should use: its affinity mask's CPUs, divided among the
    /// ranks of the machine with the same mask (cpu_share in placement.hpp), or
    /// $PIXFLOW_RANK_THREADS when set.
    int cpu_threads() const { return m_threads; }

    /// Prints "error: rank R on HOST: why; stopping every rank", rolls back this rank's
    /// unfinished outputs and ends the whole run with `code` (MPI_Abort: mpirun stops the other
    /// ranks with SIGTERM, and they remove theirs).
    [[noreturn]] void abort(int code, const std::string& why) const;

  private:
    Session() = default;
    int m_rank = 0, m_size = 1, m_local_rank = 0, m_local_size = 1, m_threads = 1;
    std::string m_host;
};

/// Waits for `req` to complete without spinning a core (see the top of this file).
void wait_gently(MPI_Request& req, MPI_Status* status = MPI_STATUS_IGNORE);

} // namespace pixflow::mpi
