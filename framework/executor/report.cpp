// executor/ report: per-node times and metrics, transfers, peak device memory; spans for traces.
#include "executor/report.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace pixflow::host {

namespace {
/// A CUDA node of a streamed chain: the sum of its strips' GPU times.
double strip_ms(const Timings& t, NodeId v) {
    double ms = 0;
    for (std::size_t k = 0; k < t.strip_ran[v].size(); ++k)
        if (t.strip_ran[v][k]) ms += Event::elapsed_ms(t.strip_start[v][k], t.strip_end[v][k]);
    return ms;
}
} // namespace

RunReport make_report(const Graph& g, const Plan& p, const Timings& t, const RunSignals& run, const std::string& device,
                      double peak_device_bytes, bool device_done) {
    RunReport r;
    r.pipeline = g.name;
    r.file = g.file;
    r.notes = p.notes;
    for (const auto& w : p.warnings) r.warnings.push_back(w.str());
    r.device = device;
    for (NodeId v : g.order) {
        const Node& n = g.nodes[v];
        if (!n.op) continue;
        NodeReport& nr = r.nodes.emplace_back();
        nr.id = n.id;
        nr.op = n.op->desc->name;
        nr.backend = backend_name(p.backend[v]);
        nr.strips = t.strips[v];
        nr.scratch_bytes = double(t.scratch[v]);
        if (!p.on_device(v))
            nr.ms = t.cpu_ms[v];
        else if (t.strips[v] > 0)
            nr.ms = device_done ? strip_ms(t, v) : std::numeric_limits<double>::quiet_NaN();
        else if (!t.launched[v])
            nr.ms = 0; // bound memory, or the run failed before it
        else
            nr.ms = device_done ? Event::elapsed_ms(t.start[v], t.end[v]) : std::numeric_limits<double>::quiet_NaN();
        nr.metrics = run.metrics(v);
        nr.replaced = n.replaced;
    }
    r.h2d_count = t.h2d;
    r.d2h_count = t.d2h;
    r.h2d_bytes = double(t.h2d_bytes);
    r.d2h_bytes = double(t.d2h_bytes);
    r.peak_device_bytes = peak_device_bytes;
    for (const StripChain& c : p.strips.chains) {
        StripReport sr;
        for (NodeId v : c.nodes) sr.nodes.push_back(g.nodes[v].id);
        sr.count = c.count();
        sr.rows = c.rows;
        sr.gpus = c.gpus;
        const std::size_t ci = r.strips.size();
        if (ci < t.chain_ms.size()) sr.ms = t.chain_ms[ci], sr.setup_ms = t.chain_setup_ms[ci];
        r.strips.push_back(std::move(sr));
    }
    return r;
}

void fill_device_times(RunReport& r, const Graph& g, const Plan& p, const Timings& t) {
    std::size_t k = 0;
    for (NodeId v : g.order) {
        if (!g.nodes[v].op) continue;
        NodeReport& nr = r.nodes[k++];
        if (p.on_device(v) && t.launched[v] && std::isnan(nr.ms)) {
            if (t.strips[v] > 0) {
                for (std::size_t k = 0; k < t.strip_ran[v].size(); ++k)
                    if (t.strip_ran[v][k]) t.strip_end[v][k].synchronize();
                nr.ms = strip_ms(t, v);
                continue;
            }
            t.end[v].synchronize();
            nr.ms = Event::elapsed_ms(t.start[v], t.end[v]);
        }
    }
}

void report_spans(const Graph& g, const Plan& p, const Timings& t, const std::vector<Stream>& streams,
                  const std::function<void(const Span&)>& on_span) {
    auto gpu_time = [&](const Event& e) {
        return t.t_ref + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double, std::milli>(Event::elapsed_ms(t.ref, e)));
    };
    for (NodeId v : g.order) {
        const Node& n = g.nodes[v];
        if (!n.op || !t.node_ran[v]) continue;
        if (t.strips[v] > 0) { // a streamed node: one span per strip
            const StripChain* c = p.strips.in_chain(v) ? &p.strips.chains[std::size_t(p.strips.chain_of[v])] : nullptr;
            const int count = c ? c->count() : 0;
            for (int k = 0; k < count; ++k) {
                Span sp;
                sp.kind = "node";
                sp.node = v;
                sp.id = n.id + " strip " + std::to_string(k + 1) + "/" + std::to_string(count);
                sp.op = n.op->desc->name;
                sp.backend = backend_name(p.backend[v]);
                if (p.on_device(v)) {
                    if (std::size_t(k) >= t.strip_ran[v].size() || !t.strip_ran[v][std::size_t(k)]) continue;
                    sp.device = p.device;
                    sp.stream = c->streams[1] >= 0 && k % 2 ? c->streams[1] : c->streams[0]; // strips alternate
                    sp.stream_handle = streams[std::size_t(sp.stream)].get();
                    try {
                        sp.start = gpu_time(t.strip_start[v][std::size_t(k)]);
                        sp.end = gpu_time(t.strip_end[v][std::size_t(k)]);
                    } catch (const std::exception&) {
                        continue; // a strip that did not run (the run failed)
                    }
                } else {
                    if (std::size_t(k) >= t.strip_cpu[v].size() ||
                        t.strip_cpu[v][std::size_t(k)].thread == std::thread::id())
                        continue;
                    sp.thread = t.strip_cpu[v][std::size_t(k)].thread;
                    sp.start = t.strip_cpu[v][std::size_t(k)].t0;
                    sp.end = t.strip_cpu[v][std::size_t(k)].t1;
                }
                on_span(sp);
            }
            continue;
        }
        Span sp;
        sp.kind = "node";
        sp.node = v;
        sp.id = n.id;
        sp.op = n.op->desc->name;
        sp.backend = backend_name(p.backend[v]);
        if (p.on_device(v)) {
            int s = p.stream[v];
            sp.device = p.device;
            sp.stream = s;
            sp.stream_handle = streams[std::size_t(s)].get();
            try {
                sp.start = gpu_time(t.start[v]);
                sp.end = gpu_time(t.end[v]);
            } catch (const std::exception&) {
                continue; // its events never completed (the run failed)
            }
        } else {
            sp.thread = t.cpu_thread[v];
            sp.start = t.cpu_t0[v];
            sp.end = t.cpu_t1[v];
        }
        on_span(sp);
    }
    for (std::size_t k = 0; k < p.transfers.size(); ++k) {
        if (!t.transfer_ran[k]) continue;
        const Transfer& tr = p.transfers[k];
        Span sp;
        sp.kind = tr.to_device ? "upload" : "download";
        sp.node = tr.node;
        sp.id = g.nodes[tr.node].id;
        sp.op = sp.kind;
        sp.backend = "cuda";
        sp.device = p.device;
        sp.stream = tr.stream;
        sp.stream_handle = streams[std::size_t(tr.stream)].get();
        try {
            sp.start = gpu_time(t.transfer_start[k]);
            sp.end = gpu_time(t.transfer_end[k]);
        } catch (const std::exception&) { continue; }
        on_span(sp);
    }
}

nlohmann::json report_json(const RunReport& r) {
    nlohmann::json j;
    j["pipeline"] = r.pipeline;
    j["file"] = r.file;
    j["device"] = r.device.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.device);
    j["wall_ms"] = r.wall_ms;
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : r.nodes) {
        nlohmann::json x{{"id", n.id}, {"op", n.op}, {"backend", n.backend}, {"ms", n.ms}};
        if (!n.metrics.empty()) x["metrics"] = n.metrics;
        if (!n.replaced.empty()) x["replaced"] = n.replaced;
        if (n.strips > 0) x["strips"] = n.strips;
        if (n.scratch_bytes > 0) x["scratch_bytes"] = n.scratch_bytes;
        j["nodes"].push_back(x);
    }
    j["strips"] = nlohmann::json::array();
    for (const auto& s : r.strips) {
        nlohmann::json x{
            {"nodes", s.nodes}, {"count", s.count}, {"rows", s.rows}, {"ms", s.ms}, {"setup_ms", s.setup_ms}};
        if (!s.gpus.empty()) x["gpus"] = s.gpus;
        j["strips"].push_back(x);
    }
    j["peak_host_bytes"] = r.peak_host_bytes;
    j["transfers"] = {{"h2d", {{"count", r.h2d_count}, {"bytes", r.h2d_bytes}}},
                      {"d2h", {{"count", r.d2h_count}, {"bytes", r.d2h_bytes}}}};
    j["peak_device_bytes"] = r.peak_device_bytes;
    j["notes"] = r.notes;
    j["warnings"] = r.warnings;
    j["outputs"] = r.outputs;
    return j;
}

} // namespace pixflow::host

namespace pixflow {

// Paths and operators' metric names need not be UTF-8: an invalid byte becomes U+FFFD.
std::string RunReport::to_json() const {
    return host::report_json(*this).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RunReport::table() const {
    std::ostringstream o;
    char line[256];
    std::snprintf(line, sizeof line, "%-16s %-18s %-7s %12s\n", "node", "op", "backend", "time ms");
    o << line;
    for (const auto& n : nodes) {
        std::snprintf(line, sizeof line, "%-16s %-18s %-7s %12.3f\n", n.id.c_str(), n.op.c_str(), n.backend.c_str(),
                      n.ms);
        o << line;
        if (!n.replaced.empty()) {
            std::string ids;
            for (const auto& r : n.replaced) ids += (ids.empty() ? "" : " + ") + r;
            o << "    fused: " << ids << "\n";
        }
        if (n.scratch_bytes > 0) {
            std::snprintf(line, sizeof line, "    scratch: %.2f MB\n", n.scratch_bytes / 1e6);
            o << line;
        }
        for (const auto& [k, v] : n.metrics) {
            std::snprintf(line, sizeof line, "    %s = %g\n", k.c_str(), v);
            o << line;
        }
    }
    for (const auto& s : strips) {
        std::string ids;
        for (const auto& id : s.nodes) ids += (ids.empty() ? "" : " -> ") + id;
        o << "strips: " << ids << ": " << s.count << (s.count == 1 ? " strip of " : " strips of ") << s.rows
          << " rows\n";
    }
    std::snprintf(line, sizeof line,
                  "transfers: %d upload(s) %.2f MB, %d download(s) %.2f MB; peak device memory %.2f MB; peak host "
                  "memory %.2f MB; wall %.3f ms\n",
                  h2d_count, h2d_bytes / 1e6, d2h_count, d2h_bytes / 1e6, peak_device_bytes / 1e6,
                  peak_host_bytes / 1e6, wall_ms);
    o << line;
    return o.str();
}

} // namespace pixflow
