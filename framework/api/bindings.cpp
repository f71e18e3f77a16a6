// api/ bindings: caller memory in and out of a run. A bound input is used in place when it suits
// the operators' layout rules (host: packed and 64-byte aligned; device: rows 256-byte aligned),
// else through a staging copy kept for the next runs. An output is written by its node straight
// into the caller's buffer when that buffer lies where the node runs and suits the same rules,
// else the node's own buffer is kept and copied over after the run.
#include "api/state.hpp"

#include <algorithm>
#include <cstring>

namespace pixflow::detail {
namespace {

void copy_host_rows(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch, std::size_t row_bytes,
                    int rows) {
    for (int y = 0; y < rows; ++y)
        std::memcpy(static_cast<char*>(dst) + y * dst_pitch, static_cast<const char*>(src) + y * src_pitch, row_bytes);
}

/// The staging copy of input `id` (made on first use), filled from `v`.
pf_image stage(PipelineState& s, const std::string& id, const ImageView& v) {
    Staging& st = s.staging[id];
    std::size_t rb = v.row_bytes();
    if (v.device == PF_HOST) {
        if (st.host.empty()) st.host = Image(v.width, v.height, v.channels, v.dtype);
        copy_host_rows(st.host.data(), st.host.pitch(), v.data, v.pitch, rb, v.height);
        return st.host.view().to_c();
    }
    if (!st.device.get()) {
        st.pitch = std::int64_t((rb + 255) / 256 * 256);
        st.device = host::DeviceBuffer(std::size_t(st.pitch) * std::size_t(v.height), v.device);
    }
    const host::Stream& cs = copy_stream(s, v.device);
    host::copy_2d_device_async(st.device.get(), st.pitch, v.data, v.pitch, rb, v.height, cs);
    if (!s.stream) cs.synchronize(); // pixflow's own streams do not wait for this one
    ImageView out = v;
    out.data = st.device.get();
    out.pitch = st.pitch;
    return out.to_c();
}

/// The layout rule a buffer at `device` must meet to be used in place (Executor::can_write_into).
std::string layout_rule(int device) {
    if (device == PF_HOST) return "on the host, with packed rows that start 64-byte aligned";
    return "on CUDA device " + std::to_string(device) + ", with rows that start 256-byte aligned";
}

bool same_shape(const pf_image& a, const pf_image& b) {
    return a.width == b.width && a.height == b.height && a.channels == b.channels && a.dtype == b.dtype;
}

} // namespace

const host::Stream& copy_stream(PipelineState& s, int device) {
    if (s.stream) {
        if (s.caller_stream.get() != static_cast<void*>(s.stream))
            s.caller_stream = host::Stream::borrow(s.stream, device);
        return s.caller_stream;
    }
    if (!s.own_stream.get() || s.own_stream.device() != device) s.own_stream = host::Stream(device);
    return s.own_stream;
}

void bind_inputs(PipelineState& s) {
    const host::Graph& g = s.compiled->graph;
    s.copies.clear();
    for (const auto& [id, view] : s.inputs) {
        host::NodeId v = g.find(id);
        pf_image im = view.to_c();
        if (s.executor->can_write_into(v, im)) {
            s.run_options.externals[v] = im;
            continue;
        }
        s.run_options.externals[v] = stage(s, id, view);
        s.copies.push_back("input(\"" + id +
                           "\"): copied into a staging buffer; memory is read in place when it lies " +
                           layout_rule(view.device));
    }
    s.run_options.stream = s.stream;
    s.run_options.resources = s.pinned ? &s.resources : nullptr;
}

void bind_outputs(PipelineState& s) {
    const host::Graph& g = s.compiled->graph;
    s.run_options.keep.clear();
    auto& claimed = s.claimed; // outputs a caller buffer was given to this run
    claimed.clear();
    for (auto& [name, slot] : s.slots) {
        const host::Node& n = g.nodes[slot.node];
        const pf_image& produced = n.outputs[std::size_t(slot.port)];
        auto key = std::make_pair(slot.node, slot.port);
        slot.in_place = false;
        if (slot.dest) {
            pf_image d = slot.dest->to_c();
            if (!same_shape(d, produced))
                throw UserError(Diagnostic{SourceLoc{"output(\"" + name + "\")", 0, 0},
                                           n.id,
                                           "the buffer is " + host::format_shape(d) + " but the output is " +
                                               host::format_shape(produced),
                                           {}});
            bool runs = n.op && !s.inputs.count(n.id); // a bound input is the caller's own memory
            slot.in_place = runs && std::find(claimed.begin(), claimed.end(), key) == claimed.end() &&
                            s.executor->can_write_into(slot.node, d);
            if (slot.in_place) {
                s.run_options.write_into[key] = d;
                claimed.push_back(key);
            }
        }
        if (!slot.in_place) s.run_options.keep.push_back(slot.node);
        if (slot.dest && !slot.in_place) {
            int where = s.inputs.count(n.id)                    ? s.inputs.at(n.id).device
                        : s.compiled->plan.on_device(slot.node) ? s.compiled->plan.device
                                                                : PF_HOST;
            s.copies.push_back("output(\"" + name +
                               "\"): copied into the caller's buffer after the run; a buffer is "
                               "written in place when it lies " +
                               layout_rule(where));
        }
    }
    for (auto it = s.run_options.write_into.begin(); it != s.run_options.write_into.end();)
        it = std::find(claimed.begin(), claimed.end(), it->first) == claimed.end() ? s.run_options.write_into.erase(it)
                                                                                   : ++it;
}

bool copy_outputs(PipelineState& s) {
    bool waited = false;
    const host::Stream* used = nullptr;
    for (auto& [name, slot] : s.slots) {
        if (!slot.dest || slot.in_place) continue;
        const pf_image& src = s.executor->output(slot.node, slot.port);
        const ImageView& dst = *slot.dest;
        std::size_t rb = ImageView(src).row_bytes();
        if (src.device == PF_HOST && dst.device == PF_HOST) {
            copy_host_rows(dst.data, dst.pitch, src.data, src.pitch, rb, src.height);
            continue;
        }
        used = &copy_stream(s, src.device != PF_HOST ? src.device : dst.device);
        if (src.device == dst.device) // within one device: pixflow's copy kernel, any alignment
            host::copy_2d_device_async(dst.data, dst.pitch, src.data, src.pitch, rb, src.height, *used);
        else
            host::copy_2d_async(dst.data, dst.pitch, src.data, src.pitch, rb, src.height, *used);
        // The host must have the samples (a host buffer on either side), or the caller gave no stream.
        waited |= src.device == PF_HOST || dst.device == PF_HOST || !s.stream;
    }
    if (waited && used) used->synchronize();
    return waited || !s.stream;
}

} // namespace pixflow::detail
