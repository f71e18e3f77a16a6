// executor/ bench: `pixflow bench` times each compute node on its inputs in place, after the run
// that made them, against the memory floor (its bytes at the measured copy bandwidth).
#include "executor/executor_impl.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

namespace pixflow::host {

std::vector<BenchRow> Executor::bench(int repeat, double device_bw, double host_bw) {
    Impl& I = *m;
    std::vector<BenchRow> rows;
    for (NodeId v : I.g.order) {
        const Node& n = I.g.nodes[v];
        if (!n.op || n.is_source() || n.is_sink() || I.external[v]) continue;
        bool dev = I.p.on_device(v);
        if (dev) set_device(I.p.device);
        std::vector<double> times;
        for (int k = 0; k < repeat + 2; ++k) { // two warm-up runs
            if (!I.launch_node(v)) I.signals.rethrow();
            double ms;
            if (dev) {
                I.timings.end[v].synchronize();
                ms = Event::elapsed_ms(I.timings.start[v], I.timings.end[v]);
            } else {
                ms = I.timings.cpu_ms[v];
            }
            if (k >= 2) times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        BenchRow r;
        r.id = n.id;
        r.op = n.op->desc->name;
        r.backend = backend_name(I.p.backend[v]);
        r.median_ms = times[times.size() / 2];
        for (std::size_t i = 0; i < n.inputs.size(); ++i) r.bytes += double(image_bytes(I.buffers.input(v, i).im));
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
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, bytes, 1 << 20),
                          [&](const auto& r) { std::memcpy(b.data() + r.begin(), a.data() + r.begin(), r.size()); });
        if (k >= 1) ms.push_back(ms_since(t0));
    }
    std::sort(ms.begin(), ms.end());
    return 2.0 * double(bytes) / (ms[ms.size() / 2] * 1e-3);
}

} // namespace pixflow::host
