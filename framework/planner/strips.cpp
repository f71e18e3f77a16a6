// planner/ strips: chains, the rows of every strip, the memory estimate and the budget check
// (see strips.hpp for the model).
#include "planner/strips.hpp"

#include "loader/checked_size.hpp"
#include "planner/plan.hpp"

#include <pixflow/image.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

namespace pixflow::host {

RowAccess row_access(const Node& n) {
    RowAccess a;
    if (!n.op || !n.op->access) return a;
    const pf_access_desc& d = *n.op->access;
    a.kind = pf_access_kind(d.kind);
    if (a.kind == PF_ACCESS_STENCIL) a.halo = d.halo;
    if (a.kind == PF_ACCESS_BLOCKS) {
        a.in_rows = d.in_rows;
        a.out_rows = d.out_rows;
    }
    return a;
}

bool has_whole_reason(const pf_access_desc* a) {
    return a && a->struct_size >= offsetof(pf_access_desc, whole_reason) + sizeof(a->whole_reason) && a->whole_reason;
}

std::string access_text(const pf_access_desc* a) {
    if (has_whole_reason(a)) {
        pf_access_desc plain = *a;
        plain.whole_reason = nullptr;
        return access_text(&plain) + ", or whole image where its parameters say so";
    }
    if (!a) return "whole image";
    switch (a->kind) {
    case PF_ACCESS_POINTWISE: return "pointwise";
    case PF_ACCESS_STENCIL: return "stencil, halo " + std::to_string(a->halo) + (a->halo == 1 ? " row" : " rows");
    case PF_ACCESS_BLOCKS:
        return "blocks of " + std::to_string(a->in_rows) + " -> " + std::to_string(a->out_rows) +
               (a->out_rows == 1 ? " row" : " rows");
    case PF_ACCESS_CARRIED: return "carried (strips in order, with a state)";
    default: return "whole image";
    }
}

std::string bytes_text(double b) {
    char buf[64];
    if (b >= double(1ull << 30))
        std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
    else if (b >= double(1 << 20))
        std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1 << 20));
    else if (b >= 1024)
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
    else
        std::snprintf(buf, sizeof buf, "%.0f B", b);
    return buf;
}

/// The most scratch memory one run call of node n takes, host and device (abi.h,
/// pf_scratch_bytes_fn): on the CUDA side when `cuda`, with its images' shapes, the first input's
/// and output's heights replaced by `in_rows` and `out_rows` when they are >= 0 (a strip).
std::array<std::size_t, 2> node_scratch(const Graph& g, const Node& n, bool cuda, int in_rows, int out_rows) {
    if (!n.op || !n.op->scratch) return {0, 0};
    std::vector<pf_image> ins, outs(n.outputs.begin(), n.outputs.end());
    for (const auto& in : n.inputs) ins.push_back(g.nodes[in.node].outputs[std::size_t(in.port)]);
    for (pf_image& im : ins) im.data = nullptr;
    for (pf_image& im : outs) im.data = nullptr;
    if (in_rows >= 0 && !ins.empty()) ins[0].height = in_rows;
    if (out_rows >= 0 && !outs.empty()) outs[0].height = out_rows;
    std::size_t host = 0, device = 0;
    n.op->scratch->bytes(n.params.data(), n.op->desc->n_params, ins.data(), int32_t(ins.size()), outs.data(),
                         int32_t(outs.size()), cuda ? 1 : 0, &host, &device);
    return {host, device};
}

namespace {

int input_height(const Graph& g, const Node& n) {
    if (n.inputs.empty()) return 0;
    return g.nodes[n.inputs[0].node].outputs[std::size_t(n.inputs[0].port)].height;
}
int output_height(const Graph& g, const Node& n) {
    return n.outputs.empty() ? input_height(g, n) : n.outputs[0].height;
}

/// The output height node n's infer gives for an input of `h` rows (its other input shapes as
/// they are), or nothing when it refuses that height or changes the width.
std::optional<int> infer_height(const Graph& g, const Node& n, int h) {
    const pf_op_desc& d = *n.op->desc;
    std::vector<pf_image> ins;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        pf_image s = g.nodes[n.inputs[i].node].outputs[std::size_t(n.inputs[i].port)];
        if (i == 0) s.height = h;
        ins.push_back(s);
    }
    std::vector<pf_image> outs(std::size_t(d.n_outputs), pf_image{sizeof(pf_image), 0, 0, 0, 0, PF_HOST, 0, nullptr});
    char err[512] = {0};
    int32_t st = d.infer(n.params.data(), d.n_params, ins.data(), int32_t(ins.size()), outs.data(), d.n_outputs, err,
                         sizeof err);
    if (st != PF_OK || outs.empty() || outs[0].width != n.outputs[0].width || outs[0].height < 0) return std::nullopt;
    return outs[0].height;
}

/// Why node n cannot be part of a chain, or "" when it can; for a blocks operator, also the index
/// of its last block: the band from that block to the end is the last strip's (maxpool2x2's odd
/// last row, dct8x8's partial block and idct8x8's marker rows belong to it). Found by asking infer,
/// from the block holding the last row upwards, which last band gives the rest of the output.
std::string not_streamable(const Graph& g, const Node& n, int& last_block) {
    last_block = 0;
    if (!n.op) return "it is an image handed in by the caller";
    const RowAccess a = row_access(n);
    const std::string op = n.op->desc->name;
    if (a.kind == PF_ACCESS_WHOLE) return "op " + op + " runs on whole images only (it declares no strip access)";
    if (has_whole_reason(n.op->access)) { // ABI 1.3: this node, with its parameters, is whole-image
        std::vector<pf_image> ins;
        for (const auto& in : n.inputs) ins.push_back(g.nodes[in.node].outputs[std::size_t(in.port)]);
        char why[512] = {0};
        if (n.op->access->whole_reason(n.params.data(), n.op->desc->n_params, ins.data(), int32_t(ins.size()),
                                       n.outputs.data(), int32_t(n.outputs.size()), why, sizeof why) != 0)
            return "op " + op + " " + (why[0] ? std::string(why) : std::string("runs on whole images here"));
    }
    if (n.inputs.size() > 1) return "op " + op + " has " + std::to_string(n.inputs.size()) + " inputs; strips take one";
    if (n.outputs.size() > 1)
        return "op " + op + " has " + std::to_string(n.outputs.size()) + " outputs; strips take one";
    if (n.inputs.empty() && n.outputs.empty()) return "op " + op + " has no images";
    const int hin = input_height(g, n), hout = output_height(g, n);
    if (a.kind != PF_ACCESS_BLOCKS) {
        if (!n.inputs.empty() && hout != hin)
            return "op " + op + " declares " + access_text(n.op->access) + " access but makes " + std::to_string(hout) +
                   " rows of " + std::to_string(hin);
        return "";
    }
    if (n.outputs.empty()) return "op " + op + " declares blocks but has no output";
    const int k = a.in_rows, m = a.out_rows;
    for (int j = (hin - 1) / k; j >= 1 && last_block == 0; --j) {
        auto h = infer_height(g, n, hin - j * k);
        if (h && *h >= 1 && std::int64_t(j) * m + *h == hout) last_block = j;
    }
    if (last_block >= 1) {
        auto h = infer_height(g, n, k);
        if (!h || *h != m)
            return "op " + op + " declares blocks of " + std::to_string(k) + " -> " + std::to_string(m) +
                   " rows but its infer makes " + (h ? std::to_string(*h) : std::string("no image")) + " of " +
                   std::to_string(k) + " rows";
    }
    return "";
}

int lcm_capped(int a, int b) {
    long long l = std::lcm((long long)a, (long long)b);
    return l > 4096 ? a : int(l);
}

/// Strips align to this many rows of the chain's last output, so that no block is computed twice.
int chain_alignment(const Graph& g, const StripChain& c) {
    int align = 1;
    for (NodeId v : c.nodes) {
        RowAccess a = row_access(g.nodes[v]);
        if (a.kind == PF_ACCESS_BLOCKS) align = lcm_capped(lcm_capped(align, a.in_rows), a.out_rows);
    }
    return align;
}

// ---- the memory estimate ------------------------------------------------------------------------

std::size_t buffer_bytes(const pf_image& im, bool device, std::size_t rows) {
    std::size_t rb = checked_row_bytes(im).value_or(max_buffer_bytes);
    if (device) rb = checked_round_up(rb, 256).value_or(max_buffer_bytes);
    return checked_mul(rb, rows).value_or(max_buffer_bytes);
}

/// One step of the estimate that went over a budget: what was in memory.
struct Overrun {
    NodeId node; ///< the node that ran (a chain: its last node)
    bool device = false;
    std::size_t total = 0, strips = 0, scratch = 0; ///< scratch: the node's (a chain: its strips'), in total
    struct Image {
        NodeId node;
        int port;
        std::size_t bytes;
    };
    std::vector<Image> live; ///< whole images in memory, largest first
};

/// The peak of the run's buffers, host and device apart, when the steps run one by one in
/// topological order, each buffer freed after its last reader (as the executor does). Chains
/// that stream count their strip buffers while they run, and no whole image between their nodes.
class Estimate {
  public:
    Estimate(const Graph& g, const Plan& p, const StripPlan& sp) : m_g(g), m_p(p), m_sp(sp) {}

    std::size_t peak[2] = {0, 0};
    std::optional<Overrun> over;
    /// Per chain: the whole images in memory while it runs (its strips not counted), per side.
    std::vector<std::array<std::size_t, 2>> around_chain;

    void run(const std::size_t budget[2]) {
        const Graph& g = m_g;
        const Plan& p = m_p;
        std::size_t N = g.nodes.size();
        m_outs.assign(N, {});
        around_chain.assign(m_sp.chains.size(), std::array<std::size_t, 2>{0, 0});
        for (NodeId v : g.nodes.ids()) {
            const Node& n = g.nodes[v];
            for (std::size_t k = 0; k < n.outputs.size(); ++k) {
                Buf b;
                b.node = v;
                b.port = int(k);
                b.device = p.on_device(v);
                b.bytes = n.op ? buffer_bytes(n.outputs[k], b.device, std::size_t(n.outputs[k].height)) : 0;
                m_outs[v.index()].push_back(b);
            }
        }
        for (NodeId v : g.nodes.ids())
            for (std::size_t i = 0; i < g.nodes[v].inputs.size(); ++i)
                if (p.input_transfer[v][i] < 0) ++out(g.nodes[v].inputs[i].node, g.nodes[v].inputs[i].port).remaining;
        m_transfers.assign(p.transfers.size(), {});
        for (std::size_t t = 0; t < p.transfers.size(); ++t) {
            const Transfer& tr = p.transfers[t];
            ++out(tr.node, tr.port).remaining;
            Buf& b = m_transfers[t];
            b.node = tr.node;
            b.port = tr.port;
            b.device = tr.to_device;
            const pf_image& im = g.nodes[tr.node].outputs[std::size_t(tr.port)];
            b.bytes = buffer_bytes(im, b.device, std::size_t(im.height));
            b.remaining = int(tr.consumers.size());
        }
        m_from.assign(N, {});
        for (std::size_t t = 0; t < p.transfers.size(); ++t) m_from[p.transfers[t].node.index()].push_back(int(t));
        for (NodeId v : g.order) {
            const Node& n = g.nodes[v];
            if (!n.op) continue;
            int c = m_sp.in_chain(v) ? m_sp.chain_of[v] : -1;
            if (c >= 0 && m_sp.chains[std::size_t(c)].tail() != v) continue; // the chain runs at its last node
            if (c >= 0)
                run_chain(std::size_t(c), budget);
            else
                run_node(v, budget);
            for (int t : m_from[v.index()]) run_transfer(t, budget);
        }
    }

  private:
    struct Buf {
        NodeId node;
        int port = 0;
        bool device = false, live = false;
        std::size_t bytes = 0;
        int remaining = 0;
    };
    Buf& out(NodeId v, int port) { return m_outs[v.index()][std::size_t(port)]; }
    bool absorbed(int t) const { return !m_sp.absorbed.empty() && m_sp.absorbed[std::size_t(t)]; }

    void alloc(Buf& b) {
        if (b.live) return;
        b.live = true;
        m_live[b.device] += b.bytes;
    }
    void consumed(Buf& b) {
        if (--b.remaining <= 0 && b.live) {
            b.live = false;
            m_live[b.device] -= b.bytes;
        }
    }
    /// The input buffer node v reads at input i.
    Buf& input(NodeId v, std::size_t i) {
        int t = m_p.input_transfer[v][i];
        const auto& in = m_g.nodes[v].inputs[i];
        return t >= 0 ? m_transfers[std::size_t(t)] : out(in.node, in.port);
    }
    /// After a step's allocations: the peaks, and the first step over a budget. `extra`: memory
    /// besides the whole images (a chain's strip buffers and scratch, a node's scratch), of which
    /// `scratch` is scratch.
    void check(NodeId v, const std::size_t extra[2], const std::size_t scratch[2], const std::size_t budget[2]) {
        for (int d = 0; d < 2; ++d) {
            std::size_t total = m_live[d] + extra[d];
            peak[d] = std::max(peak[d], total);
            if (budget[d] && total > budget[d] && !over) {
                Overrun o;
                o.node = v;
                o.device = d == 1;
                o.total = total;
                o.strips = extra[d] - scratch[d];
                o.scratch = scratch[d];
                for (const auto& node : m_outs)
                    for (const Buf& b : node)
                        if (b.live && b.device == bool(d)) o.live.push_back({b.node, b.port, b.bytes});
                for (const Buf& b : m_transfers)
                    if (b.live && b.device == bool(d)) o.live.push_back({b.node, b.port, b.bytes});
                std::stable_sort(o.live.begin(), o.live.end(), [](auto& a, auto& b) { return a.bytes > b.bytes; });
                over = std::move(o);
            }
        }
    }
    void run_node(NodeId v, const std::size_t budget[2]) {
        const Node& n = m_g.nodes[v];
        for (auto& b : m_outs[v.index()]) alloc(b);
        const auto sc = node_scratch(m_g, n, m_p.on_device(v));
        const std::size_t scratch[2] = {sc[0], sc[1]};
        check(v, scratch, scratch, budget);
        for (std::size_t i = 0; i < n.inputs.size(); ++i) consumed(input(v, i));
        release_unread(v);
    }
    /// Outputs nobody reads are results, kept; a sink's are dropped.
    void release_unread(NodeId v) {
        for (auto& b : m_outs[v.index()])
            if (b.remaining <= 0 && m_g.nodes[v].is_sink() && b.live) {
                b.live = false;
                m_live[b.device] -= b.bytes;
            }
    }
    void run_transfer(int t, const std::size_t budget[2]) {
        const Transfer& tr = m_p.transfers[std::size_t(t)];
        Buf& src = out(tr.node, tr.port);
        if (absorbed(t)) {
            // inside a chain, or into one: the chain reads the producer's buffer itself (and
            // counts as its reader when it runs); out of a chain: the chain filled it already
            bool outbound = m_sp.in_chain(tr.node) && !m_sp.is_into(t);
            if (outbound) consumed(src);
            return;
        }
        alloc(m_transfers[std::size_t(t)]);
        const std::size_t none[2] = {0, 0};
        check(tr.node, none, none, budget);
        consumed(src);
    }
    void run_chain(std::size_t c, const std::size_t budget[2]) {
        const StripChain& ch = m_sp.chains[c];
        NodeId head = ch.nodes.front(), tail = ch.tail();
        const Node& tn = m_g.nodes[tail];
        // its whole outputs: the last node's own buffer when read in place (or a result), and the
        // buffers of the transfers out of it
        if (!tn.outputs.empty()) {
            Buf& own = out(tail, 0);
            std::vector<int> out_t; // those it fills: not the ones another chain takes rows of
            for (int t : m_from[tail.index()])
                if (!m_sp.is_into(t)) out_t.push_back(t);
            if (own.remaining > int(out_t.size()) || own.remaining == 0) alloc(own);
            for (int t : out_t) alloc(m_transfers[std::size_t(t)]);
        }
        around_chain[c] = {m_live[0], m_live[1]};
        const std::size_t extra[2] = {ch.host_bytes, ch.device_bytes};
        const std::size_t scratch[2] = {ch.host_scratch, ch.device_scratch};
        check(tail, extra, scratch, budget);
        const Node& hn = m_g.nodes[head];
        if (!hn.inputs.empty()) {
            int t = m_p.input_transfer[head][0];
            if (t >= 0 && m_sp.is_into(t))
                consumed(out(hn.inputs[0].node, hn.inputs[0].port));
            else
                consumed(input(head, 0));
        }
        release_unread(tail);
    }

    const Graph& m_g;
    const Plan& m_p;
    const StripPlan& m_sp;
    std::vector<std::vector<Buf>> m_outs;
    std::vector<Buf> m_transfers;
    std::vector<std::vector<int>> m_from; ///< per node: the transfers of its outputs
    std::size_t m_live[2] = {0, 0};
};

/// The strip buffers of chain c as the executor makes them: per node, for each of its buffer sets,
/// its output window (at least two for a carried node) and a copy of its input when that lies on
/// the other side; once, its carried state. And its nodes' scratch: each strip in flight (one per
/// set) runs one node at a time, so per side the sets times the most one node's call takes (c's
/// strips must be made: chain_strips).
void strip_bytes(const Graph& g, const Plan& p, StripChain& c) {
    c.host_bytes = c.device_bytes = 0;
    c.host_scratch = c.device_scratch = 0;
    const std::size_t sets = std::size_t(std::max(1, c.sets));
    const std::size_t host_sets = sets * std::max<std::size_t>(1, c.gpus.size());
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
        const Node& n = g.nodes[c.nodes[i]];
        bool dev = p.on_device(c.nodes[i]);
        std::size_t& side = dev ? c.device_bytes : c.host_bytes;
        RowAccess a = row_access(n);
        const std::size_t n_sets = dev ? sets : host_sets;
        if (!n.outputs.empty())
            side += buffer_bytes(n.outputs[0], dev, std::size_t(c.max_window[i])) *
                    (a.kind == PF_ACCESS_CARRIED ? std::max<std::size_t>(2, n_sets) : n_sets);
        if (!n.inputs.empty()) {
            const Node& u = g.nodes[n.inputs[0].node];
            bool src_dev = i > 0 ? p.on_device(c.nodes[i - 1]) : p.on_device(n.inputs[0].node);
            if (i == 0 && p.input_transfer[c.nodes[0]][0] >= 0) src_dev = !dev; // whole input across
            if (src_dev != dev)
                side +=
                    buffer_bytes(u.outputs[std::size_t(n.inputs[0].port)], dev, std::size_t(c.max_input[i])) * n_sets;
        }
        side += c.carry_bytes[i];
        // the most one call takes, over the shapes of its calls (a few distinct ones: the strips'
        // rows, the last strip's, a stencil's halo clipped at the edges); scratch need not grow
        // with the rows (integral's CUDA tiles are shorter on smaller images)
        std::set<std::pair<int, int>> shapes;
        for (const auto& strip : c.strips) {
            const StripRows& r = strip[i];
            if (n.outputs.empty() ? r.in1 <= r.in0 : r.out1 <= r.out0) continue; // not called
            if (!shapes.insert({r.in1 - r.in0, r.out1 - r.out0}).second) continue;
            const auto sc = node_scratch(g, n, dev, n.inputs.empty() ? -1 : r.in1 - r.in0,
                                         n.outputs.empty() ? -1 : r.out1 - r.out0);
            c.host_scratch = std::max(c.host_scratch, checked_mul(sc[0], host_sets).value_or(max_buffer_bytes));
            c.device_scratch = std::max(c.device_scratch, checked_mul(sc[1], sets).value_or(max_buffer_bytes));
        }
    }
    c.host_bytes += c.host_scratch;
    c.device_bytes += c.device_scratch;
}

std::string chain_text(const Graph& g, const StripChain& c) {
    std::string s;
    for (NodeId v : c.nodes) s += (s.empty() ? "" : " -> ") + g.nodes[v].id;
    return s;
}

/// The error for a run that does not fit its budget even in strips.
[[noreturn]] void overrun_error(const Graph& g, const Plan& p, const StripPlan& sp, const Overrun& o,
                                const StripOptions& opt) {
    // Whom to name: a whole-image node that ran at that step; else the whole-image node that
    // makes or reads the largest image then in memory.
    auto whole_reason = [&](NodeId v) {
        int last = 0;
        return sp.in_chain(v) ? std::string() : not_streamable(g, g.nodes[v], last);
    };
    NodeId blame = o.node;
    std::string why = whole_reason(o.node);
    if (sp.in_chain(o.node))
        for (const auto& im : o.live) {
            const NodeId v = im.node;
            if (std::string w = whole_reason(v); !w.empty() && g.nodes[v].op) {
                blame = v, why = w;
                break;
            }
            bool found = false;
            for (const auto& [reader, input] : g.consumers(v, im.port))
                if (std::string w = whole_reason(reader); !w.empty()) {
                    blame = reader, why = w, found = true;
                    break;
                }
            if (found) break;
        }
    const Node& n = g.nodes[blame];
    std::string images;
    for (std::size_t k = 0; k < o.live.size() && k < 4; ++k) {
        const Node& m = g.nodes[o.live[k].node];
        std::string port =
            m.op && o.live[k].port > 0 ? std::string(".") + m.op->desc->outputs[o.live[k].port].name : "";
        images += (k ? ", " : "") + ("'" + m.id + port + "' " + format_shape(m.outputs[std::size_t(o.live[k].port)]) +
                                     " " + bytes_text(double(o.live[k].bytes)));
    }
    if (o.live.size() > 4) images += ", and " + std::to_string(o.live.size() - 4) + " more";
    if (o.strips) images += (images.empty() ? "" : "; ") + std::string("strips ") + bytes_text(double(o.strips));
    if (o.scratch)
        images += (images.empty() ? "" : "; ") +
                  std::string(sp.in_chain(o.node) ? "the strips' scratch " : "scratch ") +
                  bytes_text(double(o.scratch));
    const char* side = o.device ? "device" : "host";
    std::string budget = bytes_text(double(o.device ? opt.device_budget : opt.host_budget));
    std::string from = o.device ? opt.device_from : opt.host_from;
    std::string msg =
        (why.empty() ? std::string("cannot run in strips within the budget") : "needs whole images in memory: " + why) +
        "; the run would need " + bytes_text(double(o.total)) + " of " + side + " memory at once here (" + images +
        ") but the " + side + " memory budget is " + budget + (from.empty() ? "" : " (" + from + ")") + "; raise " +
        (o.device ? "--device-memory-limit" : "--memory-limit") +
        ", or use operators that run in strips (pixflow describe shows each one's access)";
    (void)p;
    throw UserError(std::vector<Diagnostic>{{n.loc, n.id, msg, {}}});
}

/// A run over its budget: refused, unless the budget is a default one and the run still fits the
/// memory there is (StripOptions::host_limit, device_limit): then a note, and it runs.
void refuse_or_note(const Graph& g, Plan& p, const StripPlan& sp, const Overrun& o, const StripOptions& opt) {
    const std::size_t limit = o.device ? opt.device_limit : opt.host_limit;
    const std::size_t peak = o.device ? sp.device_peak : sp.host_peak;
    if (limit == 0 || std::max(o.total, peak) > limit) overrun_error(g, p, sp, o, opt);
    p.notes.push_back(std::string("memory: the run needs about ") + bytes_text(double(std::max(o.total, peak))) +
                      " of " + (o.device ? "device" : "host") + " memory, over its default budget of " +
                      bytes_text(double(o.device ? opt.device_budget : opt.host_budget)) + " (" +
                      (o.device ? opt.device_from : opt.host_from) + "); running anyway");
}

} // namespace

namespace {
/// A block node's output rows covering [a, b) in whole blocks (the last block to the output's
/// end), and the input rows those blocks read.
void whole_blocks(const RowAccess& acc, int last, int a, int b, int hin, int hout, int& out0, int& out1, int& in0,
                  int& in1) {
    const int kin = acc.in_rows, kout = acc.out_rows;
    const int ja = std::min(a / kout, last), jb = (b - 1) / kout + 1;
    out0 = ja * kout, in0 = ja * kin;
    if (jb > last)
        out1 = hout, in1 = hin;
    else
        out1 = jb * kout, in1 = jb * kin;
}
} // namespace

void chain_strips(const Graph& g, StripChain& c, int rows) {
    const std::size_t m = c.nodes.size();
    const Node& tail = g.nodes[c.tail()];
    c.height = output_height(g, tail);
    c.rows = std::max(1, std::min(rows, c.height));
    const int n = (c.height + c.rows - 1) / c.rows;
    c.strips.assign(std::size_t(n), std::vector<StripRows>(m));
    c.max_window.assign(m, 0);
    c.max_input.assign(m, 0);
    std::vector<int> done(m, 0); // carried nodes: rows computed so far
    for (int k = 0; k < n; ++k) {
        int a = k * c.rows, b = std::min(c.height, a + c.rows);
        for (std::size_t i = m; i-- > 0;) {
            const Node& node = g.nodes[c.nodes[i]];
            const RowAccess acc = row_access(node);
            const int hin = input_height(g, node), hout = output_height(g, node);
            StripRows& r = c.strips[std::size_t(k)][i];
            r.use0 = a, r.use1 = b;
            if (a >= b && acc.kind != PF_ACCESS_CARRIED) {
                r.in0 = r.in1 = r.out0 = r.out1 = r.win0 = r.win1 = a; // nothing needed from it
            } else {
                switch (acc.kind) {
                case PF_ACCESS_STENCIL:
                    r.out0 = std::max(0, a - acc.halo), r.out1 = std::min(hout, b + acc.halo);
                    r.in0 = r.out0, r.in1 = r.out1;
                    break;
                case PF_ACCESS_BLOCKS:
                    whole_blocks(acc, c.last_block[i], a, b, hin, hout, r.out0, r.out1, r.in0, r.in1);
                    break;
                case PF_ACCESS_CARRIED:
                    // each row once, in order; rows read again come from the strip before
                    r.out0 = done[i], r.out1 = std::max(done[i], b);
                    r.in0 = r.out0, r.in1 = r.out1;
                    done[i] = r.out1;
                    break;
                default: // pointwise
                    r.out0 = a, r.out1 = b;
                    r.in0 = a, r.in1 = b;
                }
                if (node.inputs.empty()) r.in0 = r.in1 = 0;
                r.win0 = acc.kind == PF_ACCESS_CARRIED ? std::min(a, r.out0) : r.out0;
                r.win1 = acc.kind == PF_ACCESS_CARRIED ? std::max(b, r.out1) : r.out1;
                if (a >= b) r.win0 = r.win1 = r.out0, r.use0 = r.use1 = r.out0;
            }
            c.max_window[i] = std::max(c.max_window[i], r.win1 - r.win0);
            c.max_input[i] = std::max(c.max_input[i], r.in1 - r.in0);
            a = r.in0, b = r.in1;
        }
    }
}

void chain_bands(const Graph& g, StripChain& c, const std::vector<int>& edges) {
    const std::size_t m = c.nodes.size();
    c.height = output_height(g, g.nodes[c.tail()]);
    const int n = int(edges.size()) - 1;
    c.rows = 1;
    c.strips.assign(std::size_t(n), std::vector<StripRows>(m));
    c.max_window.assign(m, 0);
    c.max_input.assign(m, 0);
    for (int k = 0; k < n; ++k) {
        // [a, b): node i's own band; [na, nb): the rows of it that node i + 1 reads (halo included)
        int a = edges[std::size_t(k)], b = edges[std::size_t(k) + 1], na = a, nb = b;
        c.rows = std::max(c.rows, b - a);
        for (std::size_t i = m; i-- > 0;) {
            const Node& node = g.nodes[c.nodes[i]];
            const RowAccess acc = row_access(node);
            const int hin = input_height(g, node), hout = output_height(g, node);
            StripRows& r = c.strips[std::size_t(k)][i];
            r.out0 = a, r.out1 = b;
            int ca = a, cb = b; // the input rows of its own band, without a halo
            switch (acc.kind) {
            case PF_ACCESS_STENCIL: // its kernel computes as many rows as its view holds
                r.in0 = std::max(0, a - acc.halo), r.in1 = std::min(hin, b + acc.halo);
                r.out0 = r.in0, r.out1 = r.in1;
                break;
            case PF_ACCESS_BLOCKS:
                whole_blocks(acc, c.last_block[i], a, b, hin, hout, r.out0, r.out1, ca, cb);
                if (a >= b) r.out0 = r.out1 = a, ca = cb = a * acc.in_rows / acc.out_rows;
                r.in0 = ca, r.in1 = cb;
                break;
            default: // pointwise, carried: each row once, from the same rows
                r.in0 = a, r.in1 = b;
            }
            if (a >= b) r.in0 = r.in1 = ca = cb, r.out0 = r.out1 = a;
            if (node.inputs.empty()) r.in0 = r.in1 = 0;
            r.own0 = acc.kind == PF_ACCESS_BLOCKS ? r.out0 : a, r.own1 = acc.kind == PF_ACCESS_BLOCKS ? r.out1 : b;
            r.use0 = na, r.use1 = nb;
            r.win0 = std::min(r.out0, na), r.win1 = std::max(r.out1, nb);
            if (a >= b) r.win0 = r.win1 = r.use0 = r.use1 = r.own0 = r.own1 = r.out0;
            c.max_window[i] = std::max(c.max_window[i], r.win1 - r.win0);
            c.max_input[i] = std::max(c.max_input[i], r.in1 - r.in0);
            a = ca, b = cb, na = r.in0, nb = r.in1;
        }
    }
}

/// Whether chain c can spread its strips over several GPUs: its whole input and its output are on
/// the host (each GPU uploads and downloads its own strips), and no CUDA node carries a state
/// from strip to strip (it would have to travel between the GPUs).
bool spreadable(const Graph& g, const Plan& p, const StripChain& c, const StripOptions& opt) {
    for (NodeId v : c.nodes)
        if (p.on_device(v) && row_access(g.nodes[v]).kind == PF_ACCESS_CARRIED) return false;
    const Node& hn = g.nodes[c.nodes.front()];
    if (!hn.inputs.empty() && p.on_device(hn.inputs[0].node)) return false;
    const NodeId tail = c.tail();
    if (std::find(opt.read_by_caller.begin(), opt.read_by_caller.end(), tail) != opt.read_by_caller.end()) return false;
    for (std::size_t port = 0; port < g.nodes[tail].outputs.size(); ++port)
        for (const auto& [reader, input] : g.consumers(tail, int(port))) {
            (void)input;
            if (p.on_device(reader)) return false;
        }
    return true;
}

void plan_strips(const Graph& g, Plan& p, const StripOptions& opt) {
    StripPlan& sp = p.strips;
    sp = StripPlan{};
    sp.host_budget = opt.host_budget;
    sp.device_budget = opt.device_budget;
    const std::size_t budget[2] = {opt.host_budget, opt.device_budget};

    // 1. the whole-image estimate: when it fits and no strips are asked for, nothing changes
    Estimate whole(g, p, sp);
    whole.run(budget);
    sp.whole_host_peak = sp.host_peak = whole.peak[0];
    sp.whole_device_peak = sp.device_peak = whole.peak[1];
    bool any_cuda = false;
    for (NodeId v : g.nodes.ids()) any_cuda |= p.on_device(v);
    const bool spread = opt.devices.size() > 1 && any_cuda; // one image over several GPUs
    if (!whole.over && opt.strip_rows <= 0 && !spread) return;

    // 2. the chains
    const std::size_t N = g.nodes.size();
    NodeMap<int> chain_of(N, -1);
    NodeMap<int> last_block(N, 0);
    NodeMap<char> streamable(N, 0);
    for (NodeId v : g.nodes.ids())
        streamable[v] =
            not_streamable(g, g.nodes[v], last_block[v]).empty() && (opt.stream_sinks || !g.nodes[v].is_sink());
    auto caller_reads = [&](NodeId v) {
        return std::find(opt.read_by_caller.begin(), opt.read_by_caller.end(), v) != opt.read_by_caller.end();
    };
    std::vector<StripChain> chains;
    for (NodeId v : g.order) {
        if (!streamable[v]) continue;
        const Node& n = g.nodes[v];
        bool extend = false;
        if (!n.inputs.empty() && n.inputs[0].port == 0) {
            NodeId u = n.inputs[0].node;
            extend = chain_of[u] >= 0 && chains[std::size_t(chain_of[u])].tail() == u &&
                     g.consumers(u, 0).size() == 1 && !caller_reads(u) && !g.nodes[u].is_sink();
        }
        if (!extend) {
            chain_of[v] = int(chains.size());
            chains.emplace_back();
        } else {
            chain_of[v] = chain_of[n.inputs[0].node];
        }
        StripChain& c = chains[std::size_t(chain_of[v])];
        c.nodes.push_back(v);
        c.last_block.push_back(last_block[v]);
    }

    // 3. which chains stream: all of them when asked; under a budget, those that save memory
    // (two nodes or more, or a CUDA node: one CPU node between whole images saves none)
    std::vector<StripChain> active;
    for (StripChain& c : chains) {
        bool helps = c.nodes.size() >= 2, cuda = false;
        for (NodeId v : c.nodes) cuda |= p.on_device(v);
        helps |= cuda;
        if (!whole.over && opt.strip_rows <= 0) helps = cuda; // streamed only to spread it over the GPUs
        if (opt.strip_rows > 0 || helps) active.push_back(std::move(c));
    }
    if (active.empty()) {
        if (whole.over) refuse_or_note(g, p, sp, *whole.over, opt);
        return;
    }
    sp.chains = std::move(active);
    sp.chain_of.assign(N, -1);
    for (std::size_t c = 0; c < sp.chains.size(); ++c)
        for (NodeId v : sp.chains[c].nodes) sp.chain_of[v] = int(c);

    // 4. transfers the chains make themselves, and each chain's state and streams
    sp.absorbed.assign(p.transfers.size(), 0);
    sp.into.assign(p.transfers.size(), 0);
    for (std::size_t t = 0; t < p.transfers.size(); ++t) {
        const Transfer& tr = p.transfers[t];
        if (tr.consumers.size() == 1 && sp.in_chain(tr.consumers[0].first) &&
            sp.chains[std::size_t(sp.chain_of[tr.consumers[0].first])].nodes.front() == tr.consumers[0].first)
            sp.absorbed[t] = sp.into[t] = 1; // into a chain, read by it alone (also out of another chain)
        else if (sp.in_chain(tr.node))
            sp.absorbed[t] = 1; // within a chain, or out of its last node
    }
    for (StripChain& c : sp.chains) {
        c.carry_bytes.assign(c.nodes.size(), 0);
        bool all_cuda = true;
        int last_cuda = -1;
        for (std::size_t i = 0; i < c.nodes.size(); ++i) {
            const Node& n = g.nodes[c.nodes[i]];
            if (row_access(n).kind == PF_ACCESS_CARRIED) {
                c.ordered = true;
                std::vector<pf_image> ins;
                for (const auto& in : n.inputs) ins.push_back(g.nodes[in.node].outputs[std::size_t(in.port)]);
                c.carry_bytes[i] =
                    n.op->access->carry_bytes(n.params.data(), n.op->desc->n_params, ins.data(), int32_t(ins.size()),
                                              n.outputs.data(), int32_t(n.outputs.size()));
            }
            if (p.on_device(c.nodes[i]))
                last_cuda = int(i);
            else
                all_cuda = false;
        }
        if (last_cuda >= 0) c.streams[0] = p.stream[c.nodes[std::size_t(last_cuda)]];
        // stages and buffer sets (before the rows: the sets count against the budget)
        c.stage.assign(c.nodes.size(), 0);
        for (std::size_t i = 1; i < c.nodes.size(); ++i)
            c.stage[i] =
                c.stage[i - 1] + (opt.stage_per_node || p.on_device(c.nodes[i]) != p.on_device(c.nodes[i - 1]));
        c.n_stages = c.stage.back() + 1;
        // 3 sets where the host and the device take part: one strip on its way up, one in the
        // kernels, one on its way down (and read by the host)
        const bool both_sides = last_cuda >= 0 && !all_cuda;
        c.sets = c.n_stages > 1 ? (both_sides ? 3 : std::min(c.n_stages, 3)) : all_cuda && !c.ordered ? 2 : 1;
        if (spread && last_cuda >= 0 && spreadable(g, p, c, opt)) {
            c.gpus = opt.devices;
            c.sets = std::max(c.sets, 2); // each GPU: strip k+1's upload overlaps strip k's kernels
        }
    }

    // 5. rows per strip: as asked, or the tallest strips whose buffers fit beside the whole
    // images in memory while the chain runs
    if (opt.strip_rows > 0) {
        for (StripChain& c : sp.chains) {
            chain_strips(g, c, opt.strip_rows);
            strip_bytes(g, p, c);
        }
    } else {
        Estimate around(g, p, sp); // strips not counted yet: their bytes are 0
        around.run(budget);
        for (std::size_t ci = 0; ci < sp.chains.size(); ++ci) {
            StripChain& c = sp.chains[ci];
            const int height = output_height(g, g.nodes[c.tail()]);
            const int align = chain_alignment(g, c);
            // what is left for strips beside the whole images; when they alone exceed the budget
            // (an error, unless the budget is a default one), strips of a quarter of it
            std::size_t left[2];
            for (int d = 0; d < 2; ++d)
                left[d] = budget[d] > around.around_chain[ci][std::size_t(d)]
                              ? budget[d] - around.around_chain[ci][std::size_t(d)]
                              : budget[d] / 4;
            auto fits = [&](int rows) {
                chain_strips(g, c, rows);
                strip_bytes(g, p, c);
                return (!budget[0] || c.host_bytes <= left[0]) && (!budget[1] || c.device_bytes <= left[1]);
            };
            int lo = 1, hi = height; // the largest that fits in [1, height]
            if (fits(hi))
                lo = hi;
            else
                while (hi - lo > 1) {
                    int mid = lo + (hi - lo) / 2;
                    (fits(mid) ? lo : hi) = mid;
                }
            if (!c.gpus.empty()) { // a few strips per GPU at least, so that each has work in flight
                const int per = (height + 4 * int(c.gpus.size()) - 1) / (4 * int(c.gpus.size()));
                lo = std::min(lo, std::max(per, align));
            }
            int rows = lo >= align ? lo / align * align : lo;
            chain_strips(g, c, rows);
            strip_bytes(g, p, c);
        }
    }
    for (StripChain& c : sp.chains) {
        if (c.count() == 1) { // nothing to overlap, nothing to spread
            c.sets = 1;
            c.gpus.clear();
            strip_bytes(g, p, c);
        }
        bool carried_on_device = false;
        for (NodeId v : c.nodes)
            carried_on_device |= p.on_device(v) && row_access(g.nodes[v]).kind == PF_ACCESS_CARRIED;
        if (c.sets > 1 && c.streams[0] >= 0 && !carried_on_device)
            c.streams[1] = p.n_streams++; // strips alternate: strip k+1's upload overlaps strip k's kernels
    }

    // 6. the estimate as planned; a run that still does not fit is an error now
    Estimate planned(g, p, sp);
    planned.run(budget);
    sp.host_peak = planned.peak[0];
    sp.device_peak = planned.peak[1];
    if (planned.over) refuse_or_note(g, p, sp, *planned.over, opt);
    for (const StripChain& c : sp.chains) {
        std::string why = opt.strip_rows > 0
                              ? "--strip-rows " + std::to_string(opt.strip_rows)
                              : "the whole-image run would need " +
                                    bytes_text(double(whole.over->device ? sp.whole_device_peak : sp.whole_host_peak)) +
                                    " of " + (whole.over->device ? "device" : "host") + " memory; the budget is " +
                                    bytes_text(double(whole.over->device ? opt.device_budget : opt.host_budget));
        if (opt.strip_rows <= 0 && !whole.over) why = "spread over " + std::to_string(opt.devices.size()) + " GPUs";
        std::string gpus;
        for (int d : c.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(d);
        p.notes.push_back("strips: " + chain_text(g, c) + " runs in " + std::to_string(c.count()) +
                          (c.count() == 1 ? " strip of " : " strips of ") + std::to_string(c.rows) + " rows (" + why +
                          ")" + (gpus.empty() ? "" : ", over GPUs " + gpus));
    }
}

} // namespace pixflow::host
