// executor/ the run: set up once per Executor, then per run: streams, buffers, output files and
// timings made ready, the schedule's loop over the steps, the device work finished (or, with a
// caller's stream, joined into it), and the outputs committed or rolled back. See
// executor_impl.hpp for the other parts.
#include "executor/executor_impl.hpp"
#include "executor/report.hpp"

#include <cstring>

namespace pixflow::host {

Executor::Impl::Impl(const Graph& g_, const Plan& p_) : g(g_), p(p_), buffers(g_, p_, streams), schedule(g_, p_) {
    std::size_t n = g.nodes.size();
    keep.assign(n, 0);
    external.assign(n, 0);
    in_views.resize(n);
    out_views.resize(n);
    timings.cpu_ms.assign(n, 0);
    timings.launched.assign(n, 0);
    timings.start.resize(n);
    timings.end.resize(n);
    timings.strips.assign(n, 0);
    timings.scratch.assign(n, 0);
    timings.strip_start.resize(n);
    timings.strip_end.resize(n);
    timings.strip_ran.resize(n);
    timings.strip_cpu.resize(n);
    // CUDA events belong to the device current when they are made, and a batch's thread builds
    // executors for every GPU of --devices: make them on the plan's device, or recording them on
    // its streams fails (cudaErrorInvalidResourceHandle; seen on 2 GPUs, 2026-11-27).
    bool device_set = false;
    auto on_plan_device = [&] {
        if (!device_set) set_device(p.device);
        device_set = true;
    };
    if (p.n_streams > 0) on_plan_device();
    for (NodeId v : g.nodes.ids())
        if (p.on_device(v) && g.nodes[v].op) {
            on_plan_device();
            timings.start[v] = Event(true);
            timings.end[v] = Event(true);
        }
    if (p.n_streams > 0)
        for (std::size_t t = 0; t < p.transfers.size(); ++t) transfer_done.emplace_back(true, false);
}

/// The plan's streams: borrowed from o.resources or created, once; the caller's stream stands in
/// for stream 0 while one is given.
void Executor::Impl::take_streams(const RunOptions& o) {
    if (p.n_streams == 0) return;
    set_device(p.device);
    if (!streams_ready) {
        if (o.resources) {
            PIXFLOW_ASSERT(o.resources->device == p.device,
                           "run resources of device " + std::to_string(o.resources->device) +
                               " given to a plan for device " + std::to_string(p.device));
            streams = std::move(o.resources->streams);
            lent = o.resources;
        }
        while (streams.size() < std::size_t(p.n_streams)) streams.emplace_back(p.device);
        for (int s = 1; s < p.n_streams; ++s) join.emplace_back(true, false);
        fork = Event(true, false);
        device_name = cuda_device_name(p.device);
        streams_ready = true;
    }
    void* current = parked.get() ? streams[0].get() : nullptr; // the caller's stream in use, if any
    if (o.stream != current) {
        streams[0].synchronize(); // nothing of the last run may still run on a stream being swapped out
        if (!current) parked = std::move(streams[0]);
        streams[0] = o.stream ? Stream::borrow(o.stream, p.device) : std::move(parked);
    }
    if (o.stream && p.n_streams > 1) { // every other stream starts after the caller's work so far
        fork.record(streams[0]);
        for (int s = 1; s < p.n_streams; ++s) fork.wait_on(streams[std::size_t(s)]);
    }
}

void Executor::Impl::start(const RunOptions& o) {
    opt = &o;
    take_streams(o);
    buffers.free_all(); // what the last run kept, in stream order
    buffers.set_pinned_cache(o.resources ? o.resources->pinned : nullptr);
    buffers.reset_counts();
    buffers.device_memory().reset_peak();
    buffers.host_memory().reset_peak();
    PIXFLOW_ASSERT(!(o.keep_buffers && p.strips.active()),
                   "keep_buffers needs every node's whole output, but the plan streams chains in strips");
    std::fill(timings.strips.begin(), timings.strips.end(), 0);
    std::fill(timings.scratch.begin(), timings.scratch.end(), std::size_t(0));
    timings.chain_ms.assign(p.strips.chains.size(), 0.0);
    timings.chain_setup_ms.assign(p.strips.chains.size(), 0.0);
    for (const StripChain& c : p.strips.chains)
        for (NodeId v : c.nodes) timings.cpu_ms[v] = 0; // the sum of its strips
    std::fill(keep.begin(), keep.end(), char(0));
    std::fill(external.begin(), external.end(), char(0));
    for (NodeId v : o.keep) keep[v] = 1;
    for (NodeId v : g.nodes.ids())
        if (g.nodes[v].op && !g.nodes[v].outputs.empty() && !g.nodes[v].is_sink()) {
            bool read = false;
            for (std::size_t k = 0; k < g.nodes[v].outputs.size(); ++k) read |= buffers.out(v, int(k)).remaining > 0;
            keep[v] |= !read; // nobody reads it: it is a result
        }
    for (const auto& [v, im] : o.externals) {
        external[v] = 1;
        Buffers::set_external(buffers.out(v, 0), im);
    }
    signals.reset(g.nodes.size(), o.log);
    std::fill(timings.launched.begin(), timings.launched.end(), char(0));
    timings.h2d = timings.d2h = 0;
    timings.h2d_bytes = timings.d2h_bytes = 0;
    timings.spans = bool(o.on_span);
    if (timings.spans) {
        std::size_t n = g.nodes.size(), t = p.transfers.size();
        timings.cpu_t0.assign(n, {});
        timings.cpu_t1.assign(n, {});
        timings.cpu_thread.assign(n, {});
        timings.node_ran.assign(n, 0);
        timings.transfer_ran.assign(t, 0);
        if (timings.transfer_start.size() != t)
            for (std::size_t k = timings.transfer_start.size(); k < t; ++k) {
                timings.transfer_start.emplace_back(true);
                timings.transfer_end.emplace_back(true);
            }
        if (!streams.empty()) {
            timings.ref = Event(true);
            timings.ref.record(streams[0]);
            timings.ref.synchronize();
            timings.t_ref = Clock::now();
        }
    }
    files.prepare(g, o.skip_sinks, o.files);
}

/// Without a caller's stream: waits for every stream. With one: makes it wait for the others.
void Executor::Impl::finish_device_work() {
    if (streams.empty()) return;
    if (!opt->stream || signals.failed()) {
        for (auto& s : streams) s.synchronize();
        device_done = true;
        return;
    }
    for (int s = 1; s < p.n_streams; ++s) {
        join[std::size_t(s - 1)].record(streams[std::size_t(s)]);
        join[std::size_t(s - 1)].wait_on(streams[0]);
    }
    device_done = false;
}

void Executor::Impl::give_back_streams() {
    if (!lent) return;
    if (parked.get()) streams[0] = std::move(parked);
    for (auto& s : streams) s.synchronize();
    lent->streams = std::move(streams);
    streams.clear();
    lent = nullptr;
}

Executor::Executor(const Graph& g, const Plan& p) : m(std::make_unique<Impl>(g, p)) {}

Executor::~Executor() {
    try {
        for (auto& s : m->streams) s.synchronize();
        m->buffers.free_all();
        for (auto& s : m->streams) s.synchronize();
        m->give_back_streams();
    } catch (...) {}
}

RunReport Executor::run(const RunOptions& opt) {
    Impl& I = *m;
    auto t0 = Clock::now();
    I.start(opt);
    I.schedule.run([&I](int s) { I.step(s); }, I.signals.cancelled_flag());
    try {
        I.finish_device_work();
    } catch (const std::exception& e) {
        I.signals.fail(RunSignals::Fault::internal,
                       Diagnostic{{}, {}, std::string("while finishing device work: ") + e.what(), {}});
    }
    if (opt.on_span) {
        try {
            report_spans(I.g, I.p, I.timings, I.streams, opt.on_span);
        } catch (const std::exception& e) {
            I.signals.log(2, std::string("cannot report the run's spans: ") + e.what());
        }
    }
    if (I.signals.failed()) {
        I.files.rollback();
        try {
            for (auto& s : I.streams) s.synchronize();
            I.buffers.free_all();
        } catch (...) {}
        I.opt = nullptr;
        I.signals.rethrow();
    }
    RunReport r = make_report(I.g, I.p, I.timings, I.signals, I.device_name, double(I.buffers.device_memory().peak()),
                              I.device_done);
    r.peak_host_bytes = double(I.buffers.host_memory().peak());
    r.outputs = I.files.commit();
    r.wall_ms = ms_since(t0);
    I.opt = nullptr;
    return r;
}

void Executor::device_times(RunReport& r) { fill_device_times(r, m->g, m->p, m->timings); }

const pf_image& Executor::output(NodeId node, int port) const {
    const Buf& b = m->buffers.out(node, port);
    PIXFLOW_ASSERT(b.mem != Mem::none, "the output of node '" + m->g.nodes[node].id + "' was not kept");
    return b.im;
}

bool Executor::kept(NodeId node, int port) const { return m->buffers.out(node, port).mem != Mem::none; }

const Stream& Executor::final_stream() const {
    PIXFLOW_ASSERT(!m->streams.empty(), "a plan without streams has no final stream");
    return m->streams[0];
}

bool Executor::can_write_into(NodeId node, const pf_image& dest) const {
    auto addr = reinterpret_cast<std::uintptr_t>(dest.data);
    std::size_t rb = row_bytes(dest);
    if (m->p.on_device(node))
        return dest.device == m->p.device && addr % 256 == 0 && dest.pitch % 256 == 0 && std::size_t(dest.pitch) >= rb;
    return dest.device == PF_HOST && addr % 64 == 0 && std::size_t(dest.pitch) == rb;
}

HostImage Executor::fetch(NodeId node, int port) {
    const pf_image& im = output(node, port);
    const Buf& b = m->buffers.out(node, port);
    HostImage h;
    h.shape = im;
    std::size_t rb = row_bytes(im);
    h.bytes.resize(rb * std::size_t(im.height));
    if (im.device != PF_HOST) {
        set_device(m->p.device);
        const Stream& s = m->streams[std::size_t(b.stream >= 0 ? b.stream : 0)];
        copy_2d_async(h.bytes.data(), std::int64_t(rb), im.data, im.pitch, rb, im.height, s);
        s.synchronize();
    } else {
        for (int y = 0; y < im.height; ++y)
            std::memcpy(h.bytes.data() + std::size_t(y) * rb, static_cast<const char*>(im.data) + y * im.pitch, rb);
    }
    h.shape.data = nullptr;
    h.shape.device = PF_HOST;
    h.shape.pitch = std::int64_t(rb);
    return h;
}

} // namespace pixflow::host
