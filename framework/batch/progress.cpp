#include "batch/progress.hpp"

#include <cmath>
#include <cstdio>

namespace pixflow::host {

std::string format_eta(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "--:--";
    long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

ProgressBar::ProgressBar(int total, bool enabled) : m_total(total), m_enabled(enabled) {
    if (m_enabled) {
        std::lock_guard lk(m_mu);
        draw_locked(true);
    }
}

void ProgressBar::update(int done, int failed) {
    std::lock_guard lk(m_mu);
    m_done = done;
    m_failed = failed;
    if (m_enabled) draw_locked(false);
}

void ProgressBar::forward(std::function<void(const std::string&)> f) {
    std::lock_guard lk(m_mu);
    m_forward = std::move(f);
    m_enabled = false;
}

void ProgressBar::print(const std::string& line) {
    if (m_forward) return m_forward(line); // set before the run's threads start; thread-safe itself
    std::lock_guard lk(m_mu);
    if (m_enabled && m_drawn) std::fputs("\r\x1b[K", stderr);
    std::fprintf(stderr, "%s\n", line.c_str());
    if (m_enabled) draw_locked(true);
}

void ProgressBar::finish() {
    std::lock_guard lk(m_mu);
    if (!m_enabled) return;
    draw_locked(true);
    std::fputs("\n", stderr);
    std::fflush(stderr);
    m_enabled = false;
}

void ProgressBar::draw_locked(bool force) {
    auto now = Clock::now();
    if (!force && m_drawn && now - m_last < std::chrono::milliseconds(100) && m_done < m_total) return;
    m_last = now;
    constexpr int width = 24;
    int filled = m_total > 0 ? int(std::lround(double(width) * m_done / m_total)) : width;
    std::string bar(std::size_t(filled), '#');
    bar.append(std::size_t(width - filled), '.');
    double elapsed = std::chrono::duration<double>(now - m_start).count();
    double rate = elapsed > 0 ? m_done / elapsed : 0;
    std::string eta = rate > 0 ? format_eta((m_total - m_done) / rate) : "--:--";
    char line[160];
    int n = std::snprintf(line, sizeof line, "\r\x1b[K[%s] %d/%d  %.1f img/s  ETA %s", bar.c_str(), m_done, m_total,
                          rate, eta.c_str());
    if (m_failed && n > 0 && std::size_t(n) < sizeof line)
        std::snprintf(line + n, sizeof line - std::size_t(n), "  %d failed", m_failed);
    std::fputs(line, stderr);
    std::fflush(stderr);
    m_drawn = true;
}

} // namespace pixflow::host
