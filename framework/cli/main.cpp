// The `pixflow` command line: thin wiring of loader -> pipeline -> planner -> executor.
// Exit codes: 0 success, 1 invalid pipeline or command line (nothing ran, nothing written),
// 2 a failure while running (nothing written).
#include "batch/batch.hpp"
#include "batch/trace.hpp"
#include "cli/build_info.hpp"
#include "cli/new_operator.hpp"
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"

#include <pixflow/image.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
using namespace pixflow::host;

namespace {

struct Common {
    std::vector<std::string> plugin_paths;
};

void load_plugins(Registry& reg, const Common& c) {
    std::vector<fs::path> dirs(c.plugin_paths.begin(), c.plugin_paths.end());
    for (const auto& d : dirs) {
        std::error_code ec;
        if (!fs::exists(d, ec))
            std::cerr << "warning: --plugin-path " << d.string() << " does not exist; no plugins loaded from it\n";
    }
    reg.load_all(Registry::search_path(dirs));
}

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
    o << "Plugin `" << op.plugin << "`; backends: " << backends(op) << ".\n\n";
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

/// Writes a small text file atomically (temporary + rename); throws RunError on failure.
void write_file(const std::string& path, const std::string& text) {
    fs::path tmp = fs::path(path).parent_path() / ("." + fs::path(path).filename().string() + ".tmp");
    {
        std::ofstream o(tmp, std::ios::binary);
        o << text;
        if (!o.flush()) throw RunError("cannot write " + path);
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw RunError("cannot write " + path + ": " + ec.message());
    }
}

int report_user_error(const UserError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << "error: " << d.str() << "\n";
    return 1;
}

struct PipelineArgs {
    std::string file;
    std::vector<std::string> sets;
    std::string backend;
    bool no_fuse = false;
};

void add_pipeline_args(CLI::App* cmd, PipelineArgs& a) {
    cmd->add_option("pipeline", a.file, "Pipeline TOML file")->required();
    cmd->add_option("--set", a.sets, "Override a key: node.key=value (repeatable)");
    cmd->add_option("--backend", a.backend, "Default backend for nodes that set none")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    cmd->add_flag("--no-fuse", a.no_fuse, "Run every node as written: no fused implementations");
}

struct Loaded {
    Graph graph;
    Plan plan;
};

Loaded load_pipeline(const Registry& reg, const PipelineArgs& a) {
    PipelineSpec spec = parse_pipeline_file(a.file, a.sets);
    Graph g = build_graph(spec, reg);
    PlanOptions po;
    po.backend_override = a.backend;
    po.cuda_usable = cuda_usable(&po.cuda_why);
    Plan p = make_plan(g, po);
    if (!a.no_fuse) fuse(g, p, po, reg);
    return {std::move(g), std::move(p)};
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"pixflow: plugin-based image pipelines on CPU and CUDA"};
    app.require_subcommand(1);
    app.fallthrough(); // global options (--plugin-path) are accepted after the subcommand too
    app.set_version_flag("--version", std::function<std::string()>(pixflow::cli::version_text),
                         "Print the version and the build's features (CUDA, OpenImageIO, MPI)");
    Common common;
    app.add_option("--plugin-path", common.plugin_paths,
                   "Extra plugin folder or file, searched before $PIXFLOW_PLUGIN_PATH (repeatable)");

    auto* ops = app.add_subcommand("ops", "List every operator: backends and one-line doc");
    auto* describe = app.add_subcommand("describe", "Ports, dtypes, channels and parameters of operators");
    std::vector<std::string> describe_ops;
    bool markdown = false;
    describe->add_option("op", describe_ops, "Operator names (all when none)");
    describe->add_flag("--markdown", markdown, "Markdown, as in docs/operators.md");
    auto* plugins = app.add_subcommand("plugins", "Every plugin file on the search path: loaded, or rejected and why");

    PipelineArgs va, ga, ra, ba;
    auto* validate = app.add_subcommand("validate", "Check a pipeline completely; nothing runs");
    add_pipeline_args(validate, va);
    auto* graph = app.add_subcommand("graph", "Print the planned graph as Graphviz dot");
    add_pipeline_args(graph, ga);
    std::string dot_out;
    graph->add_option("-o,--output", dot_out, "Write the dot here instead of stdout");

    auto* run = app.add_subcommand("run", "Run a pipeline");
    add_pipeline_args(run, ra);
    bool profile = false;
    std::string report_path;
    run->add_flag("--profile", profile, "Print per-node times and transfers");
    run->add_option("--report", report_path, "Write the run report as JSON");
    BatchOptions batch; // --input: one run per image (batch/)
    auto* batch_input = run->add_option("--input", batch.inputs,
                                        "Run once per image: a glob, a folder (recursive) or @list.txt (repeatable)");
    auto* batch_output = run->add_option("--output", batch.output_dir, "Folder for the outputs of --input")
                             ->needs(batch_input);
    batch_input->needs(batch_output)->excludes(run->get_option("--profile"));
    run->add_option("--max-in-flight", batch.max_in_flight,
                    "Images alive at once with --input (default: 2 x CPU threads)")
        ->check(CLI::Range(1, 1 << 20))->needs(batch_input);
    run->add_option("--devices", batch.devices, "CUDA devices for --input: all, or a list such as 0,1 (default 0)")
        ->needs(batch_input);
    run->add_flag("--fail-fast", batch.fail_fast, "With --input: start no image after the first failure")
        ->needs(batch_input);
    run->add_flag("--quiet", batch.quiet, "With --input: no progress bar, no summary when all succeeded");
    run->add_option("--trace", batch.trace_path, "Write a Chrome trace-event JSON of the run (Perfetto)");

    auto* bench = app.add_subcommand("bench", "Time each compute node on inputs in place");
    add_pipeline_args(bench, ba);
    int repeat = 20;
    std::string bench_report;
    bench->add_option("--repeat", repeat, "Timed runs per node (after 2 warm-up runs)")->check(CLI::Range(1, 100000));
    bench->add_option("--report", bench_report, "Write the results as JSON");

    auto* new_op = app.add_subcommand("new-operator", "Write a compile-ready operator folder (CPU, CUDA, test, pipeline)");
    std::string new_name, new_dir;
    new_op->add_option("name", new_name, "Operator name (lower case, digits, _)")->required();
    new_op->add_option("--dir", new_dir, "Folder to create (default: ./NAME)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 1; // usage errors exit 1, like every invalid input
    }

    if (*new_op) {
        try {
            for (const auto& f : write_operator_skeleton(new_name, new_dir.empty() ? new_name : new_dir))
                std::printf("wrote %s\n", f.string().c_str());
            std::printf("next: cmake -S %s -B %s/build -DCMAKE_PREFIX_PATH=<pixflow prefix> && cmake --build %s/build\n",
                        (new_dir.empty() ? new_name : new_dir).c_str(), (new_dir.empty() ? new_name : new_dir).c_str(),
                        (new_dir.empty() ? new_name : new_dir).c_str());
            return 0;
        } catch (const std::exception& e) {
            std::cerr << "error: " << e.what() << "\n";
            return 1;
        }
    }

    Registry reg;
    load_plugins(reg, common);

    try {
        if (*ops) {
            std::printf("%-18s %-10s %s\n", "operator", "backends", "description");
            for (const auto& [name, info] : reg.ops())
                std::printf("%-18s %-10s %s%s\n", name.c_str(), backends(info).c_str(), info.desc->doc,
                            reg.fusion_of(name) ? (" [fuses " + reg.fusion_of(name)->text() + "]").c_str() : "");
            int rejected = 0;
            for (const auto& p : reg.plugins()) rejected += !p.loaded;
            if (rejected) std::fprintf(stderr, "note: %d plugin file(s) rejected; see `pixflow plugins`\n", rejected);
            return 0;
        }
        if (*describe) {
            std::vector<std::string> names = describe_ops;
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
        if (*plugins) {
            for (const auto& p : reg.plugins()) {
                if (p.loaded) {
                    std::string ops_list;
                    for (const auto& o : p.ops) ops_list += (ops_list.empty() ? "" : ", ") + o;
                    std::printf("loaded    %s\n          %s %s, ABI %u.%u: %s\n", p.path.string().c_str(),
                                p.name.c_str(), p.version.c_str(), p.abi_major, p.abi_minor, ops_list.c_str());
                } else {
                    std::printf("rejected  %s\n          %s\n", p.path.string().c_str(), p.reason.c_str());
                }
            }
            std::printf("search path:");
            for (const auto& d : Registry::search_path({common.plugin_paths.begin(), common.plugin_paths.end()}))
                std::printf(" %s", d.string().c_str());
            std::printf("\n");
            return 0;
        }
        if (*validate) {
            Loaded l = load_pipeline(reg, va);
            for (const auto& n : l.plan.notes) std::cerr << "note: " << n << "\n";
            int cuda = 0;
            for (auto b : l.plan.backend) cuda += b == Backend::cuda;
            std::printf("%s: ok: %zu nodes (%d on cuda), %d upload(s), %d download(s)\n", va.file.c_str(),
                        l.graph.nodes.size(), cuda, l.plan.uploads(), l.plan.downloads());
            return 0;
        }
        if (*graph) {
            Loaded l = load_pipeline(reg, ga);
            std::string dot = plan_to_dot(l.graph, l.plan);
            if (dot_out.empty()) std::cout << dot;
            else write_file(dot_out, dot);
            return 0;
        }
        if (*run) {
            if (!batch.inputs.empty()) {
                batch.backend_override = ra.backend;
                batch.no_fuse = ra.no_fuse;
                return run_batch_command(reg, ra.file, ra.sets, batch, report_path);
            }
            Loaded l = load_pipeline(reg, ra);
            for (const auto& n : l.plan.notes) std::cerr << "note: " << n << "\n";
            Executor ex(l.graph, l.plan);
            TraceWriter trace;
            RunOptions run_opts;
            if (!batch.trace_path.empty())
                run_opts.on_span = [&](const Span& s) { trace.add(s, span_category(l.graph, s), ra.file); };
            RunReport r = ex.run(run_opts);
            if (!batch.trace_path.empty()) trace.write(batch.trace_path);
            for (const auto& n : r.nodes)
                for (const auto& [k, v] : n.metrics) std::printf("%s: %s = %g\n", n.id.c_str(), k.c_str(), v);
            for (const auto& f : r.outputs) std::printf("wrote %s\n", f.c_str());
            if (profile) std::cout << r.table();
            if (!report_path.empty()) write_file(report_path, r.to_json().dump(2) + "\n");
            return 0;
        }
        if (*bench) {
            Loaded l = load_pipeline(reg, ba);
            for (const auto& n : l.plan.notes) std::cerr << "note: " << n << "\n";
            Executor ex(l.graph, l.plan);
            RunOptions ro;
            ro.keep_buffers = true;
            ro.skip_sinks = true;
            ex.run(ro);
            bool any_cuda = l.plan.n_streams > 0;
            double dev_bw = any_cuda ? measure_device_copy_bandwidth(l.plan.device) : 0;
            double host_bw = measure_host_copy_bandwidth();
            auto rows = ex.bench(repeat, dev_bw, host_bw);
            std::printf("device: %s\n", any_cuda ? cuda_device_name(l.plan.device).c_str() : "none (CPU only)");
            if (any_cuda) std::printf("device copy bandwidth (read+write): %.1f GB/s\n", dev_bw / 1e9);
            std::printf("host copy bandwidth (read+write): %.1f GB/s\n", host_bw / 1e9);
            std::printf("%-14s %-14s %-7s %11s %10s %11s %9s\n", "node", "op", "backend", "median ms", "GB/s",
                        "floor ms", "x floor");
            nlohmann::json j;
            j["nodes"] = nlohmann::json::array();
            j["pipeline"] = l.graph.name;
            j["repeat"] = repeat;
            j["device"] = any_cuda ? cuda_device_name(l.plan.device) : "none";
            j["device_copy_gbps"] = dev_bw / 1e9;
            j["host_copy_gbps"] = host_bw / 1e9;
            for (const auto& r : rows) {
                std::printf("%-14s %-14s %-7s %11.4f %10.1f %11.4f %9.2f\n", r.id.c_str(), r.op.c_str(),
                            r.backend.c_str(), r.median_ms, r.gbps, r.floor_ms, r.x_floor);
                j["nodes"].push_back({{"id", r.id}, {"op", r.op}, {"backend", r.backend}, {"median_ms", r.median_ms},
                                      {"bytes", r.bytes}, {"gbps", r.gbps}, {"floor_ms", r.floor_ms},
                                      {"x_floor", r.x_floor}});
            }
            double total = 0;
            for (const auto& r : rows) total += r.median_ms;
            std::printf("%-14s %-14s %-7s %11.4f\n", "total", "", "", total);
            j["total_ms"] = total;
            for (std::size_t k = 0; k < rows.size(); ++k) {
                const Node& n = l.graph.nodes[std::size_t(l.graph.find(rows[k].id))];
                if (!n.replaced.empty()) j["nodes"][k]["replaced"] = n.replaced;
            }
            if (!bench_report.empty()) write_file(bench_report, j.dump(2) + "\n");
            return 0;
        }
    } catch (const UserError& e) {
        return report_user_error(e);
    } catch (const RunError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
