// mpi/ a batch over the ranks of an mpirun: who runs which input, and what rank 0 gathers
// (ranks.hpp has the design; command.cpp the command around it).
#include "mpi/ranks.hpp"

#include "mpi/trace_merge.hpp"
#include "mpi/verdict.hpp"
#include "mpi/wire.hpp"

#include <algorithm>
#include <chrono>

namespace pixflow::mpi {

using host::ImageResult;
using Clock = std::chrono::steady_clock;

RankBatch::RankBatch(const Session& s) : m_s(s) { MPI_Comm_dup(MPI_COMM_WORLD, &m_comm); }

RankBatch::~RankBatch() {
    if (m_stage == Stage::checking) m_s.abort(2, "left the batch before it started");
    if (m_server.joinable()) m_server.join(); // only after an exception, which aborted already
    MPI_Comm_free(&m_comm);
}

void RankBatch::start(const std::vector<host::BatchInput>& inputs,
                      const std::vector<std::vector<std::string>>& out_paths) {
    Verdict v;
    v.inputs = inputs.size();
    v.inputs_hash = hash_inputs(inputs, out_paths);
    m_verdict = agree(m_comm, m_s, v);
    m_stage = m_verdict == 0 ? Stage::running : Stage::ended;
    if (m_verdict != 0) throw StoppedElsewhere{}; // command() returns m_verdict
    if (!root()) return;
    m_n = inputs.size();
    m_owner.assign(m_n, -1);
    m_results.assign(m_n, {});
    m_bar = std::make_unique<host::ProgressBar>(int(m_n), m_opt.progress);
    if (m_s.size() > 1) m_server = std::thread([this] { serve(); });
}

// ---- which rank runs which input

std::optional<std::size_t> RankBatch::take_locked(int rank) {
    if (m_stop || m_next >= m_n) return std::nullopt;
    m_owner[m_next] = rank;
    return m_next++;
}

std::optional<std::size_t> RankBatch::next() {
    if (root()) {
        std::lock_guard lk(m_mu);
        return take_locked(0);
    }
    std::lock_guard lk(m_mpi_mu);
    send_bytes(m_comm, 0, tag_request, "");
    std::int64_t i = decode_index(receive_bytes(m_comm, 0, tag_reply));
    if (i < 0) return std::nullopt;
    return std::size_t(i);
}

void RankBatch::record(std::size_t i, ImageResult r, int rank) {
    std::lock_guard lk(m_mu);
    if (i >= m_n || m_owner[i] != rank)
        throw host::InternalError("rank " + std::to_string(rank) + " sent the result of an input it was not given");
    if (r.status != ImageResult::Status::skipped) {
        ++m_done;
        if (r.status == ImageResult::Status::failed) {
            ++m_failed;
            if (m_opt.fail_fast) m_stop = true;
        }
    }
    if (rank != 0) {
        r.rank = rank;
        m_results[i] = std::move(r);
    }
    m_bar->update(m_done, m_failed);
}

void RankBatch::finished(std::size_t i, const ImageResult& r) {
    if (root()) return record(i, r, 0);
    std::lock_guard lk(m_mpi_mu);
    send_bytes(m_comm, 0, tag_result, encode_result(i, r));
}

// ---- output: rank 0 prints for everyone

void RankBatch::print_line(const std::string& line) {
    if (line.rfind("note: ", 0) == 0) { // every rank has the pipeline's notes: once
        std::lock_guard lk(m_mu);
        if (!m_notes.insert(line).second) return;
    }
    m_bar->print(line);
}

void RankBatch::print(const std::string& line) {
    if (root()) return print_line(line);
    std::lock_guard lk(m_mpi_mu);
    send_bytes(m_comm, 0, tag_line, line);
}

// ---- rank 0's server

void RankBatch::serve() {
    try {
        int left = m_s.size() - 1; // ranks not done yet
        auto pause = std::chrono::microseconds(20);
        while (left > 0) {
            int src = 0, tag = 0;
            std::string body;
            if (!try_receive(m_comm, src, tag, body)) {
                std::this_thread::sleep_for(pause); // never spin a core that a rank computes on
                pause = std::min(pause * 2, std::chrono::microseconds(1000));
                continue;
            }
            pause = std::chrono::microseconds(20);
            switch (tag) {
            case tag_request: {
                std::optional<std::size_t> i;
                {
                    std::lock_guard lk(m_mu);
                    i = take_locked(src);
                }
                send_bytes(m_comm, src, tag_reply, encode_index(i ? std::int64_t(*i) : -1));
                break;
            }
            case tag_result: {
                std::size_t i = 0;
                ImageResult r = decode_result(body, i);
                record(i, std::move(r), src);
                break;
            }
            case tag_line: print_line(body); break;
            case tag_done: {
                std::string trace;
                host::RankSummary s = decode_done(body, trace);
                std::lock_guard lk(m_mu);
                m_summaries.push_back(std::move(s));
                m_traces.push_back(std::move(trace));
                --left;
                break;
            }
            default:
                throw host::InternalError("rank " + std::to_string(src) + " sent a message of unknown tag " +
                                          std::to_string(tag));
            }
        }
    } catch (const std::exception& e) { m_s.abort(2, std::string("serving the other ranks: ") + e.what()); }
}

// ---- the end

host::RankSummary RankBatch::summary(const host::BatchReport& report) const {
    host::RankSummary s;
    s.rank = m_s.rank();
    s.host = m_s.host();
    s.workers = report.workers;
    s.images = report.ok + report.failed; // only its own ran here
    s.threads = m_s.cpu_threads();
    s.max_in_flight = report.max_in_flight;
    s.max_in_flight_seen = report.max_in_flight_seen;
    s.isolated_workers = report.isolated_workers;
    return s;
}

bool RankBatch::end(host::BatchReport& report, std::string& trace) {
    auto t0 = Clock::now();
    int totals[4] = {0, 0, 0, 0}; // the exit code, ok, failed, skipped
    MPI_Request req;
    if (!root()) {
        {
            std::lock_guard lk(m_mpi_mu);
            send_bytes(m_comm, 0, tag_done, encode_done(summary(report), trace));
        }
        MPI_Ibcast(totals, 4, MPI_INT, 0, m_comm, &req);
        wait_gently(req);
        report.ok = totals[1];
        report.failed = totals[2];
        report.skipped = totals[3];
        m_stage = Stage::ended;
        return false;
    }
    if (m_server.joinable()) m_server.join(); // every other rank is done
    m_bar->finish();
    std::vector<host::RankSummary> ranks = m_summaries;
    ranks.push_back(summary(report));
    std::vector<RankTrace> traces{{0, m_s.host(), trace}};
    for (std::size_t k = 0; k < m_summaries.size(); ++k)
        traces.push_back({m_summaries[k].rank, m_summaries[k].host, m_traces[k]});
    std::sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    std::sort(traces.begin(), traces.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });

    // One report, in input order, as a single process writes it, with each image's rank.
    report.ok = report.failed = report.skipped = 0;
    for (std::size_t i = 0; i < m_n; ++i) {
        ImageResult& im = report.images[i];
        if (m_owner[i] > 0) {
            std::string input = im.input;
            im = m_results[i];
            im.input = input;
        } else if (m_owner[i] == 0)
            im.rank = 0;
        report.ok += im.status == ImageResult::Status::ok;
        report.failed += im.status == ImageResult::Status::failed;
        report.skipped += im.status == ImageResult::Status::skipped;
    }
    report.workers.clear();
    report.max_in_flight = report.max_in_flight_seen = report.isolated_workers = 0;
    for (const auto& r : ranks) {
        for (const auto& w : r.workers)
            report.workers.push_back("rank " + std::to_string(r.rank) + " on " + r.host + ": " + w);
        report.max_in_flight += r.max_in_flight;
        report.max_in_flight_seen += r.max_in_flight_seen;
        report.isolated_workers += r.isolated_workers;
    }
    report.ranks = std::move(ranks);
    if (!m_opt.trace_path.empty()) {
        try {
            trace = merge_traces(traces);
        } catch (const std::exception& e) {
            report.notes.push_back(std::string("the ranks' traces could not be merged (") + e.what() +
                                   "); --trace has rank 0's");
        }
    }
    report.wall_s += std::chrono::duration<double>(Clock::now() - t0).count();

    totals[0] = report.exit_code();
    totals[1] = report.ok;
    totals[2] = report.failed;
    totals[3] = report.skipped;
    MPI_Ibcast(totals, 4, MPI_INT, 0, m_comm, &req);
    wait_gently(req);
    m_stage = Stage::ended;
    return true;
}

} // namespace pixflow::mpi
