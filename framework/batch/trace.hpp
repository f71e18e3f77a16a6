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

/// Writes `text` to `path` through a temporary in the same folder and a rename, creating the
/// folder; throws InternalError when it cannot.
void write_file_atomically(const std::string& path, const std::string& text);

/// decode, encode, compute, upload or download for a span of a run of `g`.
std::string span_category(const Graph& g, const Span& s);

class TraceWriter {
  public:
    using Clock = std::chrono::steady_clock;
    explicit TraceWriter(Clock::time_point t0 = Clock::now()) : m_t0(t0) {}

    /// A node or transfer span of one image's run (thread-safe).
    void add(const Span& s, const std::string& category, const std::string& image);
    /// An image's life, on the images lane `slot`.
    void add_image(const std::string& image, int slot, Clock::time_point start, Clock::time_point end, bool ok);
    /// The counter "in flight" at time t.
    void add_in_flight(int count, Clock::time_point t);
    /// Writes {"traceEvents": [...], "displayTimeUnit": "ms"} atomically (temporary + rename).
    /// Throws InternalError when the file cannot be written.
    void write(const std::string& path) const;

  private:
    double us(Clock::time_point t) const;
    int cpu_lane(std::thread::id id);
    int stream_lane(int device, const void* stream);

    Clock::time_point m_t0;
    mutable std::mutex m_mu;
    std::vector<nlohmann::json> m_events;
    std::map<std::thread::id, int> m_threads;
    std::map<std::pair<int, const void*>, int> m_streams;
    std::map<int, int> m_streams_per_device;
    std::map<int, bool> m_slots;
};

} // namespace pixflow::host
