// The batch runner: checks once, then runs the pipeline per image in a tbb::parallel_pipeline
// (see batch.hpp for the design).
#include "batch/batch.hpp"
#include "batch/progress.hpp"
#include "batch/trace.hpp"
#include "device/device.hpp"
#include "planner/plan.hpp"

#include <tbb/info.h>
#include <unistd.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

using Clock = std::chrono::steady_clock;

/// A node whose path parameter the batch rewrites per image.
struct PathNode {
    std::size_t index; ///< in spec.nodes
    std::string id;
    std::string param; ///< the path parameter's name
    std::string ext;   ///< saves: the extension of the configured path (".png")
};

const pf_param_desc* path_param(const OpInfo& op, std::uint32_t flag) {
    for (int k = 0; k < op.desc->n_params; ++k)
        if (op.desc->params[k].flags & flag) return &op.desc->params[k];
    return nullptr;
}

void set_param(NodeSpec& n, const std::string& key, const std::string& value) {
    for (auto& [k, v] : n.params)
        if (k == key) {
            v.kind = RawValue::Kind::string;
            v.s = value;
            return;
        }
    RawValue v;
    v.kind = RawValue::Kind::string;
    v.s = value;
    v.loc = n.loc;
    n.params.emplace_back(key, v);
}

std::string join_ids(const std::vector<PathNode>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n.id;
    return s;
}

std::vector<int> parse_devices(const std::string& text, int count) {
    auto bad = [&](const std::string& msg) -> std::vector<int> {
        throw UserError(Diagnostic{SourceLoc{"--devices " + text, 0, 0}, "", msg});
    };
    std::vector<int> devs;
    if (text.empty()) devs = {0};
    else if (text == "all")
        for (int d = 0; d < count; ++d) devs.push_back(d);
    else {
        std::stringstream ss(text);
        for (std::string item; std::getline(ss, item, ',');) {
            char* end = nullptr;
            long d = std::strtol(item.c_str(), &end, 10);
            if (item.empty() || *end || d < 0)
                return bad("'" + item + "' is not a device number; expected all or numbers such as 0,1");
            if (d >= count)
                return bad("there is no CUDA device " + item + "; this machine has " + std::to_string(count) +
                           (count == 1 ? " (device 0)" : " (devices 0 to " + std::to_string(count - 1) + ")"));
            if (std::find(devs.begin(), devs.end(), int(d)) == devs.end()) devs.push_back(int(d));
        }
        if (devs.empty()) return bad("no device given; expected all or numbers such as 0,1");
    }
    return devs;
}

/// A stream set with its owner's pinned cache: what one image in flight on a device uses.
struct Lane {
    RunResources res;
    bool busy = false;
};

/// The CPU, or one CUDA device with everything it reuses from image to image.
struct Worker {
    int device = -1; ///< -1: the CPU
    std::string name;
    std::unique_ptr<PinnedCache> pinned;
    std::vector<std::unique_ptr<Lane>> lanes;
    int active = 0;
};

class Workers {
  public:
    std::vector<std::unique_ptr<Worker>> all;

    /// The worker with the fewest images in flight, and a free lane of it.
    std::pair<Worker*, Lane*> acquire() {
        std::lock_guard lk(m_mu);
        Worker* w = all.front().get();
        for (auto& x : all)
            if (x->active < w->active) w = x.get();
        ++w->active;
        for (auto& l : w->lanes)
            if (!l->busy) {
                l->busy = true;
                return {w, l.get()};
            }
        auto& l = w->lanes.emplace_back(std::make_unique<Lane>());
        l->res.device = std::max(w->device, 0);
        l->res.pinned = w->pinned.get();
        l->busy = true;
        return {w, l.get()};
    }
    void release(Worker* w, Lane* l) {
        std::lock_guard lk(m_mu);
        --w->active;
        l->busy = false;
    }

  private:
    std::mutex m_mu;
};

std::string error_text(const UserError& e) {
    std::string s;
    for (const auto& d : e.diagnostics()) s += (s.empty() ? "" : "; ") + d.str();
    return s;
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
    const std::string& file = spec.file;

    // ---- the pipeline: one load node, at least one save node ----------------------------------
    for (const NodeSpec& n : spec.nodes)
        if (!n.external && !reg.find(n.op)) build_graph(spec, reg); // reports the unknown op
    std::vector<PathNode> loads, saves;
    for (std::size_t k = 0; k < spec.nodes.size(); ++k) {
        const NodeSpec& n = spec.nodes[k];
        const OpInfo* op = n.external ? nullptr : reg.find(n.op);
        if (!op) continue;
        if (const pf_param_desc* d = path_param(*op, PF_PARAM_INPUT_PATH)) loads.push_back({k, n.id, d->name, ""});
        if (const pf_param_desc* d = path_param(*op, PF_PARAM_OUTPUT_PATH)) {
            PathNode s{k, n.id, d->name, ""};
            SourceLoc where = n.loc;
            for (const auto& [key, v] : n.params)
                if (key == d->name) {
                    where = v.loc;
                    if (v.kind == RawValue::Kind::string) s.ext = fs::path(v.s).extension().string();
                }
            if (s.ext.empty())
                throw UserError(Diagnostic{where, n.id,
                                           std::string("a batch run (--input) names this node's outputs after its ") +
                                               d->name + ", whose extension picks the format; set " + d->name +
                                               " = \"<name>.<ext>\" (for example \"out/x.png\")"});
            saves.push_back(s);
        }
    }
    if (loads.size() != 1) {
        SourceLoc where = loads.size() > 1 ? spec.nodes[loads[1].index].loc : SourceLoc{file, 0, 0};
        throw UserError(Diagnostic{
            where, "",
            loads.empty()
                ? "a batch run (--input) needs a pipeline with exactly one load node, which reads each input "
                  "file; this pipeline has none (add a node with op = \"load\")"
                : "a batch run (--input) needs a pipeline with exactly one load node, which reads each input "
                  "file; this pipeline has " +
                      std::to_string(loads.size()) + ": " + join_ids(loads)});
    }
    if (saves.empty())
        throw UserError(Diagnostic{SourceLoc{file, 0, 0}, "",
                                   "a batch run (--input) writes each image through the pipeline's save nodes; "
                                   "this pipeline has none (add a node with op = \"save\")"});
    const PathNode& load = loads[0];

    // ---- inputs and output names ---------------------------------------------------------------
    if (opt.output_dir.empty())
        throw UserError(Diagnostic{SourceLoc{"--input", 0, 0}, "", "a batch run needs --output <folder>"});
    std::vector<BatchInput> inputs = expand_inputs(opt.inputs, opt.output_dir);
    const std::size_t n_images = inputs.size();
    std::vector<std::vector<std::string>> out_paths(n_images);
    {
        std::map<fs::path, std::size_t> owner;
        std::map<fs::path, std::size_t> in_canon;
        for (std::size_t i = 0; i < n_images; ++i) in_canon.emplace(fs::weakly_canonical(inputs[i].path), i);
        std::vector<Diagnostic> errs;
        for (std::size_t i = 0; i < n_images; ++i)
            for (const PathNode& s : saves) {
                fs::path o = batch_output_path(opt.output_dir, inputs[i], saves.size() > 1 ? s.id : "", s.ext);
                out_paths[i].push_back(o.string());
                fs::path c = fs::weakly_canonical(o);
                auto [it, fresh] = owner.emplace(c, i);
                if (!fresh && errs.size() < 10)
                    errs.push_back({SourceLoc{"--output " + opt.output_dir, 0, 0}, "",
                                    "inputs '" + inputs[it->second].path.string() + "' and '" +
                                        inputs[i].path.string() + "' would both write '" + o.string() +
                                        "'; give them different names or run them separately"});
                auto in = in_canon.find(c);
                if (in != in_canon.end() && errs.size() < 10)
                    errs.push_back({SourceLoc{"--output " + opt.output_dir, 0, 0}, "",
                                    "the output '" + o.string() + "' of '" + inputs[i].path.string() +
                                        "' would overwrite the input '" + inputs[in->second].path.string() +
                                        "'; write to another folder"});
            }
        if (!errs.empty()) throw UserError(errs);
    }

    // The spec for image i: its input, its outputs.
    auto spec_for = [&](std::size_t i) {
        PipelineSpec s = spec;
        set_param(s.nodes[load.index], load.param, inputs[i].path.string());
        for (std::size_t k = 0; k < saves.size(); ++k)
            set_param(s.nodes[saves[k].index], saves[k].param, out_paths[i][k]);
        return s;
    };

    // ---- devices and one full check with the first input whose header reads ------------------
    BatchReport report;
    report.pipeline = spec.name;
    report.file = file;
    PlanOptions base_po;
    base_po.backend_override = opt.backend_override;
    base_po.cuda_usable = cuda_usable(&base_po.cuda_why);
    std::vector<int> devices = base_po.cuda_usable ? parse_devices(opt.devices, cuda_device_count()) : std::vector<int>{0};
    bool uses_cuda = false;
    bool checked = false;
    for (std::size_t i = 0; i < n_images && !checked; ++i) {
        PipelineSpec only_load;
        only_load.file = spec.file;
        only_load.name = spec.name;
        only_load.backend = "cpu";
        only_load.nodes.push_back(spec.nodes[load.index]);
        only_load.nodes[0].inputs.clear();
        only_load.nodes[0].backend.reset();
        set_param(only_load.nodes[0], load.param, inputs[i].path.string());
        try {
            build_graph(only_load, reg); // reads the header only
        } catch (const UserError&) {
            continue; // this input fails on its own, later
        }
        checked = true;
        Graph g = build_graph(spec_for(i), reg); // a UserError here is the pipeline's: nothing runs
        PlanOptions po = base_po;
        po.device = devices.front();
        Plan p = make_plan(g, po);
        if (!opt.no_fuse) fuse(g, p, po, reg);
        uses_cuda = p.n_streams > 0;
        report.notes = p.notes;
    }
    if (!checked) uses_cuda = false; // every input is unreadable: each fails with its reason
    if (!opt.devices.empty() && !base_po.cuda_usable)
        report.notes.push_back("--devices " + opt.devices + " ignored: " + base_po.cuda_why + "; running on the CPU");
    else if (!opt.devices.empty() && checked && !uses_cuda)
        report.notes.push_back("--devices " + opt.devices + " ignored: no node of this pipeline runs on CUDA");

    Workers workers;
    if (uses_cuda) {
        for (int d : devices) {
            auto w = std::make_unique<Worker>();
            w->device = d;
            w->name = "cuda:" + std::to_string(d);
            w->pinned = std::make_unique<PinnedCache>();
            keep_device_pool(d);
            report.workers.push_back(w->name + " (" + cuda_device_name(d) + ")");
            workers.all.push_back(std::move(w));
        }
    } else {
        auto w = std::make_unique<Worker>();
        w->name = "cpu";
        report.workers.push_back("cpu");
        workers.all.push_back(std::move(w));
    }
    int threads = tbb::info::default_concurrency();
    int max_in_flight = opt.max_in_flight > 0 ? opt.max_in_flight
                                              : 2 * std::max(threads, int(workers.all.size()));
    report.max_in_flight = max_in_flight;

    // ---- output folders: created once, up front; those left empty are removed at the end ------
    std::vector<fs::path> created_dirs;
    {
        std::set<fs::path> parents;
        for (const auto& outs : out_paths)
            for (const auto& o : outs) parents.insert(fs::path(o).parent_path());
        for (const fs::path& dir : parents) {
            std::vector<fs::path> missing;
            std::error_code ec;
            for (fs::path d = dir; !d.empty() && !fs::exists(d, ec); d = d.parent_path()) missing.push_back(d);
            for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
                if (!fs::create_directory(*it, ec) && ec)
                    throw RunError("cannot create the output folder " + it->string() + ": " + ec.message());
                created_dirs.push_back(*it);
            }
        }
    }

    // ---- the run -------------------------------------------------------------------------------
    std::unique_ptr<TraceWriter> trace;
    if (!opt.trace_path.empty()) trace = std::make_unique<TraceWriter>(t_start);
    ProgressBar bar(int(n_images), opt.progress);
    for (const auto& n : report.notes) bar.print("note: " + n);

    report.images.resize(n_images);
    for (std::size_t i = 0; i < n_images; ++i) report.images[i].input = inputs[i].path.string();
    std::atomic<bool> stop{false};
    std::size_t next = 0;
    int in_flight = 0, done = 0, failed = 0;
    std::vector<int> free_slots;
    for (int s = max_in_flight - 1; s >= 0; --s) free_slots.push_back(s);
    std::vector<int> slot_of(n_images, -1);
    std::vector<Clock::time_point> admitted(n_images);
    std::mutex acct_mu; // the admitting and the accounting stages run concurrently

    auto run_one = [&](std::size_t i, Worker& w, Lane& lane) {
        ImageResult& res = report.images[i];
        res.worker = w.name;
        auto t0 = Clock::now();
        try {
            PipelineSpec s = spec_for(i);
            Graph g = build_graph(s, reg);
            PlanOptions po = base_po;
            po.device = std::max(w.device, 0);
            Plan p = make_plan(g, po);
            if (!opt.no_fuse) fuse(g, p, po, reg);
            Executor ex(g, p);
            RunOptions ro;
            if (w.device >= 0) ro.resources = &lane.res;
            ro.log = [&](int level, const std::string& m) {
                if (level >= 1) bar.print((level >= 2 ? "warning: " : "") + res.input + ": " + m);
            };
            if (trace) ro.on_span = [&](const Span& sp) { trace->add(sp, span_category(g, sp), res.input); };
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
    };

    tbb::parallel_pipeline(
        std::size_t(max_in_flight),
        // Admit the next image: at most max_in_flight are between here and the accounting stage.
        tbb::make_filter<void, std::size_t>(tbb::filter_mode::serial_in_order,
                                            [&](tbb::flow_control& fc) -> std::size_t {
                                                if (stop || next >= n_images) {
                                                    fc.stop();
                                                    return 0;
                                                }
                                                std::size_t i = next++;
                                                std::lock_guard lk(acct_mu);
                                                slot_of[i] = free_slots.back();
                                                free_slots.pop_back();
                                                admitted[i] = Clock::now();
                                                int now = ++in_flight;
                                                report.max_in_flight_seen = std::max(report.max_in_flight_seen, now);
                                                if (trace) trace->add_in_flight(now, admitted[i]);
                                                if (opt.on_in_flight) opt.on_in_flight(now);
                                                return i;
                                            }) &
            // Run it: decode, compute and encode are the steps of one Executor run.
            tbb::make_filter<std::size_t, std::size_t>(tbb::filter_mode::parallel,
                                                       [&](std::size_t i) {
                                                           if (stop) return i; // --fail-fast: not run
                                                           auto [w, lane] = workers.acquire();
                                                           run_one(i, *w, *lane);
                                                           workers.release(w, lane);
                                                           return i;
                                                       }) &
            // Account for it: progress, failures, --fail-fast.
            tbb::make_filter<std::size_t, void>(
                tbb::filter_mode::serial_out_of_order, [&](std::size_t i) {
                    ImageResult& res = report.images[i];
                    auto now_t = Clock::now();
                    int now;
                    {
                        std::lock_guard lk(acct_mu);
                        free_slots.push_back(slot_of[i]);
                        now = --in_flight;
                        if (trace) {
                            trace->add_in_flight(now, now_t);
                            if (res.status != ImageResult::Status::skipped)
                                trace->add_image(res.input, slot_of[i], admitted[i], now_t,
                                                 res.status == ImageResult::Status::ok);
                        }
                        if (opt.on_in_flight) opt.on_in_flight(now);
                    }
                    if (res.status == ImageResult::Status::skipped) return;
                    ++done;
                    if (res.status == ImageResult::Status::failed) {
                        ++failed;
                        bar.print("error: " + res.input + ": " + res.error);
                        if (opt.fail_fast) stop = true;
                    }
                    bar.update(done, failed);
                }));
    bar.finish();

    for (const auto& im : report.images) {
        report.ok += im.status == ImageResult::Status::ok;
        report.failed += im.status == ImageResult::Status::failed;
        report.skipped += im.status == ImageResult::Status::skipped;
    }
    for (auto it = created_dirs.rbegin(); it != created_dirs.rend(); ++it) {
        std::error_code ec;
        fs::remove(*it, ec); // only when it stayed empty
    }
    for (const auto& w : workers.all) {
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
