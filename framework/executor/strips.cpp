// executor/ strips: a streamed chain (planner/strips.hpp) runs as one step, at its last node.
//
// For each strip, top to bottom, each node of the chain runs once on views of the rows the plan
// gives it: its input rows are a view into its producer's buffer (the chain's whole input, or the
// strip buffer of the node before), or, when the producer lies on the other side of the bus, a
// copy of just those rows; its output rows go into a strip buffer of its own (its "window"). The
// last node's rows of the strip are then copied into the chain's whole outputs: its own buffer
// when something reads it in place, and the buffer of each transfer out of it. So only the
// chain's input and output exist whole; a strip of a CUDA chain is uploaded once, stays on the
// device through every node, and is downloaded once.
//
// Streams: every CUDA node and copy of the chain runs on the chain's stream, so a strip's work is
// ordered without the host waiting. A chain of CUDA nodes only, without a carried node, alternates
// its strips between two streams with a set of strip buffers each: strip k+1's upload overlaps
// strip k's kernels and strip k-1's download. The host waits only where it must: before a CPU node
// reads rows copied from the device, after rows of a host strip buffer were sent to the device
// (the buffer is rewritten by the next strip), and once at the end when host memory was read or
// written by the device.
//
// A carried node (integral) keeps two windows, this strip's and the last one's, and its state
// (pf_strip.carry, zero-filled before strip 0); rows that the next node reads again are copied
// from the last window rather than computed twice.
#include "executor/executor_impl.hpp"
#include "executor/launch.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <climits>
#include <cstring>
#include <memory>
#include <tuple>

namespace pixflow::host {
namespace {

/// Rows [first, first + count) of im, as an image of their own.
pf_image rows_of(const pf_image& im, int first, int count) {
    pf_image v = im;
    v.data = static_cast<char*>(im.data) + std::int64_t(first) * im.pitch;
    v.height = count;
    return v;
}

bool on_host(const pf_image& im) { return im.device == PF_HOST; }

/// Copies `src` (all its rows) to `dst`: memcpy on the host, else ordered on `s`.
void copy_rows(const pf_image& dst, const pf_image& src, const Stream* s) {
    const std::size_t rb = row_bytes(src);
    if (src.height <= 0 || rb == 0) return;
    if (on_host(dst) && on_host(src)) {
        auto rows = [&](int y0, int y1) {
            for (int y = y0; y < y1; ++y)
                std::memcpy(static_cast<char*>(dst.data) + std::int64_t(y) * dst.pitch,
                            static_cast<const char*>(src.data) + std::int64_t(y) * src.pitch, rb);
        };
        if (rb * std::size_t(src.height) < (std::size_t(1) << 20)) rows(0, src.height);
        else
            tbb::parallel_for(tbb::blocked_range<int>(0, src.height, 16),
                              [&](const tbb::blocked_range<int>& r) { rows(r.begin(), r.end()); });
        return;
    }
    PIXFLOW_ASSERT(s, "a copy between host and device without a stream");
    copy_2d_async(dst.data, dst.pitch, src.data, src.pitch, rb, src.height, *s);
}

/// The strip buffers of one chain run, released when it ends (device ones in the order of
/// `stream`, after the work queued there), also when it fails.
class ChainBuffers {
  public:
    ChainBuffers(Buffers& b, int stream) : m_buffers(b), m_stream(stream) {}
    ChainBuffers(const ChainBuffers&) = delete;
    ChainBuffers& operator=(const ChainBuffers&) = delete;
    ~ChainBuffers() {
        for (auto& b : m_bufs) try {
                m_buffers.release(*b, m_stream);
            } catch (...) {
            }
    }
    Buf* alloc(const pf_image& shape, bool device, bool pinned) {
        m_bufs.push_back(std::make_unique<Buf>());
        m_buffers.alloc(*m_bufs.back(), shape, device, m_stream, pinned);
        return m_bufs.back().get();
    }

  private:
    Buffers& m_buffers;
    int m_stream;
    std::vector<std::unique_ptr<Buf>> m_bufs;
};

} // namespace

void Executor::Impl::run_chain(int ci) {
    const StripChain& c = p.strips.chains[std::size_t(ci)];
    const std::size_t m = c.nodes.size();
    const NodeId head = c.nodes.front(), tail = c.tail();
    const Node& hn = g.nodes[head];
    const Node& tn = g.nodes[tail];
    std::vector<char> dev(m), carried(m);
    for (std::size_t i = 0; i < m; ++i) {
        dev[i] = p.on_device(c.nodes[i]);
        carried[i] = row_access(g.nodes[c.nodes[i]]).kind == PF_ACCESS_CARRIED;
    }
    const int nsets = c.streams[1] >= 0 ? 2 : 1;

    // 1. The chain's whole input: the producer's own buffer when the chain moves its rows across
    // itself (the transfer into the chain is absorbed), else what the first node would read.
    Buf* src = nullptr;
    const int in_t = hn.inputs.empty() ? -1 : p.input_transfer[head][0];
    const bool in_absorbed = in_t >= 0 && p.strips.absorbed[std::size_t(in_t)];
    if (!hn.inputs.empty()) src = in_absorbed ? &buffers.out(hn.inputs[0].node, hn.inputs[0].port) : &buffers.input(head, 0);
    std::vector<int> out_t; // transfers out of the chain: all absorbed, the chain fills them
    for (std::size_t t = 0; t < p.transfers.size(); ++t)
        if (p.transfers[t].node == tail) out_t.push_back(int(t));

    // The chain's stream: its CUDA nodes', else the stream of a transfer it makes itself.
    int cs = c.streams[0];
    if (cs < 0 && in_absorbed) cs = p.transfers[std::size_t(in_t)].stream;
    if (cs < 0 && !out_t.empty()) cs = p.transfers[std::size_t(out_t[0])].stream;
    const bool uses_device = cs >= 0;
    if (uses_device) set_device(p.device);
    const Stream* s0 = uses_device ? &streams[std::size_t(cs)] : nullptr;
    auto stream_of = [&](int k) -> const Stream* {
        if (!uses_device) return nullptr;
        return nsets == 2 && k % 2 ? &streams[std::size_t(c.streams[1])] : s0;
    };
    if (src && uses_device) { // a device input made on another stream: ours waits for it on the device
        NodeId u = hn.inputs[0].node;
        if (p.on_device(u) && timings.launched[u] && p.stream[u] != cs) timings.end[u].wait_on(*s0);
    }
    if (dev[m - 1]) timings.start[tail].record(*s0);

    // 2. The chain's whole outputs: the last node's own buffer when it is read in place (or kept,
    // or caller memory), and the buffer of every transfer out of it.
    ChainBuffers temp(buffers, cs);
    struct Dest {
        Buf* buf;
        int stream; ///< for a copy from a host window to the device: the transfer's stream
    };
    std::vector<Dest> dests;
    if (!tn.outputs.empty()) {
        Buf& own = buffers.out(tail, 0);
        auto into = opt->write_into.find({tail, 0});
        if (into != opt->write_into.end()) {
            Buffers::set_external(own, into->second);
            dests.push_back({&own, cs});
        } else if (own.remaining > int(out_t.size()) || keeps(tail)) {
            buffers.alloc(own, tn.outputs[0], dev[m - 1], c.streams[0], false);
            dests.push_back({&own, cs});
        }
        for (int t : out_t) {
            const Transfer& tr = p.transfers[std::size_t(t)];
            Buf& d = buffers.transfer(t);
            buffers.alloc(d, tn.outputs[0], tr.to_device, tr.stream, /*pinned=*/!tr.to_device);
            dests.push_back({&d, tr.stream});
        }
    }

    // 3. Strip buffers: windows, copies of inputs from the other side, carried states.
    struct Member {
        Buf* win[2] = {nullptr, nullptr};
        Buf* stage[2] = {nullptr, nullptr};
        Buf* carry = nullptr;
        bool input_dev = false; ///< where its input rows come from
    };
    std::vector<Member> mb(m);
    for (std::size_t i = 0; i < m; ++i) {
        const Node& n = g.nodes[c.nodes[i]];
        const bool pinned = uses_device && !dev[i];
        if (!n.outputs.empty() && c.max_window[i] > 0) {
            pf_image shape = n.outputs[0];
            shape.height = c.max_window[i];
            for (int w = 0; w < (carried[i] ? 2 : nsets); ++w) mb[i].win[w] = temp.alloc(shape, dev[i], pinned);
        }
        if (!n.inputs.empty()) {
            mb[i].input_dev = i > 0 ? bool(dev[i - 1]) : !on_host(src->im);
            if (mb[i].input_dev != bool(dev[i]) && c.max_input[i] > 0) {
                pf_image shape = g.nodes[n.inputs[0].node].outputs[std::size_t(n.inputs[0].port)];
                shape.height = c.max_input[i];
                for (int w = 0; w < nsets; ++w) mb[i].stage[w] = temp.alloc(shape, dev[i], pinned);
            }
        }
        if (c.carry_bytes[i]) {
            PIXFLOW_ASSERT(c.carry_bytes[i] <= std::size_t(INT_MAX), "a carried state of more than 2 GiB");
            pf_image shape{sizeof(pf_image), int(c.carry_bytes[i]), 1, 1, PF_U8, PF_HOST, 0, nullptr};
            mb[i].carry = temp.alloc(shape, dev[i], false);
            if (dev[i]) memset_async(mb[i].carry->im.data, 0, c.carry_bytes[i], *s0);
            else std::memset(mb[i].carry->im.data, 0, c.carry_bytes[i]);
        }
    }
    Event fork;
    if (nsets == 2) { // the second stream starts after the allocations on the first
        fork = Event(true, false);
        fork.record(*s0);
        fork.wait_on(streams[std::size_t(c.streams[1])]);
    }
    struct JoinGuard { // on every way out: the second stream's work ends before the first's frees
        const Stream* s0;
        const Stream* s1;
        ~JoinGuard() {
            if (!s1) return;
            try {
                Event e(true, false);
                e.record(*s1);
                e.wait_on(*s0);
            } catch (...) {
            }
        }
    } join{s0, nsets == 2 ? &streams[std::size_t(c.streams[1])] : nullptr};

    for (std::size_t i = 0; i < m; ++i) {
        const NodeId v = c.nodes[i];
        if (dev[i])
            while (timings.strip_start[v].size() < std::size_t(c.count())) {
                timings.strip_start[v].emplace_back(true);
                timings.strip_end[v].emplace_back(true);
            }
        if (timings.spans) timings.strip_cpu[v].assign(std::size_t(c.count()), {});
        if (timings.spans) timings.node_ran[v] = 1;
    }
    auto window = [&](std::size_t i, int k) { return mb[i].win[carried[i] ? k % 2 : (nsets == 2 ? k % 2 : 0)]; };
    auto count_copy = [&](const pf_image& from, const pf_image& to) {
        if (on_host(from) == on_host(to)) return;
        long long bytes = (long long)(row_bytes(from) * std::size_t(from.height));
        if (on_host(from)) ++timings.h2d, timings.h2d_bytes += bytes;
        else ++timings.d2h, timings.d2h_bytes += bytes;
    };

    // 4. The strips: all of them, or this process's range when the chain is split (ChainSplit).
    std::vector<pf_image> ins, outs;
    int k_first = 0, k_last = c.count();
    if (opt->split) std::tie(k_first, k_last) = opt->split->strips(ci);
    for (int k = k_first; k < k_last; ++k) {
        if (signals.cancelled()) return;
        const Stream* s = stream_of(k);
        const int set = nsets == 2 ? k % 2 : 0;
        for (std::size_t i = 0; i < m; ++i) {
            const NodeId v = c.nodes[i];
            const Node& n = g.nodes[v];
            const StripRows& r = c.strips[std::size_t(k)][i];
            // a carried node: the rows read again come from its last window
            if (carried[i] && k > k_first) {
                const StripRows& q = c.strips[std::size_t(k - 1)][i];
                const int kept1 = std::min(r.out0, q.win1);
                if (r.win0 < kept1)
                    copy_rows(rows_of(window(i, k)->im, 0, kept1 - r.win0),
                              rows_of(window(i, k - 1)->im, r.win0 - q.win0, kept1 - r.win0), s);
            }
            if (opt->split && mb[i].carry && k == k_first) opt->split->carry_in(ci, int(i), mb[i].carry->im.data, c.carry_bytes[i]);
            const bool has_out = !n.outputs.empty();
            if (has_out ? r.out1 <= r.out0 : r.in1 <= r.in0) continue; // nothing new in this strip
            ins.clear();
            outs.clear();
            if (!n.inputs.empty()) {
                const pf_image& from = i == 0 ? src->im : window(i - 1, k)->im;
                const int origin = i == 0 ? 0 : c.strips[std::size_t(k)][i - 1].win0;
                pf_image view = rows_of(from, r.in0 - origin, r.in1 - r.in0);
                if (mb[i].input_dev != bool(dev[i])) {
                    pf_image to = rows_of(mb[i].stage[set]->im, 0, r.in1 - r.in0);
                    copy_rows(to, view, s);
                    count_copy(view, to);
                    // a CPU node reads the rows now; a host window is rewritten by the next strip
                    if (!dev[i] || i > 0) s->synchronize();
                    view = to;
                }
                ins.push_back(view);
            }
            if (has_out) outs.push_back(rows_of(window(i, k)->im, r.out0 - r.win0, r.out1 - r.out0));
            const int hin = n.inputs.empty() ? 0 : g.nodes[n.inputs[0].node].outputs[std::size_t(n.inputs[0].port)].height;
            const int hout = has_out ? n.outputs[0].height : hin;
            pf_strip strip{sizeof(pf_strip), k, c.count(), r.in0, hin, r.out0, hout,
                           mb[i].carry ? mb[i].carry->im.data : nullptr, c.carry_bytes[i]};
            Launch l{v, n, files.params(g, v), ins, outs, dev[i] ? s : nullptr, backend_name(p.backend[v]), &strip};
            if (opt->on_node) opt->on_node(v, true);
            const bool ok = launch(l, signals, buffers.device_memory(), timings);
            if (opt->on_node) opt->on_node(v, false);
            if (!ok) return;
            if (opt->split && mb[i].carry && k == k_last - 1) opt->split->carry_out(ci, int(i), mb[i].carry->im.data, c.carry_bytes[i]);
        }
        // the strip's own rows of the chain's output, into the whole outputs
        const StripRows& r = c.strips[std::size_t(k)][m - 1];
        if (dests.empty() || r.use1 <= r.use0) continue;
        const pf_image from = rows_of(window(m - 1, k)->im, r.use0 - r.win0, r.use1 - r.use0);
        for (const Dest& d : dests) {
            const pf_image to = rows_of(d.buf->im, r.use0, r.use1 - r.use0);
            const Stream* ds = dev[m - 1] ? s : d.stream >= 0 ? &streams[std::size_t(d.stream)] : nullptr;
            copy_rows(to, from, ds);
            count_copy(from, to);
            if (!dev[m - 1] && !on_host(to)) ds->synchronize(); // the host window is rewritten next strip
        }
    }

    if (opt->split) {
        PIXFLOW_ASSERT(dests.size() <= 1, "a split chain with several outputs");
        const bool any = k_first < k_last;
        opt->split->done(ci, dests.empty() ? pf_image{} : dests[0].buf->im,
                         any ? c.strips[std::size_t(k_first)][m - 1].use0 : 0,
                         any ? c.strips[std::size_t(k_last - 1)][m - 1].use1 : 0);
    }

    // 5. The end: one stream again; the last node's end event orders its readers; the host waits
    // when host memory took part (a download must land, an uploaded buffer may be freed).
    if (nsets == 2) {
        join.s1 = nullptr;
        Event e(true, false);
        e.record(streams[std::size_t(c.streams[1])]);
        e.wait_on(*s0);
    }
    if (dev[m - 1]) timings.end[tail].record(*s0);
    bool host_involved = false;
    for (std::size_t i = 0; i < m; ++i) host_involved |= !dev[i];
    for (const Dest& d : dests) host_involved |= on_host(d.buf->im);
    if (src) host_involved |= on_host(src->im);
    if (uses_device && host_involved) {
        s0->synchronize();
        for (int t : out_t) // copies into an upload's buffer ran on the transfer's stream
            if (p.transfers[std::size_t(t)].stream != cs) streams[std::size_t(p.transfers[std::size_t(t)].stream)].synchronize();
    }
    for (NodeId v : c.nodes) timings.launched[v] = 1;
    if (src) {
        NodeId u = hn.inputs[0].node;
        const bool keep = in_t >= 0 && !in_absorbed ? opt->keep_buffers : keeps(u);
        const Event* done = uses_device && !on_host(src->im) && dev[m - 1] ? &timings.end[tail] : nullptr;
        buffers.consumed(*src, cs, done, keep);
    }
}

} // namespace pixflow::host
