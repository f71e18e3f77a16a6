// executor/ output files, written as one transaction: before a run, every output-path parameter
// (PF_PARAM_OUTPUT_PATH, save's path) is replaced by a temporary next to the file, with the same
// extension so codecs still choose the format by it: `.<stem>.pixflow-tmp-<pid>-<n><ext>`, and
// missing folders are created. When every step succeeded, commit() renames the temporaries into
// place; otherwise rollback() deletes them and the folders it created, so a failed run leaves
// nothing behind. An operator that chose to write nothing leaves no temporary and gets no rename.
#pragma once

#include "pipeline/pipeline.hpp"

#include <deque>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace pixflow::host {

class OutputFiles {
  public:
    /// Replaces the output paths of g's nodes (those of sinks too unless `skip_sinks`). Throws
    /// InternalError, after rolling back, when a folder cannot be created.
    void prepare(const Graph& g, bool skip_sinks);
    /// The parameters node v is run with: its own, or a copy with temporaries for its outputs.
    const pf_value* params(const Graph& g, NodeId v) const;
    /// Renames every temporary that exists; returns the final paths. Throws InternalError when a
    /// rename fails.
    std::vector<std::string> commit();
    /// Deletes the temporaries and the folders this run created (when still empty). Never throws.
    void rollback() noexcept;

  private:
    std::vector<std::pair<NodeId, std::vector<pf_value>>> m_params; ///< nodes with output paths
    std::deque<std::string> m_strings;
    std::vector<std::pair<std::string, std::string>> m_pending; ///< (temporary, final)
    std::vector<std::filesystem::path> m_created_dirs;
};

} // namespace pixflow::host
