// The `pixflow` command line: 0. the signals that clean up, 1. the options of every subcommand,
// 2. parsing them, 2b. under mpirun, MPI (docs/mpi.md), 3. the subcommand that needs no plugins
// (new-operator), 4. the plugins, loaded once by an Engine (as the embedding API loads them), 5.
// the chosen subcommand (commands.hpp), or the hidden worker mode of isolated batches.
// Exit codes: 0 success, 1 invalid pipeline or command line (nothing ran, nothing written),
// 2 a failure while running (nothing written; a batch: some image failed), 128 + n ended by
// signal n (SIGINT, SIGTERM, SIGHUP; unfinished outputs removed).
#include "api/state.hpp"
#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "cli/new_operator.hpp"
#include "executor/output_files.hpp"

#include <pixflow/pixflow.hpp>

#include <CLI/CLI.hpp>

#ifdef PIXFLOW_WITH_MPI
#include "mpi/image.hpp"
#include "mpi/ranks.hpp"
#endif

#include <cstdint>
#include <cstdio>
#include <limits>
#include <iostream>

namespace fs = std::filesystem;
using namespace pixflow::cli;

namespace {

void add_pipeline_args(CLI::App* cmd, PipelineArgs& a) {
    cmd->add_option("pipeline", a.file, "Pipeline TOML file")->required();
    cmd->add_option("--set", a.sets, "Override a key: node.key=value (repeatable)");
    cmd->add_option("--backend", a.backend, "Default backend for nodes that set none")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    cmd->add_flag("--no-fuse", a.no_fuse, "Run every node as written: no fused implementations");
    cmd->add_option("--max-pixels", a.max_pixels,
                    "Largest image a load node decodes, in pixels (width x height), for every load that "
                    "sets no max_pixels itself; checked from the file's header before any allocation")
        ->check(CLI::Range(std::int64_t(1), std::numeric_limits<std::int64_t>::max()));
}

/// Strips (docs/strips.md): the memory budgets and --strip-rows, for run, validate and graph.
void add_strip_args(CLI::App* cmd, PipelineArgs& a) {
    cmd->add_option("--strip-rows", a.strip_rows, "Run every chain that can in strips of N rows (docs/strips.md)")
        ->check(CLI::Range(1, 1 << 30));
    cmd->add_option("--memory-limit", a.memory_limit,
                    "Host memory budget of the run's images, e.g. 512M or 2G; chains run in strips to keep "
                    "under it; with --input, of all the images in flight together (default: 3/4 of the "
                    "memory available)");
    cmd->add_option("--device-memory-limit", a.device_memory_limit,
                    "The same for device memory (default: 3/4 of the device memory free)");
}

void add_run_args(CLI::App* run, RunArgs& a) {
    add_pipeline_args(run, a.pipeline);
    add_strip_args(run, a.pipeline);
    pixflow::host::BatchOptions& batch = a.batch; // --input: one run per image (batch/)
    run->add_flag("--profile", a.profile, "Print per-node times and transfers");
    run->add_option("--report", a.report_path, "Write the run report as JSON");
    run->add_option("--mpi-halo", a.mpi_halo,
                    "Under mpirun, one image split over the ranks: a stencil's halo rows at a band's edge are "
                    "'exchange'd with the neighbour ranks (default: each row computed once) or 'recompute'd by "
                    "the rank that needs them (no messages; docs/mpi.md)")
        ->check(CLI::IsMember({"exchange", "recompute"}));
    auto* input = run->add_option("--input", batch.inputs,
                                  "Run once per image: a glob, a folder (recursive) or @list.txt (repeatable)");
    auto* output = run->add_option("--output", batch.output_dir, "Folder for the outputs of --input")->needs(input);
    input->needs(output)->excludes(run->get_option("--profile"));
    run->add_option("--max-in-flight", batch.max_in_flight,
                    "Images alive at once with --input (default: 2 x CPU threads)")
        ->check(CLI::Range(1, 1 << 20))
        ->needs(input);
    run->add_option("--devices", batch.devices,
                    "CUDA devices: all, or a list such as 0,1 (default 0); with --input images go to them in turn, "
                    "on one image each streamed GPU chain spreads its strips over them");
    run->add_flag("--fail-fast", batch.fail_fast, "With --input: start no image after the first failure")->needs(input);
    run->add_flag("--quiet", batch.quiet, "With --input: no progress bar, no summary when all succeeded");
    run->add_option("--trace", batch.trace_path, "Write a Chrome trace-event JSON of the run (Perfetto)");
    using Isolation = pixflow::host::BatchOptions::Isolation;
    auto* isolate = run->add_flag_callback(
        "--isolate", [&batch] { batch.isolate = Isolation::on; },
        "With --input: run each image in a worker process; a crash, abort, "
        "exit() or hang there fails that image alone (default: when an "
        "operator comes from a plugin outside the installation)");
    auto* no_isolate = run->add_flag_callback(
        "--no-isolate", [&batch] { batch.isolate = Isolation::off; }, "With --input: run every image in this process");
    auto* timeout = run->add_option("--timeout", batch.timeout_s,
                                    "With --input: fail an image still running after SECONDS (its worker is "
                                    "killed; implies --isolate)")
                        ->check(CLI::PositiveNumber);
    for (auto* o : {isolate, no_isolate, timeout}) o->needs(input);
    isolate->excludes(no_isolate);
    timeout->excludes(no_isolate);
}

/// Warns about --plugin-path entries that do not exist, then loads every plugin once.
pixflow::Engine load_engine(const std::vector<std::string>& plugin_paths) {
    std::vector<fs::path> dirs(plugin_paths.begin(), plugin_paths.end());
    for (const auto& d : dirs) {
        std::error_code ec;
        if (!fs::exists(d, ec))
            std::cerr << "warning: --plugin-path " << d.string() << " does not exist; no plugins loaded from it\n";
    }
    return pixflow::Engine(dirs);
}

int new_operator_command(const std::string& name, const std::string& dir_arg) {
    const std::string dir = dir_arg.empty() ? name : dir_arg;
    try {
        for (const auto& f : pixflow::host::write_operator_skeleton(name, dir))
            std::printf("wrote %s\n", f.string().c_str());
        std::printf("next: cmake -S %s -B %s/build -DCMAKE_PREFIX_PATH=<pixflow prefix> && cmake --build %s/build\n",
                    dir.c_str(), dir.c_str(), dir.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}

/// Whether this process is an isolated batch's worker (`pixflow ... __worker`).
bool is_worker(int argc, char** argv) {
    for (int k = 1; k < argc; ++k)
        if (std::string(argv[k]) == "__worker") return true;
    return false;
}

} // namespace

int main(int argc, char** argv) {
    // 0. before any thread exists: SIGINT, SIGTERM and SIGHUP remove this run's unfinished
    // outputs and end it with 128 + the signal (docs/guarantees.md)
    pixflow::host::install_interrupt_cleanup(!is_worker(argc, argv));
    // 1. the options
    CLI::App app{"pixflow: plugin-based image pipelines on CPU and CUDA"};
    app.require_subcommand(1);
    app.fallthrough(); // global options (--plugin-path) are accepted after the subcommand too
    app.set_version_flag("--version", std::function<std::string()>(pixflow::cli::version_text),
                         "Print the version and the build's features (CUDA, OpenImageIO, MPI)");
    std::vector<std::string> plugin_paths;
    app.add_option("--plugin-path", plugin_paths,
                   "Extra plugin folder or file, searched before $PIXFLOW_PLUGIN_PATH (repeatable)");
    auto* ops = app.add_subcommand("ops", "List every operator: backends and one-line doc");
    auto* describe = app.add_subcommand("describe", "Ports, dtypes, channels and parameters of operators");
    std::vector<std::string> describe_ops;
    bool markdown = false;
    describe->add_option("op", describe_ops, "Operator names (all when none)");
    describe->add_flag("--markdown", markdown, "Markdown, as in docs/operators.md");
    auto* plugins = app.add_subcommand("plugins", "Every plugin file on the search path: loaded, or rejected and why");
    PipelineArgs validate_args, graph_args;
    auto* validate = app.add_subcommand("validate", "Check a pipeline completely; nothing runs");
    add_pipeline_args(validate, validate_args);
    add_strip_args(validate, validate_args);
    auto* graph = app.add_subcommand("graph", "Print the planned graph as Graphviz dot");
    add_pipeline_args(graph, graph_args);
    add_strip_args(graph, graph_args);
    std::string dot_out;
    graph->add_option("-o,--output", dot_out, "Write the dot here instead of stdout");
    RunArgs run_args;
    auto* run = app.add_subcommand("run", "Run a pipeline");
    add_run_args(run, run_args);
    BenchArgs bench_args;
    auto* bench = app.add_subcommand("bench", "Time each compute node on inputs in place");
    add_pipeline_args(bench, bench_args.pipeline);
    bench_args.pipeline.strips = false; // each node is timed on its whole images
    bench->add_option("--repeat", bench_args.repeat, "Timed runs per node (after 2 warm-up runs)")
        ->check(CLI::Range(1, 100000));
    bench->add_option("--report", bench_args.report_path, "Write the results as JSON");
    auto* new_op =
        app.add_subcommand("new-operator", "Write a compile-ready operator folder (CPU, CUDA, test, pipeline)");
    std::string new_name, new_dir;
    new_op->add_option("name", new_name, "Operator name (lower case, digits, _)")->required();
    new_op->add_option("--dir", new_dir, "Folder to create (default: ./NAME)");
    // An isolated batch's worker process (batch/isolate.hpp); not for people.
    auto* worker = app.add_subcommand("__worker", "")->group("");
    long worker_parent = 0;
    worker->add_option("--parent", worker_parent)->required();

    // 2. parsing
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 1; // usage errors exit 1, like every invalid input
    }
#ifdef PIXFLOW_WITH_MPI
    // 2b. under mpirun, and only there: a batch's inputs are shared among the ranks (mpi/ranks.hpp),
    // a run without --input splits its image over them (mpi/image.hpp); any other command runs
    // once, on rank 0. Declared here, ended after the command.
    std::unique_ptr<pixflow::mpi::Session> mpi = pixflow::mpi::Session::start_if_launched(!*worker);
    std::unique_ptr<pixflow::mpi::RankBatch> ranks;
    if (mpi && *run && !run_args.batch.inputs.empty()) {
        ranks = std::make_unique<pixflow::mpi::RankBatch>(*mpi);
        run_args.batch.distribution = ranks.get();
    } else if (mpi && mpi->size() > 1 && *run) {
        // one image over the ranks (mpi/image.hpp): every rank runs, after loading its plugins
    } else if (mpi && mpi->rank() != 0) {
        return 0;
    }
#endif
    // 3. no plugins needed
    if (*new_op) return new_operator_command(new_name, new_dir);
    // 4. the plugins, 5. the subcommand
    try {
        pixflow::Engine engine = load_engine(plugin_paths);
        const pixflow::host::Registry& reg = pixflow::detail::Access::registry(engine);
        if (*ops) return ops_command(reg);
        if (*describe) return describe_command(reg, describe_ops, markdown);
        if (*plugins) return plugins_command(reg, plugin_paths);
        if (*validate) return validate_command(reg, validate_args);
        if (*graph) return graph_command(reg, graph_args, dot_out);
        if (*run) {
            run_args.batch.plugin_paths = plugin_paths;
            std::error_code ec;
            run_args.batch.worker_exe = fs::read_symlink("/proc/self/exe", ec).string();
#ifdef PIXFLOW_WITH_MPI
            if (mpi && mpi->size() > 1 && run_args.batch.inputs.empty())
                return pixflow::mpi::run_image_command(*mpi, reg, run_args);
#endif
            return run_command(reg, run_args);
        }
        if (*worker) return pixflow::host::run_batch_worker(reg, 3, worker_parent);
        if (*bench) return bench_command(reg, bench_args);
    } catch (const pixflow::UserError& e) {
        for (const auto& d : e.diagnostics()) std::cerr << "error: " << d.str() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
