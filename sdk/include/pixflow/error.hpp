// pixflow/error.hpp: the two kinds of error an operator reports, as exceptions. The operator
// thunks (operator.hpp) catch them and turn them into a pf_status plus message, so nothing
// unwinds across the C ABI.
//
//   kind                      throw                                  status (abi.h)
//   the user's fault          UserError("gauss5x5: sigma = -1 ...")   PF_ERR_INVALID, or
//     bad input or parameter,  PIXFLOW_USER_CHECK(cond, message)        PF_ERR_UNSUPPORTED for a
//     a case not supported                                              case the op cannot do
//   pixflow's own fault       PIXFLOW_INTERNAL_CHECK(cond, message)   PF_ERR_RUNTIME; the message
//     (a bug: an invariant     PIXFLOW_INTERNAL_ERROR(message)          ends with "(internal error
//     the host or the plugin                                            at <file>:<line>)"
//     should have kept)
//
// A failure of the environment (a file that cannot be written, out of memory) is neither:
// Error(message, PF_ERR_RUNTIME). CUDA failures come from the checks of cuda.hpp (PF_ERR_CUDA,
// with the expression and file:line). Halide's user_assert / internal_assert are the model.
//
// The same two classes are what the host and the library API (<pixflow/pixflow.hpp>) throw to
// their callers: there a UserError carries one Diagnostic per mistake (file:line:col, node, what
// was received and what is accepted); an operator's UserError becomes one such diagnostic, placed
// at its node by the host. One meaning of "the user's fault" from plugin to application.
#pragma once

#include <pixflow/abi.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pixflow {

/// Where in the caller's input something is: a file position, or the argument that set it.
struct SourceLoc {
    std::string file; ///< a path, or the command-line argument / call that set the value
    int line = 0;     ///< 0 when the value did not come from a file
    int col = 0;
    /// "file:line:col", or just `file` when there is no line.
    std::string str() const {
        if (line <= 0) return file;
        return file + ":" + std::to_string(line) + ":" + std::to_string(col);
    }
};

/// One error message: `file:line:col: node 'id' (context): message`. Empty parts are left out.
struct Diagnostic {
    SourceLoc loc;
    std::string node; ///< empty when the error is not about one node
    std::string message;
    std::string context; ///< while running: "<op> on <backend>"
    std::string str() const {
        std::string s = loc.str();
        if (!s.empty()) s += ": ";
        if (!node.empty()) s += "node '" + node + "'" + (context.empty() ? "" : " (" + context + ")") + ": ";
        return s + message;
    }
};

/// Any error an operator reports; `status` says whose fault it is (see the table above).
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what, pf_status status = PF_ERR_INVALID)
        : std::runtime_error(what), m_status(status) {}
    pf_status status() const { return m_status; }
    /// True for the statuses that blame the user's input or parameters.
    bool is_user_error() const { return m_status == PF_ERR_INVALID || m_status == PF_ERR_UNSUPPORTED; }

  private:
    pf_status m_status;
};

/// The user's fault: bad input or parameters (PF_ERR_INVALID, the default), or a case this
/// operator does not support (PF_ERR_UNSUPPORTED). Say what is wrong, the value received and
/// what would be accepted, prefixed with the operator's name.
class UserError : public Error {
  public:
    explicit UserError(const std::string& what, pf_status status = PF_ERR_INVALID)
        : Error(what, status == PF_ERR_UNSUPPORTED ? PF_ERR_UNSUPPORTED : PF_ERR_INVALID), m_diags{Diagnostic{
                                                                                               {}, {}, what, {}}} {}
    /// The host's form: one or more diagnostics, one per line of what().
    explicit UserError(std::vector<Diagnostic> d, pf_status status = PF_ERR_INVALID)
        : Error(join(d), status == PF_ERR_UNSUPPORTED ? PF_ERR_UNSUPPORTED : PF_ERR_INVALID), m_diags(std::move(d)) {}
    explicit UserError(Diagnostic d) : UserError(std::vector<Diagnostic>{std::move(d)}) {}
    const std::vector<Diagnostic>& diagnostics() const { return m_diags; }

  private:
    static std::string join(const std::vector<Diagnostic>& d) {
        std::string s;
        for (const auto& x : d) s += (s.empty() ? "" : "\n") + x.str();
        return s;
    }
    std::vector<Diagnostic> m_diags;
};

/// pixflow's own fault: a bug in the host or a plugin, never the user's input. PF_ERR_RUNTIME,
/// with the place in the source. Throw it through PIXFLOW_INTERNAL_CHECK / _ERROR.
class InternalError : public Error {
  public:
    /// The host's form: the message already names the place (or the failing device, file or plugin).
    explicit InternalError(const std::string& what) : Error(what, PF_ERR_RUNTIME) {}
    InternalError(const std::string& what, const char* file, int line)
        : Error(what + " (internal error at " + std::string(short_file(file)) + ":" + std::to_string(line) + ")",
                PF_ERR_RUNTIME) {}

    /// The path from its last "plugins/", "sdk/" or "framework/" on: the part that names the
    /// place in pixflow's tree (a third-party plugin's path is kept whole).
    static constexpr std::string_view short_file(std::string_view f) {
        std::size_t best = std::string_view::npos;
        for (std::string_view root : {"/plugins/", "/sdk/", "/framework/"})
            if (std::size_t at = f.rfind(root); at != std::string_view::npos)
                if (best == std::string_view::npos || at > best) best = at;
        return best == std::string_view::npos ? f : f.substr(best + 1);
    }
};

} // namespace pixflow

/// Throws UserError(message) unless `cond`: a check of the user's input or parameters.
#define PIXFLOW_USER_CHECK(cond, message)                                                                              \
    do {                                                                                                               \
        if (!(cond)) throw ::pixflow::UserError(message);                                                              \
    } while (0)

/// Throws InternalError(message) with this file:line unless `cond`: an invariant that only a bug
/// can break (the host validated what the operator receives).
#define PIXFLOW_INTERNAL_CHECK(cond, message)                                                                          \
    do {                                                                                                               \
        if (!(cond)) throw ::pixflow::InternalError(message, __FILE__, __LINE__);                                      \
    } while (0)

/// Throws InternalError(message) with this file:line: a branch only a bug can reach.
#define PIXFLOW_INTERNAL_ERROR(message) throw ::pixflow::InternalError(message, __FILE__, __LINE__)
