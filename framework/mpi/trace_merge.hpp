// mpi/ one --trace for a batch over ranks: rank 0 merges every rank's trace (batch/trace.hpp) into
// one file, each rank's lanes under processes of its own: pid 100 x rank + the pid it had (images,
// cpu, cuda:d), named "rank R on HOST: images" and so on. Times are microseconds since each rank
// started its batch; the ranks start together (after the checks they agree on), so the lanes line
// up to within that start.
#pragma once

#include <string>
#include <vector>

namespace pixflow::mpi {

struct RankTrace {
    int rank = 0;
    std::string host;
    std::string text; ///< {"traceEvents": [...], ...} as TraceWriter::text() writes it
};

/// Throws std::exception (nlohmann's) on a trace that is not JSON.
std::string merge_traces(const std::vector<RankTrace>& traces);

} // namespace pixflow::mpi
