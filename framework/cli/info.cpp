// cli/ ops, describe, plugins: what the loaded plugins provide, read from their schemas.
#include "cli/commands.hpp"

#include "pipeline/pipeline.hpp"
#include "planner/strips.hpp"

#include <cstdio>
#include <iostream>

namespace pixflow::cli {

using namespace pixflow::host;

namespace {

std::string type_name(int t) {
    switch (t) {
    case PF_PARAM_BOOL: return "bool";
    case PF_PARAM_INT: return "int";
    case PF_PARAM_FLOAT: return "float";
    case PF_PARAM_CHOICE: return "choice";
    default: return "string";
    }
}

std::string range_text(const pf_param_desc& p) {
    if (p.type == PF_PARAM_CHOICE || p.has_range) return describe_accepted(p);
    std::string s;
    if (p.flags & PF_PARAM_INPUT_PATH) s = "a file to read";
    if (p.flags & PF_PARAM_OUTPUT_PATH) s = "a file to write (atomically)";
    return s;
}

std::string backends(const OpInfo& op) { return op.has_cuda() ? "cpu, cuda" : "cpu"; }

void describe_text(const OpInfo& op, const FusionInfo* fusion, std::ostream& o) {
    const pf_op_desc& d = *op.desc;
    o << d.name << ": " << d.doc << "\n";
    o << "  plugin:   " << op.plugin << " (" << op.path.string() << ")\n";
    o << "  backends: " << backends(op) << "\n";
    o << "  access:   " << access_text(op.access) << " (how it reads rows; strips: docs/strips.md)\n";
    if (fusion) o << "  fuses:    " << fusion->text() << " (used automatically; --no-fuse turns it off)\n";
    o << "  inputs:\n";
    if (!d.n_inputs) o << "    (none: a source)\n";
    for (int k = 0; k < d.n_inputs; ++k)
        o << "    " << d.inputs[k].name << ": " << describe_ports(d.inputs[k].dtypes, d.inputs[k].channels)
          << (d.inputs[k].doc && *d.inputs[k].doc ? std::string(". ") + d.inputs[k].doc : "") << "\n";
    o << "  outputs:\n";
    if (!d.n_outputs) o << "    (none: a sink)\n";
    for (int k = 0; k < d.n_outputs; ++k)
        o << "    " << d.outputs[k].name << (k == 0 ? " (default)" : "") << ": "
          << describe_ports(d.outputs[k].dtypes, d.outputs[k].channels)
          << (d.outputs[k].doc && *d.outputs[k].doc ? std::string(". ") + d.outputs[k].doc : "") << "\n";
    o << "  parameters:\n";
    if (!d.n_params) o << "    (none)\n";
    for (int k = 0; k < d.n_params; ++k) {
        const pf_param_desc& p = d.params[k];
        o << "    " << p.name << " (" << type_name(p.type) << ", "
          << ((p.flags & PF_PARAM_REQUIRED) ? std::string("required") : "default " + format_value(p.default_value))
          << (range_text(p).empty() ? "" : "; " + range_text(p)) << "): " << p.doc << "\n";
    }
}

void describe_markdown(const OpInfo& op, const FusionInfo* fusion, std::ostream& o) {
    const pf_op_desc& d = *op.desc;
    o << "## " << d.name << "\n\n" << d.doc << "\n\n";
    o << "Plugin `" << op.plugin << "`; backends: " << backends(op) << "; access: " << access_text(op.access)
      << " ([strips](strips.md)).\n\n";
    if (fusion)
        o << "A fused implementation of the chain " << fusion->text()
          << ": the planner uses it in place of those nodes when nothing else reads the images between "
             "them and they share a backend (`--no-fuse` turns it off).\n\n";
    o << "| port | direction | accepts | doc |\n|---|---|---|---|\n";
    for (int k = 0; k < d.n_inputs; ++k)
        o << "| `" << d.inputs[k].name << "` | in | " << describe_ports(d.inputs[k].dtypes, d.inputs[k].channels)
          << " | " << (d.inputs[k].doc ? d.inputs[k].doc : "") << " |\n";
    for (int k = 0; k < d.n_outputs; ++k)
        o << "| `" << d.outputs[k].name << "`" << (k == 0 ? " (default)" : "") << " | out | "
          << describe_ports(d.outputs[k].dtypes, d.outputs[k].channels) << " | "
          << (d.outputs[k].doc ? d.outputs[k].doc : "") << " |\n";
    o << "\n";
    if (d.n_params) {
        o << "| parameter | type | default | accepted | doc |\n|---|---|---|---|---|\n";
        for (int k = 0; k < d.n_params; ++k) {
            const pf_param_desc& p = d.params[k];
            o << "| `" << p.name << "` | " << type_name(p.type) << " | "
              << ((p.flags & PF_PARAM_REQUIRED) ? std::string("required") : "`" + format_value(p.default_value) + "`")
              << " | " << range_text(p) << " | " << p.doc << " |\n";
        }
        o << "\n";
    }
}

} // namespace

int ops_command(const Registry& reg) {
    std::printf("%-18s %-10s %s\n", "operator", "backends", "description");
    for (const auto& [name, info] : reg.ops())
        std::printf("%-18s %-10s %s%s\n", name.c_str(), backends(info).c_str(), info.desc->doc,
                    reg.fusion_of(name) ? (" [fuses " + reg.fusion_of(name)->text() + "]").c_str() : "");
    int rejected = 0;
    for (const auto& p : reg.plugins()) rejected += !p.loaded;
    if (rejected) std::fprintf(stderr, "note: %d plugin file(s) rejected; see `pixflow plugins`\n", rejected);
    return 0;
}

int describe_command(const Registry& reg, const std::vector<std::string>& ops, bool markdown) {
    std::vector<std::string> names = ops;
    if (names.empty())
        for (const auto& [name, info] : reg.ops()) names.push_back(name);
    if (markdown)
        std::cout << "# Operators\n\nGenerated by `pixflow describe --markdown` from the operators' "
                     "schemas; do not edit by hand.\n\n";
    for (const auto& name : names) {
        const OpInfo* op = reg.find(name);
        if (!op) {
            auto close = reg.closest(name);
            std::cerr << "error: unknown op '" << name << "'"
                      << (close.empty() ? "" : "; did you mean " + close.front() + "?")
                      << ". Plugins are searched in " << reg.search_path_text()
                      << "; add a folder with --plugin-path DIR or $PIXFLOW_PLUGIN_PATH\n";
            return 1;
        }
        if (markdown) describe_markdown(*op, reg.fusion_of(name), std::cout);
        else describe_text(*op, reg.fusion_of(name), std::cout);
    }
    return 0;
}

int plugins_command(const Registry& reg, const std::vector<std::string>& plugin_paths) {
    for (const auto& p : reg.plugins()) {
        if (p.loaded) {
            std::string ops_list;
            for (const auto& o : p.ops) ops_list += (ops_list.empty() ? "" : ", ") + o;
            std::printf("loaded    %s\n          %s %s, ABI %u.%u: %s\n", p.path.string().c_str(), p.name.c_str(),
                        p.version.c_str(), p.abi_major, p.abi_minor, ops_list.c_str());
        } else {
            std::printf("rejected  %s\n          %s\n", p.path.string().c_str(), p.reason.c_str());
        }
    }
    std::printf("search path:");
    for (const auto& d : Registry::search_path({plugin_paths.begin(), plugin_paths.end()}))
        std::printf(" %s", d.string().c_str());
    std::printf("\n");
    return 0;
}

} // namespace pixflow::cli
