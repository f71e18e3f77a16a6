// Where in the user's input something is, and the one-line errors that point there:
//   pipelines/blur.toml:12:9: node 'blur': border = "mirror" is not one of reflect101, replicate, zero
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace pixflow::host {

struct SourceLoc {
    std::string file; ///< a path, or the command-line argument that set the value
    int line = 0;     ///< 0 when the value did not come from a file
    int col = 0;
    std::string str() const {
        if (line <= 0) return file;
        return file + ":" + std::to_string(line) + ":" + std::to_string(col);
    }
};

struct Diagnostic {
    SourceLoc loc;
    std::string node; ///< empty when the error is not about one node
    std::string message;
    std::string str() const {
        std::string s = loc.str() + ": ";
        if (!node.empty()) s += "node '" + node + "': ";
        return s + message;
    }
};

/// A mistake in the user's pipeline or command line: one or more diagnostics.
class UserError : public std::runtime_error {
  public:
    explicit UserError(std::vector<Diagnostic> d)
        : std::runtime_error(join(d)), m_diags(std::move(d)) {}
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

} // namespace pixflow::host
