// How values, accepted ranges, port masks and shapes read in messages and in `pixflow describe`,
// and the small queries on a Graph and its nodes.
#include "pipeline/pipeline.hpp"

#include <pixflow/image.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>

namespace pixflow::host {

std::string format_value(const pf_value& v) {
    switch (v.type) {
    case PF_PARAM_BOOL: return v.b ? "true" : "false";
    case PF_PARAM_INT: return std::to_string(v.i);
    case PF_PARAM_FLOAT: {
        std::ostringstream o;
        o << v.f;
        return o.str();
    }
    default: return std::string("\"") + (v.s ? v.s : "") + "\"";
    }
}

namespace {
/// A range bound as written: integers exactly (2147483647, not 2.14748e+09), other numbers
/// with as many digits as a double round-trips.
std::string num(double x) {
    if (std::abs(x) < 9.007199254740992e15 && x == std::floor(x)) return std::to_string(std::int64_t(x));
    std::ostringstream o;
    o.precision(17);
    o << x;
    std::string shortest = o.str();
    for (int digits = 6; digits < 17; ++digits) { // the fewest digits that give x back
        std::ostringstream t;
        t.precision(digits);
        t << x;
        if (std::stod(t.str()) == x) return t.str();
    }
    return shortest;
}
} // namespace

std::string describe_accepted(const pf_param_desc& d) {
    switch (d.type) {
    case PF_PARAM_BOOL: return "true or false";
    case PF_PARAM_INT: return d.has_range ? "an integer in [" + num(d.min) + ", " + num(d.max) + "]" : "an integer";
    case PF_PARAM_FLOAT: return d.has_range ? "a number in [" + num(d.min) + ", " + num(d.max) + "]" : "a number";
    case PF_PARAM_CHOICE: {
        std::string s = "one of ";
        for (int k = 0; k < d.n_choices; ++k) s += (k ? ", " : "") + std::string(d.choices[k]);
        return s;
    }
    default: return "a string";
    }
}

const char* param_type_name(int type) {
    switch (type) {
    case PF_PARAM_BOOL: return "bool";
    case PF_PARAM_INT: return "int";
    case PF_PARAM_FLOAT: return "float";
    case PF_PARAM_CHOICE: return "choice";
    default: return "string";
    }
}

std::string describe_limits(const pf_param_desc& d) {
    if (d.type == PF_PARAM_CHOICE || d.has_range) return describe_accepted(d);
    if (d.flags & PF_PARAM_OUTPUT_PATH) return "a file to write (atomically)";
    if (d.flags & PF_PARAM_INPUT_PATH) return "a file to read";
    return "";
}

std::string describe_ports(std::uint32_t dtypes, std::uint32_t channels) {
    std::string s;
    for (int d = PF_U8; d <= PF_F64; ++d)
        if (dtypes & PF_DTYPE_BIT(d)) s += (s.empty() ? "" : ", ") + std::string(dtype_name(DType(d)));
    std::vector<int> cs;
    for (int c = 1; c <= 4; ++c)
        if (channels & PF_CHANNELS_BIT(c)) cs.push_back(c);
    if (cs.empty()) return s + " with no channel count";
    bool contiguous = cs.back() - cs.front() + 1 == int(cs.size());
    if (cs.size() == 1) return s + " with " + std::to_string(cs[0]) + (cs[0] == 1 ? " channel" : " channels");
    if (contiguous) return s + " with " + std::to_string(cs.front()) + " to " + std::to_string(cs.back()) + " channels";
    s += " with ";
    for (std::size_t k = 0; k < cs.size(); ++k)
        s += std::to_string(cs[k]) + (k + 2 < cs.size() ? ", " : k + 2 == cs.size() ? " or " : "");
    return s + " channels";
}

std::string format_shape(const pf_image& im) {
    return std::to_string(im.width) + "x" + std::to_string(im.height) + " " + dtype_name(DType(im.dtype)) + " with " +
           std::to_string(im.channels) + (im.channels == 1 ? " channel" : " channels");
}

NodeId Graph::find(const std::string& id) const {
    if (m_by_id.size() == nodes.size()) {
        auto it = m_by_id.find(id);
        return it == m_by_id.end() ? NodeId() : it->second;
    }
    for (NodeId v : nodes.ids())
        if (nodes[v].id == id) return v;
    return NodeId();
}

std::vector<std::pair<NodeId, int>> Graph::consumers(NodeId node, int port) const {
    std::vector<std::pair<NodeId, int>> out;
    if (m_consumers.size() == nodes.size()) {
        for (const auto& [v, i] : m_consumers[node])
            if (nodes[v].inputs[std::size_t(i)].port == port) out.emplace_back(v, i);
        return out;
    }
    for (NodeId v : nodes.ids())
        for (std::size_t i = 0; i < nodes[v].inputs.size(); ++i)
            if (nodes[v].inputs[i].node == node && nodes[v].inputs[i].port == port) out.emplace_back(v, int(i));
    return out;
}

void Graph::index() {
    m_by_id.clear();
    m_by_id.reserve(nodes.size());
    for (NodeId v : nodes.ids()) m_by_id.emplace(nodes[v].id, v);
    if (m_by_id.size() != nodes.size()) m_by_id.clear(); // duplicate ids: keep the first-match scan
    m_consumers.assign(nodes.size(), {});
    for (NodeId v : nodes.ids())
        for (std::size_t i = 0; i < nodes[v].inputs.size(); ++i)
            if (nodes[v].inputs[i].node.valid()) m_consumers[nodes[v].inputs[i].node].emplace_back(v, int(i));
}

std::vector<std::pair<std::string, std::string>> Node::paths(std::uint32_t flag) const {
    std::vector<std::pair<std::string, std::string>> out;
    if (!op) return out;
    for (int k = 0; k < op->desc->n_params; ++k)
        if ((op->desc->params[k].flags & flag) && params[std::size_t(k)].s && *params[std::size_t(k)].s)
            out.emplace_back(op->desc->params[k].name, params[std::size_t(k)].s);
    return out;
}

} // namespace pixflow::host
