// The batch runner: checks once, then runs the pipeline per image in a tbb::parallel_pipeline
// (see batch.hpp for the design, phases.hpp for where each phase lives). This file: phase 5, the
// output folders; 6, the images; 7, the totals.
#include "batch/phases.hpp"
#include "batch/progress.hpp"
#include "batch/trace.hpp"

#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
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

std::string error_text(const UserError& e) {
    std::string s;
    for (const auto& d : e.diagnostics()) s += (s.empty() ? "" : "; ") + d.str();
    return s;
}

/// 5. Every output folder, created once up front; returns those created, to remove if left empty.
std::vector<fs::path> create_output_folders(const batch::BatchPlan& b) {
    std::vector<fs::path> created;
    std::set<fs::path> parents;
    for (const auto& outs : b.out_paths)
        for (const auto& o : outs) parents.insert(fs::path(o).parent_path());
    for (const fs::path& dir : parents) {
        std::vector<fs::path> missing;
        std::error_code ec;
        for (fs::path d = dir; !d.empty() && !fs::exists(d, ec); d = d.parent_path()) missing.push_back(d);
        for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
            if (!fs::create_directory(*it, ec) && ec)
                throw InternalError("cannot create the output folder " + it->string() + ": " + ec.message());
            created.push_back(*it);
        }
    }
    return created;
}

/// One image: compiled for its worker's device and run by an Executor that borrows the lane's
/// streams and pinned buffers. Failures are the image's own.
void run_one(const PipelineSpec& spec, const Registry& reg, const batch::BatchPlan& b, std::size_t i,
             batch::Worker& w, batch::Lane& lane, ImageResult& res, ProgressBar& bar, TraceWriter* trace) {
    res.worker = w.name;
    auto t0 = Clock::now();
    try {
        CompileOptions co = b.compile;
        co.device = std::max(w.device, 0);
        Compiled c = compile(b.spec_for(spec, i), reg, co);
        Executor ex(c.graph, c.plan);
        RunOptions ro;
        if (w.device >= 0) ro.resources = &lane.res;
        ro.log = [&](int level, const std::string& m) {
            if (level >= 1) bar.print((level >= 2 ? "warning: " : "") + res.input + ": " + m);
        };
        if (trace) ro.on_span = [&](const Span& sp) { trace->add(sp, span_category(c.graph, sp), res.input); };
        RunReport r = ex.run(ro);
        res.outputs = r.outputs;
        res.status = ImageResult::Status::ok;
    } catch (const UserError& e) {
        res.status = ImageResult::Status::failed;
        res.error = error_text(e);
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
                batch::Workers& workers, BatchReport& report, ProgressBar& bar, TraceWriter* trace) {
    const std::size_t n = b.inputs.size();
    Flight f;
    for (int s = report.max_in_flight - 1; s >= 0; --s) f.free_slots.push_back(s);
    f.slot_of.assign(n, -1);
    f.admitted.resize(n);
    auto admit = [&](tbb::flow_control& fc) -> std::size_t {
        if (f.stop || f.next >= n) {
            fc.stop();
            return 0;
        }
        std::size_t i = f.next++;
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
        run_one(spec, reg, b, i, *w, *lane, report.images[i], bar, trace);
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
                    trace->add_image(res.input, f.slot_of[i], f.admitted[i], now_t, res.status == ImageResult::Status::ok);
            }
            if (opt.on_in_flight) opt.on_in_flight(now);
        }
        if (res.status == ImageResult::Status::skipped) return;
        ++f.done;
        if (res.status == ImageResult::Status::failed) {
            ++f.failed;
            bar.print("error: " + res.input + ": " + res.error);
            if (opt.fail_fast) f.stop = true;
        }
        bar.update(f.done, f.failed);
    };
    tbb::parallel_pipeline(std::size_t(report.max_in_flight),
                           tbb::make_filter<void, std::size_t>(tbb::filter_mode::serial_in_order, admit) &
                               tbb::make_filter<std::size_t, std::size_t>(tbb::filter_mode::parallel, run) &
                               tbb::make_filter<std::size_t, void>(tbb::filter_mode::serial_out_of_order, account));
}

/// 7. The totals, the folders left empty, what the workers hold, the trace.
void finish(const BatchOptions& opt, const std::vector<fs::path>& created_dirs, const batch::Workers& workers,
            Clock::time_point t_start, TraceWriter* trace, BatchReport& report) {
    for (const auto& im : report.images) {
        report.ok += im.status == ImageResult::Status::ok;
        report.failed += im.status == ImageResult::Status::failed;
        report.skipped += im.status == ImageResult::Status::skipped;
    }
    for (auto it = created_dirs.rbegin(); it != created_dirs.rend(); ++it) {
        std::error_code ec;
        fs::remove(*it, ec); // only when it stayed empty
    }
    for (const auto& w : workers.all()) {
        if (w->pinned) report.pinned_buffers += w->pinned->pinned_count();
        if (w->device >= 0) {
            try {
                report.device_pool_reserved_bytes.push_back(double(device_pool_reserved_bytes(w->device)));
            } catch (const std::exception&) {
            }
        }
    }
    report.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    if (trace) {
        try {
            trace->write(opt.trace_path);
        } catch (const std::exception& e) {
            report.trace_error = e.what();
            std::fprintf(stderr, "error: %s\n", e.what());
        }
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
    j["max_in_flight"] = max_in_flight;
    j["max_in_flight_seen"] = max_in_flight_seen;
    j["workers"] = workers;
    j["notes"] = notes;
    j["pinned_buffers"] = pinned_buffers;
    j["device_pool_reserved_bytes"] = device_pool_reserved_bytes;
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
    BatchReport report;
    report.pipeline = spec.name;
    report.file = spec.file;
    report.notes = b.notes;
    batch::Workers workers(b, report.workers); // 4
    int threads = tbb::info::default_concurrency();
    report.max_in_flight = opt.max_in_flight > 0 ? opt.max_in_flight : 2 * std::max(threads, int(workers.all().size()));
    std::vector<fs::path> created_dirs = create_output_folders(b); // 5

    std::unique_ptr<TraceWriter> trace;
    if (!opt.trace_path.empty()) trace = std::make_unique<TraceWriter>(t_start);
    ProgressBar bar(int(b.inputs.size()), opt.progress);
    for (const auto& n : report.notes) bar.print("note: " + n);
    report.images.resize(b.inputs.size());
    for (std::size_t i = 0; i < b.inputs.size(); ++i) report.images[i].input = b.inputs[i].path.string();
    run_images(spec, reg, opt, b, workers, report, bar, trace.get()); // 6
    bar.finish();
    finish(opt, created_dirs, workers, t_start, trace.get(), report); // 7
    return report;
}

int run_batch_command(const Registry& reg, const std::string& file, const std::vector<std::string>& sets,
                      BatchOptions opt, const std::string& report_path) {
    PipelineSpec spec = parse_pipeline_file(file, sets);
    opt.progress = !opt.quiet && ::isatty(STDERR_FILENO);
    BatchReport r = run_batch(spec, reg, opt);
    print_batch_summary(r, opt.quiet);
    if (!report_path.empty()) write_file_atomically(report_path, r.to_json().dump(2) + "\n");
    return r.exit_code();
}

} // namespace pixflow::host
