// stderr_capture.hpp: keeps what a codec library prints on stdio's stderr out of the terminal,
// for the one-line message of the read or write that caused it. libpng is the case in point:
// when OpenImageIO's error handler returns, libpng calls its default one, which prints
// "libpng error: ..." to stderr (breaking pixflow's one-line errors and its progress bar).
#pragma once

#include <string>

namespace pixflow::io::detail {

/// While alive, whatever this thread writes through stdio's `stderr` is kept in text() instead
/// of reaching the terminal; other threads' writes reach the terminal as before.
///
/// How: glibc's `stderr` is an ordinary variable ("normal variables which you can set", the glibc
/// manual). While any capture is alive anywhere in the process it points to a stream of ours
/// (fopencookie, unbuffered, so each write is made by the thread that writes) which hands every
/// write to the capture of the writing thread, or, when that thread has none, to the real
/// stderr. The last capture to end puts the real stream back. Writes made straight to file
/// descriptor 2, and std::cerr (which keeps its own pointer to the real stream), are not seen.
/// Without glibc the capture keeps nothing and changes nothing.
class StderrCapture {
  public:
    StderrCapture();
    ~StderrCapture();
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    /// What this thread printed so far.
    const std::string& text() const { return m_text; }

  private:
    std::string m_text;
    std::string* m_outer = nullptr; // the capture this one is nested in, restored at the end
    bool m_swapped = false;
};

} // namespace pixflow::io::detail
