// stderr_capture.cpp: StderrCapture (stderr_capture.hpp).
#include "stderr_capture.hpp"

#include <cstdio>
#include <mutex>

namespace pixflow::io::detail {

#if defined(__GLIBC__)
namespace {

thread_local std::string* t_sink = nullptr; // the innermost capture of this thread
std::mutex g_mutex;                         // guards the three below
int g_active = 0;                           // captures alive in the process
std::FILE* g_real = nullptr;                // stderr as it was when the first capture began
std::FILE* g_ours = nullptr;                // made once, never closed: a thread may still hold it

ssize_t write_to_sink(void*, const char* buf, size_t n) {
    if (t_sink)
        t_sink->append(buf, n);
    else if (g_real)
        n = std::fwrite(buf, 1, n, g_real); // another thread's text: the terminal, as before
    return ssize_t(n);
}

std::FILE* our_stream() {
    if (!g_ours) {
        cookie_io_functions_t io{};
        io.write = &write_to_sink;
        g_ours = fopencookie(nullptr, "w", io);
        if (g_ours) std::setvbuf(g_ours, nullptr, _IONBF, 0);
    }
    return g_ours;
}

} // namespace

StderrCapture::StderrCapture() : m_outer(t_sink) {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::FILE* ours = our_stream();
    if (!ours) return; // cannot capture: leave stderr alone
    t_sink = &m_text;
    m_swapped = true;
    if (g_active++ == 0) {
        g_real = stderr;
        // An atomic store, so that no thread can see half a pointer.
        __atomic_store_n(&stderr, ours, __ATOMIC_SEQ_CST);
    }
}

StderrCapture::~StderrCapture() {
    if (!m_swapped) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    t_sink = m_outer;
    if (--g_active == 0) __atomic_store_n(&stderr, g_real, __ATOMIC_SEQ_CST);
}
#else
StderrCapture::StderrCapture() = default;
StderrCapture::~StderrCapture() = default;
#endif

} // namespace pixflow::io::detail
