// batch/: one pipeline over many images: `pixflow run P.toml --input 'photos/*.png' --output out/`.
//
//   inputs   a glob, a folder (searched recursively) or @list.txt, in any number; each file
//            keeps the sub-folder it had below the folder (or the glob's fixed leading folders)
//   naming   <output>/<sub-folder>/<input stem><extension of the save node's path>, with
//            "-<save node id>" before the extension when the pipeline has several save nodes
//   once     the pipeline is parsed once and checked up front: exactly one load node, at least
//            one save node, every output name unique and no output overwriting an input, and the
//            whole graph validated and planned with the first input whose header reads
//   per image  the load path and the save paths are patched into the parsed spec, the graph is
//            rebuilt (shape inference reads only the file's header, so a corrupt header fails that
//            image here), planned for the worker's device and run by an Executor that borrows the
//            worker's streams and pinned buffers (RunResources)
//   overlap  tbb::parallel_pipeline with --max-in-flight tokens: a serial stage admits an image
//            (at most that many are alive at once), a parallel stage runs it (decode, compute,
//            encode are the run's steps, TBB tasks), a serial stage accounts for it. With several
//            images in flight one image decodes while another computes and a third encodes; on a
//            GPU each image in flight has its own streams, so its transfers overlap the others'
//            kernels.
//   workers  the CPU, or one worker per CUDA device (--devices all | 0,1); an image goes to the
//            worker with the fewest images in flight. Each CUDA worker keeps its device's memory
//            pool (release threshold: keep everything), its pinned buffers (PinnedCache) and a
//            stream set per concurrent image, all reused from image to image.
//   failures an image that fails (unreadable, corrupt, a failing node) fails alone and writes
//            nothing (the Executor renames its temporaries only when the whole image succeeded);
//            the others go on. With fail_fast no new image starts after the first failure.
//   isolated with --isolate, --timeout, or by default when an operator of the pipeline comes from
//            a plugin outside the installation, each image runs in a worker process instead
//            (isolate.hpp): a crash, abort(), exit() or hang there fails that image alone
//   memory   --memory-limit / --device-memory-limit (by default 3/4 of what is available) bound
//            the images in flight together: each reserves its planned peak before it runs and
//            waits while the others hold too much (memory_budget.hpp); one too large alone runs
//            in strips
//   side     --report and --trace are checked up front against every file the batch reads or
//            writes (and are written through a temporary and a rename at the end)
//   ranks    under mpirun (framework/mpi/, docs/mpi.md) a Distribution shares the inputs among the
//            ranks: every rank checks and runs as above, taking its next image from rank 0, which
//            gathers the results, draws the progress and writes the one summary and report
#pragma once

#include "executor/executor.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pixflow::host {

/// One input file and the sub-folder (relative) its outputs go to under the output folder.
struct BatchInput {
    std::filesystem::path path;
    std::filesystem::path sub;
};

/// Expands --input values, in order, without duplicates: `@list.txt` (one path per line; blank
/// lines and lines starting with # are skipped; no sub-folder), a folder (every file with an image
/// extension below it, recursively, hidden files and `skip_dir` left out; sub-folders kept), a
/// glob (`*`, `?`, `[...]` in any component; the sub-folder is the part below the glob's fixed
/// leading folders), or one file. Throws UserError when a value matches nothing.
std::vector<BatchInput> expand_inputs(const std::vector<std::string>& values,
                                      const std::filesystem::path& skip_dir = {});

/// <out_dir>/<in.sub>/<stem of in.path>[-<save_id>]<ext>; save_id empty for a single save.
std::filesystem::path batch_output_path(const std::filesystem::path& out_dir, const BatchInput& in,
                                        const std::string& save_id, const std::string& ext);

class Distribution;

struct BatchOptions {
    enum class Isolation { automatic, on, off };
    std::vector<std::string> inputs; ///< --input values (see expand_inputs)
    std::string output_dir;          ///< --output
    int max_in_flight = 0;           ///< images alive at once; 0: 2 x max(CPU threads, workers)
    std::string devices;             ///< "" (default_device), "all" or "0,1"
    int default_device = 0;          ///< the CUDA device when `devices` is "" (under mpirun: the rank's own)
    bool fail_fast = false;
    bool progress = false;                          ///< draw the progress bar on stderr (a terminal, not --quiet)
    bool quiet = false;                             ///< no summary line when everything succeeded
    std::string trace_path;                         ///< Chrome trace-event JSON, "" for none
    std::string backend_override;                   ///< --backend
    bool no_fuse = false;                           ///< --no-fuse
    std::map<std::string, RawValue> param_defaults; ///< --max-pixels (CompileOptions::param_defaults)
    /// --memory-limit, --device-memory-limit: the budgets of all the images in flight together
    /// (memory_budget.hpp); 0: 3/4 of what is available when the batch starts.
    std::size_t memory_limit = 0, device_memory_limit = 0;
    int strip_rows = 0;      ///< --strip-rows, for every image
    std::string report_path; ///< --report (checked up front; written by run_batch_command)
    /// --isolate / --no-isolate; automatic: isolated when an operator of the pipeline comes from
    /// a plugin outside the installation's plugin folder (isolation_reason in isolate.hpp).
    Isolation isolate = Isolation::automatic;
    double timeout_s = 0;                  ///< --timeout: per image, in a worker (implies isolation); 0: none
    std::vector<std::string> plugin_paths; ///< --plugin-path, handed to the worker processes
    /// The pixflow executable the workers run; "" for <this library>/../bin/pixflow.
    std::string worker_exe;
    /// Called (from the admitting or the accounting stage) with the number of images in flight
    /// every time it changes; for tests.
    std::function<void(int)> on_in_flight;
    /// Shares the inputs with other processes (the ranks of an mpirun, framework/mpi/); null:
    /// this process runs every input, in order.
    Distribution* distribution = nullptr;
};

struct ImageResult {
    std::string input;
    std::vector<std::string> outputs; ///< files written (none when it failed)
    enum class Status { ok, failed, skipped } status = Status::skipped;
    std::string error;  ///< why it failed
    std::string worker; ///< "cpu" or "cuda:N"
    double ms = 0;      ///< wall time of its run
    int rank = -1;      ///< under mpirun: the rank that ran it; -1: none (this process)
};

/// Under mpirun: what one rank was and did (BatchReport::ranks).
struct RankSummary {
    int rank = 0;
    std::string host;
    std::vector<std::string> workers;
    int images = 0;  ///< images it ran (ok or failed)
    int threads = 0; ///< the CPU threads it ran them with
    int max_in_flight = 0, max_in_flight_seen = 0;
    int isolated_workers = 0;
};

struct BatchReport {
    std::string pipeline, file;
    std::vector<ImageResult> images; ///< in input order
    int ok = 0, failed = 0, skipped = 0;
    double wall_s = 0;
    int max_in_flight = 0;      ///< the bound
    int max_in_flight_seen = 0; ///< the most images that were alive at once
    std::vector<std::string> workers;
    std::vector<std::string> notes;
    std::vector<std::string> warnings;              ///< the plan's, as RunReport::warnings
    std::size_t pinned_buffers = 0;                 ///< pinned host buffers allocated, all workers
    std::vector<double> device_pool_reserved_bytes; ///< per CUDA worker, at the end
    int isolated_workers = 0;                       ///< worker processes; 0: images ran in-process
    std::string trace_error;        ///< why the trace and the report could not be written at the end (a warning)
    std::vector<RankSummary> ranks; ///< under mpirun: one per rank, in rank order; empty otherwise
    /// The memory budget (memory_budget.hpp): bytes (0: none) and where they came from, the most
    /// reserved at once by the images in flight (their planned peaks), and how many images waited
    /// for memory before they ran. Per CUDA device for the device figures.
    std::size_t host_budget_bytes = 0, device_budget_bytes = 0;
    std::string host_budget_from, device_budget_from;
    std::size_t peak_host_reserved = 0, peak_device_reserved = 0;
    int waited_for_memory = 0;

    /// Where wall_s went: setup_s before the first image (phases 1 to 5: the checks and the first
    /// compile, the workers with their CUDA contexts and device pools, the output folders),
    /// images_s running the images (phase 6). The process's own start (loading the plugins and
    /// the libraries they link) comes before run_batch and is in neither.
    double setup_s = 0, images_s = 0;

    double images_per_s() const { return wall_s > 0 ? double(ok + failed) / wall_s : 0; }
    /// The rate of phase 6 alone: what a longer batch of such images tends to.
    double images_per_s_after_setup() const { return images_s > 0 ? double(ok + failed) / images_s : 0; }
    nlohmann::json to_json() const;
    /// 0 when every image succeeded, else 2. The images' outputs are committed image by image, so
    /// a report or trace that cannot be written at the end (after the up-front checks) is a
    /// warning and leaves the code alone: a run that wrote its images does not say otherwise.
    int exit_code() const { return failed || skipped ? 2 : 0; }
};

/// Runs `spec` (parsed once, --set applied) over every input. Throws UserError for what is
/// wrong before any image runs (the pipeline, the inputs, the output names, the devices);
/// per-image failures are in the report. Writes the trace when opt.trace_path is set.
BatchReport run_batch(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt);

/// `pixflow run PIPELINE --input ...`: parses the pipeline once (with `sets`), runs the batch
/// (progress bar when stderr is a terminal and not opt.quiet), prints the summary, writes
/// `report_path` (JSON) when given. Returns the exit code; throws UserError for an invalid
/// pipeline or command line.
int run_batch_command(const Registry& reg, const std::string& file, const std::vector<std::string>& sets,
                      BatchOptions opt, const std::string& report_path);

/// How a batch shares its inputs with other processes that run the same command: the ranks of an
/// mpirun (framework/mpi/ implements it; docs/mpi.md). Every process checks the batch as usual;
/// then each asks next() for its images and tells finished() each result, and end() gathers the
/// results where one process prints the summary and writes --report and --trace.
class Distribution {
  public:
    virtual ~Distribution() = default;
    /// What run_batch_command does, in every process: returns the exit code of the whole run.
    virtual int command(const Registry& reg, const std::string& file, const std::vector<std::string>& sets,
                        const BatchOptions& opt) = 0;
    /// Whether this process is the one that prints and writes --report and --trace (so checks
    /// them up front).
    virtual bool root() const = 0;
    /// This process, for a message that must say which one failed: "rank 2 on node7".
    virtual std::string name() const = 0;
    /// Called by run_batch once its checks passed, before any image and before anything is
    /// created. Throws when another process failed its checks (which that one reports).
    virtual void start(const std::vector<BatchInput>& inputs,
                       const std::vector<std::vector<std::string>>& out_paths) = 0;
    /// The next input for this process, or nullopt when none is left for it. Called from one
    /// thread at a time; may block.
    virtual std::optional<std::size_t> next() = 0;
    /// Input i (given by next()) finished here, ok or failed. Called from one thread at a time.
    virtual void finished(std::size_t i, const ImageResult& r) = 0;
    /// A line of the run's output (a note, an image's error, an operator's log line) for the one
    /// process that prints; thread-safe.
    virtual void print(const std::string& line) = 0;
    /// After this process's images, with its totals in `report` and its --trace text in `trace`
    /// ("" without): true in the root process, whose `report` and `trace` are now those of the
    /// whole run, for run_batch to write; false elsewhere, where `report` gets the totals of the
    /// whole run (for the exit code).
    virtual bool end(BatchReport& report, std::string& trace) = 0;
};

/// Prints the end-of-run summary: the counts and rate on stdout (unless quiet and all
/// succeeded), each failed input with its reason on stderr.
void print_batch_summary(const BatchReport& r, bool quiet);

/// The hidden `pixflow __worker` mode of isolated batches (isolate.hpp): serves the parent's
/// images on socket `fd` until the parent closes it; returns the exit code.
int run_batch_worker(const Registry& reg, int fd, long parent_pid);

/// A file a command reads or writes, and what it is to the command ("the pipeline file", "the
/// input of node 'src'", "the output of node 'out'", "--report").
struct NamedPath {
    std::string path, what;
};
/// The files of a compiled pipeline: its file, and every input- and output-path parameter.
std::vector<NamedPath> pipeline_files(const Graph& g);
/// Refuses (UserError: nothing runs) a side output (--report, --trace, graph -o) that is the same
/// file as one of `taken` or as another side output (compared after resolving `.`, `..` and
/// symbolic links, and by file identity for hard links), or that is a folder.
void check_side_outputs(const std::vector<NamedPath>& side, const std::vector<NamedPath>& taken);

namespace batch {
/// --devices: "all" (every device of `count`) or a list such as "0,1" (each once); "" gives {0}.
/// Throws UserError naming the option and what is accepted.
std::vector<int> parse_devices(const std::string& text, int count);
} // namespace batch

} // namespace pixflow::host
