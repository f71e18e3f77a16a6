// executor/ schedule: the step graph and the TBB loop that walks it.
#include "executor/schedule.hpp"

#include <set>

namespace pixflow::host {

Schedule::Schedule(const Graph& g, const Plan& p) : m_nodes(g.nodes.size()) {
    std::size_t steps = m_nodes + p.transfers.size();
    m_succ.resize(steps);
    m_deps.assign(steps, 0);
    m_left = std::make_unique<std::atomic<int>[]>(steps);
    for (NodeId v : g.nodes.ids()) {
        std::set<int> from;
        for (std::size_t i = 0; i < g.nodes[v].inputs.size(); ++i) {
            int t = p.input_transfer[v][i];
            from.insert(t >= 0 ? int(m_nodes) + t : g.nodes[v].inputs[i].node.value);
        }
        m_deps[v.index()] = int(from.size());
        for (int f : from) m_succ[std::size_t(f)].push_back(v.value);
    }
    for (std::size_t t = 0; t < p.transfers.size(); ++t) {
        m_deps[m_nodes + t] = 1;
        m_succ[p.transfers[t].node.index()].push_back(int(m_nodes + t));
    }
    for (std::size_t s = 0; s < steps; ++s)
        if (m_deps[s] == 0) m_ready.push_back(int(s));
}

void Schedule::chain(int s, tbb::task_group& tg, const std::function<void(int)>& step,
                     const std::atomic<bool>& cancelled) {
    while (s >= 0 && !cancelled) {
        step(s);
        if (cancelled) return;
        int next = -1;
        for (int n : m_succ[std::size_t(s)])
            if (--m_left[std::size_t(n)] == 0) {
                if (next < 0)
                    next = n;
                else
                    tg.run([this, n, &tg, &step, &cancelled] { chain(n, tg, step, cancelled); });
            }
        s = next;
    }
}

void Schedule::run(const std::function<void(int)>& step, const std::atomic<bool>& cancelled) {
    for (std::size_t s = 0; s < m_deps.size(); ++s) m_left[s] = m_deps[s];
    tbb::task_group tg;
    // Every initially ready step is started before any runs: a running step may bring another
    // step's count to zero and start it, which this loop must then not start a second time.
    for (std::size_t k = 1; k < m_ready.size(); ++k) {
        int s = m_ready[k];
        tg.run([this, s, &tg, &step, &cancelled] { chain(s, tg, step, cancelled); });
    }
    if (!m_ready.empty()) chain(m_ready[0], tg, step, cancelled);
    tg.wait();
}

} // namespace pixflow::host
