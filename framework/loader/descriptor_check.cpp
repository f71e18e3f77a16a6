// The descriptor validator (see descriptor_check.hpp for what it promises and how it reads).
// Pure: no globals, no allocation kept, no call into the plugin; it links into both the host
// library and the scanner executable.
#include "loader/descriptor_check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>

namespace pixflow::host {
namespace {

using L = DescriptorLimits;

enum class Text {
    name, ///< [A-Za-z0-9_-]+: op, port and parameter names (TOML keys, `node.port`, --set)
    line, ///< one line of UTF-8 without control characters: docs, choices, plugin name, version
    any,  ///< only terminated: string defaults (a path may be any bytes)
};

/// Length of the string at s when it is terminated within `bound` bytes (not counting the NUL),
/// else bound + 1. Reads at most bound + 1 bytes.
std::size_t bounded_length(const char* s, std::size_t bound) { return strnlen(s, bound + 1); }

/// Length of the valid UTF-8 sequence starting at s[i] (within n), or 0.
std::size_t utf8_sequence(const unsigned char* s, std::size_t i, std::size_t n) {
    unsigned char c = s[i];
    if (c < 0x80) return 1;
    std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || i + len > n) return 0;
    for (std::size_t k = 1; k < len; ++k)
        if ((s[i + k] & 0xC0) != 0x80) return 0;
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF.
    if (c == 0xE0 && s[i + 1] < 0xA0) return 0;
    if (c == 0xED && s[i + 1] >= 0xA0) return 0;
    if (c == 0xF0 && s[i + 1] < 0x90) return 0;
    if (c == 0xF4 && s[i + 1] >= 0x90) return 0;
    return len;
}

char hex_digit(unsigned v) { return "0123456789abcdef"[v & 15]; }

/// What is wrong with a descriptor string, or "" (the caller prefixes what the string is).
std::string string_problem(const char* s, std::size_t bound, Text kind, bool nullable = false) {
    if (!s) return nullable ? "" : "is NULL";
    std::size_t n = bounded_length(s, bound);
    if (n > bound) return "is not NUL-terminated within " + std::to_string(bound) + " bytes";
    if (kind == Text::any) return "";
    if (n == 0 && kind == Text::name) return "is empty";
    const auto* u = reinterpret_cast<const unsigned char*>(s);
    for (std::size_t i = 0; i < n;) {
        unsigned char c = u[i];
        std::size_t step = 1;
        bool ok;
        if (kind == Text::name)
            ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        else
            ok = c >= 0x20 && c != 0x7F && (step = utf8_sequence(u, i, n)) != 0;
        if (!ok) {
            std::string at =
                std::string("has the byte 0x") + hex_digit(c >> 4) + hex_digit(c) + " at offset " + std::to_string(i);
            return kind == Text::name ? at + "; names are made of A-Z a-z 0-9 _ -"
                                      : at + "; it must be one line of UTF-8 text";
        }
        i += step;
    }
    return "";
}

std::string count_problem(std::int32_t n, int limit, const void* array, const char* what) {
    if (n < 0) return "declares " + std::to_string(n) + " " + what + " (a negative count)";
    if (n > limit) return "declares " + std::to_string(n) + " " + what + " (at most " + std::to_string(limit) + ")";
    if (n > 0 && !array) return "declares " + std::to_string(n) + " " + what + " but the array is NULL";
    return "";
}

std::string struct_size_problem(std::uint32_t have, std::size_t want, const char* type) {
    if (have == want) return "";
    return "struct_size is " + std::to_string(have) + ", not sizeof(" + type + ") = " + std::to_string(want) +
           " of this ABI";
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string dtype_mask_text(std::uint32_t m) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", m);
    return buf;
}

std::string check_port(const pf_port_desc& p, const std::string& where) {
    if (auto e = struct_size_problem(p.struct_size, sizeof(pf_port_desc), "pf_port_desc"); !e.empty())
        return where + ": " + e;
    if (auto e = string_problem(p.name, L::name_bytes, Text::name); !e.empty()) return where + ": its name " + e;
    std::string w = where + " '" + p.name + "'";
    if (auto e = string_problem(p.doc, L::doc_bytes, Text::line, /*nullable=*/true); !e.empty())
        return w + ": its doc " + e;
    if (p.dtypes == 0 || (p.dtypes & ~std::uint32_t(PF_ALL_DTYPES)))
        return w + ": dtype mask " + dtype_mask_text(p.dtypes) +
               " is empty or has unknown bits (PF_ALL_DTYPES is 0x1fe)";
    if (p.channels == 0 || (p.channels & ~std::uint32_t(PF_ALL_CHANNELS)))
        return w + ": channel mask " + dtype_mask_text(p.channels) +
               " is empty or has unknown bits (PF_ALL_CHANNELS is 0x1e, 1 to 4 channels)";
    return "";
}

std::string check_param(const pf_param_desc& p, const std::string& where) {
    if (auto e = struct_size_problem(p.struct_size, sizeof(pf_param_desc), "pf_param_desc"); !e.empty())
        return where + ": " + e;
    if (auto e = string_problem(p.name, L::name_bytes, Text::name); !e.empty()) return where + ": its name " + e;
    std::string w = where + " '" + p.name + "'";
    if (auto e = string_problem(p.doc, L::doc_bytes, Text::line); !e.empty()) return w + ": its doc " + e;
    if (p.type < PF_PARAM_BOOL || p.type > PF_PARAM_CHOICE)
        return w + ": unknown type " + std::to_string(p.type) + " (pf_param_type is 1 to 5)";
    constexpr std::uint32_t known = PF_PARAM_REQUIRED | PF_PARAM_INPUT_PATH | PF_PARAM_OUTPUT_PATH;
    if (p.flags & ~known) return w + ": unknown flags " + dtype_mask_text(p.flags & ~known);
    std::uint32_t path = p.flags & (PF_PARAM_INPUT_PATH | PF_PARAM_OUTPUT_PATH);
    if (path && p.type != PF_PARAM_STRING) return w + ": a path flag on a parameter that is not a string";
    if (path == (PF_PARAM_INPUT_PATH | PF_PARAM_OUTPUT_PATH)) return w + ": both an input and an output path";
    bool numeric = p.type == PF_PARAM_INT || p.type == PF_PARAM_FLOAT;
    if (numeric && p.has_range) {
        if (std::isnan(p.min) || std::isnan(p.max) || p.min > p.max)
            return w + ": range [" + num(p.min) + ", " + num(p.max) + "] is empty or NaN";
    }
    if (p.type == PF_PARAM_CHOICE) {
        if (auto e = count_problem(p.n_choices, L::choices, p.choices, "choices"); !e.empty()) return w + ": " + e;
        if (p.n_choices == 0) return w + ": a choice parameter with no choices";
        std::set<std::string_view> seen;
        for (int k = 0; k < p.n_choices; ++k) {
            const char* c = p.choices[k];
            if (auto e = string_problem(c, L::choice_bytes, Text::line); !e.empty())
                return w + ": choice #" + std::to_string(k) + " " + e;
            if (!*c) return w + ": choice #" + std::to_string(k) + " is empty";
            if (!seen.insert(c).second) return w + ": choice '" + c + "' is listed twice";
        }
    }
    if (p.flags & PF_PARAM_REQUIRED) return ""; // the default is ignored
    const pf_value& v = p.default_value;
    if (v.type != p.type)
        return w + ": the default's type " + std::to_string(v.type) + " is not the parameter's type " +
               std::to_string(p.type);
    switch (p.type) {
    case PF_PARAM_INT:
        if (p.has_range && (double(v.i) < p.min || double(v.i) > p.max))
            return w + ": default " + std::to_string(v.i) + " is outside its range [" + num(p.min) + ", " + num(p.max) +
                   "]";
        break;
    case PF_PARAM_FLOAT:
        if (std::isnan(v.f)) return w + ": default is NaN";
        if (p.has_range && (v.f < p.min || v.f > p.max))
            return w + ": default " + num(v.f) + " is outside its range [" + num(p.min) + ", " + num(p.max) + "]";
        break;
    case PF_PARAM_STRING:
        if (auto e = string_problem(v.s, L::doc_bytes, Text::any); !e.empty()) return w + ": default string " + e;
        break;
    case PF_PARAM_CHOICE: {
        if (auto e = string_problem(v.s, L::choice_bytes, Text::any); !e.empty()) return w + ": default " + e;
        bool found = false;
        for (int k = 0; k < p.n_choices && !found; ++k) found = std::strcmp(p.choices[k], v.s) == 0;
        if (!found) return w + ": default is not one of its choices";
        break;
    }
    default: break;
    }
    return "";
}

std::string check_op(const pf_op_desc& op, int index, std::uint32_t abi_minor) {
    std::string where = "operator #" + std::to_string(index);
    if (auto e = struct_size_problem(op.struct_size, sizeof(pf_op_desc), "pf_op_desc"); !e.empty())
        return where + ": " + e;
    if (!op.name || !op.run_cpu || !op.infer) return where + " lacks a name, infer or run_cpu";
    if (auto e = string_problem(op.name, L::name_bytes, Text::name); !e.empty()) return where + ": its name " + e;
    std::string w = "operator '" + std::string(op.name) + "'";
    if (auto e = string_problem(op.doc, L::doc_bytes, Text::line); !e.empty()) return w + ": its doc " + e;
    constexpr std::uint32_t known = PF_OP_SOURCE | PF_OP_SINK | PF_OP_FUSED | PF_OP_SPLIT;
    if (op.flags & ~known) return w + ": unknown flags " + dtype_mask_text(op.flags & ~known);
    if ((op.flags & PF_OP_SPLIT) && abi_minor < 4) return w + ": PF_OP_SPLIT needs ABI 1.4";
    if (auto e = count_problem(op.n_inputs, L::ports, op.inputs, "inputs"); !e.empty()) return w + ": " + e;
    if (auto e = count_problem(op.n_outputs, L::ports, op.outputs, "outputs"); !e.empty()) return w + ": " + e;
    if (auto e = count_problem(op.n_params, L::params, op.params, "parameters"); !e.empty()) return w + ": " + e;
    if ((op.flags & PF_OP_SOURCE) && op.n_inputs > 0) return w + ": a source (PF_OP_SOURCE) with inputs";
    struct Side {
        const pf_port_desc* ports;
        std::int32_t n;
        const char* kind;
    };
    for (const Side& side : {Side{op.inputs, op.n_inputs, "input"}, Side{op.outputs, op.n_outputs, "output"}}) {
        const auto& [ports, n, kind] = side;
        std::set<std::string_view> seen;
        for (int k = 0; k < n; ++k) {
            if (auto e = check_port(ports[k], w + ", " + kind + " #" + std::to_string(k)); !e.empty()) return e;
            if (!seen.insert(ports[k].name).second)
                return w + ": " + kind + " '" + ports[k].name + "' is declared twice";
        }
    }
    std::set<std::string_view> seen;
    for (int k = 0; k < op.n_params; ++k) {
        if (auto e = check_param(op.params[k], w + ", parameter #" + std::to_string(k)); !e.empty()) return e;
        if (!seen.insert(op.params[k].name).second)
            return w + ": parameter '" + op.params[k].name + "' is declared twice";
    }
    return "";
}

std::string check_fusion(const pf_fusion_desc& f, int index, const pf_plugin_desc& d) {
    std::string where = "fusion #" + std::to_string(index);
    if (auto e = struct_size_problem(f.struct_size, sizeof(pf_fusion_desc), "pf_fusion_desc"); !e.empty())
        return where + ": " + e;
    if (auto e = string_problem(f.fused_op, L::name_bytes, Text::name); !e.empty())
        return where + ": the name of its fused operator " + e;
    const pf_op_desc* fused = nullptr;
    for (int j = 0; j < d.n_ops && !fused; ++j)
        if (std::strcmp(d.ops[j].name, f.fused_op) == 0) fused = &d.ops[j];
    if (!fused) return where + " names fused operator '" + f.fused_op + "', which this plugin does not declare";
    std::string w = where + " ('" + f.fused_op + "')";
    if (auto e = count_problem(f.n_chain, L::chain, f.chain, "chain operators"); !e.empty()) return w + ": " + e;
    if (f.n_chain < 2) return w + " has a chain of fewer than 2 operators";
    for (int k = 0; k < f.n_chain; ++k)
        if (auto e = string_problem(f.chain[k], L::name_bytes, Text::name); !e.empty())
            return w + ": chain operator #" + std::to_string(k) + " " + e;
    if (auto e = count_problem(f.n_binds, L::binds, f.binds, "binds"); !e.empty()) return w + ": " + e;
    for (int k = 0; k < f.n_binds; ++k) {
        const pf_fusion_bind& b = f.binds[k];
        if (!string_problem(b.fused_param, L::name_bytes, Text::name).empty() ||
            !string_problem(b.param, L::name_bytes, Text::name).empty() || b.node < 0 || b.node >= f.n_chain)
            return w + " binds an unknown parameter or node";
        bool known = false;
        for (int q = 0; q < fused->n_params && !known; ++q)
            known = std::strcmp(fused->params[q].name, b.fused_param) == 0;
        if (!known) return w + " binds an unknown parameter or node";
    }
    if (auto e = count_problem(f.n_same, L::same, f.same, "`same` constraints"); !e.empty()) return w + ": " + e;
    for (int k = 0; k < f.n_same; ++k) {
        const pf_fusion_same& s = f.same[k];
        if (s.node_a < 0 || s.node_a >= f.n_chain || s.node_b < 0 || s.node_b >= f.n_chain ||
            !string_problem(s.param_a, L::name_bytes, Text::name).empty() ||
            !string_problem(s.param_b, L::name_bytes, Text::name).empty())
            return w + " has a bad `same` constraint";
    }
    return "";
}

/// d's operator called `name` (a validated string), or null.
const pf_op_desc* op_named(const pf_plugin_desc& d, const char* name) {
    for (int j = 0; j < d.n_ops; ++j)
        if (std::strcmp(d.ops[j].name, name) == 0) return &d.ops[j];
    return nullptr;
}

std::string check_access(const pf_access_desc& a, int index, const pf_plugin_desc& d) {
    std::string where = "access #" + std::to_string(index);
    if (auto e = struct_size_problem(a.struct_size, access_stride(d), "pf_access_desc"); !e.empty())
        return where + ": " + e;
    if (auto e = string_problem(a.op, L::name_bytes, Text::name); !e.empty()) return where + ": its operator name " + e;
    const pf_op_desc* op = op_named(d, a.op);
    if (!op) return where + " names operator '" + a.op + "', which this plugin does not declare";
    std::string w = "operator '" + std::string(a.op) + "': its access";
    auto in_bound = [](std::int32_t v) { return v >= 1 && v <= L::access_rows; };
    const std::string bound = std::to_string(L::access_rows);
    switch (a.kind) {
    case PF_ACCESS_WHOLE:
    case PF_ACCESS_POINTWISE:
    case PF_ACCESS_CARRIED:
        if (a.halo != 0 || a.in_rows != 0 || a.out_rows != 0)
            return w + " sets a halo or block rows, which only stencil and blocks accesses have";
        break;
    case PF_ACCESS_STENCIL:
        if (!in_bound(a.halo))
            return w + " is a stencil with a halo of " + std::to_string(a.halo) + " rows (1 to " + bound + ")";
        if (a.in_rows != 0 || a.out_rows != 0) return w + " is a stencil with block rows";
        break;
    case PF_ACCESS_BLOCKS:
        if (!in_bound(a.in_rows) || !in_bound(a.out_rows))
            return w + " has blocks of " + std::to_string(a.in_rows) + " -> " + std::to_string(a.out_rows) +
                   " rows (1 to " + bound + " each)";
        if (a.halo != 0) return w + " has blocks and a halo";
        break;
    default: return w + " has unknown kind " + std::to_string(a.kind) + " (pf_access_kind is 0 to 4)";
    }
    if ((a.kind == PF_ACCESS_CARRIED) != (a.carry_bytes != nullptr))
        return w + (a.kind == PF_ACCESS_CARRIED ? " is carried but has no carry_bytes function"
                                                : " has a carry_bytes function but is not carried");
    if (op->n_inputs == 0 && (a.kind == PF_ACCESS_STENCIL || a.kind == PF_ACCESS_BLOCKS))
        return w + ": a source (no inputs) is pointwise, carried or whole-image";
    return "";
}

std::string check_scratch(const pf_scratch_desc& sc, int index, const pf_plugin_desc& d) {
    std::string where = "scratch estimate #" + std::to_string(index);
    if (auto e = struct_size_problem(sc.struct_size, sizeof(pf_scratch_desc), "pf_scratch_desc"); !e.empty())
        return where + ": " + e;
    if (auto e = string_problem(sc.op, L::name_bytes, Text::name); !e.empty())
        return where + ": its operator name " + e;
    if (!op_named(d, sc.op)) return where + " names operator '" + sc.op + "', which this plugin does not declare";
    if (!sc.bytes) return "operator '" + std::string(sc.op) + "': its scratch estimate has no function";
    return "";
}

} // namespace

std::size_t access_stride(const pf_plugin_desc& d) {
    // ABI 1.2 plugins end their pf_access_desc before whole_reason (ABI 1.3)
    return d.abi_minor <= 2 ? offsetof(pf_access_desc, whole_reason) : sizeof(pf_access_desc);
}

const pf_access_desc& access_entry(const pf_plugin_desc& d, int k) {
    return *reinterpret_cast<const pf_access_desc*>(reinterpret_cast<const char*>(d.access) +
                                                    std::size_t(k) * access_stride(d));
}

bool has_access_patterns(const pf_plugin_desc& d) {
    return d.abi_minor >= 2 && d.struct_size >= offsetof(pf_plugin_desc, n_access) + sizeof(d.n_access);
}

bool has_scratch_estimates(const pf_plugin_desc& d) {
    return d.abi_minor >= 5 && d.struct_size >= offsetof(pf_plugin_desc, n_scratch) + sizeof(d.n_scratch);
}

std::string check_plugin_descriptor(const pf_plugin_desc* d) {
    if (!d) return "its entry point returned no descriptor";
    // The header fields first: struct_size and the versions say how much of the rest exists.
    if (d->struct_size < offsetof(pf_plugin_desc, name))
        return "descriptor too small (struct_size " + std::to_string(d->struct_size) + ")";
    std::string versions = "plugin ABI " + std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor) +
                           ", pixflow ABI " + std::to_string(PIXFLOW_ABI_MAJOR) + "." +
                           std::to_string(PIXFLOW_ABI_MINOR);
    if (d->abi_major != PIXFLOW_ABI_MAJOR)
        return "ABI major version differs (" + versions + "); rebuild it against this SDK";
    if (d->abi_minor > PIXFLOW_ABI_MINOR) return "built for a newer ABI (" + versions + "); upgrade pixflow";
    if (d->struct_size < offsetof(pf_plugin_desc, init) + sizeof(d->init))
        return "descriptor too small (struct_size " + std::to_string(d->struct_size) + ")";
    bool has_fusions =
        d->abi_minor >= 1 && d->struct_size >= offsetof(pf_plugin_desc, n_fusions) + sizeof(d->n_fusions);
    const bool has_access = has_access_patterns(*d);

    // Counts and arrays before any pointer is followed, so that a garbage descriptor is named
    // by its counts rather than crashing on its strings.
    if (auto e = count_problem(d->n_ops, L::ops, d->ops, "operators"); !e.empty()) return e;
    if (has_fusions)
        if (auto e = count_problem(d->n_fusions, L::fusions, d->fusions, "fusions"); !e.empty()) return e;
    if (has_access)
        if (auto e = count_problem(d->n_access, L::ops, d->access, "access patterns"); !e.empty()) return e;
    const bool has_scratch = has_scratch_estimates(*d);
    if (has_scratch)
        if (auto e = count_problem(d->n_scratch, L::ops, d->scratch, "scratch estimates"); !e.empty()) return e;
    if (auto e = string_problem(d->name, L::name_bytes, Text::line); !e.empty()) return "its plugin name " + e;
    if (!*d->name) return "its plugin name is empty";
    if (auto e = string_problem(d->version, L::version_bytes, Text::line); !e.empty()) return "its version " + e;

    std::set<std::string_view> names;
    for (int k = 0; k < d->n_ops; ++k) {
        if (auto e = check_op(d->ops[k], k, d->abi_minor); !e.empty()) return e;
        if (!names.insert(d->ops[k].name).second)
            return "declares operator '" + std::string(d->ops[k].name) + "' twice";
    }
    if (has_fusions)
        for (int k = 0; k < d->n_fusions; ++k)
            if (auto e = check_fusion(d->fusions[k], k, *d); !e.empty()) return e;
    if (has_access) {
        std::set<std::string_view> described;
        for (int k = 0; k < d->n_access; ++k) {
            const pf_access_desc& a = access_entry(*d, k);
            if (auto e = check_access(a, k, *d); !e.empty()) return e;
            if (!described.insert(a.op).second)
                return "operator '" + std::string(a.op) + "': its access is declared twice";
        }
    }
    if (has_scratch) {
        std::set<std::string_view> estimated;
        for (int k = 0; k < d->n_scratch; ++k) {
            if (auto e = check_scratch(d->scratch[k], k, *d); !e.empty()) return e;
            if (!estimated.insert(d->scratch[k].op).second)
                return "operator '" + std::string(d->scratch[k].op) + "': its scratch estimate is declared twice";
        }
    }
    return "";
}

std::string terminated_message(char* buf, std::size_t size) {
    if (!buf || size == 0) return {};
    buf[size - 1] = '\0';
    std::string s(buf, strnlen(buf, size - 1));
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
    return s;
}

} // namespace pixflow::host
