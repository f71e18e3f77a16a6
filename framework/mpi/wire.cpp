// mpi/ the messages of a batch over ranks: transport and fields (wire.hpp).
#include "mpi/wire.hpp"

#include "batch/protocol.hpp"
#include "mpi/session.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

namespace pixflow::mpi {

using host::ImageResult;
using host::RankSummary;
using host::batch::MessageIn;
using host::batch::MessageOut;
using host::batch::MsgType;

namespace {

/// The body of `m`, without the length that frames it on a socket (MPI counts the bytes itself).
std::string body_of(MessageOut& m) { return m.frame().substr(4); }

int checked_count(std::size_t n) {
    if (n > std::size_t(INT_MAX))
        throw host::InternalError("an MPI message of " + std::to_string(n) + " bytes is too large");
    return int(n);
}

} // namespace

void send_bytes(MPI_Comm comm, int dest, int tag, const std::string& body) {
    MPI_Request req;
    MPI_Isend(body.data(), checked_count(body.size()), MPI_BYTE, dest, tag, comm, &req);
    wait_gently(req);
}

std::string receive_bytes(MPI_Comm comm, int src, int tag) {
    // The size is not known before the message is there: wait for it (gently), then take it.
    auto pause = std::chrono::microseconds(20);
    for (;;) {
        int found = 0;
        MPI_Message msg;
        MPI_Status st;
        MPI_Improbe(src, tag, comm, &found, &msg, &st);
        if (found) {
            int n = 0;
            MPI_Get_count(&st, MPI_BYTE, &n);
            std::string body(std::size_t(n), '\0');
            MPI_Mrecv(body.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            return body;
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
}

bool try_receive(MPI_Comm comm, int& src, int& tag, std::string& body) {
    int found = 0;
    MPI_Message msg;
    MPI_Status st;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &found, &msg, &st);
    if (!found) return false;
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    body.assign(std::size_t(n), '\0');
    MPI_Mrecv(body.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    src = st.MPI_SOURCE;
    tag = st.MPI_TAG;
    return true;
}

std::string encode_result(std::size_t index, const ImageResult& r) {
    MessageOut m(MsgType::done);
    m.u64(index).u64(std::uint64_t(r.status)).str(r.error).str(r.worker).f64(r.ms).u64(r.outputs.size());
    for (const auto& o : r.outputs) m.str(o);
    return body_of(m);
}

ImageResult decode_result(const std::string& body, std::size_t& index) {
    MessageIn m(body);
    ImageResult r;
    index = std::size_t(m.u64());
    std::uint64_t status = m.u64();
    if (status > std::uint64_t(ImageResult::Status::skipped))
        throw host::InternalError("a rank sent an unknown image status");
    r.status = ImageResult::Status(status);
    r.error = m.str();
    r.worker = m.str();
    r.ms = m.f64();
    std::uint64_t n = m.u64();
    for (std::uint64_t k = 0; k < n; ++k) r.outputs.push_back(m.str());
    return r;
}

std::string encode_done(const RankSummary& s, const std::string& trace) {
    MessageOut m(MsgType::done);
    m.i64(s.rank).str(s.host).u64(s.workers.size());
    for (const auto& w : s.workers) m.str(w);
    m.i64(s.images).i64(s.threads).i64(s.max_in_flight).i64(s.max_in_flight_seen).i64(s.isolated_workers);
    m.str(trace);
    return body_of(m);
}

RankSummary decode_done(const std::string& body, std::string& trace) {
    MessageIn m(body);
    RankSummary s;
    s.rank = int(m.i64());
    s.host = m.str();
    std::uint64_t n = m.u64();
    for (std::uint64_t k = 0; k < n; ++k) s.workers.push_back(m.str());
    s.images = int(m.i64());
    s.threads = int(m.i64());
    s.max_in_flight = int(m.i64());
    s.max_in_flight_seen = int(m.i64());
    s.isolated_workers = int(m.i64());
    trace = m.str();
    return s;
}

std::string encode_index(std::int64_t i) {
    MessageOut m(MsgType::done);
    m.i64(i);
    return body_of(m);
}

std::int64_t decode_index(const std::string& body) {
    MessageIn m(body);
    return m.i64();
}

} // namespace pixflow::mpi
