// mpi/ which GPU and how many CPU threads a rank uses (placement.hpp).
#include "mpi/placement.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace pixflow::mpi {

int device_for(int local_rank, int count) { return count > 0 ? local_rank % count : -1; }

int cpu_share(const std::vector<std::string>& masks, int me, int override_threads) {
    if (override_threads > 0) return override_threads;
    if (me < 0 || std::size_t(me) >= masks.size()) return 1;
    const std::string& mine = masks[std::size_t(me)];
    int cpus = 0;
    for (unsigned char c : mine) cpus += std::popcount(c);
    auto sharing = std::count(masks.begin(), masks.end(), mine);
    return std::max(1, cpus / int(std::max<std::ptrdiff_t>(1, sharing)));
}

int rank_threads_from_env(const char* value) {
    if (!value || !*value) return 0;
    errno = 0;
    char* end = nullptr;
    long n = std::strtol(value, &end, 10);
    if (errno || *end || n < 1 || n > 4096)
        throw std::runtime_error(std::string("PIXFLOW_RANK_THREADS=") + value +
                                 " is not a number of threads; expected 1 to 4096, or leave it unset for the "
                                 "rank's share of its machine's CPUs");
    return int(n);
}

} // namespace pixflow::mpi
