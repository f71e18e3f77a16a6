// executor/ steps: what one step of a run does. A node step allocates the node's outputs (or
// points them at caller memory), makes its stream wait for inputs made on other streams, launches
// the operator and releases every input it was the last reader of. A transfer step copies one
// image across, and the host waits for the copy: a CPU consumer is about to read a download, and
// an upload's host buffer may be freed right after.
#include "executor/executor_impl.hpp"
#include "executor/launch.hpp"

namespace pixflow::host {

void Executor::Impl::step(int s) {
    if (signals.cancelled()) return;
    try {
        if (schedule.is_node(s))
            run_node(schedule.node_of(s));
        else
            run_transfer(schedule.transfer_of(s));
    } catch (const UserError& e) {
        for (const Diagnostic& d : e.diagnostics()) signals.fail(RunSignals::Fault::user, d);
    } catch (const std::exception& e) {
        NodeId v = schedule.is_node(s) ? schedule.node_of(s) : p.transfers[std::size_t(schedule.transfer_of(s))].node;
        const Node& n = g.nodes[v];
        std::string context = schedule.is_node(s) ? launch_context(n, backend_name(p.backend[v]))
                              : p.transfers[std::size_t(schedule.transfer_of(s))].to_device ? "upload of its output"
                                                                                            : "download of its output";
        signals.fail(RunSignals::Fault::internal, Diagnostic{n.loc, n.id, e.what(), context});
    }
}

bool Executor::Impl::launch_node(NodeId v) {
    const Node& n = g.nodes[v];
    std::vector<pf_image>& ins = in_views[v];
    std::vector<pf_image>& outs = out_views[v];
    ins.clear();
    outs.clear();
    for (std::size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(buffers.input(v, i).im);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) outs.push_back(buffers.out(v, int(k)).im);
    bool dev = p.on_device(v);
    Launch l{v,
             n,
             files.params(g, v),
             ins,
             outs,
             dev ? &streams[std::size_t(p.stream[v])] : nullptr,
             backend_name(p.backend[v])};
    l.collective = opt && opt->split && !dev ? opt->split->collective(v) : nullptr; // opt: none in bench
    const bool ok = launch(l, signals, buffers.device_memory(), persistent, timings);
    if (l.collective) opt->split->node_done(v, outs, ok);
    return ok;
}

void Executor::Impl::run_node(NodeId v) {
    const Node& n = g.nodes[v];
    if (!n.op || external[v]) return; // caller memory: already there
    if (p.strips.in_chain(v)) {       // a streamed chain runs as a whole, at its last node
        int c = p.strips.chain_of[v];
        if (p.strips.chains[std::size_t(c)].tail() == v) run_chain(c);
        return;
    }
    bool dev = p.on_device(v);
    int s = p.stream[v];
    auto release_inputs = [&](const Event* done) {
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
            int t = p.input_transfer[v][i];
            bool keep = t >= 0 ? opt->keep_buffers : keeps(n.inputs[i].node);
            buffers.consumed(buffers.input(v, i), s, done, keep);
        }
    };
    if (opt->skip_sinks && n.is_sink()) {
        release_inputs(nullptr);
        return;
    }
    if (dev) {
        set_device(p.device);
        // Inputs made on another stream: this stream waits for them; the host does not.
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
            NodeId u = n.inputs[i].node;
            if (p.input_transfer[v][i] < 0 && p.on_device(u) && p.stream[u] != s && timings.launched[u])
                timings.end[u].wait_on(streams[std::size_t(s)]);
        }
    }
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        Buf& b = buffers.out(v, int(k));
        auto into = opt->write_into.find({v, int(k)});
        if (into != opt->write_into.end())
            Buffers::set_external(b, into->second);
        else
            buffers.alloc(b, n.outputs[k], dev, s, buffers.feeds_upload(v, int(k)));
    }
    if (timings.spans) timings.node_ran[v] = 1;
    if (opt->on_node) opt->on_node(v, true);
    launch_node(v);
    if (opt->on_node) opt->on_node(v, false);
    release_inputs(dev ? &timings.end[v] : nullptr);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        Buf& b = buffers.out(v, int(k));
        if (b.remaining == 0 && !keeps(v)) buffers.release(b, s);
    }
}

void Executor::Impl::run_transfer(int t) {
    const Transfer& tr = p.transfers[std::size_t(t)];
    Buf& src = buffers.out(tr.node, tr.port);
    if (!p.strips.absorbed.empty() && p.strips.absorbed[std::size_t(t)]) {
        // a streamed chain copies these rows itself; out of its last node, the chain filled this
        // transfer's buffer, and the transfer only counts as one reader of the node's own
        // (into a chain: that chain reads the node's own buffer, and counts as its reader itself)
        if (p.strips.in_chain(tr.node) && !p.strips.is_into(t))
            buffers.consumed(src, tr.stream, nullptr, keeps(tr.node));
        return;
    }
    Buf& dst = buffers.transfer(t);
    set_device(p.device);
    const Stream& s = streams[std::size_t(tr.stream)];
    if (!tr.to_device && p.stream[tr.node] != tr.stream && timings.launched[tr.node]) timings.end[tr.node].wait_on(s);
    buffers.alloc(dst, src.im, tr.to_device, tr.stream, /*pinned=*/!tr.to_device);
    if (timings.spans) timings.transfer_start[std::size_t(t)].record(s);
    copy_2d_async(dst.im.data, dst.im.pitch, src.im.data, src.im.pitch, row_bytes(src.im), src.im.height, s);
    if (timings.spans) timings.transfer_ran[std::size_t(t)] = 1;
    Event& done = timings.spans ? timings.transfer_end[std::size_t(t)] : transfer_done[std::size_t(t)];
    done.record(s);
    done.synchronize(); // the host buffer must be complete (download) or reusable (upload)
    std::size_t bytes = image_bytes(src.im);
    if (tr.to_device)
        ++timings.h2d, timings.h2d_bytes += (long long)bytes;
    else
        ++timings.d2h, timings.d2h_bytes += (long long)bytes;
    buffers.consumed(src, tr.stream, nullptr, keeps(tr.node));
}

} // namespace pixflow::host
