// A node's place in its Graph, as a type of its own. Graph::nodes and every per-node table of the
// plan and the executor are NodeMaps indexed by a NodeId, so no index is ever cast: a transfer
// index or a port number cannot be passed where a node is meant.
#pragma once

#include <compare>
#include <cstddef>
#include <utility>
#include <vector>

namespace pixflow::host {

struct NodeId {
    int value = -1; ///< -1: no node
    constexpr NodeId() = default;
    constexpr explicit NodeId(int v) : value(v) {}
    constexpr explicit NodeId(std::size_t v) : value(int(v)) {}
    constexpr bool valid() const { return value >= 0; }
    constexpr std::size_t index() const { return std::size_t(value); }
    friend constexpr auto operator<=>(NodeId, NodeId) = default;
};

/// NodeId(0), NodeId(1), ... NodeId(n - 1), for range-for.
class NodeIds {
  public:
    struct iterator {
        int v;
        constexpr NodeId operator*() const { return NodeId(v); }
        constexpr iterator& operator++() { return ++v, *this; }
        constexpr bool operator!=(const iterator& o) const { return v != o.v; }
    };
    constexpr explicit NodeIds(std::size_t n) : m_n(int(n)) {}
    constexpr iterator begin() const { return {0}; }
    constexpr iterator end() const { return {m_n}; }

  private:
    int m_n;
};

/// A vector with one element per node, indexed by NodeId.
template <class T> class NodeMap {
  public:
    NodeMap() = default;
    explicit NodeMap(std::size_t n, const T& value = T{}) : m_v(n, value) {}
    T& operator[](NodeId v) { return m_v[v.index()]; }
    const T& operator[](NodeId v) const { return m_v[v.index()]; }
    std::size_t size() const { return m_v.size(); }
    bool empty() const { return m_v.empty(); }
    NodeIds ids() const { return NodeIds(m_v.size()); }
    void assign(std::size_t n, const T& value) { m_v.assign(n, value); }
    void resize(std::size_t n) { m_v.resize(n); }
    void clear() { m_v.clear(); }
    template <class... A> T& emplace_back(A&&... a) { return m_v.emplace_back(std::forward<A>(a)...); }
    void push_back(T v) { m_v.push_back(std::move(v)); }
    /// The id the next emplace_back will get.
    NodeId next_id() const { return NodeId(m_v.size()); }
    auto begin() { return m_v.begin(); }
    auto end() { return m_v.end(); }
    auto begin() const { return m_v.begin(); }
    auto end() const { return m_v.end(); }

  private:
    std::vector<T> m_v;
};

} // namespace pixflow::host
