// executor/ schedule: the order of a run. Every node and every transfer is a step (nodes first,
// then transfers); a step starts when the steps that feed it are done, so independent branches
// run concurrently. The step graph is built once per plan.
#pragma once

#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <tbb/task_group.h>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace pixflow::host {

class Schedule {
  public:
    Schedule(const Graph& g, const Plan& p);
    std::size_t size() const { return m_succ.size(); }
    /// Step s is a node (then node_of(s)) or a transfer (then transfer_of(s)).
    bool is_node(int s) const { return std::size_t(s) < m_nodes; }
    NodeId node_of(int s) const { return NodeId(s); }
    int transfer_of(int s) const { return s - int(m_nodes); }

    /// Runs every step once, each after the steps that feed it, until `cancelled`. A step whose
    /// last input finished runs on the same thread when it is the first one that step made
    /// ready (a chain costs no task switches); the others, and the first ready steps beyond
    /// one, become TBB tasks. `step` must not throw.
    void run(const std::function<void(int)>& step, const std::atomic<bool>& cancelled);

  private:
    void chain(int s, tbb::task_group& tg, const std::function<void(int)>& step, const std::atomic<bool>& cancelled);

    std::size_t m_nodes;
    std::vector<std::vector<int>> m_succ;
    std::vector<int> m_deps;  ///< how many steps each waits for
    std::vector<int> m_ready; ///< the steps that wait for none
    std::unique_ptr<std::atomic<int>[]> m_left;
};

} // namespace pixflow::host
