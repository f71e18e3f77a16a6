// mpi/ one image over the ranks of an mpirun: which chains are split, each rank's band, the
// exchanges after a chain, and the run itself (image.hpp has the design).
#include "mpi/image.hpp"

#include "batch/trace.hpp"
#include "cli/commands.hpp"
#include "compile/compile.hpp"
#include "device/device.hpp"
#include "common/assert.hpp"
#include "executor/buffers.hpp"
#include "executor/output_files.hpp"
#include "mpi/placement.hpp"
#include "mpi/verdict.hpp"
#include "planner/strips.hpp"

#include <nlohmann/json.hpp>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <numeric>
#include <thread>

namespace pixflow::mpi {

using namespace pixflow::host;

namespace {

/// Rows of a chain's output asked for when the user gave no --strip-rows: every chain streams,
/// in one strip, until ImageSplit cuts it into bands.
constexpr int k_one_strip = 1 << 30;

std::string chain_names(const Graph& g, const StripChain& c) {
    std::string s;
    for (NodeId v : c.nodes) s += (s.empty() ? "" : " -> ") + g.nodes[v].id;
    return s;
}

std::string op_name(const Node& n) { return n.op ? n.op->desc->name : ""; }

/// Adds `off` (one row of samples) to every row of `rows` rows at `data`, modulo 2^n.
template <class T> void add_row(char* data, std::size_t pitch, int rows, const T* off, std::size_t n) {
    for (int y = 0; y < rows; ++y) {
        T* r = reinterpret_cast<T*>(data + std::size_t(y) * pitch);
        for (std::size_t x = 0; x < n; ++x) r[x] = T(r[x] + off[x]);
    }
}

} // namespace

std::string raw_header(const std::string& path, const pf_image& im) {
    auto ends = [&](const char* ext) {
        std::string e = ext, p = path;
        if (p.size() < e.size()) return false;
        std::string tail = p.substr(p.size() - e.size());
        for (char& ch : tail) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        return tail == e;
    };
    if ((ends(".pgm") && im.channels == 1) || (ends(".ppm") && im.channels == 3)) {
        if (im.dtype != PF_U8) return ""; // u16 is stored big-endian: rows would need a swap
        return std::string(im.channels == 1 ? "P5" : "P6") + "\n" + std::to_string(im.width) + " " +
               std::to_string(im.height) + "\n255\n";
    }
    if (!ends(".npy") || im.channels < 1 || im.channels > 4) return "";
    static_assert(std::endian::native == std::endian::little, "npy headers below are little-endian");
    const char* descr = nullptr;
    switch (im.dtype) {
    case PF_U8: descr = "|u1"; break;
    case PF_U16: descr = "<u2"; break;
    case PF_I16: descr = "<i2"; break;
    case PF_I32: descr = "<i4"; break;
    case PF_U32: descr = "<u4"; break;
    case PF_U64: descr = "<u8"; break;
    case PF_F32: descr = "<f4"; break;
    case PF_F64: descr = "<f8"; break;
    default: return "";
    }
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(im.height) + ", " + std::to_string(im.width) +
                       (im.channels == 1 ? "" : ", " + std::to_string(im.channels)) + "), }";
    const std::size_t preamble = 10; // magic, version 1.0, u16 length; data on a 64-byte boundary
    std::size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
    dict.append(total - preamble - dict.size() - 1, ' ');
    dict += '\n';
    std::string h("\x93NUMPY\x01\x00", 8);
    h += char(dict.size() & 0xff);
    h += char(dict.size() >> 8);
    return h + dict;
}

std::pair<int, int> band_of(int count, int rank, int size) {
    auto at = [&](int r) { return int((long long)count * r / size); };
    return {at(rank), at(rank + 1)};
}

int chain_alignment(const Graph& g, const StripChain& c) {
    // node i's output rows per row of the chain's output: prod over later nodes of in/out
    for (int a = 1; a <= 4096; ++a) {
        bool fits = true;
        long long num = a, den = 1; // rows of node i's output for `a` rows of the last one
        for (std::size_t i = c.nodes.size(); i-- > 0 && fits;) {
            const RowAccess acc = row_access(g.nodes[c.nodes[i]]);
            if (acc.kind != PF_ACCESS_BLOCKS) continue;
            if (num % den != 0 || (num / den) % acc.out_rows != 0) fits = false;
            num *= acc.in_rows, den *= acc.out_rows;
        }
        if (fits) return a;
    }
    return 1;
}

/// The pf_collective callbacks of a split node: C functions that never throw.
struct CollectiveCalls {
    static int32_t allreduce_f64(void* self, int32_t op, double* values, int32_t n) noexcept {
        auto& ns = *static_cast<NodeShare*>(self);
        ImageSplit& is = *ns.owner;
        try {
            MPI_Request req;
            if (op == PF_REDUCE_SUM) {
                // every rank's values, added in rank order on each: the same bits everywhere
                // (an MPI_SUM may add in another order on each rank)
                const int size = is.m_s.size();
                std::vector<double> all(std::size_t(size) * std::size_t(n));
                {
                    std::lock_guard<std::mutex> lock(is.m_mu);
                    MPI_Iallgather(values, n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, ns.comm, &req);
                    is.m_bytes += (long long)n * 8 * (size - 1);
                }
                is.wait(req);
                for (int k = 0; k < n; ++k) {
                    double t = 0;
                    for (int r = 0; r < size; ++r) t += all[std::size_t(r) * std::size_t(n) + std::size_t(k)];
                    values[k] = t;
                }
                return PF_OK;
            }
            if (op != PF_REDUCE_MIN && op != PF_REDUCE_MAX) return PF_ERR_RUNTIME;
            std::vector<double> in(values, values + n);
            {
                std::lock_guard<std::mutex> lock(is.m_mu);
                MPI_Iallreduce(in.data(), values, n, MPI_DOUBLE, op == PF_REDUCE_MIN ? MPI_MIN : MPI_MAX, ns.comm,
                               &req);
                is.m_bytes += (long long)n * 8;
            }
            is.wait(req);
            return PF_OK;
        } catch (...) { return PF_ERR_RUNTIME; }
    }
    static int32_t exchange_rows(void* self, const void* first, const void* last, void* above, void* below,
                                 std::size_t bytes) noexcept {
        auto& ns = *static_cast<NodeShare*>(self);
        ImageSplit& is = *ns.owner;
        const int rank = is.m_s.rank(), size = is.m_s.size();
        if (bytes > std::size_t(INT_MAX)) return PF_ERR_RUNTIME;
        try {
            MPI_Request req[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            {
                std::lock_guard<std::mutex> lock(is.m_mu);
                // tag 1: a band's first row, going up; tag 2: its last row, going down
                if (rank > 0) {
                    MPI_Isend(first, int(bytes), MPI_BYTE, rank - 1, 1, ns.comm, &req[0]);
                    MPI_Irecv(above, int(bytes), MPI_BYTE, rank - 1, 2, ns.comm, &req[1]);
                    is.m_bytes += (long long)bytes;
                }
                if (rank + 1 < size) {
                    MPI_Isend(last, int(bytes), MPI_BYTE, rank + 1, 2, ns.comm, &req[2]);
                    MPI_Irecv(below, int(bytes), MPI_BYTE, rank + 1, 1, ns.comm, &req[3]);
                    is.m_bytes += (long long)bytes;
                }
            }
            for (MPI_Request& r : req)
                if (r != MPI_REQUEST_NULL) is.wait(r);
            return PF_OK;
        } catch (...) { return PF_ERR_RUNTIME; }
    }
};

namespace {

/// Why chain c, cut into bands by chain_bands, cannot get its halos from its neighbours: a band
/// empty or thinner than the rows a neighbour's stencil reads of it; empty: it can.
std::string thin_band(const Graph& g, const StripChain& c) {
    const int n = c.count();
    for (std::size_t i = 0; i < c.nodes.size(); ++i)
        for (int r = 0; r < n; ++r) {
            const StripRows& me = c.strips[std::size_t(r)][i];
            const std::string id = "'" + g.nodes[c.nodes[i]].id + "'";
            if (me.own1 <= me.own0) return "rank " + std::to_string(r) + " has no rows of " + id;
            const bool above_ok = me.use0 >= me.own0 || (r > 0 && c.strips[std::size_t(r - 1)][i].own0 <= me.use0);
            const bool below_ok = me.use1 <= me.own1 || (r + 1 < n && c.strips[std::size_t(r + 1)][i].own1 >= me.use1);
            if (!above_ok || !below_ok) {
                const int k = above_ok ? r + 1 : r - 1;
                const StripRows& nb = c.strips[std::size_t(k)][i];
                return "the band of rank " + std::to_string(k) + " has " + std::to_string(nb.own1 - nb.own0) +
                       " rows of " + id + ", fewer than rank " + std::to_string(r) + " reads of it (" +
                       std::to_string(above_ok ? me.use1 - me.own1 : me.own0 - me.use0) + ")";
            }
        }
    return "";
}

} // namespace

ImageSplit::ImageSplit(const Session& s, MPI_Comm comm, const Graph& g, Plan& p, int strip_rows, HaloMode halo)
    : m_s(s), m_g(g), m_p(p) {
    const int n = s.size();
    m_chains.resize(p.strips.chains.size());
    for (std::size_t ci = 0; ci < p.strips.chains.size(); ++ci) {
        StripChain& c = p.strips.chains[ci];
        ChainShare& sh = m_chains[ci];
        const NodeId tail = c.tail();
        const Node& tn = g.nodes[tail];
        for (std::size_t i = 0; i < c.nodes.size() && sh.why_not.empty(); ++i) {
            const Node& node = g.nodes[c.nodes[i]];
            const bool carried = row_access(node).kind == PF_ACCESS_CARRIED;
            // CUDA nodes split as host ones do, each rank streaming its band through its own GPU
            // (the chain moves its strips' rows up and down itself); what the ranks exchange must
            // be host memory: a carried state on the device, or an output that stays there, is not
            if (p.on_device(c.nodes[i]) && carried)
                sh.why_not = "carried node '" + node.id + "' runs on CUDA";
            else if (node.is_sink())
                sh.why_not = "node '" + node.id + "' writes a file";
            else if (carried) {
                // integral's integer sums combine over the ranks at once (exact modulo 2^n);
                // every other state is relayed rank to rank (the same states as one process)
                const bool last = i + 1 == c.nodes.size(), integral = op_name(node) == "integral";
                if (integral && last && node.outputs[0].dtype == PF_U32)
                    sh.scan_type = MPI_UINT32_T;
                else if (integral && last && node.outputs[0].dtype == PF_U64)
                    sh.scan_type = MPI_UINT64_T;
                else {
                    Relay r;
                    r.node = int(i);
                    r.bytes = c.carry_bytes[i];
                    sh.relays.push_back(r);
                }
            }
        }
        for (const Transfer& t : p.transfers)
            if (t.node == tail && t.to_device && sh.why_not.empty()) sh.why_not = "its output goes to the GPU";
        if (p.on_device(tail) && sh.why_not.empty()) {
            // its output reaches the host only through downloads (the chain fills their buffers)
            for (const auto& [v, port] : g.consumers(tail, 0))
                if (p.on_device(v)) sh.why_not = "its output stays on the GPU for node '" + g.nodes[v].id + "'";
            if (g.consumers(tail, 0).empty()) sh.why_not = "its output stays on the GPU";
        }
        if (tn.outputs.empty() && sh.why_not.empty()) sh.why_not = "its last node has no output";
        if (!sh.why_not.empty()) {
            sh.k0 = 0, sh.k1 = c.count();
            continue;
        }
        sh.split = true;
        int rows = strip_rows;
        if (rows <= 0) {
            const int align = chain_alignment(g, c);
            const int h = std::max(1, tn.outputs[0].height);
            rows = (h + n - 1) / n;
            rows = (rows + align - 1) / align * align;
        }
        chain_strips(g, c, rows);
        // halos exchanged (a stencil after the first node): the same bands, each rank's in one
        // strip where each node computes its own rows only; its halo rows come from the
        // neighbours. A band thinner than the halo read of it: recomputed, as below.
        bool stencil = false;
        for (std::size_t i = 1; i < c.nodes.size(); ++i) {
            const RowAccess acc = row_access(g.nodes[c.nodes[i]]);
            stencil |= acc.kind == PF_ACCESS_STENCIL && acc.halo > 0;
        }
        bool cuda = false;
        for (NodeId v : c.nodes) cuda |= p.on_device(v);
        if (halo == HaloMode::exchange && stencil && cuda)
            sh.halo_note = "its nodes run on CUDA (rows are exchanged from host windows only)";
        if (halo == HaloMode::exchange && stencil && !cuda) {
            std::vector<int> edges(std::size_t(n) + 1);
            // --strip-rows: the bands of strips as recomputed; else balanced to a row (a block)
            const int align = chain_alignment(g, c);
            for (int r = 0; r < n; ++r)
                edges[std::size_t(r)] = strip_rows > 0 ? std::min(c.height, band_of(c.count(), r, n).first * c.rows)
                                                       : int((long long)c.height * r / n) / align * align;
            edges[std::size_t(n)] = c.height;
            StripChain x = c;
            chain_bands(g, x, edges);
            sh.halo_note = thin_band(g, x);
            if (sh.halo_note.empty()) {
                c = std::move(x);
                sh.halos = true;
                sh.halo_done.assign(c.nodes.size(), 0);
            }
        }
        // recomputed: a relayed node's rows above a band are the rank above's: a node after it
        // that reads them again (a stencil's halo) would need them sent; such a chain is not split
        for (int r = 1; r < n && sh.why_not.empty() && !sh.halos; ++r) {
            const int k = band_of(c.count(), r, n).first;
            if (k <= 0 || k >= c.count()) continue;
            for (const Relay& rl : sh.relays) {
                const StripRows& at = c.strips[std::size_t(k)][std::size_t(rl.node)];
                if (at.win0 < at.out0)
                    sh.why_not = "a node after carried '" + g.nodes[c.nodes[std::size_t(rl.node)]].id +
                                 "' reads its rows above a band";
            }
        }
        if (!sh.why_not.empty()) {
            sh.split = false, sh.relays.clear(), sh.scan_type = MPI_DATATYPE_NULL;
            sh.k0 = 0, sh.k1 = c.count();
            continue;
        }
        std::tie(sh.k0, sh.k1) = band_of(c.count(), s.rank(), n);
        const auto readers = g.consumers(tail, 0);
        bool sinks_only = true;
        for (const auto& [v, port] : readers) sinks_only &= g.nodes[v].is_sink();
        sh.exchange = readers.empty() ? Exchange::none : sinks_only ? Exchange::gather : Exchange::allgather;
        if (readers.size() == 1 && op_name(g.nodes[readers[0].first]) == "save") {
            const Node& save = g.nodes[readers[0].first];
            for (int k = 0; k < save.op->desc->n_params; ++k)
                if ((save.op->desc->params[k].flags & PF_PARAM_OUTPUT_PATH) && save.params[std::size_t(k)].s)
                    sh.path = save.params[std::size_t(k)].s;
            sh.header = raw_header(sh.path, tn.outputs[0]);
            if (!sh.header.empty()) sh.exchange = Exchange::write, sh.save = readers[0].first;
        }
        MPI_Comm_dup(comm, &sh.comm);
    }
    // whole-image CPU nodes whose op can run split (PF_OP_SPLIT): a band of rows on each rank,
    // each band at least one row
    for (NodeId v : g.nodes.ids()) {
        const Node& node = g.nodes[v];
        if (!node.op || !(node.op->desc->flags & PF_OP_SPLIT) || p.on_device(v) || p.strips.in_chain(v) ||
            node.outputs.empty())
            continue;
        const int h = node.outputs[0].height;
        bool same = h >= n;
        for (const pf_image& o : node.outputs) same &= o.height == h;
        if (!same) continue;
        auto ns = std::make_unique<NodeShare>();
        ns->v = v, ns->owner = this;
        std::tie(ns->row0, ns->row1) = band_of(h, s.rank(), n);
        for (std::size_t k = 0; k < node.outputs.size(); ++k) {
            const auto readers = g.consumers(v, int(k));
            bool sinks_only = true, to_gpu = false;
            for (const auto& [u, port] : readers) sinks_only &= g.nodes[u].is_sink();
            for (const Transfer& t : p.transfers) to_gpu |= t.node == v && t.port == int(k);
            ns->exchange.push_back(readers.empty() && !to_gpu ? Exchange::none
                                   : sinks_only && !to_gpu    ? Exchange::gather
                                                              : Exchange::allgather);
        }
        MPI_Comm_dup(comm, &ns->comm);
        ns->coll = pf_collective{
            sizeof(pf_collective),          ns.get(), s.rank(), n, ns->row0, ns->row1, &CollectiveCalls::allreduce_f64,
            &CollectiveCalls::exchange_rows};
        m_nodes.push_back(std::move(ns));
    }
    // MPI-IO only when no sink is left for rank 0 to run (the run skips every sink or none)
    std::size_t sinks = 0, written = 0;
    for (NodeId v : g.nodes.ids()) sinks += g.nodes[v].is_sink();
    for (const ChainShare& sh : m_chains) written += sh.exchange == Exchange::write;
    m_writes_every_sink = sinks > 0 && written == sinks;
    if (!m_writes_every_sink)
        for (ChainShare& sh : m_chains)
            if (sh.exchange == Exchange::write) sh.exchange = Exchange::gather;
}

void ImageSplit::open_files(FileTransaction* tx) {
    for (ChainShare& c : m_chains) {
        if (c.exchange != Exchange::write) continue;
        // rank 0 stages the file (its temporary is removed unless every rank succeeded)
        std::string tmp;
        if (m_s.rank() == 0) try {
                tmp = tx->stage(c.path);
            } catch (const std::exception& e) { tmp.clear(); }
        int n = int(tmp.size());
        MPI_Bcast(&n, 1, MPI_INT, 0, c.comm);
        tmp.resize(std::size_t(n));
        MPI_Bcast(tmp.data(), n, MPI_CHAR, 0, c.comm);
        if (tmp.empty()) throw std::runtime_error(c.path + ": rank 0 cannot create the file's folder");
        c.tmp = tmp;
        int rc = MPI_File_open(c.comm, c.tmp.c_str(), MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &c.file);
        int bad = rc != MPI_SUCCESS, any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c.comm);
        if (any) {
            if (!bad) MPI_File_close(&c.file);
            c.file = MPI_FILE_NULL;
            throw std::runtime_error(c.path + ": a rank cannot open the file with MPI-IO (every rank writes its rows; "
                                              "the output folder must be one that every machine shares)");
        }
        MPI_File_set_size(c.file, 0); // collective; the temporary is new, but a name may be reused
    }
}

std::vector<std::string> ImageSplit::close_files() {
    std::vector<std::string> out;
    for (ChainShare& c : m_chains) {
        if (c.file == MPI_FILE_NULL) continue;
        MPI_File_close(&c.file);
        out.push_back(c.path);
    }
    return out;
}

ImageSplit::~ImageSplit() {
    for (ChainShare& c : m_chains)
        if (c.comm != MPI_COMM_NULL) MPI_Comm_free(&c.comm);
    for (auto& ns : m_nodes)
        if (ns->comm != MPI_COMM_NULL) MPI_Comm_free(&ns->comm);
}

std::pair<int, int> ImageSplit::strips(int ci) {
    const ChainShare& c = m_chains[std::size_t(ci)];
    return {c.k0, c.k1};
}

void ImageSplit::wait(MPI_Request& req) {
    auto pause = std::chrono::microseconds(20);
    for (;;) {
        int done = 0;
        {
            std::lock_guard<std::mutex> lock(m_mu);
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
        if (done) return;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
}

bool ImageSplit::agree_ok(ChainShare& c, bool ok) {
    c.synced = true;
    int bad = ok ? 0 : 1, any = 0;
    MPI_Request req;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        MPI_Iallreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c.comm, &req);
        m_bytes += long(sizeof bad);
    }
    wait(req);
    return any == 0;
}

namespace {
Relay* relay_of(ChainShare& c, int i) {
    for (Relay& r : c.relays)
        if (r.node == i) return &r;
    return nullptr;
}
} // namespace

void ImageSplit::receive(ChainShare& c, Relay& r, void* into, bool stop) {
    if (r.in) return;
    r.in = true;
    if (m_s.rank() == 0) return; // the top band starts from zeros, as strip 0 does
    std::vector<char> msg(r.bytes + 1);
    MPI_Request req;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        MPI_Irecv(msg.data(), int(msg.size()), MPI_BYTE, m_s.rank() - 1, r.node, c.comm, &req);
    }
    const auto t0 = std::chrono::steady_clock::now();
    wait(req);
    m_relay_wait_us +=
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    if (!msg.back() && stop) {
        m_stopped = true;
        throw std::runtime_error("stopped: another rank failed (it says why)");
    }
    if (into) std::memcpy(into, msg.data(), r.bytes);
}

void ImageSplit::send(ChainShare& c, Relay& r, const void* from, bool ok) {
    if (r.out) return;
    r.out = true;
    if (m_s.rank() + 1 >= m_s.size()) return;
    r.msg.assign(r.bytes + 1, 0);
    if (from && ok) std::memcpy(r.msg.data(), from, r.bytes);
    r.msg.back() = ok ? 1 : 0;
    std::lock_guard<std::mutex> lock(m_mu);
    MPI_Isend(r.msg.data(), int(r.msg.size()), MPI_BYTE, m_s.rank() + 1, r.node, c.comm, &r.req);
    m_bytes += (long long)r.msg.size();
}

void ImageSplit::settle(ChainShare& c) {
    for (Relay& r : c.relays)
        if (r.req != MPI_REQUEST_NULL) wait(r.req);
}

void ImageSplit::carry_in(int ci, int i, void* carry, std::size_t bytes) {
    ChainShare& c = m_chains[std::size_t(ci)];
    Relay* r = c.split ? relay_of(c, i) : nullptr;
    if (!r) return;
    PIXFLOW_ASSERT(bytes == r->bytes, "a carried state of another size than planned");
    r->carry = carry;
    receive(c, *r, carry, true);
}

void ImageSplit::carry_out(int ci, int i, const void* carry, std::size_t bytes) {
    ChainShare& c = m_chains[std::size_t(ci)];
    Relay* r = c.split ? relay_of(c, i) : nullptr;
    if (!r) return;
    PIXFLOW_ASSERT(bytes == r->bytes, "a carried state of another size than planned");
    send(c, *r, carry, true);
}

void ImageSplit::halo(int ci, int i, int k, const pf_image& window) {
    ChainShare& c = m_chains[std::size_t(ci)];
    if (!c.split || !c.halos) return;
    PIXFLOW_ASSERT(k == m_s.rank() && window.device == PF_HOST, "a halo exchange outside this rank's band");
    exchange_halo(ci, i, static_cast<char*>(window.data), std::size_t(window.pitch), true, true);
}

void ImageSplit::exchange_halo(int ci, int i, char* win, std::size_t pitch, bool ok, bool stop) {
    ChainShare& c = m_chains[std::size_t(ci)];
    if (c.halo_done[std::size_t(i)]) return;
    c.halo_done[std::size_t(i)] = 1;
    const StripChain& sc = m_p.strips.chains[std::size_t(ci)];
    const int me = m_s.rank(), n = m_s.size();
    auto at = [&](int r) -> const StripRows& { return sc.strips[std::size_t(r)][std::size_t(i)]; };
    const StripRows& mine = at(me);
    const std::size_t rb = row_bytes(m_g.nodes[sc.nodes[std::size_t(i)]].outputs[0]);
    // rows [y0, y1) of the output, with one flag byte: 1, or 0 when the sender failed
    struct Msg {
        int peer, tag, y0, y1;
        std::vector<char> buf;
        MPI_Request req = MPI_REQUEST_NULL;
    };
    std::vector<Msg> sends, recvs;
    // tags: 1000 + 2i the rows going up (to rank - 1), 1001 + 2i going down
    // (the rows the next node reads, [use0, use1), outside the band's own)
    if (me > 0 && at(me - 1).use1 > at(me - 1).own1)
        sends.push_back({me - 1, 1000 + 2 * i, at(me - 1).own1, at(me - 1).use1, {}});
    if (me + 1 < n && at(me + 1).use0 < at(me + 1).own0)
        sends.push_back({me + 1, 1001 + 2 * i, at(me + 1).use0, at(me + 1).own0, {}});
    if (mine.use0 < mine.own0) recvs.push_back({me - 1, 1001 + 2 * i, mine.use0, mine.own0, {}});
    if (mine.use1 > mine.own1) recvs.push_back({me + 1, 1000 + 2 * i, mine.own1, mine.use1, {}});
    {
        std::lock_guard<std::mutex> lock(m_mu);
        for (Msg& m : recvs) {
            m.buf.assign(std::size_t(m.y1 - m.y0) * rb + 1, 0);
            MPI_Irecv(m.buf.data(), int(m.buf.size()), MPI_BYTE, m.peer, m.tag, c.comm, &m.req);
        }
        for (Msg& m : sends) {
            m.buf.assign(std::size_t(m.y1 - m.y0) * rb + 1, 0);
            if (ok && win)
                for (int y = m.y0; y < m.y1; ++y)
                    std::memcpy(m.buf.data() + std::size_t(y - m.y0) * rb, win + std::size_t(y - mine.win0) * pitch,
                                rb);
            m.buf.back() = ok ? 1 : 0;
            MPI_Isend(m.buf.data(), int(m.buf.size()), MPI_BYTE, m.peer, m.tag, c.comm, &m.req);
            m_bytes += (long long)m.buf.size();
            m_halo_bytes += (long long)m.buf.size();
        }
    }
    for (Msg& m : sends) wait(m.req);
    bool failed = false;
    for (Msg& m : recvs) {
        wait(m.req);
        failed |= !m.buf.back();
        if (!ok || !win || !m.buf.back()) continue;
        for (int y = m.y0; y < m.y1; ++y)
            std::memcpy(win + std::size_t(y - mine.win0) * pitch, m.buf.data() + std::size_t(y - m.y0) * rb, rb);
    }
    if (failed && stop) {
        m_stopped = true;
        throw std::runtime_error("stopped: another rank failed (it says why)");
    }
}

void ImageSplit::done(int ci, const pf_image& out, int r0, int r1) {
    ChainShare& c = m_chains[std::size_t(ci)];
    if (!c.split) return;
    c.r0 = r0, c.r1 = r1;
    // relayed states this rank has not passed on: a rank without strips passes the state above
    // on as it came; one whose node skipped its last strip sends the state it has
    for (Relay& r : c.relays) {
        if (!r.in) {
            std::vector<char> held(r.bytes, 0);
            receive(c, r, held.data(), true);
            send(c, r, held.data(), true);
        } else
            send(c, r, r.carry, true);
    }
    settle(c);
    if (!agree_ok(c, true)) {
        m_stopped = true;
        throw std::runtime_error("stopped: another rank failed (it says why)");
    }
    if (!out.data) return; // nothing holds the output here
    const std::size_t rb = row_bytes(out), pitch = std::size_t(out.pitch);
    char* base = static_cast<char*>(out.data);
    MPI_Request req;

    // integral: the sums of the bands above, added to this band's rows (exact modulo 2^n)
    if (c.scan_type != MPI_DATATYPE_NULL) {
        const bool wide = c.scan_type == MPI_UINT64_T;
        const std::size_t n = std::size_t(out.width) * std::size_t(out.channels);
        const std::size_t sz = wide ? 8 : 4;
        // a band summed from zero ends in its own column sums (an empty band: zeros); the scan
        // gives each rank the sums of the bands above it, the row above its band in one process
        std::vector<char> last(n * sz, 0), off(n * sz, 0);
        if (r1 > r0) std::memcpy(last.data(), base + std::size_t(r1 - 1) * pitch, n * sz);
        {
            std::lock_guard<std::mutex> lock(m_mu);
            MPI_Iexscan(last.data(), off.data(), int(n), c.scan_type, MPI_SUM, c.comm, &req);
            m_bytes += (long long)last.size();
        }
        wait(req);
        if (m_s.rank() > 0 && r1 > r0) {
            char* first = base + std::size_t(r0) * pitch;
            if (wide)
                add_row(first, pitch, r1 - r0, reinterpret_cast<const std::uint64_t*>(off.data()), n);
            else
                add_row(first, pitch, r1 - r0, reinterpret_cast<const std::uint32_t*>(off.data()), n);
        }
    }
    if (c.exchange == Exchange::none) return;
    if (c.exchange == Exchange::write) {
        // every rank its rows at their offset, rank 0 the header; collective
        MPI_Datatype row, row_pitched;
        MPI_Request hreq = MPI_REQUEST_NULL;
        {
            std::lock_guard<std::mutex> lock(m_mu);
            MPI_Type_contiguous(int(rb), MPI_BYTE, &row);
            MPI_Type_create_resized(row, 0, MPI_Aint(pitch), &row_pitched);
            MPI_Type_commit(&row_pitched);
            if (m_s.rank() == 0) MPI_File_iwrite_at(c.file, 0, c.header.data(), int(c.header.size()), MPI_BYTE, &hreq);
            const MPI_Offset at = MPI_Offset(c.header.size()) + MPI_Offset(r0) * MPI_Offset(rb);
            MPI_File_iwrite_at_all(c.file, at, base + std::size_t(r0) * pitch, r1 - r0, row_pitched, &req);
        }
        wait(req);
        if (hreq != MPI_REQUEST_NULL) wait(hreq);
        std::lock_guard<std::mutex> lock(m_mu);
        MPI_Type_free(&row_pitched);
        MPI_Type_free(&row);
        return;
    }

    complete_rows(c.comm, c.exchange, out, r0, r1);
}

void ImageSplit::complete_rows(MPI_Comm comm, Exchange how, const pf_image& out, int r0, int r1) {
    const std::size_t rb = row_bytes(out), pitch = std::size_t(out.pitch);
    char* base = static_cast<char*>(out.data);
    MPI_Request req;
    // every rank's rows: gathered at rank 0, or on every rank
    const int size = m_s.size();
    int mine[2] = {r0, r1 - r0};
    std::vector<int> all(std::size_t(2 * size));
    {
        std::lock_guard<std::mutex> lock(m_mu);
        MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm, &req);
    }
    wait(req);
    std::vector<int> displs(static_cast<std::size_t>(size)), counts(static_cast<std::size_t>(size));
    for (int k = 0; k < size; ++k)
        displs[std::size_t(k)] = all[std::size_t(2 * k)], counts[std::size_t(k)] = all[std::size_t(2 * k + 1)];
    MPI_Datatype row, row_pitched;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        MPI_Type_contiguous(int(rb), MPI_BYTE, &row);
        MPI_Type_create_resized(row, 0, MPI_Aint(pitch), &row_pitched);
        MPI_Type_commit(&row_pitched);
        if (how == Exchange::gather) {
            if (m_s.rank() == 0)
                MPI_Igatherv(MPI_IN_PLACE, 0, row_pitched, base, counts.data(), displs.data(), row_pitched, 0, comm,
                             &req);
            else {
                MPI_Igatherv(base + std::size_t(r0) * pitch, r1 - r0, row_pitched, nullptr, nullptr, nullptr,
                             row_pitched, 0, comm, &req);
                m_bytes += (long long)(r1 - r0) * (long long)rb;
            }
        } else {
            MPI_Iallgatherv(MPI_IN_PLACE, 0, row_pitched, base, counts.data(), displs.data(), row_pitched, comm, &req);
            m_bytes += (long long)(r1 - r0) * (long long)rb * (size - 1);
        }
    }
    wait(req);
    std::lock_guard<std::mutex> lock(m_mu);
    MPI_Type_free(&row_pitched);
    MPI_Type_free(&row);
}

const pf_collective* ImageSplit::collective(NodeId v) {
    for (auto& ns : m_nodes)
        if (ns->v == v) {
            ns->started = true;
            return &ns->coll;
        }
    return nullptr;
}

void ImageSplit::node_done(NodeId v, const std::vector<pf_image>& outs, bool ok) {
    for (auto& ns : m_nodes) {
        if (ns->v != v) continue;
        if (!ok) return; // the run fails; run_image_command ends every rank (the others may wait inside)
        ns->finished = true;
        for (std::size_t k = 0; k < outs.size() && k < ns->exchange.size(); ++k)
            if (ns->exchange[k] != Exchange::none)
                complete_rows(ns->comm, ns->exchange[k], outs[k], ns->row0, ns->row1);
    }
}

bool ImageSplit::split_node_unfinished() const {
    for (const auto& ns : m_nodes)
        if (!ns->finished) return true;
    return false;
}

void ImageSplit::finish(bool ok) {
    for (ChainShare& c : m_chains) {
        if (!c.split || c.synced) continue;
        // node by node, as the run goes: a relayed state (the rank above may wait for its send
        // to be received, the rank below for a state), then the halo exchange after the node
        // (the neighbours wait for its rows); they get "failed" instead
        const std::size_t m = m_p.strips.chains[std::size_t(&c - m_chains.data())].nodes.size();
        for (std::size_t i = 0; i < m; ++i) {
            for (Relay& r : c.relays)
                if (r.node == int(i)) {
                    receive(c, r, nullptr, false);
                    send(c, r, nullptr, false);
                }
            if (c.halos && i + 1 < m) exchange_halo(int(&c - m_chains.data()), int(i), nullptr, 0, false, false);
        }
        settle(c);
        if (!agree_ok(c, ok && !m_stopped)) m_stopped = m_stopped || ok;
    }
}

std::vector<std::string> ImageSplit::notes() const {
    std::vector<std::string> out;
    const int n = m_s.size();
    for (std::size_t ci = 0; ci < m_chains.size(); ++ci) {
        const ChainShare& sh = m_chains[ci];
        const StripChain& c = m_p.strips.chains[ci];
        if (!sh.split) {
            out.push_back("mpi: " + chain_names(m_g, c) + " runs whole on every rank (" + sh.why_not + ")");
            continue;
        }
        std::string relayed;
        for (const Relay& rl : sh.relays)
            relayed += (relayed.empty() ? "; the state of carried '" : ", '") +
                       m_g.nodes[c.nodes[std::size_t(rl.node)]].id + "'";
        if (!relayed.empty()) relayed += " passed from rank to rank, each after the one above";
        std::string bands;
        for (int r = 0; r < n; ++r) {
            auto [k0, k1] = band_of(c.count(), r, n);
            int a = k0 < k1 ? c.strips[std::size_t(k0)].back().use0 : 0,
                b = k0 < k1 ? c.strips[std::size_t(k1 - 1)].back().use1 : 0;
            bands += (r ? ", " : "") + std::to_string(a) + ".." + std::to_string(b);
        }
        out.push_back(
            "mpi: " + chain_names(m_g, c) + " runs over " + std::to_string(n) + " ranks, rows of '" +
            m_g.nodes[c.tail()].id + "' " + bands + " (" +
            (sh.halos ? std::string("one strip per rank; stencil halos exchanged with the neighbour ranks")
                      : std::to_string(c.count()) + " strips of " + std::to_string(c.rows) + " rows" +
                            (sh.halo_note.empty() ? "" : "; halos recomputed: " + sh.halo_note)) +
            "); its output is " +
            (sh.exchange == Exchange::write    ? "written by every rank at its rows' offset in " + sh.path + " (MPI-IO)"
             : sh.exchange == Exchange::gather ? "gathered at rank 0"
             : sh.exchange == Exchange::allgather ? "gathered on every rank (whole-image nodes read it)"
                                                  : "read by nothing") +
            (sh.scan_type != MPI_DATATYPE_NULL ? "; integral's sums of the bands above added (MPI_Exscan)" : "") +
            relayed);
    }
    for (const auto& ns : m_nodes) {
        const Node& node = m_g.nodes[ns->v];
        std::string bands, outs;
        const int h = node.outputs[0].height;
        for (int r = 0; r < n; ++r) {
            auto [a, b] = band_of(h, r, n);
            bands += (r ? ", " : "") + std::to_string(a) + ".." + std::to_string(b);
        }
        for (std::size_t k = 0; k < ns->exchange.size(); ++k)
            outs += std::string(k ? ", " : "") + "'" + node.op->desc->outputs[k].name + "' " +
                    (ns->exchange[k] == Exchange::gather      ? "gathered at rank 0"
                     : ns->exchange[k] == Exchange::allgather ? "gathered on every rank"
                                                              : "read by nothing");
        out.push_back("mpi: node '" + node.id + "' (" + op_name(node) + ") runs split over " + std::to_string(n) +
                      " ranks, rows " + bands +
                      ", exchanging halo rows and sums with each other; its outputs: " + outs);
    }
    return out;
}

int run_image_command(const Session& s, const Registry& reg, const cli::RunArgs& a) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    struct CommGuard {
        MPI_Comm& c;
        ~CommGuard() { MPI_Comm_free(&c); }
    } comm_guard{comm};
    const bool root = s.rank() == 0;

    // 1. every rank compiles; an invalid pipeline is printed once (exit 1), as one process would
    Verdict v;
    Compiled c;
    try {
        CompileOptions co = cli::compile_options(a.pipeline);
        if (co.strip_rows <= 0) co.strip_rows = k_one_strip;
        co.stream_sinks = false; // save gets the chain's whole output (gathered, or written with MPI-IO)
        // each rank's CUDA nodes run on the GPU of its local rank (as a batch): a split chain's
        // band streams through it, a chain that is not split runs whole there
        if (host::cuda_usable()) co.device = device_for(s.local_rank(), host::cuda_device_count());
        c = compile_file(a.pipeline.file, a.pipeline.sets, reg, co);
        std::vector<NamedPath> side;
        if (!a.batch.trace_path.empty()) side.push_back({a.batch.trace_path, "--trace"});
        if (!a.report_path.empty()) side.push_back({a.report_path, "--report"});
        check_side_outputs(side, pipeline_files(c.graph));
    } catch (const UserError& e) {
        v.status = 1;
        for (const auto& d : e.diagnostics()) v.lines.push_back("error: " + d.str());
    } catch (const std::exception& e) {
        v.status = 2;
        v.lines.push_back(std::string("error: ") + e.what());
    }
    if (int code = agree(comm, s, v)) return code;

    // 2. the bands; rank 0 prints the notes
    ImageSplit split(s, comm, c.graph, c.plan, a.pipeline.strip_rows,
                     a.mpi_halo == "recompute" ? HaloMode::recompute : HaloMode::exchange);
    if (root) {
        for (const auto& w : c.plan.warnings) std::cerr << "warning: " << w.str() << "\n";
        for (const auto& n : c.plan.notes)
            if (a.pipeline.strip_rows > 0 || n.rfind("strips: ", 0) != 0) std::cerr << "note: " << n << "\n";
        for (const auto& n : split.notes()) std::cerr << "note: " << n << "\n";
    }

    // 3. the run: rank 0 alone runs the sinks (and writes); every file is staged until every
    // rank succeeded
    FileTransaction files;
    ExitGuard guard("an operator called exit() on " + s.who() + " while the pipeline ran; nothing was written", 2);
    RunReport r;
    Verdict after;
    TraceWriter trace;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> written_here;
    try {
        split.open_files(&files);
        tbb::task_arena arena(s.cpu_threads());
        arena.execute([&] {
            Executor ex(c.graph, c.plan);
            RunOptions opt;
            opt.files = &files;
            opt.split = &split;
            opt.skip_sinks = !root || split.writes_every_sink();
            if (root && !a.batch.trace_path.empty())
                opt.on_span = [&](const Span& sp) { trace.add(sp, span_category(c.graph, sp), a.pipeline.file); };
            r = ex.run(opt);
        });
        split.finish(true);
        written_here = split.close_files();
    } catch (const std::exception& e) {
        if (!split.stopped() && split.split_node_unfinished()) {
            // the other ranks may be waiting inside a node run split, where no agreement
            // reaches them: this rank ends the run (mpirun stops the others, which remove their
            // temporaries; rank 0 commits nothing)
            files.rollback();
            std::fprintf(stderr, "error: %s: %s; stopping every rank\n", s.who().c_str(), e.what());
            std::fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        split.finish(false);
        split.close_files();
        if (!split.stopped()) {
            after.status = 2;
            after.lines.push_back("error: " + (root ? s.who() + ": " : std::string()) + e.what() +
                                  "; stopping every rank");
        }
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (int code = agree(comm, s, after)) {
        files.rollback();
        return code;
    }

    // 4. what each rank did, at rank 0: the report's `ranks`, and the files committed
    long long mine[4] = {split.bytes_sent(), (long long)(ms * 1000), split.relay_wait_us(), split.halo_bytes_sent()};
    std::vector<long long> all(std::size_t(4 * s.size()));
    MPI_Request req;
    MPI_Igather(mine, 4, MPI_LONG_LONG, all.data(), 4, MPI_LONG_LONG, 0, comm, &req);
    wait_gently(req);
    int code = 0;
    if (root) {
        try {
            nlohmann::json ranks = nlohmann::json::array();
            for (int k = 0; k < s.size(); ++k)
                ranks.push_back({{"rank", k},
                                 {"bytes_sent", all[std::size_t(4 * k)]},
                                 {"halo_bytes_sent", all[std::size_t(4 * k + 3)]},
                                 {"ms", double(all[std::size_t(4 * k + 1)]) / 1000},
                                 {"relay_wait_ms", double(all[std::size_t(4 * k + 2)]) / 1000}});
            if (!a.batch.trace_path.empty()) files.stage_text(a.batch.trace_path, trace.text());
            if (!a.report_path.empty()) {
                nlohmann::json j = nlohmann::json::parse(r.to_json());
                j["ranks"] = ranks;
                for (const auto& f : written_here) j["outputs"].push_back(f);
                files.stage_text(a.report_path, j.dump(2) + "\n");
            }
            files.commit();
            for (const auto& n : r.nodes)
                for (const auto& [k, val] : n.metrics) std::printf("%s: %s = %g\n", n.id.c_str(), k.c_str(), val);
            for (const auto& f : r.outputs) std::printf("wrote %s\n", f.c_str());
            for (const auto& f : written_here) std::printf("wrote %s\n", f.c_str());
            if (a.profile) std::cout << r.table();
            for (int k = 0; k < s.size(); ++k) {
                const long long wait_us = all[std::size_t(4 * k + 2)], halo_bytes = all[std::size_t(4 * k + 3)];
                std::fprintf(stderr, "note: mpi: rank %d sent %lld bytes", k, all[std::size_t(4 * k)]);
                if (halo_bytes > 0) std::fprintf(stderr, " (%lld of them halo rows)", halo_bytes);
                std::fprintf(stderr, ", ran %.1f ms", double(all[std::size_t(4 * k + 1)]) / 1000);
                if (wait_us > 0)
                    std::fprintf(stderr, ", of which %.1f ms waiting for carried states from the rank above",
                                 double(wait_us) / 1000);
                std::fprintf(stderr, "\n");
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            code = 2;
        }
    }
    MPI_Ibcast(&code, 1, MPI_INT, 0, comm, &req);
    wait_gently(req);
    return code;
}

} // namespace pixflow::mpi
