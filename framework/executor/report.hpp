// executor/ report: the RunReport of a run (pixflow/report.hpp; `--profile`, `--report`), and the
// trace spans of its nodes and transfers.
#pragma once

#include "executor/executor.hpp"
#include "executor/host_callbacks.hpp"
#include "executor/timing.hpp"

#include <nlohmann/json.hpp>

namespace pixflow::host {

/// The report of a finished run on `device` ("" for none). CUDA nodes' times are read from their
/// events when `device_done`, else left NaN for fill_device_times.
RunReport make_report(const Graph& g, const Plan& p, const Timings& t, const RunSignals& run, const std::string& device,
                      double peak_device_bytes, bool device_done);
/// Waits for each CUDA node's end event and fills in its time.
void fill_device_times(RunReport& r, const Graph& g, const Plan& p, const Timings& t);
/// Hands every node and transfer that ran to `on_span` (GPU times where they can be read).
void report_spans(const Graph& g, const Plan& p, const Timings& t, const std::vector<Stream>& streams,
                  const std::function<void(const Span&)>& on_span);

/// The JSON object of a report (RunReport::to_json is its dump).
nlohmann::json report_json(const RunReport& r);

} // namespace pixflow::host
