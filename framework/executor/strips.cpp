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
//
// Split over MPI ranks (ChainSplit, mpi/image.hpp): only this process's strips run; with halos
// exchanged, before node i + 1 reads node i's window the `halo` hook fills its rows that the
// neighbour ranks computed, and the output's rows go to `done` once they are on the host.
#include "executor/executor_impl.hpp"
#include "executor/launch.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
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
        if (rb * std::size_t(src.height) < (std::size_t(1) << 20))
            rows(0, src.height);
        else
            tbb::parallel_for(tbb::blocked_range<int>(0, src.height, 16),
                              [&](const tbb::blocked_range<int>& r) { rows(r.begin(), r.end()); });
        return;
    }
    PIXFLOW_ASSERT(s, "a copy between host and device without a stream");
    if (dst.device == src.device && src.device == s->device()) // within the stream's device
        copy_2d_device_async(dst.data, dst.pitch, src.data, src.pitch, rb, src.height, *s);
    else
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
            } catch (...) {}
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
    const auto t_start = Clock::now();
    const std::size_t m = c.nodes.size();
    const NodeId head = c.nodes.front(), tail = c.tail();
    const Node& hn = g.nodes[head];
    const Node& tn = g.nodes[tail];
    std::vector<char> dev(m), carried(m);
    for (std::size_t i = 0; i < m; ++i) {
        dev[i] = p.on_device(c.nodes[i]);
        carried[i] = row_access(g.nodes[c.nodes[i]]).kind == PF_ACCESS_CARRIED;
    }

    // 1. The chain's whole input: the producer's own buffer when the chain moves its rows across
    // itself (the transfer into the chain is absorbed), else what the first node would read.
    Buf* src = nullptr;
    const int in_t = hn.inputs.empty() ? -1 : p.input_transfer[head][0];
    const bool in_absorbed = in_t >= 0 && p.strips.is_into(in_t);
    if (!hn.inputs.empty())
        src = in_absorbed ? &buffers.out(hn.inputs[0].node, hn.inputs[0].port) : &buffers.input(head, 0);
    std::vector<int> out_t; // transfers out of the chain: all absorbed, the chain fills them
    for (std::size_t t = 0; t < p.transfers.size(); ++t)
        if (p.transfers[t].node == tail && !p.strips.is_into(int(t)))
            out_t.push_back(int(t)); // not those the next chain takes

    // The chain's stream: its CUDA nodes', else the stream of a transfer it makes itself.
    int cs = c.streams[0];
    if (cs < 0 && in_absorbed) cs = p.transfers[std::size_t(in_t)].stream;
    if (cs < 0 && !out_t.empty()) cs = p.transfers[std::size_t(out_t[0])].stream;
    const bool uses_device = cs >= 0;
    if (uses_device) set_device(p.device);
    const Stream* s0 = uses_device ? &streams[std::size_t(cs)] : nullptr;
    // Spread over G GPUs: strip k runs on gpus[k % G], alternating between that GPU's two streams.
    int G = uses_device ? std::max(1, int(c.gpus.size())) : 1;
    for (int j = 1; j < G; ++j)
        if (!spread_streams.count(c.gpus[std::size_t(j)])) {
            const int d = c.gpus[std::size_t(j)];
            std::array<Stream, 2> two{Stream(d), Stream(d)};
            spread_streams.emplace(d, std::move(two));
            set_device(p.device);
        }
    // Strip k's buffer set (section 3): k % sets, or, spread over GPUs, whichever set is free
    // first (strip_set, filled as strips enter the pipeline). Set w lies on GPU gpus[w % G]; the
    // sets of one GPU alternate between its two streams.
    std::vector<int> strip_set;
    auto set_of = [&](int k) { return strip_set.empty() ? k % std::max(1, c.sets * G) : strip_set[std::size_t(k)]; };
    auto gpu_of_set = [&](int w) { return G > 1 ? c.gpus[std::size_t(w % G)] : p.device; };
    auto gpu_of = [&](int k) { return gpu_of_set(set_of(k)); };
    auto stream_of = [&](int k) -> const Stream* {
        if (!uses_device) return nullptr;
        const int w = set_of(k);
        const int j = w % G, alt = G > 1 ? (w / G) % 2 : k % 2;
        if (j > 0) return &spread_streams.at(c.gpus[std::size_t(j)])[std::size_t(alt)];
        return c.streams[1] >= 0 && alt ? &streams[std::size_t(c.streams[1])] : s0;
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
            // pinned when it feeds an upload, as a whole-image node's output is (Buffers)
            buffers.alloc(own, tn.outputs[0], dev[m - 1], c.streams[0], !dev[m - 1] && buffers.feeds_upload(tail, 0));
            dests.push_back({&own, cs});
        }
        for (int t : out_t) {
            const Transfer& tr = p.transfers[std::size_t(t)];
            Buf& d = buffers.transfer(t);
            buffers.alloc(d, tn.outputs[0], tr.to_device, tr.stream, /*pinned=*/!tr.to_device);
            dests.push_back({&d, tr.stream});
        }
    }

    if (G > 1)
        for (const Dest& d : dests)
            if (!on_host(d.buf->im)) { // kept on the device (a caller's fetch): one GPU writes it
                signals.log(1, "strips: " + hn.id + " ... " + tn.id + " runs on GPU " + std::to_string(p.device) +
                                   " alone: its output stays on that device");
                G = 1;
                break;
            }

    // 3. Strip buffers, one set per strip in flight: windows (a carried node keeps at least two,
    // this strip's and the last one's) and copies of inputs from the other side; carried states.
    // A set is on one GPU: set w on gpus[w % G], with `sets` sets on each.
    const int nsets = std::max(1, c.sets) * G;
    const int nwin_carried = std::max(2, nsets);
    const bool two_streams = c.streams[1] >= 0;
    const bool pipelined = (c.n_stages > 1 || G > 1) && c.count() > 1;
    struct SpreadBuffers { // device buffers on the GPUs but the plan's own, freed in their order
        struct Owned {
            std::unique_ptr<Buf> buf;
            const Stream* stream; ///< the one that allocated it, on its GPU
            long long bytes;
        };
        std::vector<Owned> bufs;
        DeviceMemoryCounter* counter = nullptr;
        int home = 0;
        ~SpreadBuffers() {
            for (Owned& o : bufs) try {
                    set_device(o.stream->device());
                    device_free_async(o.buf->im.data, *o.stream);
                    counter->add(-o.bytes);
                } catch (...) {}
            if (!bufs.empty()) try {
                    set_device(home);
                } catch (...) {}
        }
    } spread_bufs{{}, &buffers.device_memory(), p.device};
    struct SpreadJoin { // on every way out: the other GPUs' work ends before their buffers go
        std::vector<const Stream*> streams;
        ~SpreadJoin() {
            for (const Stream* st : streams) try {
                    st->synchronize();
                } catch (...) {}
        }
    } spread_join;
    for (int j = 1; j < G; ++j)
        for (const Stream& st : spread_streams.at(c.gpus[std::size_t(j)])) spread_join.streams.push_back(&st);
    auto alloc_on = [&](const pf_image& shape, bool device, bool pinned, int w) -> Buf* {
        if (!device || G == 1 || w % G == 0) return temp.alloc(shape, device, pinned);
        const Stream& st = spread_streams.at(c.gpus[std::size_t(w % G)])[0];
        set_device(st.device());
        auto b = std::make_unique<Buf>();
        b->im = shape;
        b->im.device = st.device();
        b->im.pitch = std::int64_t((row_bytes(shape) + 255) / 256 * 256);
        const long long bytes = (long long)(b->im.pitch) * shape.height;
        b->im.data = device_alloc_async(std::size_t(std::max(1LL, bytes)), st);
        buffers.device_memory().add(bytes);
        b->mem = Mem::device;
        set_device(p.device);
        spread_bufs.bufs.push_back({std::move(b), &st, bytes});
        return spread_bufs.bufs.back().buf.get();
    };
    struct Member {
        std::vector<Buf*> win, stage;
        Buf* carry = nullptr;
        bool input_dev = false; ///< where its input rows come from
    };
    std::vector<Member> mb(m);
    for (std::size_t i = 0; i < m; ++i) {
        const Node& n = g.nodes[c.nodes[i]];
        // host memory the device copies to or from is pinned: a window the next node uploads or
        // that goes to a device output, and an input copy a download fills
        bool to_device = i + 1 < m ? bool(dev[i + 1]) : false;
        if (i + 1 == m)
            for (const Dest& d : dests) to_device |= !on_host(d.buf->im);
        if (!n.outputs.empty() && c.max_window[i] > 0) {
            pf_image shape = n.outputs[0];
            shape.height = c.max_window[i];
            const bool pin = uses_device && !dev[i] && to_device;
            for (int w = 0; w < (carried[i] ? nwin_carried : nsets); ++w)
                mb[i].win.push_back(alloc_on(shape, dev[i], pin, w));
        }
        const bool pinned = uses_device && !dev[i];
        if (!n.inputs.empty()) {
            mb[i].input_dev = i > 0 ? bool(dev[i - 1]) : !on_host(src->im);
            if (mb[i].input_dev != bool(dev[i]) && c.max_input[i] > 0) {
                pf_image shape = g.nodes[n.inputs[0].node].outputs[std::size_t(n.inputs[0].port)];
                shape.height = c.max_input[i];
                for (int w = 0; w < nsets; ++w) mb[i].stage.push_back(alloc_on(shape, dev[i], pinned, w));
            }
        }
        if (c.carry_bytes[i]) {
            PIXFLOW_ASSERT(c.carry_bytes[i] <= std::size_t(INT_MAX), "a carried state of more than 2 GiB");
            pf_image shape{sizeof(pf_image), int(c.carry_bytes[i]), 1, 1, PF_U8, PF_HOST, 0, nullptr};
            mb[i].carry = temp.alloc(shape, dev[i], false);
            if (dev[i])
                memset_async(mb[i].carry->im.data, 0, c.carry_bytes[i], *s0);
            else
                std::memset(mb[i].carry->im.data, 0, c.carry_bytes[i]);
        }
    }
    timings.chain_setup_ms[std::size_t(ci)] = ms_since(t_start); // allocations (pinning host memory is slow)
    Event fork;
    if (two_streams) { // the second stream starts after the allocations on the first
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
            } catch (...) {}
        }
    } join{s0, two_streams ? &streams[std::size_t(c.streams[1])] : nullptr};

    for (std::size_t i = 0; i < m; ++i) {
        const NodeId v = c.nodes[i];
        if (dev[i]) { // spread over GPUs: made on the strip's GPU as it enters (below)
            while (timings.strip_start[v].size() < std::size_t(c.count())) {
                timings.strip_start[v].emplace_back(G == 1);
                timings.strip_end[v].emplace_back(G == 1);
            }
            timings.strip_ran[v].assign(std::size_t(c.count()), 0);
        }
        if (timings.spans) timings.strip_cpu[v].assign(std::size_t(c.count()), {});
        if (timings.spans) timings.node_ran[v] = 1;
    }
    auto window = [&](std::size_t i, int k) {
        return mb[i].win[std::size_t(carried[i] ? k % nwin_carried : set_of(k))];
    };
    auto count_copy = [&](const pf_image& from, const pf_image& to) {
        if (on_host(from) == on_host(to)) return;
        long long bytes = (long long)(row_bytes(from) * std::size_t(from.height));
        if (on_host(from))
            ++timings.h2d, timings.h2d_bytes += bytes;
        else
            ++timings.d2h, timings.d2h_bytes += bytes;
    };

    // 4. The strips: all of them, or this process's range when the chain is split (ChainSplit).
    int k_first = 0, k_last = c.count();
    if (opt->split) std::tie(k_first, k_last) = opt->split->strips(ci);
    //
    // Node i's input rows in strip k: a view into its producer's rows; when the producer lies on
    // the other side of the bus, a copy of them in the node's staging buffer of the strip's set.
    auto input_view = [&](std::size_t i, int k) {
        const StripRows& r = c.strips[std::size_t(k)][i];
        const pf_image& from = i == 0 ? src->im : window(i - 1, k)->im;
        const int origin = i == 0 ? 0 : c.strips[std::size_t(k)][i - 1].win0;
        return rows_of(from, r.in0 - origin, r.in1 - r.in0);
    };
    auto staged = [&](std::size_t i, int k) {
        const StripRows& r = c.strips[std::size_t(k)][i];
        return rows_of(mb[i].stage[std::size_t(set_of(k))]->im, 0, r.in1 - r.in0);
    };
    auto crosses = [&](std::size_t i) {
        return !g.nodes[c.nodes[i]].inputs.empty() && mb[i].input_dev != bool(dev[i]);
    };
    auto copy_input = [&](std::size_t i, int k) {
        const pf_image view = input_view(i, k), to = staged(i, k);
        if (to.height <= 0) return;
        copy_rows(to, view, stream_of(k));
        count_copy(view, to);
    };
    // Pipelined, a host node's input rows on the device are downloaded by the stage before it,
    // right after that stage's work (so the download is not queued behind later strips), and the
    // host stage waits for this event only.
    std::vector<std::vector<Event>> input_ready(m);
    if (pipelined)
        for (std::size_t i = 1; i < m; ++i)
            if (crosses(i) && !dev[i])
                for (int w = 0; w < nsets; ++w) {
                    set_device(gpu_of_set(w));
                    input_ready[i].emplace_back(true, false);
                }
    auto wait_for = [](const Stream& s) { // this stream's work so far, not what is queued later
        Event e(true, false);
        e.record(s);
        e.synchronize();
    };

    // Node i in strip k; false when the run failed.
    auto run_node = [&](std::size_t i, int k) -> bool {
        const NodeId v = c.nodes[i];
        const Node& n = g.nodes[v];
        const StripRows& r = c.strips[std::size_t(k)][i];
        const Stream* s = stream_of(k);
        // split over processes: the rows of the node before that its neighbours computed
        if (opt->split && i > 0) {
            const StripRows& q = c.strips[std::size_t(k)][i - 1];
            if (q.win1 > q.win0) opt->split->halo(ci, int(i) - 1, k, rows_of(window(i - 1, k)->im, 0, q.win1 - q.win0));
        }
        // a carried node: the rows read again come from its last window
        if (carried[i] && k > k_first) {
            const StripRows& q = c.strips[std::size_t(k - 1)][i];
            const int kept1 = std::min(r.out0, q.win1);
            if (r.win0 < kept1)
                copy_rows(rows_of(window(i, k)->im, 0, kept1 - r.win0),
                          rows_of(window(i, k - 1)->im, r.win0 - q.win0, kept1 - r.win0), s);
        }
        if (opt->split && mb[i].carry && k == k_first)
            opt->split->carry_in(ci, int(i), mb[i].carry->im.data, c.carry_bytes[i]);
        const bool has_out = !n.outputs.empty();
        if (has_out ? r.out1 <= r.out0 : r.in1 <= r.in0) return true; // nothing new in this strip
        std::vector<pf_image> ins, outs;
        if (!n.inputs.empty()) {
            if (!crosses(i))
                ins.push_back(input_view(i, k));
            else {
                if (pipelined && i > 0 && !dev[i])
                    input_ready[i][std::size_t(set_of(k))].synchronize();
                else {
                    copy_input(i, k);
                    // a CPU node reads the rows now; unpipelined, a host window is rewritten by
                    // the next strip (pipelined, the strip's set is not reused before it ends)
                    if (!dev[i])
                        wait_for(*s);
                    else if (i > 0 && !pipelined)
                        s->synchronize();
                }
                ins.push_back(staged(i, k));
            }
        }
        if (has_out) outs.push_back(rows_of(window(i, k)->im, r.out0 - r.win0, r.out1 - r.out0));
        const int hin = n.inputs.empty() ? 0 : g.nodes[n.inputs[0].node].outputs[std::size_t(n.inputs[0].port)].height;
        const int hout = has_out ? n.outputs[0].height : hin;
        pf_strip strip{
            sizeof(pf_strip), k, c.count(), r.in0, hin, r.out0, hout, mb[i].carry ? mb[i].carry->im.data : nullptr,
            c.carry_bytes[i]};
        Launch l{v, n, files.params(g, v), ins, outs, dev[i] ? s : nullptr, backend_name(p.backend[v]), &strip};
        if (opt->on_node) opt->on_node(v, true);
        const bool ok = launch(l, signals, buffers.device_memory(), persistent, timings);
        if (opt->on_node) opt->on_node(v, false);
        if (ok && opt->split && mb[i].carry && k == k_last - 1)
            opt->split->carry_out(ci, int(i), mb[i].carry->im.data, c.carry_bytes[i]);
        return ok;
    };
    // The strip's own rows of the chain's output, into the whole outputs.
    auto finish_strip = [&](int k) {
        const StripRows& r = c.strips[std::size_t(k)][m - 1];
        if (dests.empty() || r.use1 <= r.use0) return;
        const Stream* s = stream_of(k);
        const pf_image from = rows_of(window(m - 1, k)->im, r.use0 - r.win0, r.use1 - r.use0);
        for (const Dest& d : dests) {
            const pf_image to = rows_of(d.buf->im, r.use0, r.use1 - r.use0);
            const Stream* ds = dev[m - 1] ? s : d.stream >= 0 ? &streams[std::size_t(d.stream)] : nullptr;
            copy_rows(to, from, ds);
            count_copy(from, to);
            if (!dev[m - 1] && !on_host(to)) ds->synchronize(); // the host window is rewritten next strip
        }
    };

    if (!pipelined) {
        for (int k = k_first; k < k_last; ++k) {
            if (signals.cancelled()) return;
            for (std::size_t i = 0; i < m; ++i)
                if (!run_node(i, k)) return;
            finish_strip(k);
        }
    } else {
        // A pipeline of the stages (runs of nodes on one side of the bus), one TBB filter each,
        // serial and in order: strip k enters stage s + 1 when stage s is done with it, while
        // stage s takes strip k + 1. At most `nsets` strips are in flight, each in its own set of
        // buffers; a set is taken again once the device work of its last strip has ended.
        std::vector<Event> set_done;
        if (uses_device) {
            for (int w = 0; w < nsets; ++w) {
                set_device(gpu_of_set(w));
                set_done.emplace_back(true, false);
            }
            set_device(p.device);
        }
        std::vector<std::size_t> first_of(std::size_t(c.n_stages) + 1, m);
        for (std::size_t i = m; i-- > 0;) first_of[std::size_t(c.stage[i])] = i;
        int next = k_first;
        // Spread over GPUs, with no carried node whose rows a later node reads (such a node keeps
        // its windows by strip number, which needs strips to leave in order): strips take free
        // sets and leave in any order.
        bool dynamic = G > 1;
        for (std::size_t i = 0; i + 1 < m; ++i) dynamic &= !carried[i];
        std::mutex free_mu;
        std::vector<int> free_sets;
        std::vector<char> set_used(std::size_t(nsets), 0);
        if (dynamic) {
            strip_set.assign(std::size_t(c.count()), 0);
            for (int w = 0; w < nsets; ++w) free_sets.push_back(w);
        }
        auto stage_body = [&](int st, int k) {
            if (signals.cancelled()) return;
            if (uses_device) set_device(gpu_of(k));
            const std::size_t i0 = first_of[std::size_t(st)], i1 = first_of[std::size_t(st) + 1];
            for (std::size_t i = i0; i < i1; ++i)
                if (!run_node(i, k)) return;
            if (i1 < m && crosses(i1) && !dev[i1]) { // the next stage's download, now
                copy_input(i1, k);
                input_ready[i1][std::size_t(set_of(k))].record(*stream_of(k));
            }
            if (i1 == m) finish_strip(k);
            // The set's device work ends here for this stage: recorded now, not after the host
            // stages behind it (the stream would by then hold later strips' work too, and the
            // set would wait for those). Host stages are done with it when the strip leaves.
            if (dev[i0]) set_done[std::size_t(set_of(k))].record(*stream_of(k));
        };
        auto filters = tbb::make_filter<void,
                                        int>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) -> int {
            if (next >= k_last || signals.cancelled()) {
                fc.stop();
                return 0;
            }
            const int k = next++;
            if (dynamic) { // the free set whose device work ended first, so the GPU that is ahead takes it
                std::lock_guard<std::mutex> lock(free_mu);
                PIXFLOW_ASSERT(!free_sets.empty(), "a strip entered with every buffer set taken");
                auto pick = free_sets.begin();
                for (auto it = free_sets.begin(); it != free_sets.end(); ++it)
                    if (set_done[std::size_t(*it)].ready()) {
                        pick = it;
                        break;
                    }
                strip_set[std::size_t(k)] = *pick;
                free_sets.erase(pick);
            }
            const int w = set_of(k);
            if (uses_device && (dynamic || k - nsets >= k_first)) set_done[std::size_t(w)].synchronize();
            if (G > 1 && w % G != 0 &&
                !set_used[std::size_t(w)]) { // a set's first strip waits for the allocations on its GPU's first stream
                set_device(gpu_of(k));
                Event e(true, false);
                e.record(spread_streams.at(gpu_of(k))[0]);
                e.wait_on(*stream_of(k));
            }
            set_used[std::size_t(w)] = 1;
            if (G > 1) { // this strip's timing events, on its GPU
                set_device(gpu_of(k));
                for (std::size_t i = 0; i < m; ++i)
                    if (dev[i]) {
                        timings.strip_start[c.nodes[i]][std::size_t(k)] = Event(true);
                        timings.strip_end[c.nodes[i]][std::size_t(k)] = Event(true);
                    }
            }
            stage_body(0, k);
            return k;
        });
        // A stage of host nodes without a carried state takes several strips at once (the rows
        // of different strips are independent); device stages and carried nodes take them in
        // order. Unless the sets are taken dynamically, the last filter is in order, so strips
        // leave in order: when strip k enters, strip k - nsets has left, and its set is free once
        // its device work has ended; dynamically, the last filter gives the strip's set back.
        for (int st = 1; st < c.n_stages; ++st) {
            bool parallel = true;
            for (std::size_t i = first_of[std::size_t(st)]; i < first_of[std::size_t(st) + 1]; ++i)
                parallel &= !dev[i] && !carried[i];
            filters = filters & tbb::make_filter<int, int>(parallel ? tbb::filter_mode::parallel
                                                                    : tbb::filter_mode::serial_in_order,
                                                           [&, st](int k) {
                                                               stage_body(st, k);
                                                               return k;
                                                           });
        }
        tbb::parallel_pipeline(std::size_t(nsets),
                               filters & tbb::make_filter<int, void>(dynamic ? tbb::filter_mode::parallel
                                                                             : tbb::filter_mode::serial_in_order,
                                                                     [&](int k) {
                                                                         if (!dynamic) return;
                                                                         std::lock_guard<std::mutex> lock(free_mu);
                                                                         free_sets.push_back(set_of(k));
                                                                     }));
        if (signals.cancelled()) return;
    }

    if (opt->split) {
        PIXFLOW_ASSERT(dests.size() <= 1, "a split chain with several outputs");
        if (uses_device) { // the ranks exchange the host rows the strips' downloads wrote
            s0->synchronize();
            if (two_streams) streams[std::size_t(c.streams[1])].synchronize();
        }
        const bool any = k_first < k_last;
        opt->split->done(ci, dests.empty() ? pf_image{} : dests[0].buf->im,
                         any ? c.strips[std::size_t(k_first)][m - 1].use0 : 0,
                         any ? c.strips[std::size_t(k_last - 1)][m - 1].use1 : 0);
    }

    // 5. The end: one stream again; the last node's end event orders its readers; the host waits
    // when host memory took part (a download must land, an uploaded buffer may be freed).
    for (int j = 1; j < G; ++j) // every GPU's work ends before s0's: its end event covers them
        for (const Stream& st : spread_streams.at(c.gpus[std::size_t(j)])) {
            set_device(st.device());
            Event e(true, false);
            e.record(st);
            set_device(p.device);
            e.wait_on(*s0);
        }
    if (G > 1) set_device(p.device);
    if (two_streams) {
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
            if (p.transfers[std::size_t(t)].stream != cs)
                streams[std::size_t(p.transfers[std::size_t(t)].stream)].synchronize();
    }
    for (NodeId v : c.nodes) timings.launched[v] = 1;
    timings.chain_ms[std::size_t(ci)] = ms_since(t_start);
    if (src) {
        NodeId u = hn.inputs[0].node;
        const bool keep = in_t >= 0 && !in_absorbed ? opt->keep_buffers : keeps(u);
        const Event* done = uses_device && !on_host(src->im) && dev[m - 1] ? &timings.end[tail] : nullptr;
        buffers.consumed(*src, cs, done, keep);
    }
}

} // namespace pixflow::host
