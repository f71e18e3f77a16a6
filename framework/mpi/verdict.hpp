// mpi/ the checks of a batch over ranks, agreed on before any image runs.
//
// Every rank parses and checks the batch itself (its pipeline, its inputs as it sees them, its
// devices). Before anything is created, every rank's verdict is gathered at rank 0: passed, or
// failed with the lines it would print, and, when it passed, how many inputs it sees and a hash of
// them and of their output names. Rank 0 judges: the whole run goes on only when every rank
// passed and sees the same inputs; otherwise rank 0 prints each distinct reason once (a reason
// that only some ranks have names them, "rank 2 on node7: ...") and every rank exits with the
// same code: 1 for an invalid pipeline or command line, as a single process would, 2 for another
// failure. A single process's errors thus read the same under mpirun.
#pragma once

#include "batch/batch.hpp"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pixflow::mpi {

class Session;

struct Verdict {
    int status = 0;                 ///< 0 passed, 1 a UserError, 2 another failure
    std::vector<std::string> lines; ///< what it prints ("error: ...")
    std::uint64_t inputs = 0;       ///< passed: how many inputs it sees
    std::uint64_t inputs_hash = 0;  ///< passed: a hash of the inputs and their output names
    int rank = 0;
    std::string host;
};

/// A hash (FNV-1a, 64 bits) of the inputs in order, their sub-folders and their output names.
std::uint64_t hash_inputs(const std::vector<host::BatchInput>& inputs,
                          const std::vector<std::vector<std::string>>& out_paths);

/// Rank 0's judgement over every rank's verdict (in rank order, rank 0's first): the exit code (0:
/// go on), and the lines to print.
int judge(const std::vector<Verdict>& all, std::vector<std::string>& print);

/// Gathers every rank's verdict at rank 0, which judges and prints; the code, on every rank.
/// Collective over `comm`.
int agree(MPI_Comm comm, const Session& s, Verdict mine);

} // namespace pixflow::mpi
