// mpi/ `pixflow run P.toml --input ... --output DIR` in one rank of an mpirun: the rank's place
// (its GPU, its CPU threads), the batch runner with this rank's Distribution, the errors of the
// checks agreed on, and the summary printed once (ranks.hpp has the design).
#include "mpi/placement.hpp"
#include "mpi/ranks.hpp"
#include "mpi/verdict.hpp"

#include "device/device.hpp"

#include <tbb/task_arena.h>
#include <unistd.h>

namespace pixflow::mpi {

int RankBatch::command(const host::Registry& reg, const std::string& file, const std::vector<std::string>& sets,
                       const host::BatchOptions& opt) {
    m_opt = opt;
    m_opt.distribution = this;
    // Open MPI forwards a rank's stderr through a pipe: the bar is drawn only where it is a terminal.
    m_opt.progress = root() && !opt.quiet && ::isatty(STDERR_FILENO);
    if (opt.devices.empty() && host::cuda_usable())
        m_opt.default_device = device_for(m_s.local_rank(), host::cuda_device_count());
    tbb::task_arena arena(m_s.cpu_threads());
    host::BatchReport report;
    Verdict failed;
    try {
        arena.execute([&] { report = host::run_batch(host::parse_pipeline_file(file, sets), reg, m_opt); });
    } catch (const StoppedElsewhere&) { return m_verdict; } catch (const host::UserError& e) {
        failed.status = 1;
        for (const auto& d : e.diagnostics()) failed.lines.push_back("error: " + d.str());
    } catch (const std::exception& e) {
        failed.status = 2;
        failed.lines.push_back(std::string("error: ") + e.what());
    }
    if (failed.status) {
        // After the checks the other ranks count on this one: it cannot leave alone.
        if (m_stage != Stage::checking) m_s.abort(2, failed.lines.front().substr(7));
        m_verdict = agree(m_comm, m_s, failed);
        m_stage = Stage::ended;
        return m_verdict;
    }
    if (root()) host::print_batch_summary(report, m_opt.quiet);
    return report.exit_code();
}

} // namespace pixflow::mpi
