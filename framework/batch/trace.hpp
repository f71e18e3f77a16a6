// Chrome trace-event JSON (opens in Perfetto and chrome://tracing) for runs: a complete event
// ("ph": "X") per node and per transfer of every image, on lanes that show the overlap:
//
//   pid 1 "cpu"       one tid per CPU thread that ran a node ("cpu thread N")
//   pid 2+d "cuda:d"  one tid per CUDA stream of device d ("stream N"), uploads and downloads too
//   pid 0 "images"    one span per image from admission to completion, tid = its in-flight slot,
//                     and the counter "in flight"
//
// Each span is named after its node id, with the category decode (a node that reads a file),
// encode (a node that writes one), compute, upload or download, and args {image, op, backend}.
// Times are microseconds since the writer was created.
#pragma once

#include "executor/executor.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pixflow::host {

/// `j` as JSON text that any bytes can go into: a string that is not valid UTF-8 (a path, a
/// message quoting a file's header) has each invalid byte replaced by U+FFFD instead of failing.
std::string json_text(const nlohmann::json& j, int indent = -1);

/// decode, encode, compute, upload or download for a span of a run of `g`.
std::string span_category(const Graph& g, const Span& s);

/// A span as any process reports it (steady_clock is the same clock in every process of the
/// machine): an isolated worker's, or this process's own.
struct SpanRecord {
    std::string id, op, backend, category, image;
    int device = -1; ///< CUDA: the stream's device; -1: a CPU thread
    /// The CPU thread or CUDA stream, unique in the trace ("123 thread 0" for an isolated
    /// worker's first thread, "123 stream 1"); each distinct one gets a lane.
    std::string lane;
    std::chrono::steady_clock::time_point start, end;
};

class TraceWriter {
  public:
    using Clock = std::chrono::steady_clock;
    explicit TraceWriter(Clock::time_point t0 = Clock::now()) : m_t0(t0) {}

    /// A node or transfer span of one image's run (thread-safe).
    void add(const Span& s, const std::string& category, const std::string& image);
    void add(const SpanRecord& s);
    /// An image's life, on the images lane `slot`.
    void add_image(const std::string& image, int slot, Clock::time_point start, Clock::time_point end, bool ok);
    /// The counter "in flight" at time t.
    void add_in_flight(int count, Clock::time_point t);
    /// {"traceEvents": [...], "displayTimeUnit": "ms"}; bytes that are not UTF-8 (in paths)
    /// become U+FFFD.
    std::string text() const;

  private:
    double us(Clock::time_point t) const;
    int cpu_lane(const std::string& key);
    int stream_lane(int device, const std::string& key);

    Clock::time_point m_t0;
    mutable std::mutex m_mu;
    std::vector<nlohmann::json> m_events;
    std::map<std::string, int> m_threads;
    std::map<std::pair<int, std::string>, int> m_streams;
    std::map<int, int> m_streams_per_device;
    std::map<int, bool> m_slots;
};

} // namespace pixflow::host
