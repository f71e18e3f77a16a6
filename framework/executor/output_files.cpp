// executor/ output files: temporaries next to each output, renamed only when the run succeeded.
#include "executor/output_files.hpp"

#include <atomic>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pixflow::host {

void OutputFiles::prepare(const Graph& g, bool skip_sinks) {
    m_params.clear();
    m_strings.clear();
    m_pending.clear();
    m_created_dirs.clear();
    static std::atomic<int> counter{0};
    try {
        for (NodeId v : g.nodes.ids()) {
            const Node& n = g.nodes[v];
            if (!n.op || (skip_sinks && n.is_sink())) continue;
            std::vector<pf_value>* params = nullptr;
            for (int k = 0; k < n.op->desc->n_params; ++k) {
                const pf_value& value = n.params[std::size_t(k)];
                if (!(n.op->desc->params[k].flags & PF_PARAM_OUTPUT_PATH) || !value.s) continue;
                if (!params) params = &m_params.emplace_back(v, n.params).second;
                fs::path final_path = value.s;
                // Create missing folders one by one, remembering them to remove after a failure.
                std::vector<fs::path> missing;
                for (fs::path d = final_path.parent_path(); !d.empty() && !fs::exists(d); d = d.parent_path())
                    missing.push_back(d);
                for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
                    std::error_code ec;
                    if (!fs::create_directory(*it, ec) && ec)
                        throw InternalError(Diagnostic{n.loc, n.id, "cannot create the folder " + it->string() + ": " +
                                                                            ec.message(), n.op->desc->name}.str());
                    m_created_dirs.push_back(*it);
                }
                fs::path tmp = final_path.parent_path() /
                               ("." + final_path.stem().string() + ".pixflow-tmp-" + std::to_string(getpid()) + "-" +
                                std::to_string(counter++) + final_path.extension().string());
                m_pending.emplace_back(tmp.string(), final_path.string());
                (*params)[std::size_t(k)].s = m_strings.emplace_back(tmp.string()).c_str();
            }
        }
    } catch (...) {
        rollback();
        throw;
    }
}

const pf_value* OutputFiles::params(const Graph& g, NodeId v) const {
    for (const auto& [node, params] : m_params)
        if (node == v) return params.data();
    return g.nodes[v].params.data();
}

std::vector<std::string> OutputFiles::commit() {
    std::vector<std::string> written;
    for (auto& [tmp, fin] : m_pending) {
        std::error_code ec;
        if (!fs::exists(tmp, ec)) continue; // the op chose to write nothing
        fs::rename(tmp, fin, ec);
        if (ec) throw InternalError("cannot move " + tmp + " to " + fin + ": " + ec.message());
        written.push_back(fin);
    }
    m_pending.clear();
    m_created_dirs.clear();
    return written;
}

void OutputFiles::rollback() noexcept {
    for (auto& [tmp, fin] : m_pending) {
        std::error_code ec;
        fs::remove(tmp, ec);
    }
    for (auto it = m_created_dirs.rbegin(); it != m_created_dirs.rend(); ++it) {
        std::error_code ec;
        fs::remove(*it, ec); // only if still empty
    }
    m_pending.clear();
    m_created_dirs.clear();
}

} // namespace pixflow::host
