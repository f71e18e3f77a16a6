#include "batch/trace.hpp"

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

bool has_param_flag(const Node& n, std::uint32_t flag) {
    if (!n.op) return false;
    for (int k = 0; k < n.op->desc->n_params; ++k)
        if (n.op->desc->params[k].flags & flag) return true;
    return false;
}

nlohmann::json meta(const char* what, int pid, int tid, const std::string& name) {
    nlohmann::json e{{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0) e["tid"] = tid;
    return e;
}

constexpr int kImagesPid = 0, kCpuPid = 1, kCudaPid0 = 2;

} // namespace

std::string span_category(const Graph& g, const Span& s) {
    if (s.kind != "node") return s.kind;
    const Node& n = g.nodes[s.node];
    if (has_param_flag(n, PF_PARAM_INPUT_PATH)) return "decode";
    if (has_param_flag(n, PF_PARAM_OUTPUT_PATH)) return "encode";
    return "compute";
}

double TraceWriter::us(Clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - m_t0).count();
}

int TraceWriter::cpu_lane(const std::string& key) {
    auto [it, fresh] = m_threads.emplace(key, int(m_threads.size()));
    if (fresh) m_events.push_back(meta("thread_name", kCpuPid, it->second, "cpu thread " + std::to_string(it->second)));
    return it->second;
}

int TraceWriter::stream_lane(int device, const std::string& key) {
    auto [it, fresh] = m_streams.emplace(std::make_pair(device, key), m_streams_per_device[device]);
    if (fresh) {
        if (m_streams_per_device[device]++ == 0)
            m_events.push_back(meta("process_name", kCudaPid0 + device, -1, "cuda:" + std::to_string(device)));
        m_events.push_back(meta("thread_name", kCudaPid0 + device, it->second, "stream " + std::to_string(it->second)));
    }
    return it->second;
}

void TraceWriter::add(const Span& s, const std::string& category, const std::string& image) {
    SpanRecord r{s.id, s.op, s.backend, category, image, s.device, {}, s.start, s.end};
    std::ostringstream lane;
    if (s.device >= 0)
        lane << "stream " << s.stream_handle;
    else
        lane << "thread " << s.thread;
    r.lane = lane.str();
    add(r);
}

void TraceWriter::add(const SpanRecord& s) {
    std::lock_guard lk(m_mu);
    int pid, tid;
    if (s.device >= 0) {
        pid = kCudaPid0 + s.device;
        tid = stream_lane(s.device, s.lane);
    } else {
        if (m_threads.empty()) m_events.push_back(meta("process_name", kCpuPid, -1, "cpu"));
        pid = kCpuPid;
        tid = cpu_lane(s.lane);
    }
    double ts = us(s.start);
    nlohmann::json args{{"op", s.op}, {"backend", s.backend}};
    if (!s.image.empty()) args["image"] = s.image;
    m_events.push_back({{"ph", "X"},
                        {"name", s.id},
                        {"cat", s.category},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", ts},
                        {"dur", std::max(0.0, us(s.end) - ts)},
                        {"args", args}});
}

void TraceWriter::add_image(const std::string& image, int slot, Clock::time_point start, Clock::time_point end,
                            bool ok) {
    std::lock_guard lk(m_mu);
    if (m_slots.empty()) m_events.push_back(meta("process_name", kImagesPid, -1, "images"));
    if (!m_slots[slot]) {
        m_slots[slot] = true;
        m_events.push_back(meta("thread_name", kImagesPid, slot, "in flight " + std::to_string(slot)));
    }
    double ts = us(start);
    m_events.push_back({{"ph", "X"},
                        {"name", fs::path(image).filename().string()},
                        {"cat", "image"},
                        {"pid", kImagesPid},
                        {"tid", slot},
                        {"ts", ts},
                        {"dur", std::max(0.0, us(end) - ts)},
                        {"args", {{"image", image}, {"ok", ok}}}});
}

void TraceWriter::add_in_flight(int count, Clock::time_point t) {
    std::lock_guard lk(m_mu);
    m_events.push_back(
        {{"ph", "C"}, {"name", "in flight"}, {"pid", kImagesPid}, {"ts", us(t)}, {"args", {{"images", count}}}});
}

std::string TraceWriter::text() const {
    nlohmann::json j;
    {
        std::lock_guard lk(m_mu);
        j["traceEvents"] = m_events;
    }
    j["displayTimeUnit"] = "ms";
    return json_text(j) + "\n";
}

std::string json_text(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace pixflow::host
