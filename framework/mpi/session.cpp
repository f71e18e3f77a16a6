// mpi/ MPI started and ended for one rank, what the rank knows of its place (session.hpp).
#include "mpi/session.hpp"

#include "executor/output_files.hpp"
#include "mpi/placement.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace pixflow::mpi {

bool launched_by_mpirun() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK"})
        if (const char* s = std::getenv(v); s && *s) return true;
    return false;
}

void wait_gently(MPI_Request& req, MPI_Status* status) {
    auto pause = std::chrono::microseconds(20);
    for (;;) {
        int done = 0;
        MPI_Test(&req, &done, status);
        if (done) return;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
}

std::unique_ptr<Session> Session::start_if_launched(bool allowed) {
    if (!allowed || !launched_by_mpirun()) return nullptr;
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    std::unique_ptr<Session> s(new Session);
    MPI_Comm_rank(MPI_COMM_WORLD, &s->m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->m_size);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    s->m_host.assign(name, std::size_t(len));
    if (provided < MPI_THREAD_SERIALIZED)
        s->abort(2, "this MPI library gives thread level " + std::to_string(provided) +
                        ", pixflow needs MPI_THREAD_SERIALIZED (" + std::to_string(MPI_THREAD_SERIALIZED) + ")");

    // The ranks of this machine: the local rank picks the GPU, the affinity masks divide the CPUs.
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s->m_rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &s->m_local_rank);
    MPI_Comm_size(local, &s->m_local_size);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (::sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_SET(0, &mine);
    std::string all(sizeof mine * std::size_t(s->m_local_size), '\0');
    MPI_Request req;
    MPI_Iallgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine), MPI_BYTE, local, &req);
    wait_gently(req);
    MPI_Comm_free(&local);
    std::vector<std::string> masks;
    for (int k = 0; k < s->m_local_size; ++k) masks.push_back(all.substr(std::size_t(k) * sizeof mine, sizeof mine));
    try {
        s->m_threads = cpu_share(masks, s->m_local_rank, rank_threads_from_env(std::getenv("PIXFLOW_RANK_THREADS")));
    } catch (const std::exception& e) { s->abort(1, e.what()); }
    return s;
}

Session::~Session() {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_gently(req);
    MPI_Finalize();
}

std::string Session::who() const { return "rank " + std::to_string(m_rank) + " on " + m_host; }

void Session::abort(int code, const std::string& why) const {
    std::string line = "error: " + who() + ": " + why + "; stopping every rank\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    host::abort_all_files(0);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; this is for the compiler
}

} // namespace pixflow::mpi
