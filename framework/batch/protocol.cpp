// batch/ the framing and the fields of the parent <-> worker messages (protocol.hpp).
#include "batch/protocol.hpp"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace pixflow::host::batch {

MessageOut::MessageOut(MsgType t) {
    m_buf.assign(4, '\0'); // the length, filled in by frame()
    m_buf.push_back(char(t));
}

MessageOut& MessageOut::raw(const void* p, std::size_t n) {
    m_buf.append(static_cast<const char*>(p), n);
    return *this;
}

MessageOut& MessageOut::u64(std::uint64_t v) { return raw(&v, sizeof v); }
MessageOut& MessageOut::i64(std::int64_t v) { return raw(&v, sizeof v); }
MessageOut& MessageOut::f64(double v) { return raw(&v, sizeof v); }
MessageOut& MessageOut::str(const std::string& s) {
    u64(s.size());
    return raw(s.data(), s.size());
}

const std::string& MessageOut::frame() {
    std::uint32_t n = std::uint32_t(m_buf.size() - 4);
    std::memcpy(m_buf.data(), &n, 4);
    return m_buf;
}

void MessageIn::raw(void* p, std::size_t n) {
    if (n > m_body.size() - m_at) throw InternalError("a worker message is truncated");
    std::memcpy(p, m_body.data() + m_at, n);
    m_at += n;
}

std::uint64_t MessageIn::u64() {
    std::uint64_t v;
    raw(&v, sizeof v);
    return v;
}
std::int64_t MessageIn::i64() {
    std::int64_t v;
    raw(&v, sizeof v);
    return v;
}
double MessageIn::f64() {
    double v;
    raw(&v, sizeof v);
    return v;
}
std::string MessageIn::str() {
    std::uint64_t n = u64();
    if (n > m_body.size() - m_at) throw InternalError("a worker message is truncated");
    std::string s = m_body.substr(m_at, n);
    m_at += n;
    return s;
}

// ---- PipelineSpec, field by field (keep in step with pipeline/pipeline.hpp)

namespace {

void put_loc(MessageOut& m, const SourceLoc& l) { m.str(l.file).i64(l.line).i64(l.col); }
SourceLoc get_loc(MessageIn& m) {
    SourceLoc l;
    l.file = m.str();
    l.line = int(m.i64());
    l.col = int(m.i64());
    return l;
}

void put_value(MessageOut& m, const RawValue& v) {
    m.u64(std::uint64_t(v.kind)).u64(v.b).i64(v.i).f64(v.f).str(v.s);
    put_loc(m, v.loc);
}
RawValue get_value(MessageIn& m) {
    RawValue v;
    v.kind = RawValue::Kind(m.u64());
    v.b = m.u64() != 0;
    v.i = m.i64();
    v.f = m.f64();
    v.s = m.str();
    v.loc = get_loc(m);
    return v;
}

} // namespace

MessageOut& MessageOut::spec(const PipelineSpec& s) {
    str(s.file).str(s.name).str(s.backend);
    put_loc(*this, s.backend_loc);
    u64(s.nodes.size());
    for (const NodeSpec& n : s.nodes) {
        if (n.external) throw InternalError("node '" + n.id + "': an external image cannot be sent to a worker");
        str(n.id);
        put_loc(*this, n.loc);
        str(n.op);
        put_loc(*this, n.op_loc);
        u64(n.backend.has_value()).str(n.backend.value_or(""));
        put_loc(*this, n.backend_loc);
        u64(n.params.size());
        for (const auto& [k, v] : n.params) {
            str(k);
            put_value(*this, v);
        }
        u64(n.inputs.size());
        for (const InputSpec& in : n.inputs) {
            str(in.port).str(in.node).str(in.out_port);
            put_loc(*this, in.loc);
        }
        u64(n.inputs_as_table);
    }
    return *this;
}

PipelineSpec MessageIn::spec() {
    PipelineSpec s;
    s.file = str();
    s.name = str();
    s.backend = str();
    s.backend_loc = get_loc(*this);
    std::uint64_t nodes = u64();
    for (std::uint64_t k = 0; k < nodes; ++k) {
        NodeSpec& n = s.nodes.emplace_back();
        n.id = str();
        n.loc = get_loc(*this);
        n.op = str();
        n.op_loc = get_loc(*this);
        bool has_backend = u64() != 0;
        std::string backend = str();
        if (has_backend) n.backend = backend;
        n.backend_loc = get_loc(*this);
        std::uint64_t params = u64();
        for (std::uint64_t p = 0; p < params; ++p) {
            std::string key = str();
            n.params.emplace_back(key, get_value(*this));
        }
        std::uint64_t inputs = u64();
        for (std::uint64_t i = 0; i < inputs; ++i) {
            InputSpec& in = n.inputs.emplace_back();
            in.port = str();
            in.node = str();
            in.out_port = str();
            in.loc = get_loc(*this);
        }
        n.inputs_as_table = u64() != 0;
    }
    return s;
}

// ---- the socket

bool send_message(int fd, MessageOut& m) {
    const std::string& f = m.frame();
    for (std::size_t done = 0; done < f.size();) {
        ssize_t n = ::send(fd, f.data() + done, f.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += std::size_t(n);
    }
    return true;
}

bool Inbox::fill(int fd) {
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
    m_buf.append(buf, std::size_t(n));
    return true;
}

void Inbox::drain(int fd) {
    char buf[65536];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        m_buf.append(buf, std::size_t(n));
    }
}

std::optional<MessageIn> Inbox::next() {
    if (m_buf.size() < 4) return std::nullopt;
    std::uint32_t n;
    std::memcpy(&n, m_buf.data(), 4);
    if (m_buf.size() < 4 + std::size_t(n)) return std::nullopt;
    MessageIn m(m_buf.substr(4, n));
    m_buf.erase(0, 4 + std::size_t(n));
    return m;
}

std::optional<MessageIn> receive_message(int fd, Inbox& in) {
    for (;;) {
        if (auto m = in.next()) return m;
        if (!in.fill(fd)) return std::nullopt;
    }
}

MessageOut& MessageOut::compile_options(const CompileOptions& o) {
    str(o.backend).u64(o.fuse).u64(o.param_defaults.size());
    for (const auto& [name, v] : o.param_defaults) {
        str(name);
        put_value(*this, v);
    }
    u64(o.memory_limit).str(o.memory_limit_from).u64(o.device_memory_limit).str(o.device_memory_limit_from);
    return i64(o.strip_rows);
}

CompileOptions MessageIn::compile_options() {
    CompileOptions o;
    o.backend = str();
    o.fuse = u64() != 0;
    for (std::uint64_t k = u64(); k > 0; --k) {
        std::string name = str();
        o.param_defaults[name] = get_value(*this);
    }
    o.memory_limit = u64();
    o.memory_limit_from = str();
    o.device_memory_limit = u64();
    o.device_memory_limit_from = str();
    o.strip_rows = int(i64());
    return o;
}

} // namespace pixflow::host::batch
