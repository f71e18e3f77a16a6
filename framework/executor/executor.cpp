#include "executor/executor.hpp"

#include "device/device.hpp"
#include "loader/checked_size.hpp"

#include <pixflow/image.hpp>

#include <tbb/parallel_for.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Overflow-checked (loader/checked_size.hpp): a shape comes from a plugin's infer.
std::size_t row_bytes(const pf_image& im) { return row_bytes_or_throw(im); }
std::size_t image_bytes(const pf_image& im) { return image_bytes_or_throw(im, row_bytes(im)); }

enum class Mem { none, host, pinned, device, external };

/// One image in memory, with the count of consumers still to read it.
struct Buf {
    pf_image im{};
    Mem mem = Mem::none;
    int stream = -1; ///< device buffers: the stream that allocated it
    std::atomic<int> remaining{0};
    std::mutex mu;
    std::vector<std::pair<int, Event*>> readers; ///< (stream, done event) of device consumers
};

} // namespace

struct Executor::Impl {
    const Graph& g;
    const Plan& p;
    RunOptions opt;
    std::size_t N, T;
    std::vector<Stream> streams;
    std::vector<std::vector<std::unique_ptr<Buf>>> outs; ///< per node, per port
    std::vector<std::unique_ptr<Buf>> tbufs;             ///< per transfer
    std::vector<std::vector<pf_value>> params;           ///< per node, output paths replaced
    std::deque<std::string> strings;
    std::vector<std::pair<std::string, std::string>> pending_files; ///< (temp, final)
    std::vector<fs::path> created_dirs; ///< output folders this run created, removed on failure
    std::vector<Event> ev_start, ev_end; ///< per node, CUDA nodes only
    std::vector<double> cpu_ms;
    // Spans (only with opt.on_span): CPU nodes' wall times and threads, transfers' events, and
    // an event synchronised at the start that maps GPU times onto the host clock.
    std::vector<Clock::time_point> cpu_t0, cpu_t1;
    std::vector<std::thread::id> cpu_thread;
    std::vector<char> step_ran; ///< per step (nodes, then transfers)
    std::vector<Event> tr_start, tr_end;
    Event ev_ref;
    Clock::time_point t_ref;
    bool borrowed_streams = false; ///< streams come from opt.resources and go back there
    std::vector<std::map<std::string, double>> metrics;
    std::mutex metrics_mu;
    std::atomic<bool> cancelled{false};
    std::mutex err_mu;
    std::string first_error;
    std::atomic<long long> live_device{0}, peak_device{0};
    std::atomic<int> h2d{0}, d2h{0};
    std::atomic<long long> h2d_bytes{0}, d2h_bytes{0};
    bool ran = false;

    Impl(const Graph& g_, const Plan& p_) : g(g_), p(p_), N(g_.nodes.size()), T(p_.transfers.size()) {}

    // ---- logging and errors -------------------------------------------------------------------
    void log(int level, const std::string& s) {
        if (opt.log) opt.log(level, s);
        else if (level >= 1) std::cerr << (level >= 2 ? "warning: " : "") << s << "\n";
    }
    void fail(const std::string& msg) {
        std::lock_guard lk(err_mu);
        if (first_error.empty()) first_error = msg;
        cancelled = true;
    }
    std::string where(int v) const {
        const Node& n = g.nodes[std::size_t(v)];
        return n.loc.str() + ": node '" + n.id + "' (" + (n.op ? n.op->desc->name : "input") + " on " +
               backend_name(p.backend[std::size_t(v)]) + ")";
    }

    // ---- memory -------------------------------------------------------------------------------
    PinnedCache* pinned_cache() const { return opt.resources ? opt.resources->pinned : nullptr; }
    void note_device(long long delta) {
        long long now = live_device += delta;
        long long peak = peak_device.load();
        while (now > peak && !peak_device.compare_exchange_weak(peak, now)) {}
    }
    void alloc(Buf& b, const pf_image& shape, bool device, int stream, bool pinned) {
        b.im = shape;
        b.im.struct_size = sizeof(pf_image);
        std::size_t rb = row_bytes(shape);
        if (device) {
            b.im.pitch = std::int64_t(checked_round_up(rb, 256).value_or(max_buffer_bytes));
            b.im.device = p.device;
            b.im.data = device_alloc_async(image_bytes_or_throw(shape, std::size_t(b.im.pitch)),
                                           streams[std::size_t(stream)]);
            b.mem = Mem::device;
            b.stream = stream;
            note_device(b.im.pitch * shape.height);
        } else {
            b.im.pitch = std::int64_t(rb);
            b.im.device = PF_HOST;
            std::size_t bytes = std::max<std::size_t>(image_bytes_or_throw(shape, rb), 1);
            if (pinned) {
                b.im.data = pinned_cache() ? pinned_cache()->take(bytes) : pinned_alloc(bytes);
                b.mem = Mem::pinned;
            } else {
                b.im.data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
                if (!b.im.data) throw std::bad_alloc();
                b.mem = Mem::host;
            }
        }
    }
    /// Frees b; device memory is freed on `stream` after every reader's work.
    void release(Buf& b, int stream) {
        switch (b.mem) {
        case Mem::host: std::free(b.im.data); break;
        case Mem::pinned:
            if (pinned_cache()) pinned_cache()->give(b.im.data);
            else pinned_free(b.im.data);
            break;
        case Mem::device: {
            int s = stream >= 0 ? stream : b.stream;
            {
                std::lock_guard lk(b.mu);
                for (auto& [rs, ev] : b.readers)
                    if (rs != s && ev) ev->wait_on(streams[std::size_t(s)]);
            }
            device_free_async(b.im.data, streams[std::size_t(s)]);
            note_device(-(b.im.pitch * b.im.height));
            break;
        }
        default: return;
        }
        b.im.data = nullptr;
        b.mem = Mem::none;
    }
    void consumed(Buf& b, int stream, Event* ev) {
        if (b.mem == Mem::device && ev) {
            std::lock_guard lk(b.mu);
            b.readers.emplace_back(stream, ev);
        }
        if (--b.remaining == 0 && !opt.keep_buffers) release(b, stream);
    }

    // ---- host callbacks for operators ----------------------------------------------------------
    struct StepCtx {
        Impl* impl;
        int node;
        int stream;
        std::mutex mu;
        struct Scratch {
            void* ptr;
            bool device;
            std::size_t bytes;
        };
        std::vector<Scratch> scratch;
    };
    static void* cb_alloc(void* self, int32_t device, size_t bytes) {
        auto* c = static_cast<StepCtx*>(self);
        try {
            std::lock_guard lk(c->mu);
            void* ptr;
            if (device == PF_HOST) {
                ptr = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
                if (!ptr) return nullptr;
            } else {
                if (c->stream < 0) return nullptr; // a CPU node gets no device memory
                ptr = device_alloc_async(bytes, c->impl->streams[std::size_t(c->stream)]);
                c->impl->note_device((long long)bytes);
            }
            c->scratch.push_back({ptr, device != PF_HOST, bytes});
            return ptr;
        } catch (...) {
            return nullptr;
        }
    }
    static void cb_log(void* self, int32_t level, const char* msg) {
        auto* c = static_cast<StepCtx*>(self);
        c->impl->log(level, "[" + c->impl->g.nodes[std::size_t(c->node)].id + "] " + msg);
    }
    static int32_t cb_cancelled(void* self) { return static_cast<StepCtx*>(self)->impl->cancelled ? 1 : 0; }
    static void cb_metric(void* self, const char* key, double value) {
        auto* c = static_cast<StepCtx*>(self);
        std::lock_guard lk(c->impl->metrics_mu);
        c->impl->metrics[std::size_t(c->node)][key] = value;
    }
    /// Device scratch is freed in stream order; host scratch of a CUDA node may still be read
    /// by its queued work (an async copy from it, say), so the host waits for the stream first.
    void free_scratch(StepCtx& c) {
        bool host_scratch_on_stream = false;
        for (auto& s : c.scratch) host_scratch_on_stream |= !s.device && c.stream >= 0;
        if (host_scratch_on_stream) streams[std::size_t(c.stream)].synchronize();
        for (auto& s : c.scratch) {
            if (s.device) {
                device_free_async(s.ptr, streams[std::size_t(c.stream)]);
                note_device(-(long long)s.bytes);
            } else {
                std::free(s.ptr);
            }
        }
        c.scratch.clear();
    }

    // ---- steps ---------------------------------------------------------------------------------
    const pf_image& input_of(int v, std::size_t i) {
        int t = p.input_transfer[std::size_t(v)][i];
        const auto& in = g.nodes[std::size_t(v)].inputs[i];
        return t >= 0 ? tbufs[std::size_t(t)]->im : outs[std::size_t(in.node)][std::size_t(in.port)]->im;
    }

    /// Runs op node v on buffers already allocated. Returns false (and records why) on failure.
    bool launch(int v) {
        const Node& n = g.nodes[std::size_t(v)];
        const pf_op_desc& d = *n.op->desc;
        bool dev = p.on_device(v);
        int s = p.stream[std::size_t(v)];
        std::vector<pf_image> ins, os;
        for (std::size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(input_of(v, i));
        for (auto& b : outs[std::size_t(v)]) os.push_back(b->im);
        StepCtx c{this, v, s, {}, {}};
        pf_host host{sizeof(pf_host), &c, &cb_alloc, &cb_log, &cb_cancelled, &cb_metric};
        char err[2048] = {0};
        pf_run_args a{sizeof(pf_run_args), params[std::size_t(v)].data(), d.n_params, ins.data(),
                      int32_t(ins.size()), os.data(), int32_t(os.size()),
                      dev ? streams[std::size_t(s)].get() : nullptr, &host, err, sizeof err};
        int32_t st;
        if (dev) {
            set_device(p.device);
            ev_start[std::size_t(v)].record(streams[std::size_t(s)]);
            st = d.run_cuda(&a);
            ev_end[std::size_t(v)].record(streams[std::size_t(s)]);
        } else {
            auto t0 = Clock::now();
            st = d.run_cpu(&a);
            cpu_ms[std::size_t(v)] = ms_since(t0);
            if (opt.on_span) {
                cpu_t0[std::size_t(v)] = t0;
                cpu_t1[std::size_t(v)] = Clock::now();
                cpu_thread[std::size_t(v)] = std::this_thread::get_id();
            }
        }
        free_scratch(c);
        err[sizeof err - 1] = '\0'; // the plugin may have left it unterminated
        if (st != PF_OK) {
            fail(where(v) + ": " + (err[0] ? err : "failed with status " + std::to_string(st)));
            return false;
        }
        return true;
    }

    void run_node(int v) {
        const Node& n = g.nodes[std::size_t(v)];
        if (!n.op) return; // external: data already there
        bool dev = p.on_device(v);
        int s = p.stream[std::size_t(v)];
        if (opt.skip_sinks && n.is_sink()) {
            for (std::size_t i = 0; i < n.inputs.size(); ++i) release_input(v, i, nullptr);
            return;
        }
        // Device inputs produced on another stream: wait for them without blocking the host.
        if (dev) {
            set_device(p.device);
            for (std::size_t i = 0; i < n.inputs.size(); ++i) {
                int u = n.inputs[i].node;
                if (p.input_transfer[std::size_t(v)][i] < 0 && p.on_device(u) &&
                    p.stream[std::size_t(u)] != s)
                    ev_end[std::size_t(u)].wait_on(streams[std::size_t(s)]);
            }
        }
        for (std::size_t k = 0; k < n.outputs.size(); ++k) {
            bool pinned = false;
            for (const Transfer& t : p.transfers)
                pinned |= t.node == v && t.port == int(k) && t.to_device;
            alloc(*outs[std::size_t(v)][k], n.outputs[k], dev, s, pinned);
        }
        if (opt.on_span) step_ran[std::size_t(v)] = 1;
        bool ok = launch(v);
        for (std::size_t i = 0; i < n.inputs.size(); ++i)
            release_input(v, i, dev ? &ev_end[std::size_t(v)] : nullptr);
        for (auto& b : outs[std::size_t(v)])
            if (b->remaining == 0 && !opt.keep_buffers) release(*b, s);
        (void)ok;
    }
    void release_input(int v, std::size_t i, Event* ev) {
        int t = p.input_transfer[std::size_t(v)][i];
        const auto& in = g.nodes[std::size_t(v)].inputs[i];
        Buf& b = t >= 0 ? *tbufs[std::size_t(t)] : *outs[std::size_t(in.node)][std::size_t(in.port)];
        consumed(b, p.stream[std::size_t(v)], ev);
    }

    void run_transfer(int t) {
        const Transfer& tr = p.transfers[std::size_t(t)];
        Buf& src = *outs[std::size_t(tr.node)][std::size_t(tr.port)];
        Buf& dst = *tbufs[std::size_t(t)];
        set_device(p.device);
        const Stream& s = streams[std::size_t(tr.stream)];
        if (!tr.to_device && p.stream[std::size_t(tr.node)] != tr.stream)
            ev_end[std::size_t(tr.node)].wait_on(s);
        alloc(dst, src.im, tr.to_device, tr.stream, /*pinned=*/!tr.to_device);
        if (opt.on_span) tr_start[std::size_t(t)].record(s);
        copy_2d_async(dst.im.data, dst.im.pitch, src.im.data, src.im.pitch, row_bytes(src.im),
                      src.im.height, s);
        Event done(true);
        done.record(s);
        if (opt.on_span) {
            tr_end[std::size_t(t)].record(s);
            step_ran[N + std::size_t(t)] = 1;
        }
        done.synchronize(); // the host buffer must be complete (download) or reusable (upload)
        std::size_t bytes = image_bytes(src.im);
        if (tr.to_device) ++h2d, h2d_bytes += (long long)bytes;
        else ++d2h, d2h_bytes += (long long)bytes;
        consumed(src, tr.stream, nullptr);
    }

    void prepare() {
        streams.clear();
        if (p.n_streams > 0) {
            set_device(p.device);
            if (opt.resources) {
                if (opt.resources->device != p.device)
                    throw RunError("internal: run resources of device " + std::to_string(opt.resources->device) +
                                   " given to a plan for device " + std::to_string(p.device));
                streams = std::move(opt.resources->streams);
                borrowed_streams = true;
            }
            while (streams.size() < std::size_t(p.n_streams)) streams.emplace_back(p.device);
        }
        outs.clear();
        outs.resize(N);
        ev_start.clear();
        ev_end.clear();
        for (std::size_t v = 0; v < N; ++v) {
            ev_start.emplace_back(p.on_device(int(v)));
            ev_end.emplace_back(p.on_device(int(v)));
            for (std::size_t k = 0; k < g.nodes[v].outputs.size(); ++k)
                outs[v].push_back(std::make_unique<Buf>());
        }
        tbufs.clear();
        for (std::size_t t = 0; t < T; ++t) {
            tbufs.push_back(std::make_unique<Buf>());
            tbufs[t]->remaining = int(p.transfers[t].consumers.size());
        }
        for (std::size_t v = 0; v < N; ++v)
            for (std::size_t i = 0; i < g.nodes[v].inputs.size(); ++i)
                if (p.input_transfer[v][i] < 0) {
                    const auto& in = g.nodes[v].inputs[i];
                    ++outs[std::size_t(in.node)][std::size_t(in.port)]->remaining;
                }
        for (const Transfer& t : p.transfers) ++outs[std::size_t(t.node)][std::size_t(t.port)]->remaining;
        for (const auto& [v, im] : opt.externals) {
            Buf& b = *outs[std::size_t(v)][0];
            b.im = im;
            b.mem = Mem::external;
        }
        cpu_ms.assign(N, 0);
        metrics.assign(N, {});
        if (opt.on_span) {
            cpu_t0.assign(N, {});
            cpu_t1.assign(N, {});
            cpu_thread.assign(N, {});
            step_ran.assign(N + T, 0);
            tr_start.clear();
            tr_end.clear();
            for (std::size_t t = 0; t < T; ++t) {
                tr_start.emplace_back(true);
                tr_end.emplace_back(true);
            }
            if (!streams.empty()) {
                ev_ref = Event(true);
                ev_ref.record(streams[0]);
                ev_ref.synchronize();
                t_ref = Clock::now();
            }
        }

        // Parameters, with every output path replaced by a temporary next to it.
        params.assign(N, {});
        pending_files.clear();
        created_dirs.clear();
        static std::atomic<int> counter{0};
        for (std::size_t v = 0; v < N; ++v) {
            const Node& n = g.nodes[v];
            params[v] = n.params;
            if (!n.op || (opt.skip_sinks && n.is_sink())) continue;
            for (int k = 0; k < n.op->desc->n_params; ++k) {
                if (!(n.op->desc->params[k].flags & PF_PARAM_OUTPUT_PATH) || !n.params[std::size_t(k)].s) continue;
                fs::path final_path = n.params[std::size_t(k)].s;
                // Create missing folders one by one, remembering them to remove after a failure.
                std::vector<fs::path> missing;
                for (fs::path d = final_path.parent_path(); !d.empty() && !fs::exists(d); d = d.parent_path())
                    missing.push_back(d);
                for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
                    std::error_code ec;
                    if (!fs::create_directory(*it, ec) && ec)
                        throw RunError(where(int(v)) + ": cannot create the folder " + it->string() + ": " + ec.message());
                    created_dirs.push_back(*it);
                }
                fs::path tmp = final_path.parent_path() /
                               ("." + final_path.stem().string() + ".pixflow-tmp-" + std::to_string(getpid()) + "-" +
                                std::to_string(counter++) + final_path.extension().string());
                pending_files.emplace_back(tmp.string(), final_path.string());
                params[v][std::size_t(k)].s = strings.emplace_back(tmp.string()).c_str();
            }
        }
    }

    void free_all() {
        for (auto& node : outs)
            for (auto& b : node)
                if (b->mem != Mem::none && b->mem != Mem::external) release(*b, b->stream);
        for (auto& b : tbufs)
            if (b->mem != Mem::none) release(*b, b->stream);
        for (auto& s : streams) s.synchronize();
        if (borrowed_streams) { // back to the shared resources, idle, for the next run
            opt.resources->streams = std::move(streams);
            streams.clear();
            borrowed_streams = false;
        }
    }

    /// Reports every node and transfer that ran to opt.on_span (GPU times where they can be read).
    void report_spans() {
        auto gpu_time = [&](const Event& e) {
            return t_ref + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double, std::milli>(Event::elapsed_ms(ev_ref, e)));
        };
        for (int v : g.order) {
            const Node& n = g.nodes[std::size_t(v)];
            if (!n.op || !step_ran[std::size_t(v)]) continue;
            Span sp;
            sp.kind = "node";
            sp.node = v;
            sp.id = n.id;
            sp.op = n.op->desc->name;
            sp.backend = backend_name(p.backend[std::size_t(v)]);
            if (p.on_device(v)) {
                int s = p.stream[std::size_t(v)];
                sp.device = p.device;
                sp.stream = s;
                sp.stream_handle = streams[std::size_t(s)].get();
                try {
                    sp.start = gpu_time(ev_start[std::size_t(v)]);
                    sp.end = gpu_time(ev_end[std::size_t(v)]);
                } catch (const std::exception&) {
                    continue; // its events never completed (the run failed)
                }
            } else {
                sp.thread = cpu_thread[std::size_t(v)];
                sp.start = cpu_t0[std::size_t(v)];
                sp.end = cpu_t1[std::size_t(v)];
            }
            opt.on_span(sp);
        }
        for (std::size_t t = 0; t < T; ++t) {
            if (!step_ran[N + t]) continue;
            const Transfer& tr = p.transfers[t];
            Span sp;
            sp.kind = tr.to_device ? "upload" : "download";
            sp.node = tr.node;
            sp.id = g.nodes[std::size_t(tr.node)].id;
            sp.op = sp.kind;
            sp.backend = "cuda";
            sp.device = p.device;
            sp.stream = tr.stream;
            sp.stream_handle = streams[std::size_t(tr.stream)].get();
            try {
                sp.start = gpu_time(tr_start[t]);
                sp.end = gpu_time(tr_end[t]);
            } catch (const std::exception&) {
                continue;
            }
            opt.on_span(sp);
        }
    }
};

Executor::Executor(const Graph& g, const Plan& p) : m(std::make_unique<Impl>(g, p)) {}

Executor::~Executor() {
    try {
        m->free_all();
    } catch (...) {
    }
}

RunReport Executor::run(const RunOptions& opt) {
    Impl& I = *m;
    if (I.ran) I.free_all();
    I.ran = true;
    I.opt = opt;
    I.cancelled = false;
    I.first_error.clear();
    auto t0 = Clock::now();
    try {
        I.prepare();
    } catch (...) {
        for (auto it = I.created_dirs.rbegin(); it != I.created_dirs.rend(); ++it) {
            std::error_code ec;
            fs::remove(*it, ec);
        }
        throw;
    }

    // Steps: nodes 0..N-1, transfers N..N+T-1; each waits for the steps that feed it.
    std::size_t S = I.N + I.T;
    std::vector<std::vector<int>> succ(S);
    std::vector<std::atomic<int>> deps(S);
    for (std::size_t v = 0; v < I.N; ++v) {
        std::set<int> from;
        for (std::size_t i = 0; i < I.g.nodes[v].inputs.size(); ++i) {
            int t = I.p.input_transfer[v][i];
            from.insert(t >= 0 ? int(I.N) + t : I.g.nodes[v].inputs[i].node);
        }
        deps[v] = int(from.size());
        for (int f : from) succ[std::size_t(f)].push_back(int(v));
    }
    for (std::size_t t = 0; t < I.T; ++t) {
        deps[I.N + t] = 1;
        succ[std::size_t(I.p.transfers[t].node)].push_back(int(I.N + t));
    }

    tbb::task_group tg;
    std::function<void(int)> step = [&](int s) {
        if (I.cancelled) return;
        try {
            if (std::size_t(s) < I.N) I.run_node(s);
            else I.run_transfer(s - int(I.N));
        } catch (const std::exception& e) {
            I.fail((std::size_t(s) < I.N ? I.where(s) : std::string("transfer")) + ": " + e.what());
        }
        if (I.cancelled) return;
        for (int n : succ[std::size_t(s)])
            if (--deps[std::size_t(n)] == 0) tg.run([&step, n] { step(n); });
    };
    // Collect the initially ready steps before starting any: a started step may bring another
    // step's count to zero and start it, which this loop must then not start a second time.
    std::vector<int> ready;
    for (std::size_t s = 0; s < S; ++s)
        if (deps[s] == 0) ready.push_back(int(s));
    for (int s : ready) tg.run([&step, s] { step(s); });
    tg.wait();
    try {
        for (auto& s : I.streams) s.synchronize();
    } catch (const std::exception& e) {
        I.fail(std::string("while finishing device work: ") + e.what());
    }
    if (I.opt.on_span) {
        try {
            I.report_spans();
        } catch (const std::exception& e) {
            I.log(2, std::string("cannot report the run's spans: ") + e.what());
        }
    }

    RunReport r;
    r.pipeline = I.g.name;
    r.file = I.g.file;
    r.notes = I.p.notes;
    if (I.p.n_streams > 0) r.device = cuda_device_name(I.p.device);

    if (!I.first_error.empty()) {
        for (auto& [tmp, fin] : I.pending_files) {
            std::error_code ec;
            fs::remove(tmp, ec);
        }
        for (auto it = I.created_dirs.rbegin(); it != I.created_dirs.rend(); ++it) {
            std::error_code ec;
            fs::remove(*it, ec); // only if still empty
        }
        try {
            I.free_all();
        } catch (...) {
        }
        throw RunError(I.first_error);
    }
    for (auto& [tmp, fin] : I.pending_files) {
        std::error_code ec;
        if (!fs::exists(tmp, ec)) continue; // the op chose to write nothing
        fs::rename(tmp, fin, ec);
        if (ec) throw RunError("cannot move " + tmp + " to " + fin + ": " + ec.message());
        r.outputs.push_back(fin);
    }
    for (int v : I.g.order) {
        const Node& n = I.g.nodes[std::size_t(v)];
        if (!n.op) continue;
        NodeReport nr;
        nr.id = n.id;
        nr.op = n.op->desc->name;
        nr.backend = backend_name(I.p.backend[std::size_t(v)]);
        nr.ms = I.p.on_device(v) ? Event::elapsed_ms(I.ev_start[std::size_t(v)], I.ev_end[std::size_t(v)])
                                 : I.cpu_ms[std::size_t(v)];
        nr.metrics = I.metrics[std::size_t(v)];
        nr.replaced = n.replaced;
        r.nodes.push_back(nr);
    }
    r.h2d_count = I.h2d;
    r.d2h_count = I.d2h;
    r.h2d_bytes = double(I.h2d_bytes);
    r.d2h_bytes = double(I.d2h_bytes);
    r.peak_device_bytes = double(I.peak_device);
    r.wall_ms = ms_since(t0);
    return r;
}

HostImage Executor::fetch(int node, int port) {
    Buf& b = *m->outs[std::size_t(node)][std::size_t(port)];
    if (b.mem == Mem::none) throw RunError("internal: output of node was not kept");
    HostImage h;
    h.shape = b.im;
    std::size_t rb = row_bytes(b.im);
    h.bytes.resize(rb * std::size_t(b.im.height));
    if (b.mem == Mem::device) {
        set_device(m->p.device);
        const Stream& s = m->streams[std::size_t(b.stream)];
        copy_2d_async(h.bytes.data(), std::int64_t(rb), b.im.data, b.im.pitch, rb, b.im.height, s);
        s.synchronize();
    } else {
        for (int y = 0; y < b.im.height; ++y)
            std::memcpy(h.bytes.data() + std::size_t(y) * rb, static_cast<const char*>(b.im.data) + y * b.im.pitch, rb);
    }
    h.shape.data = nullptr;
    h.shape.device = PF_HOST;
    h.shape.pitch = std::int64_t(rb);
    return h;
}

std::vector<BenchRow> Executor::bench(int repeat, double device_bw, double host_bw) {
    Impl& I = *m;
    std::vector<BenchRow> rows;
    for (int v : I.g.order) {
        const Node& n = I.g.nodes[std::size_t(v)];
        if (!n.op || n.is_source() || n.is_sink()) continue;
        bool dev = I.p.on_device(v);
        std::vector<double> times;
        for (int k = 0; k < repeat + 2; ++k) { // two warm-up runs
            double ms;
            if (!I.launch(v)) throw RunError(I.first_error);
            if (dev) {
                I.ev_end[std::size_t(v)].synchronize();
                ms = Event::elapsed_ms(I.ev_start[std::size_t(v)], I.ev_end[std::size_t(v)]);
            } else {
                ms = I.cpu_ms[std::size_t(v)];
            }
            if (k >= 2) times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        BenchRow r;
        r.id = n.id;
        r.op = n.op->desc->name;
        r.backend = backend_name(I.p.backend[std::size_t(v)]);
        r.median_ms = times[times.size() / 2];
        for (std::size_t i = 0; i < n.inputs.size(); ++i) r.bytes += double(image_bytes(I.input_of(v, i)));
        for (const pf_image& o : n.outputs) r.bytes += double(image_bytes(o));
        r.gbps = r.bytes / (r.median_ms * 1e-3) / 1e9;
        double bw = dev ? device_bw : host_bw;
        r.floor_ms = r.bytes / bw * 1e3;
        r.x_floor = r.median_ms / r.floor_ms;
        rows.push_back(r);
    }
    return rows;
}

double measure_host_copy_bandwidth() {
    const std::size_t bytes = std::size_t(256) << 20;
    std::vector<char> a(bytes, 1), b(bytes, 0);
    std::vector<double> ms;
    for (int k = 0; k < 6; ++k) {
        auto t0 = Clock::now();
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, bytes, 1 << 20), [&](const auto& r) {
            std::memcpy(b.data() + r.begin(), a.data() + r.begin(), r.size());
        });
        if (k >= 1) ms.push_back(ms_since(t0));
    }
    std::sort(ms.begin(), ms.end());
    return 2.0 * double(bytes) / (ms[ms.size() / 2] * 1e-3);
}

nlohmann::json RunReport::to_json() const {
    nlohmann::json j;
    j["pipeline"] = pipeline;
    j["file"] = file;
    j["device"] = device.empty() ? nlohmann::json(nullptr) : nlohmann::json(device);
    j["wall_ms"] = wall_ms;
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : nodes) {
        nlohmann::json x{{"id", n.id}, {"op", n.op}, {"backend", n.backend}, {"ms", n.ms}};
        if (!n.metrics.empty()) x["metrics"] = n.metrics;
        if (!n.replaced.empty()) x["replaced"] = n.replaced;
        j["nodes"].push_back(x);
    }
    j["transfers"] = {{"h2d", {{"count", h2d_count}, {"bytes", h2d_bytes}}},
                      {"d2h", {{"count", d2h_count}, {"bytes", d2h_bytes}}}};
    j["peak_device_bytes"] = peak_device_bytes;
    j["notes"] = notes;
    j["outputs"] = outputs;
    return j;
}

std::string RunReport::table() const {
    std::ostringstream o;
    char line[256];
    std::snprintf(line, sizeof line, "%-16s %-18s %-7s %12s\n", "node", "op", "backend", "time ms");
    o << line;
    for (const auto& n : nodes) {
        std::snprintf(line, sizeof line, "%-16s %-18s %-7s %12.3f\n", n.id.c_str(), n.op.c_str(),
                      n.backend.c_str(), n.ms);
        o << line;
        if (!n.replaced.empty()) {
            std::string ids;
            for (const auto& r : n.replaced) ids += (ids.empty() ? "" : " + ") + r;
            o << "    fused: " << ids << "\n";
        }
        for (const auto& [k, v] : n.metrics) {
            std::snprintf(line, sizeof line, "    %s = %g\n", k.c_str(), v);
            o << line;
        }
    }
    std::snprintf(line, sizeof line,
                  "transfers: %d upload(s) %.2f MB, %d download(s) %.2f MB; peak device memory %.2f MB; wall %.3f ms\n",
                  h2d_count, h2d_bytes / 1e6, d2h_count, d2h_bytes / 1e6, peak_device_bytes / 1e6, wall_ms);
    o << line;
    return o.str();
}

} // namespace pixflow::host
