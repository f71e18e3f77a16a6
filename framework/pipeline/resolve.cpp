// Phase 1 of build_graph: each node's op found in the registry and each parameter resolved
// against its declaration (defaults, types, ranges, choices, required ones).
#include "pipeline/validate_phases.hpp"

#include <algorithm>
#include <cmath>

namespace pixflow::host::validate {

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(2, name.size() / 2) + 1;
    for (const auto& c : candidates) {
        // The distance is at least the difference in length: most candidates need no table.
        std::size_t len_diff = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
        if (len_diff >= best_d) continue;
        if (auto d = edit_distance(name, c); d < best_d) best_d = d, best = c;
    }
    return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string join_list(const std::vector<std::string>& v, std::size_t limit) {
    std::string s;
    for (std::size_t k = 0; k < v.size() && k < limit; ++k) s += (s.empty() ? "" : ", ") + v[k];
    if (v.size() > limit) s += ", ... (" + std::to_string(v.size()) + " in all)";
    return s.empty() ? "(none)" : s;
}

bool valid_backend(const std::string& b) { return b == "auto" || b == "cpu" || b == "cuda"; }

namespace {

/// Checks one value against its declaration; returns the error text or "".
std::string resolve_param(const pf_param_desc& d, const RawValue& v, pf_value& out, std::deque<std::string>& strings) {
    out = pf_value{};
    out.type = d.type;
    std::string given = d.name + std::string(" = ") + v.to_toml();
    std::string want = describe_accepted(d);
    switch (d.type) {
    case PF_PARAM_BOOL:
        if (v.kind != RawValue::Kind::boolean) return given + " is not a boolean; expected " + want;
        out.b = v.b;
        return "";
    case PF_PARAM_INT:
        if (v.kind != RawValue::Kind::integer) return given + " is not an integer; expected " + want;
        if (d.has_range && (double(v.i) < d.min || double(v.i) > d.max))
            return given + " is out of range; expected " + want;
        out.i = v.i;
        return "";
    case PF_PARAM_FLOAT: {
        double x;
        if (v.kind == RawValue::Kind::integer)
            x = double(v.i);
        else if (v.kind == RawValue::Kind::floating)
            x = v.f;
        else
            return given + " is not a number; expected " + want;
        if (!std::isfinite(x) || (d.has_range && (x < d.min || x > d.max)))
            return given + " is out of range; expected " + want;
        out.f = x;
        return "";
    }
    case PF_PARAM_CHOICE: {
        if (v.kind != RawValue::Kind::string) return given + " is not a string; expected " + want;
        std::vector<std::string> choices(d.choices, d.choices + d.n_choices);
        if (std::find(choices.begin(), choices.end(), v.s) == choices.end())
            return given + " is not " + want + did_you_mean(v.s, choices);
        out.s = strings.emplace_back(v.s).c_str();
        return "";
    }
    default:
        if (v.kind != RawValue::Kind::string) return given + " is not a string; expected " + want;
        out.s = strings.emplace_back(v.s).c_str();
        return "";
    }
}

} // namespace

/// 1. The op of one node and each of its parameters: defaults filled in, types, ranges and choices
/// checked, required ones present.
void resolve_node(const PipelineSpec& spec, const NodeSpec& ns, const Registry& reg, Node& n, Errors& errs) {
    n.id = ns.id;
    n.loc = ns.loc;
    n.backend = ns.backend.value_or(spec.backend);
    n.backend_loc = ns.backend ? ns.backend_loc : spec.backend_loc;
    n.backend_explicit = ns.backend.has_value();
    if (ns.backend && !valid_backend(*ns.backend))
        add(errs, ns.backend_loc, n.id, "backend = \"" + *ns.backend + "\" is not one of auto, cpu, cuda");
    if (ns.external) {
        n.outputs = {*ns.external};
        return;
    }
    if (ns.op.empty()) return; // reported by the parser
    n.op = reg.find(ns.op);
    if (!n.op) {
        std::string msg = "unknown op '" + ns.op + "'";
        if (auto why = reg.rejected_reason_for(ns.op); !why.empty()) {
            msg += "; " + why;
        } else {
            auto close = reg.closest(ns.op);
            msg += close.empty() ? "; see `pixflow ops` for the list"
                                 : "; did you mean " + join_list(close) + "? (see `pixflow ops`)";
            msg += ". Plugins are searched in " + reg.search_path_text() +
                   "; add a folder with --plugin-path DIR or $PIXFLOW_PLUGIN_PATH";
        }
        add(errs, ns.op_loc, n.id, msg);
        return;
    }
    const pf_op_desc& d = *n.op->desc;
    std::vector<std::string> pnames;
    for (int k = 0; k < d.n_params; ++k) pnames.emplace_back(d.params[k].name);
    for (const auto& [key, value] : ns.params)
        if (std::find(pnames.begin(), pnames.end(), key) == pnames.end())
            add(errs, value.loc, n.id,
                "unknown parameter '" + key + "' for op " + d.name + did_you_mean(key, pnames) +
                    "; accepted: " + join_list(pnames) + (d.n_inputs ? ", input/inputs, backend" : ", backend"));
    n.params.resize(std::size_t(d.n_params));
    for (int k = 0; k < d.n_params; ++k) {
        const pf_param_desc& pd = d.params[k];
        pf_value& value = n.params[std::size_t(k)];
        auto it = std::find_if(ns.params.begin(), ns.params.end(), [&](auto& kv) { return kv.first == pd.name; });
        if (it == ns.params.end()) {
            if (pd.flags & PF_PARAM_REQUIRED) {
                add(errs, ns.loc, n.id,
                    std::string("missing parameter '") + pd.name + "' of op " + d.name + "; expected " +
                        describe_accepted(pd) + " (" + pd.doc + ")");
                continue;
            }
            value = pd.default_value;
            value.type = pd.type;
            if (pd.default_value.s) value.s = n.strings->emplace_back(pd.default_value.s).c_str();
            continue;
        }
        n.param_locs[pd.name] = it->second.loc;
        if (auto e = resolve_param(pd, it->second, value, *n.strings); !e.empty()) add(errs, it->second.loc, n.id, e);
    }
}

} // namespace pixflow::host::validate
