// TOML -> PipelineSpec, in phases: 1. [pipeline], 2. [nodes.<id>], 3. --set overrides, 4. what only
// the whole can tell. Only the format is checked here; meaning is checked in validate.cpp.
#include "pipeline/pipeline.hpp"

#include "pipeline/toml.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace pixflow::host {
namespace {

SourceLoc loc_of(const toml::source_region& r, const std::string& file) {
    return SourceLoc{file, int(r.begin.line), int(r.begin.column)};
}

std::string type_name(const toml::node& n) {
    switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
    }
}

RawValue from_toml(const toml::node& n, SourceLoc loc) {
    RawValue v;
    v.loc = std::move(loc);
    if (auto b = n.as_boolean()) {
        v.kind = RawValue::Kind::boolean;
        v.b = b->get();
    } else if (auto i = n.as_integer()) {
        v.kind = RawValue::Kind::integer;
        v.i = i->get();
    } else if (auto f = n.as_floating_point()) {
        v.kind = RawValue::Kind::floating;
        v.f = f->get();
    } else if (auto s = n.as_string()) {
        v.kind = RawValue::Kind::string;
        v.s = s->get();
    } else {
        v.kind = RawValue::Kind::other;
        v.s = type_name(n);
    }
    return v;
}

/// The diagnostics of one phase, thrown together.
struct Errors {
    std::vector<Diagnostic> list;
    void add(SourceLoc l, std::string node, std::string msg) {
        list.push_back(Diagnostic{std::move(l), std::move(node), std::move(msg), {}});
    }
    void add(const std::vector<Diagnostic>& d) { list.insert(list.end(), d.begin(), d.end()); }
    void throw_if_any() const {
        if (!list.empty()) throw UserError(list);
    }
};

/// 1. The [pipeline] table and the top-level keys.
void parse_pipeline_section(const toml::table& root, const std::string& file, PipelineSpec& spec, Errors& errs) {
    for (auto&& [key, value] : root) {
        std::string k(key.str());
        if (k != "pipeline" && k != "nodes")
            errs.add(loc_of(key.source(), file), "",
                     "unknown top-level key '" + k + "'; accepted: [pipeline], [nodes.<id>]");
    }
    const toml::node* p = root.get("pipeline");
    if (!p) return;
    if (!p->is_table()) {
        errs.add(loc_of(p->source(), file), "", "'pipeline' must be a table");
        return;
    }
    for (auto&& [key, value] : *p->as_table()) {
        std::string k(key.str());
        SourceLoc l = loc_of(value.source(), file);
        if (k == "name") {
            if (auto s = value.value<std::string>())
                spec.name = *s;
            else
                errs.add(l, "", "pipeline.name must be a string");
        } else if (k == "backend") {
            spec.backend_loc = l;
            if (auto s = value.value<std::string>())
                spec.backend = *s;
            else
                errs.add(l, "", "pipeline.backend must be a string: \"auto\", \"cpu\" or \"cuda\"");
        } else {
            errs.add(loc_of(key.source(), file), "", "unknown key 'pipeline." + k + "'; accepted: name, backend");
        }
    }
}

/// `inputs = { port = "node", ... }` of node n.
void parse_inputs_table(const toml::node& value, const std::string& file, NodeSpec& n, Errors& errs) {
    SourceLoc l = loc_of(value.source(), file);
    n.inputs_as_table = true;
    if (!value.is_table()) {
        errs.add(l, n.id, "inputs must be a table: inputs = { a = \"x\", b = \"y.mask\" }");
        return;
    }
    for (auto&& [ikey, ival] : *value.as_table()) {
        SourceLoc il = loc_of(ival.source(), file);
        if (auto s = ival.value<std::string>())
            n.inputs.push_back(InputSpec{std::string(ikey.str()), *s, "", il});
        else
            errs.add(il, n.id, "inputs." + std::string(ikey.str()) + " must be a string: \"node\" or \"node.port\"");
    }
}

/// 2. Each [nodes.<id>] table: op, backend, input(s); every other key is a parameter.
void parse_nodes(const toml::table& root, const std::string& file, PipelineSpec& spec, Errors& errs) {
    const toml::node* nodes = root.get("nodes");
    if (!nodes || !nodes->is_table() || nodes->as_table()->empty()) {
        errs.add(SourceLoc{file, 1, 1}, "",
                 "the pipeline has no nodes; add tables like [nodes.src] with op = \"load\"");
        errs.throw_if_any();
    }
    for (auto&& [key, value] : *nodes->as_table()) {
        NodeSpec n;
        n.id = std::string(key.str());
        n.loc = loc_of(key.source(), file);
        if (!value.is_table()) {
            errs.add(n.loc, n.id, "must be a table ([nodes." + n.id + "])");
            continue;
        }
        for (auto&& [pkey, pval] : *value.as_table()) {
            std::string k(pkey.str());
            SourceLoc l = loc_of(pval.source(), file);
            if (k == "op") {
                n.op_loc = l;
                if (auto s = pval.value<std::string>())
                    n.op = *s;
                else
                    errs.add(l, n.id, "op must be a string naming an operator");
            } else if (k == "backend") {
                n.backend_loc = l;
                if (auto s = pval.value<std::string>())
                    n.backend = *s;
                else
                    errs.add(l, n.id, "backend must be a string: \"auto\", \"cpu\" or \"cuda\"");
            } else if (k == "input") {
                if (auto s = pval.value<std::string>())
                    n.inputs.push_back(InputSpec{"", *s, "", l});
                else
                    errs.add(l, n.id, "input must be a string: \"node\" or \"node.port\"");
            } else if (k == "inputs") {
                parse_inputs_table(pval, file, n, errs);
            } else {
                n.params.emplace_back(k, from_toml(pval, l));
            }
        }
        spec.nodes.push_back(std::move(n));
    }
}

/// 3. One override (--set or Pipeline::set), applied in order: a later one wins.
void apply_override(const Override& o, PipelineSpec& spec, Errors& errs) {
    SourceLoc l = o.value.loc;
    if (o.node == "pipeline") {
        if (o.key == "backend" && o.value.kind == RawValue::Kind::string) {
            spec.backend = o.value.s;
            spec.backend_loc = l;
        } else if (o.key == "name") {
            spec.name = o.value.kind == RawValue::Kind::string ? o.value.s : o.value.to_toml();
        } else {
            errs.add(l, "", "cannot set pipeline." + o.key + "; accepted: pipeline.name, pipeline.backend");
        }
        return;
    }
    auto it = std::find_if(spec.nodes.begin(), spec.nodes.end(), [&](const NodeSpec& n) { return n.id == o.node; });
    if (it == spec.nodes.end()) {
        std::string ids;
        for (std::size_t k = 0; k < spec.nodes.size() && k < 50; ++k)
            ids += (ids.empty() ? "" : ", ") + spec.nodes[k].id;
        if (spec.nodes.size() > 50) ids += ", ... (" + std::to_string(spec.nodes.size()) + " in all)";
        errs.add(l, "", "no node '" + o.node + "'; nodes: " + ids);
        return;
    }
    auto str_or_err = [&](const char* what) -> std::optional<std::string> {
        if (o.value.kind == RawValue::Kind::string) return o.value.s;
        errs.add(l, it->id, std::string(what) + " must be a string");
        return std::nullopt;
    };
    if (o.key == "op") {
        if (auto v = str_or_err("op")) it->op = *v, it->op_loc = l;
    } else if (o.key == "backend") {
        if (auto v = str_or_err("backend")) it->backend = *v, it->backend_loc = l;
    } else if (o.key == "input") {
        if (auto v = str_or_err("input")) it->inputs = {InputSpec{"", *v, "", l}}, it->inputs_as_table = false;
    } else if (o.key.rfind("inputs.", 0) == 0) {
        std::string port = o.key.substr(7);
        if (port.empty()) {
            errs.add(l, it->id, "the input port is empty; expected inputs.<port> = \"node[.port]\"");
            return;
        }
        if (auto v = str_or_err("inputs.<port>")) {
            auto& ins = it->inputs;
            ins.erase(std::remove_if(ins.begin(), ins.end(), [&](auto& i) { return i.port == port; }), ins.end());
            ins.push_back(InputSpec{port, *v, "", l});
            it->inputs_as_table = true;
        }
    } else {
        auto& ps = it->params;
        auto p = std::find_if(ps.begin(), ps.end(), [&](auto& kv) { return kv.first == o.key; });
        if (p != ps.end())
            p->second = o.value;
        else
            ps.emplace_back(o.key, o.value);
    }
}

/// 4. What only the whole can tell: nodes without an op, "node.port" references, file order.
void finish(PipelineSpec& spec, Errors& errs) {
    for (const NodeSpec& n : spec.nodes)
        if (n.op.empty() && !n.external)
            errs.add(n.op_loc.line ? n.op_loc : n.loc, n.id, "has no op; add op = \"<operator>\" (see `pixflow ops`)");
    for (NodeSpec& n : spec.nodes)
        for (InputSpec& in : n.inputs)
            if (auto dot = in.node.find('.'); dot != std::string::npos) {
                // "src." or ".out" would otherwise read the default port, or a node named "".
                if (dot == 0 || dot + 1 == in.node.size())
                    errs.add(in.loc, n.id,
                             "input \"" + in.node + "\" names an empty " + (dot == 0 ? "node" : "port") +
                                 "; expected \"node\" or \"node.port\"");
                in.out_port = in.node.substr(dot + 1);
                in.node = in.node.substr(0, dot);
            }
    std::stable_sort(spec.nodes.begin(), spec.nodes.end(),
                     [](const NodeSpec& a, const NodeSpec& b) { return a.loc.line < b.loc.line; });
}

PipelineSpec parse_table(const toml::table& root, const std::string& file, const std::vector<std::string>& sets,
                         const std::vector<Override>& overrides) {
    PipelineSpec spec;
    spec.file = file;
    Errors errs;
    parse_pipeline_section(root, file, spec, errs);
    parse_nodes(root, file, spec, errs);
    for (const std::string& s : sets) {
        try {
            apply_override(parse_override(s), spec, errs);
        } catch (const UserError& e) { errs.add(e.diagnostics()); }
    }
    for (const Override& o : overrides) apply_override(o, spec, errs);
    finish(spec, errs);
    errs.throw_if_any();
    return spec;
}

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

} // namespace

std::string escape_control(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (!is_control(c)) {
            out += c;
            continue;
        }
        switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(static_cast<unsigned char>(c)));
            out += hex;
        }
        }
    }
    return out;
}

std::string RawValue::to_toml() const {
    switch (kind) {
    case Kind::boolean: return b ? "true" : "false";
    case Kind::integer: return std::to_string(i);
    case Kind::floating: {
        std::ostringstream o;
        o << f;
        return o.str();
    }
    case Kind::string: return "\"" + s + "\"";
    default: return s;
    }
}

RawValue parse_value(const std::string& text, SourceLoc loc) {
    // Read it as a TOML value when it is one (1.5, true, "x"), else as a bare string (zero).
    try {
        toml::table t = parse_toml("v = " + text, "--set");
        if (const toml::node* n = t.get("v")) return from_toml(*n, loc);
    } catch (const toml::parse_error&) {}
    RawValue v;
    v.kind = RawValue::Kind::string;
    v.s = text;
    v.loc = std::move(loc);
    return v;
}

Override parse_override(const std::string& arg) {
    SourceLoc loc{"--set " + escape_control(arg), 0, 0};
    auto refuse = [&](const std::string& msg) { throw UserError(Diagnostic{loc, "", msg, {}}); };
    // One line only: the value is read as `v = <value>`, so a newline would start a TOML line of
    // its own and whatever follows it would be dropped without a word.
    for (std::size_t i = 0; i < arg.size(); ++i)
        if (is_control(arg[i]))
            refuse("a control character (" + escape_control(arg.substr(i, 1)) + ") at byte " + std::to_string(i + 1) +
                   "; --set takes one line, node.key=value, with no newline, tab or other control character");
    auto eq = arg.find('=');
    auto dot = arg.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq || dot == 0 || dot + 1 == eq)
        refuse("expected --set node.key=value (or pipeline.key=value)");
    Override o{arg.substr(0, dot), arg.substr(dot + 1, eq - dot - 1), {}};
    if (o.key == "inputs.") refuse("the input port is empty; expected --set node.inputs.<port>=node[.port]");
    if (o.key.front() == '.' || o.key.back() == '.' || o.key.find("..") != std::string::npos)
        refuse("the key '" + o.key +
               "' has an empty part; expected --set node.key=value, node.inputs.<port>=node[.port] "
               "or pipeline.key=value");
    o.value = parse_value(arg.substr(eq + 1), loc);
    return o;
}

PipelineSpec parse_pipeline_text(const std::string& text, const std::string& file, const std::vector<std::string>& sets,
                                 const std::vector<Override>& overrides) {
    toml::table root;
    try {
        root = parse_toml(text, file);
    } catch (const toml::parse_error& e) {
        throw UserError(Diagnostic{loc_of(e.source(), file), "", "TOML syntax error: " + std::string(e.description())});
    }
    return parse_table(root, file, sets, overrides);
}

PipelineSpec parse_pipeline_file(const std::filesystem::path& file, const std::vector<std::string>& sets,
                                 const std::vector<Override>& overrides) {
    // Only a regular file: a directory reads as empty ("has no nodes"), and a FIFO or a device
    // such as /dev/zero would block or never end.
    if (std::string kind = non_regular_file_kind(file); !kind.empty())
        throw UserError(Diagnostic{SourceLoc{file.string(), 0, 0}, "",
                                   "the pipeline file is " + kind + "; expected a regular TOML file"});
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw UserError(
            Diagnostic{SourceLoc{file.string(), 0, 0}, "", "cannot open the pipeline file (does it exist?)"});
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_pipeline_text(ss.str(), file.string(), sets, overrides);
}

} // namespace pixflow::host
