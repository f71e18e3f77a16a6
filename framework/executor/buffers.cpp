// executor/ buffers: allocation, release after the last consumer, device-memory accounting.
#include "executor/buffers.hpp"

#include "loader/checked_size.hpp"

#include <pixflow/image.hpp>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace pixflow::host {

// Overflow-checked (loader/checked_size.hpp): a shape comes from a plugin's infer.
std::size_t row_bytes(const pf_image& im) { return row_bytes_or_throw(im); }
std::size_t image_bytes(const pf_image& im) { return image_bytes_or_throw(im, row_bytes(im)); }

Buffers::Buffers(const Graph& g, const Plan& p, const std::vector<Stream>& streams)
    : m_g(g), m_p(p), m_streams(streams) {
    m_outs.resize(g.nodes.size());
    m_consumers.resize(g.nodes.size());
    m_feeds_upload.resize(g.nodes.size());
    for (NodeId v : g.nodes.ids()) {
        std::size_t ports = g.nodes[v].outputs.size();
        for (std::size_t k = 0; k < ports; ++k) m_outs[v].push_back(std::make_unique<Buf>());
        m_consumers[v].assign(ports, 0);
        m_feeds_upload[v].assign(ports, 0);
    }
    for (NodeId v : g.nodes.ids())
        for (std::size_t i = 0; i < g.nodes[v].inputs.size(); ++i)
            if (p.input_transfer[v][i] < 0) {
                const auto& in = g.nodes[v].inputs[i];
                ++m_consumers[in.node][std::size_t(in.port)];
            }
    for (const Transfer& t : p.transfers) {
        ++m_consumers[t.node][std::size_t(t.port)];
        if (t.to_device) m_feeds_upload[t.node][std::size_t(t.port)] = 1;
        m_transfers.push_back(std::make_unique<Buf>());
    }
}

Buf& Buffers::input(NodeId v, std::size_t i) {
    int t = m_p.input_transfer[v][i];
    const auto& in = m_g.nodes[v].inputs[i];
    return t >= 0 ? transfer(t) : out(in.node, in.port);
}

void Buffers::reset_counts() {
    for (NodeId v : m_g.nodes.ids())
        for (std::size_t k = 0; k < m_outs[v].size(); ++k) {
            Buf& b = *m_outs[v][k];
            PIXFLOW_ASSERT(b.mem == Mem::none || b.mem == Mem::external, "a buffer outlived its run");
            b.mem = Mem::none;
            b.remaining = m_consumers[v][k];
            b.readers.clear();
        }
    for (std::size_t t = 0; t < m_transfers.size(); ++t) {
        m_transfers[t]->remaining = int(m_p.transfers[t].consumers.size());
        m_transfers[t]->readers.clear();
    }
}

void Buffers::set_external(Buf& b, const pf_image& im) {
    b.im = im;
    b.im.struct_size = sizeof(pf_image);
    b.mem = Mem::external;
    b.stream = -1;
}

void Buffers::alloc(Buf& b, const pf_image& shape, bool device, int stream, bool pinned) {
    b.im = shape;
    b.im.struct_size = sizeof(pf_image);
    std::size_t rb = row_bytes(shape);
    if (device) {
        b.im.pitch = std::int64_t(checked_round_up(rb, 256).value_or(max_buffer_bytes));
        b.im.device = m_p.device;
        b.im.data =
            device_alloc_async(image_bytes_or_throw(shape, std::size_t(b.im.pitch)), m_streams[std::size_t(stream)]);
        b.mem = Mem::device;
        b.stream = stream;
        m_device_bytes.add(b.im.pitch * shape.height);
        return;
    }
    b.im.pitch = std::int64_t(rb);
    b.im.device = PF_HOST;
    std::size_t bytes = std::max<std::size_t>(image_bytes_or_throw(shape, rb), 1);
    if (pinned) {
        b.im.data = m_pinned ? m_pinned->take(bytes) : pinned_alloc(bytes);
        b.mem = Mem::pinned;
    } else {
        b.im.data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!b.im.data) throw std::bad_alloc();
        b.mem = Mem::host;
    }
    m_host_bytes.add((long long)bytes);
}

void Buffers::release(Buf& b, int stream) {
    switch (b.mem) {
    case Mem::host:
        std::free(b.im.data);
        m_host_bytes.add(-(long long)std::max<std::size_t>(image_bytes(b.im), 1));
        break;
    case Mem::pinned:
        if (m_pinned)
            m_pinned->give(b.im.data);
        else
            pinned_free(b.im.data);
        m_host_bytes.add(-(long long)std::max<std::size_t>(image_bytes(b.im), 1));
        break;
    case Mem::device: {
        int s = stream >= 0 ? stream : b.stream;
        {
            std::lock_guard lk(b.mu);
            for (auto& [rs, ev] : b.readers)
                if (rs != s && ev) ev->wait_on(m_streams[std::size_t(s)]);
        }
        device_free_async(b.im.data, m_streams[std::size_t(s)]);
        m_device_bytes.add(-(b.im.pitch * b.im.height));
        break;
    }
    default: return; // nothing, or caller memory
    }
    b.im.data = nullptr;
    b.mem = Mem::none;
}

void Buffers::consumed(Buf& b, int stream, const Event* ev, bool keep) {
    if (b.mem == Mem::device && ev) {
        std::lock_guard lk(b.mu);
        b.readers.emplace_back(stream, ev);
    }
    if (--b.remaining == 0 && !keep) release(b, stream);
}

void Buffers::free_all() {
    for (auto& node : m_outs)
        for (auto& b : node) release(*b, b->stream);
    for (auto& b : m_transfers) release(*b, b->stream);
}

} // namespace pixflow::host
