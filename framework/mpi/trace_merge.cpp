// mpi/ one --trace for a batch over ranks (trace_merge.hpp).
#include "mpi/trace_merge.hpp"

#include "batch/trace.hpp"

#include <nlohmann/json.hpp>

namespace pixflow::mpi {

std::string merge_traces(const std::vector<RankTrace>& traces) {
    nlohmann::json events = nlohmann::json::array();
    for (const RankTrace& t : traces) {
        // The texts came through json_text, so any byte that was not UTF-8 is U+FFFD already.
        nlohmann::json j = nlohmann::json::parse(t.text);
        const std::string who = "rank " + std::to_string(t.rank) + " on " + t.host + ": ";
        for (auto& e : j.value("traceEvents", nlohmann::json::array())) {
            if (e.contains("pid")) e["pid"] = 100 * t.rank + e["pid"].get<int>();
            if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
                e["args"]["name"] = who + e["args"].value("name", "");
            events.push_back(std::move(e));
        }
    }
    nlohmann::json out{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
    return host::json_text(out);
}

} // namespace pixflow::mpi
