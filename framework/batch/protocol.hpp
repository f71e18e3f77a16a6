// batch/ the messages between an isolated batch (isolate.cpp) and its worker processes
// (worker.cpp), over one AF_UNIX stream socket per worker (the worker's fd 3).
//
//   frame    u32 length of the body, then the body: a u8 type and the fields in order. Numbers
//            are native (both ends are the same executable on the same machine); a string is a
//            u64 length and its bytes, any bytes (paths need not be UTF-8)
//
//   parent -> worker   config  once: CompileOptions (backend, fuse, --max-pixels, the worker's share
//                              of the memory budgets, --strip-rows), device, TBB threads, trace
//                      job     index, input, the image's PipelineSpec (paths already in place)
//   worker -> parent   begin   the job was taken (its timeout starts here)
//                      staged  a temporary and its final path, before anything can write it
//                      node    a node's operator is called (1) or returned (0)
//                      log     an operator's log line
//                      span    a node or transfer of the run, for --trace
//                      done    ok or failed, the error, the outputs it would write
//
// A worker stages its outputs and leaves them for the parent to commit (a worker killed at any
// moment leaves only temporaries whose names the parent already has).
#pragma once

#include "compile/compile.hpp"
#include "pipeline/pipeline.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace pixflow::host::batch {

enum class MsgType : std::uint8_t { config = 1, job = 2, begin = 10, staged, node, log, span, done };

class MessageOut {
  public:
    explicit MessageOut(MsgType t);
    MessageOut& u64(std::uint64_t v);
    MessageOut& i64(std::int64_t v);
    MessageOut& f64(double v);
    MessageOut& str(const std::string& s);
    MessageOut& spec(const PipelineSpec& s);
    /// What a worker compiles with: backend, fuse, parameter defaults, budgets, --strip-rows.
    MessageOut& compile_options(const CompileOptions& o);
    /// The frame: length, then body.
    const std::string& frame();

  private:
    MessageOut& raw(const void* p, std::size_t n);
    std::string m_buf;
};

class MessageIn {
  public:
    explicit MessageIn(std::string body) : m_body(std::move(body)) {}
    MsgType type() const { return MsgType(std::uint8_t(m_body.empty() ? 0 : m_body[0])); }
    std::uint64_t u64();
    std::int64_t i64();
    double f64();
    std::string str();
    PipelineSpec spec();
    CompileOptions compile_options();

  private:
    void raw(void* p, std::size_t n); ///< throws InternalError past the end
    std::string m_body;
    std::size_t m_at = 1;
};

/// Sends a whole frame (MSG_NOSIGNAL: a dead peer is an error, not SIGPIPE). false when the peer
/// is gone.
bool send_message(int fd, MessageOut& m);

/// Frames as they arrive on a socket.
class Inbox {
  public:
    /// Reads once (blocking unless the socket is non-blocking). false at the end of the stream or
    /// on an error; EAGAIN and EINTR are not ends.
    bool fill(int fd);
    /// Reads everything there is now without blocking (a dead peer's last words).
    void drain(int fd);
    /// The next complete frame, if one has arrived.
    std::optional<MessageIn> next();

  private:
    std::string m_buf;
};

/// Blocks until a whole frame arrived; nullopt at the end of the stream.
std::optional<MessageIn> receive_message(int fd, Inbox& in);

} // namespace pixflow::host::batch
