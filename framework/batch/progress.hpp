// A one-line progress bar on stderr for batch runs:
//   [##########..........]  32/64  5.2 img/s  ETA 0:06  1 failed
// Redrawn at most ten times a second, and cleared before any other line is printed through it.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

namespace pixflow::host {

class ProgressBar {
  public:
    using Clock = std::chrono::steady_clock;
    /// Draws nothing unless `enabled` (stderr is a terminal and not --quiet: the caller decides).
    ProgressBar(int total, bool enabled);
    /// `done` images finished so far, of which `failed` failed.
    void update(int done, int failed);
    /// Prints `line` (with a newline) on stderr, keeping the bar below it.
    void print(const std::string& line);
    /// Draws the final state and ends the line.
    void finish();
    /// Hands every line to `f` instead of printing it, and draws nothing: a rank of an mpirun
    /// sends its lines to rank 0, which draws the progress of the whole run (framework/mpi/).
    void forward(std::function<void(const std::string&)> f);

  private:
    void draw_locked(bool force);
    std::mutex m_mu;
    int m_total, m_done = 0, m_failed = 0;
    bool m_enabled, m_drawn = false;
    std::function<void(const std::string&)> m_forward;
    Clock::time_point m_start = Clock::now(), m_last{};
};

/// "1:05" for 65 seconds, "1:01:05" past an hour.
std::string format_eta(double seconds);

} // namespace pixflow::host
