// The batch runner: checks once, then runs the pipeline per image in a tbb::parallel_pipeline
// (see batch.hpp for the design, phases.hpp for where each phase lives). This file: phase 5, the
// output folders; 6, the images (isolate.cpp: in worker processes); 7, the totals and the side
// outputs.
#include "batch/isolate.hpp"
#include "executor/output_files.hpp"

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

using Clock = std::chrono::steady_clock;

/// 5. Every output folder, created once up front, in `folders`: rolling it back at the end (or on
/// an interrupt) removes those left empty.
void create_output_folders(const batch::BatchPlan& b, FileTransaction& folders) {
    std::set<fs::path> parents;
    for (const auto& outs : b.out_paths)
        for (const auto& o : outs) parents.insert(fs::path(o).parent_path());
    for (const fs::path& dir : parents) folders.create_folders(dir);
}

/// One image: compiled for its worker's device (planned under the batch's whole budget), its
/// planned peak reserved from the budget (waiting while the images in flight hold too much), and
/// run by an Executor that borrows the lane's streams and pinned buffers. Failures are the
/// image's own.
void run_one(const PipelineSpec& spec, const Registry& reg, const batch::BatchPlan& b, std::size_t i, batch::Worker& w,
             batch::Lane& lane, batch::MemoryBudget& budget, ImageResult& res, ProgressBar& bar, TraceWriter* trace) {
    res.worker = w.name;
    auto t0 = Clock::now();
    try {
        CompileOptions co = b.compile;
        co.device = std::max(w.device, 0);
        Compiled c = compile(b.spec_for(spec, i), reg, co);
        // Held until the Executor (declared after it) has freed the image's buffers.
        batch::MemoryBudget::Hold hold = budget.reserve(c.plan.strips.host_peak, w.device, c.plan.strips.device_peak);
        Executor ex(c.graph, c.plan);
        RunOptions ro;
        if (w.device >= 0) ro.resources = &lane.res;
        ro.log = [&](int level, const std::string& m) {
            if (level >= 1) bar.print((level >= 2 ? "warning: " : "") + res.input + ": " + m);
        };
        if (trace) ro.on_span = [&](const Span& sp) { trace->add(sp, span_category(c.graph, sp), res.input); };
        // Isolated: while this run waits for its own tasks, its thread takes no task of the batch's
        // pipeline, which could be an image waiting for the memory this one holds.
        RunReport r = tbb::this_task_arena::isolate([&] { return ex.run(ro); });
        res.outputs = r.outputs;
        res.status = ImageResult::Status::ok;
    } catch (const UserError& e) {
        res.status = ImageResult::Status::failed;
        res.error = batch::error_text(e);
    } catch (const std::exception& e) {
        res.status = ImageResult::Status::failed;
        res.error = e.what();
    }
    res.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// What the stages of phase 6 share.
struct Flight {
    std::atomic<bool> stop{false};
    std::size_t next = 0;
    int in_flight = 0, done = 0, failed = 0;
    std::vector<int> free_slots, slot_of;
    std::vector<Clock::time_point> admitted;
    std::mutex mu; // the admitting and the accounting stages run concurrently
};

/// 6. Every image through three stages, with at most report.max_in_flight alive at once: a serial
/// stage admits it, a parallel stage runs it (decode, compute and encode are the steps of one
/// Executor run), a serial stage accounts for it (progress, failures, --fail-fast).
void run_images(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt, const batch::BatchPlan& b,
                batch::Workers& workers, batch::MemoryBudget& budget, BatchReport& report, ProgressBar& bar,
                TraceWriter* trace) {
    const std::size_t n = b.inputs.size();
    Flight f;
    for (int s = report.max_in_flight - 1; s >= 0; --s) f.free_slots.push_back(s);
    f.slot_of.assign(n, -1);
    f.admitted.resize(n);
    auto admit = [&](tbb::flow_control& fc) -> std::size_t {
        std::optional<std::size_t> next;
        if (!f.stop) next = batch::next_image(opt, f.next, n);
        if (!next) {
            fc.stop();
            return 0;
        }
        std::size_t i = *next;
        std::lock_guard lk(f.mu);
        f.slot_of[i] = f.free_slots.back();
        f.free_slots.pop_back();
        f.admitted[i] = Clock::now();
        int now = ++f.in_flight;
        report.max_in_flight_seen = std::max(report.max_in_flight_seen, now);
        if (trace) trace->add_in_flight(now, f.admitted[i]);
        if (opt.on_in_flight) opt.on_in_flight(now);
        return i;
    };
    auto run = [&](std::size_t i) {
        if (f.stop) return i; // --fail-fast: not run
        auto [w, lane] = workers.acquire();
        run_one(spec, reg, b, i, *w, *lane, budget, report.images[i], bar, trace);
        workers.release(w, lane);
        return i;
    };
    auto account = [&](std::size_t i) {
        ImageResult& res = report.images[i];
        auto now_t = Clock::now();
        {
            std::lock_guard lk(f.mu);
            f.free_slots.push_back(f.slot_of[i]);
            int now = --f.in_flight;
            if (trace) {
                trace->add_in_flight(now, now_t);
                if (res.status != ImageResult::Status::skipped)
                    trace->add_image(res.input, f.slot_of[i], f.admitted[i], now_t,
                                     res.status == ImageResult::Status::ok);
            }
            if (opt.on_in_flight) opt.on_in_flight(now);
        }
        if (res.status != ImageResult::Status::skipped) {
            ++f.done;
            if (res.status == ImageResult::Status::failed) {
                ++f.failed;
                bar.print("error: " + res.input + ": " + res.error);
                if (opt.fail_fast) f.stop = true;
            }
            bar.update(f.done, f.failed);
        }
        if (opt.distribution) opt.distribution->finished(i, res);
    };
    tbb::parallel_pipeline(std::size_t(report.max_in_flight),
                           tbb::make_filter<void, std::size_t>(tbb::filter_mode::serial_in_order, admit) &
                               tbb::make_filter<std::size_t, std::size_t>(tbb::filter_mode::parallel, run) &
                               tbb::make_filter<std::size_t, void>(tbb::filter_mode::serial_out_of_order, account));
}

/// 7. The totals and what the workers hold; `t_images` is when phase 6 began.
void finish(const batch::Workers* workers, Clock::time_point t_start, Clock::time_point t_images, BatchReport& report) {
    for (const auto& im : report.images) {
        report.ok += im.status == ImageResult::Status::ok;
        report.failed += im.status == ImageResult::Status::failed;
        report.skipped += im.status == ImageResult::Status::skipped;
    }
    if (workers)
        for (const auto& w : workers->all()) {
            if (w->pinned) report.pinned_buffers += w->pinned->pinned_count();
            if (w->device >= 0) {
                try {
                    report.device_pool_reserved_bytes.push_back(double(device_pool_reserved_bytes(w->device)));
                } catch (const std::exception&) {}
            }
        }
    auto t_end = Clock::now();
    report.wall_s = std::chrono::duration<double>(t_end - t_start).count();
    report.setup_s = std::chrono::duration<double>(t_images - t_start).count();
    report.images_s = std::chrono::duration<double>(t_end - t_images).count();
}

/// The --trace and --report files, refused up front when they would overwrite a file of the batch,
/// and tried: each folder made and a file written there, then removed again. A failure here is
/// the command line's (exit 1), before any image ran.
void check_batch_side_outputs(const PipelineSpec& spec, const BatchOptions& opt, const batch::BatchPlan& b) {
    std::vector<NamedPath> side;
    if (!opt.trace_path.empty()) side.push_back({opt.trace_path, "--trace"});
    if (!opt.report_path.empty()) side.push_back({opt.report_path, "--report"});
    if (side.empty()) return;
    check_side_outputs(side, batch::batch_files(spec, opt, b));
    for (const auto& s : side) {
        FileTransaction probe;
        try {
            probe.stage_text(s.path, "");
        } catch (const std::exception& e) {
            throw UserError(Diagnostic{SourceLoc{s.what + " " + s.path, 0, 0}, "", e.what(), {}});
        }
    } // rolled back: the temporary and the folders made for it go
}

/// The trace and the report, written together (both or neither) after the images. The images
/// are committed by then, so a failure here is a warning that leaves the exit code alone.
void write_batch_side_outputs(const BatchOptions& opt, const std::string& trace, BatchReport& report) {
    if (opt.trace_path.empty() && opt.report_path.empty()) return;
    try {
        FileTransaction side;
        if (!opt.trace_path.empty()) side.stage_text(opt.trace_path, trace);
        if (!opt.report_path.empty()) side.stage_text(opt.report_path, json_text(report.to_json(), 2) + "\n");
        side.commit();
    } catch (const std::exception& e) {
        report.trace_error = e.what();
        std::fprintf(stderr, "warning: %s; the images' outputs are in place\n", e.what());
    }
}

} // namespace

nlohmann::json BatchReport::to_json() const {
    nlohmann::json j;
    j["pipeline"] = pipeline;
    j["file"] = file;
    j["inputs"] = images.size();
    j["ok"] = ok;
    j["failed"] = failed;
    j["skipped"] = skipped;
    j["wall_s"] = wall_s;
    j["images_per_s"] = images_per_s();
    j["setup_s"] = setup_s;
    j["images_s"] = images_s;
    j["images_per_s_after_setup"] = images_per_s_after_setup();
    j["max_in_flight"] = max_in_flight;
    j["max_in_flight_seen"] = max_in_flight_seen;
    j["workers"] = workers;
    j["notes"] = notes;
    j["warnings"] = warnings;
    j["pinned_buffers"] = pinned_buffers;
    j["device_pool_reserved_bytes"] = device_pool_reserved_bytes;
    j["isolated_workers"] = isolated_workers;
    j["memory"] = {{"host_budget_bytes", host_budget_bytes},
                   {"host_budget_from", host_budget_from},
                   {"device_budget_bytes", device_budget_bytes},
                   {"device_budget_from", device_budget_from},
                   {"peak_host_reserved_bytes", peak_host_reserved},
                   {"peak_device_reserved_bytes", peak_device_reserved},
                   {"images_waited", waited_for_memory}};
    if (!ranks.empty()) {
        j["ranks"] = nlohmann::json::array();
        for (const auto& r : ranks)
            j["ranks"].push_back({{"rank", r.rank},
                                  {"host", r.host},
                                  {"workers", r.workers},
                                  {"images", r.images},
                                  {"threads", r.threads},
                                  {"max_in_flight", r.max_in_flight},
                                  {"max_in_flight_seen", r.max_in_flight_seen},
                                  {"isolated_workers", r.isolated_workers}});
    }
    j["images"] = nlohmann::json::array();
    for (const auto& im : images) {
        nlohmann::json x{{"input", im.input},
                         {"status", im.status == ImageResult::Status::ok       ? "ok"
                                    : im.status == ImageResult::Status::failed ? "failed"
                                                                               : "skipped"},
                         {"outputs", im.outputs},
                         {"worker", im.worker},
                         {"ms", im.ms}};
        if (!im.error.empty()) x["error"] = im.error;
        if (im.rank >= 0) x["rank"] = im.rank;
        j["images"].push_back(x);
    }
    return j;
}

void print_batch_summary(const BatchReport& r, bool quiet) {
    if (!quiet || r.exit_code() != 0) {
        std::printf("%zu image(s): %d ok, %d failed", r.images.size(), r.ok, r.failed);
        if (r.skipped) std::printf(", %d not run (--fail-fast)", r.skipped);
        std::printf("; %.2f s, %.2f images/s\n", r.wall_s, r.images_per_s());
        std::fflush(stdout);
    }
    if (r.failed) {
        std::fprintf(stderr, "failed inputs:\n");
        for (const auto& im : r.images)
            if (im.status == ImageResult::Status::failed)
                std::fprintf(stderr, "  %s: %s\n", im.input.c_str(), im.error.c_str());
    }
    if (r.skipped)
        std::fprintf(stderr, "stopped after the first failure (--fail-fast): %d input(s) not run\n", r.skipped);
}

BatchReport run_batch(const PipelineSpec& spec, const Registry& reg, const BatchOptions& opt) {
    auto t_start = Clock::now();
    batch::BatchPlan b = batch::check_batch(spec, reg, opt); // 1 to 3
    if (!opt.distribution || opt.distribution->root()) check_batch_side_outputs(spec, opt, b);
    if (opt.distribution) opt.distribution->start(b.inputs, b.out_paths); // every process passed its checks
    BatchReport report;
    report.pipeline = spec.name;
    report.file = spec.file;
    report.notes = b.notes;
    report.warnings = b.warnings;
    report.host_budget_bytes = b.host_budget.bytes;
    report.host_budget_from = b.host_budget.from;
    report.device_budget_bytes = b.device_budget.bytes;
    report.device_budget_from = b.device_budget.from;
    std::string isolation = batch::isolation_reason(spec, reg, opt);
    std::unique_ptr<batch::Workers> workers;
    int threads = tbb::this_task_arena::max_concurrency(); // under mpirun: this rank's share
    if (isolation.empty()) {
        workers = std::make_unique<batch::Workers>(b, report.workers); // 4
        report.max_in_flight =
            opt.max_in_flight > 0 ? opt.max_in_flight : 2 * std::max(threads, int(workers->all().size()));
    } else {
        // One image per worker process: as many as the CPU has threads (each worker's TBB gets
        // its share), or two per CUDA device, so that one's transfers overlap the other's kernels.
        int want = opt.max_in_flight > 0 ? opt.max_in_flight : b.uses_cuda ? 2 * int(b.devices.size()) : threads;
        report.max_in_flight = std::max(1, std::min(want, int(b.inputs.size())));
        report.isolated_workers = report.max_in_flight;
        if (b.uses_cuda)
            for (int d : b.devices)
                report.workers.push_back("cuda:" + std::to_string(d) + " (" + cuda_device_name(d) + ")");
        else
            report.workers.push_back("cpu");
        if (opt.isolate == BatchOptions::Isolation::automatic && opt.timeout_s <= 0)
            report.notes.push_back("images run in " + std::to_string(report.isolated_workers) +
                                   " worker process(es) (--isolate): " + isolation +
                                   "; --no-isolate runs them in-process");
    }
    FileTransaction folders;
    create_output_folders(b, folders); // 5

    std::unique_ptr<TraceWriter> trace;
    if (!opt.trace_path.empty()) trace = std::make_unique<TraceWriter>(t_start);
    ProgressBar bar(int(b.inputs.size()), opt.progress && !opt.distribution);
    if (opt.distribution) bar.forward([d = opt.distribution](const std::string& line) { d->print(line); });
    for (const auto& w : report.warnings) bar.print("warning: " + w);
    for (const auto& n : report.notes) bar.print("note: " + n);
    report.images.resize(b.inputs.size());
    for (std::size_t i = 0; i < b.inputs.size(); ++i) report.images[i].input = b.inputs[i].path.string();
    const auto t_images = Clock::now();
    if (workers) {
        // In-process an operator's exit() would end the batch with the code it chose: make it a
        // failure, with the unfinished outputs removed.
        ExitGuard guard((opt.distribution ? opt.distribution->name() + ": " : std::string()) +
                            "an operator called exit() while the batch ran; the batch stopped there and its unfinished "
                            "outputs were removed (--isolate contains such faults to their image)",
                        2);
        batch::MemoryBudget budget(b.host_budget, b.device_budget);
        run_images(spec, reg, opt, b, *workers, budget, report, bar, trace.get()); // 6
        report.peak_host_reserved = budget.peak_host();
        report.peak_device_reserved = budget.peak_device();
        report.waited_for_memory = budget.waited();
    } else {
        batch::run_images_isolated(opt, b, spec, report.max_in_flight, report, bar, trace.get()); // 6
    }
    bar.finish();
    finish(workers.get(), t_start, t_images, report); // 7
    std::string trace_text = trace ? trace->text() : "";
    if (!opt.distribution || opt.distribution->end(report, trace_text))
        write_batch_side_outputs(opt, trace_text, report);
    folders.rollback(); // removes only the folders that stayed empty, once every process is done
    return report;
}

int run_batch_command(const Registry& reg, const std::string& file, const std::vector<std::string>& sets,
                      BatchOptions opt, const std::string& report_path) {
    opt.report_path = report_path;
    if (opt.distribution) return opt.distribution->command(reg, file, sets, opt);
    PipelineSpec spec = parse_pipeline_file(file, sets);
    opt.progress = !opt.quiet && ::isatty(STDERR_FILENO);
    BatchReport r = run_batch(spec, reg, opt);
    print_batch_summary(r, opt.quiet);
    return r.exit_code();
}

} // namespace pixflow::host
