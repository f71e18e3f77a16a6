// pixflow/diagnostic.hpp: the two kinds of error pixflow raises, in the CLI and in the library.
//
//   UserError      the caller's mistake: the pipeline, a parameter, a --set or set(), an input
//                  binding, or an input an operator refused (its PF_ERR_INVALID or
//                  PF_ERR_UNSUPPORTED). It lists diagnostics that say where, what was received
//                  and what would be accepted, one per line:
//                    pipelines/blur.toml:17:10: node 'blur': border = "mirror" is not one of ...
//   InternalError  not the caller's doing: a bug in pixflow or in a plugin, or the machine failing
//                  under them (a CUDA call, a file that cannot be moved, an operator's
//                  PF_ERR_RUNTIME or PF_ERR_CUDA). The message names pixflow's file:line, or the
//                  node and the plugin's own message.
//
// The `pixflow` CLI exits 1 for a UserError raised before anything ran, 2 for any failure while
// running. Library calls throw these two (and std::bad_alloc); nothing else escapes.
#pragma once

#include <stdexcept>
#include <string>
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
    std::string node;    ///< empty when the error is not about one node
    std::string message;
    std::string context; ///< while running: "<op> on <backend>"
    std::string str() const {
        std::string s = loc.str();
        if (!s.empty()) s += ": ";
        if (!node.empty()) s += "node '" + node + "'" + (context.empty() ? "" : " (" + context + ")") + ": ";
        return s + message;
    }
};

/// A mistake in the caller's pipeline, parameters or inputs: one or more diagnostics.
class UserError : public std::runtime_error {
  public:
    explicit UserError(std::vector<Diagnostic> d) : std::runtime_error(join(d)), m_diags(std::move(d)) {}
    explicit UserError(Diagnostic d) : UserError(std::vector<Diagnostic>{std::move(d)}) {}
    /// A mistake that has no place in a file (a path that cannot be written, say).
    explicit UserError(std::string message) : UserError(Diagnostic{{}, {}, std::move(message), {}}) {}
    const std::vector<Diagnostic>& diagnostics() const { return m_diags; }

  private:
    static std::string join(const std::vector<Diagnostic>& d) {
        std::string s;
        for (const auto& x : d) s += (s.empty() ? "" : "\n") + x.str();
        return s;
    }
    std::vector<Diagnostic> m_diags;
};

/// A failure that is not the caller's: a bug (with pixflow's file:line) or a failing device, file
/// system or plugin.
class InternalError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

} // namespace pixflow
