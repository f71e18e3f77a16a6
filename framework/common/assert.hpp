// Halide's internal_assert for the host: a broken promise inside pixflow throws InternalError
// with the condition and file:line. Every layer may include this; it includes nothing of pixflow's
// own but the public error types.
#pragma once

#include <pixflow/diagnostic.hpp>

#include <string>

namespace pixflow::host {

[[noreturn]] inline void internal_failure(const char* what, const std::string& message, const char* file, int line) {
    throw InternalError("internal error: " + std::string(what) + (message.empty() ? "" : ": " + message) + " (at " +
                        file + ":" + std::to_string(line) + "; a bug in pixflow, please report it)");
}

} // namespace pixflow::host

/// `cond` holds unless pixflow has a bug; `message` says what went wrong in words.
#define PIXFLOW_ASSERT(cond, message)                                                                                  \
    do {                                                                                                               \
        if (!(cond)) ::pixflow::host::internal_failure(#cond, (message), __FILE__, __LINE__);                          \
    } while (0)
