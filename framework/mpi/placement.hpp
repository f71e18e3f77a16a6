// mpi/ where a rank runs its images: which GPU, how many CPU threads. Pure functions (no MPI), so
// that tests/mpi/mpi_parts_test.cpp checks them directly.
//
//   GPU      local rank modulo the machine's device count: with one rank per GPU each has its
//            own; with more ranks than GPUs they share them round robin
//   threads  the CPUs of the rank's affinity mask, divided among the ranks of the machine that
//            have the same mask. Open MPI binds each rank to a core when it starts at most 2
//            (one CPU each: nothing to divide), to a socket or NUMA domain beyond that (its
//            cores, divided among its ranks), and not at all when oversubscribed or asked --bind-to none
//            (all the machine's CPUs, divided among its ranks). Without this division, N ranks on
//            one machine would each start a thread per CPU: N times too many
#pragma once

#include <string>
#include <vector>

namespace pixflow::mpi {

/// The CUDA device of the rank with local rank `local_rank` on a machine with `count` devices;
/// -1 when it has none.
int device_for(int local_rank, int count);

/// The CPU threads of rank `me`, given every local rank's affinity mask (raw cpu_set_t bytes,
/// compared whole) and `override_threads` (> 0: $PIXFLOW_RANK_THREADS, which wins). At least 1.
int cpu_share(const std::vector<std::string>& masks, int me, int override_threads);

/// $PIXFLOW_RANK_THREADS as a positive number, 0 when unset; throws std::runtime_error naming the
/// variable when it is set to anything else.
int rank_threads_from_env(const char* value);

} // namespace pixflow::mpi
