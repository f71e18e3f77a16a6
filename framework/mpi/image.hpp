// mpi/ one image over the ranks of an mpirun: `mpirun -np N pixflow run big.toml` (docs/mpi.md,
// "One image over the ranks").
//
//   model    every rank compiles the same pipeline and runs the same plan; every streamed chain
//            (planner/strips.hpp; under mpirun every chain streams) is cut into bands of rows of
//            its last node's output, one contiguous band of strips per rank, bands aligned to the
//            chain's blocks. A rank runs only its strips (executor ChainSplit hook), then the
//            chain's output is completed: gathered at rank 0 (MPI_Gatherv) when only sinks read
//            it (only rank 0 runs sinks: it alone writes files), else gathered on every rank
//            (MPI_Allgatherv) so that the whole-image nodes after it run on every rank on the
//            same bytes as one process (replicated, no scatter needed for a later chain). When
//            every sink is a `save` of a split chain's output to .npy, PGM or PPM (u8), each
//            rank writes its rows itself at their offset in the one file (MPI-IO, collective;
//            rank 0 the header), and no rank runs a sink
//   inputs   every rank runs the whole-image nodes before a chain itself (`load` reads the file
//            on each rank, from the folder every machine shares): no rows are scattered
//   halos    exchanged (the default, --mpi-halo exchange): a chain with a stencil after its
//            first node runs as one strip per rank (planner chain_bands), each node computing
//            exactly its own band of rows; before a node runs, its producer's window gets the
//            rows above and below the band from ranks r - 1 and r + 1 (the executor's halo hook:
//            MPI_Isend/MPI_Irecv, one flag byte per message, 0 from a rank that failed). A band
//            thinner than the halo read of it falls back to recomputing, with a note.
//            Recomputed (--mpi-halo recompute): the rows are computed again by the rank below, as
//            between two strips of one process: 2 x halo rows per band edge and stencil; no bytes
//   carried  integral as a chain's last node, with an integer output (u32, u64): each rank runs
//            its band from zero, then MPI_Exscan of its band's last row (per column and channel,
//            sums modulo 2^n: exact) is added to its rows. Any other carried node (floyd_steinberg,
//            integral in f64 or before other nodes) is relayed: rank r waits for the state rank
//            r - 1 left after its last strip of that node (MPI_Irecv, the executor's carry_in
//            hook), runs its strips from it, and hands its own on to rank r + 1 right after its
//            last strip of that node (MPI_Isend, carry_out), before the nodes after it in the
//            strip: the same states in the same order as one process, so the same bits. The
//            node itself runs rank after rank; what overlaps is everything before it in a
//            rank's first strip, and the nodes after it. A rank with no strip passes the state
//            on; a rank that fails sends a "failed" flag instead, which stops the ranks below
//   split    a whole-image CPU node whose op declared PF_OP_SPLIT (abi.h 1.4: chan_vese) runs
//   nodes    on every rank, each computing a band of its outputs' rows with a pf_collective
//            (the executor's collective hook): allreduce_f64 (sums: MPI_Iallgather, then added
//            in rank order on each rank, so every rank gets the same bits and takes the same
//            branches; min, max: MPI_Iallreduce) and exchange_rows (MPI_Isend/MPI_Irecv with
//            the neighbours), on a communicator of the node's own. Its outputs are then
//            completed as a chain's are (gathered at rank 0 for sinks, on every rank for
//            other readers). A rank whose run fails while such a node has not finished on it
//            ends the whole run (MPI_Abort): the others may be waiting inside the node's
//            collectives, where no agreement reaches them
//   GPUs     a chain with CUDA nodes splits as any other: each rank streams its band through
//            the GPU of its local rank (uploads and downloads of its strips' rows, executor/
//            strips.cpp), and the ranks exchange the host rows its downloads wrote; its halos
//            are recomputed (the exchange works on host windows)
//   not split chains whose output stays on the GPU (read there by a CUDA node, or uploaded), a
//            carried node on CUDA (its state lives on the device), chains with a sink, and when
//            recomputing, a chain whose node after a relayed carried node reads rows above a
//            band (its halo would be the rank above's rows); they run whole on every rank, on
//            the rank's GPU
//   faults   before each exchange the ranks agree on a flag (MPI_Iallreduce, per chain, each
//            on a communicator of its own, so chains that run concurrently do not interleave
//            their collectives); a rank whose run failed sets it, the others stop their run,
//            and the final verdict (verdict.hpp) prints the cause with the failing rank's rank
//            and host once; rank 0 commits its files only when every rank succeeded
//   threads  MPI_THREAD_SERIALIZED: every MPI call under one lock; waits test with sleeps
#pragma once

#include "executor/executor.hpp"
#include "mpi/session.hpp"
#include "planner/plan.hpp"

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pixflow::cli {
struct RunArgs;
}
namespace pixflow::host {
class Registry;
}

namespace pixflow::mpi {

/// A stencil's halo rows at a band's edge (docs/mpi.md, "Halos: exchanged or recomputed"):
/// exchanged with the neighbour ranks (each rank computes each node's own band of rows, once),
/// or recomputed by the rank that needs them (no messages, more rows computed).
enum class HaloMode { exchange, recompute };

/// How a split chain's output is completed.
enum class Exchange { none, gather, allgather, write };

/// A carried node of a split chain whose state passes from rank to rank (image.hpp: carried).
/// Each message is the state, then one byte: 1, or 0 when the sending rank failed.
struct Relay {
    int node = 0;                 ///< its index in the chain
    std::size_t bytes = 0;        ///< its state's size
    bool in = false, out = false; ///< received from rank - 1 / sent to rank + 1
    void* carry = nullptr;        ///< the executor's state buffer (carry_in)
    std::vector<char> msg;        ///< what was sent, alive until the send completes
    MPI_Request req = MPI_REQUEST_NULL;
};

class ImageSplit;

/// A whole-image node run split over the ranks (image.hpp: split nodes).
struct NodeShare {
    host::NodeId v{};
    int row0 = 0, row1 = 0; ///< this rank's band of its outputs' rows
    MPI_Comm comm = MPI_COMM_NULL;
    pf_collective coll{}; ///< what its op gets; self points here
    ImageSplit* owner = nullptr;
    std::vector<Exchange> exchange; ///< per output: none, gather or allgather
    bool started = false, finished = false;
};

/// One chain's share: what the ranks agreed on before the run, and what this rank did.
struct ChainShare {
    bool split = false;
    std::string why_not; ///< not split: why (for the note)
    int k0 = 0, k1 = 0;  ///< this rank's strips
    Exchange exchange = Exchange::none;
    MPI_Datatype scan_type = MPI_DATATYPE_NULL; ///< integral: the output's sample type
    std::vector<Relay> relays;                  ///< carried nodes relayed rank to rank, in chain order
    MPI_Comm comm = MPI_COMM_NULL;
    /// Halos exchanged: strip r of the chain is rank r's band (planner chain_bands), and before
    /// node i + 1 runs, node i's window gets its rows above and below the band from the
    /// neighbours (halo_done[i]: this rank took part in that exchange).
    bool halos = false;
    std::vector<char> halo_done;
    std::string halo_note; ///< exchange asked for but not done: why (for the note)
    bool synced = false;   ///< this rank took part in the chain's agreement
    int r0 = 0, r1 = 0;    ///< rows of the chain's output this rank computed
    // Exchange::write: the one `save` that reads the output, its file written with MPI-IO
    host::NodeId save{};
    std::string path, tmp, header; ///< save's path, rank 0's staged temporary, the file's header
    MPI_File file = MPI_FILE_NULL;
};

/// The header of the file `save` writes for `im` at `path`, when its format stores the rows raw
/// after a header that depends on the shape alone: .npy (every dtype, 1-4 channels), binary PGM
/// and PPM of u8 (the same bytes as plugins/io's npy_write and pnm_write; the tests compare whole
/// files). Empty: not such a format (written by rank 0 after a gather).
std::string raw_header(const std::string& path, const pf_image& im);

/// The rows [k0, k1) of `count` strips that rank `rank` of `size` runs: contiguous, balanced.
std::pair<int, int> band_of(int count, int rank, int size);
/// The smallest number of rows of a chain's last output that starts every block node of the
/// chain at a block: bands of a multiple of it never compute a block twice.
int chain_alignment(const host::Graph& g, const host::StripChain& c);

class ImageSplit final : public host::ChainSplit {
  public:
    /// Decides which chains of `p` are split and re-cuts their strips (one band per rank, or
    /// `strip_rows` rows per strip when given). Collective over `comm` (a communicator per
    /// split chain).
    ImageSplit(const Session& s, MPI_Comm comm, const host::Graph& g, host::Plan& p, int strip_rows,
               HaloMode halo = HaloMode::exchange);
    ~ImageSplit() override;
    ImageSplit(const ImageSplit&) = delete;
    ImageSplit& operator=(const ImageSplit&) = delete;

    std::pair<int, int> strips(int ci) override;
    void done(int ci, const pf_image& out, int r0, int r1) override;
    void carry_in(int ci, int i, void* carry, std::size_t bytes) override;
    void carry_out(int ci, int i, const void* carry, std::size_t bytes) override;
    void halo(int ci, int i, int k, const pf_image& window) override;
    const pf_collective* collective(host::NodeId v) override;
    void node_done(host::NodeId v, const std::vector<pf_image>& outs, bool ok) override;
    /// Whether a node run split has not finished here: after this rank failed, the others may
    /// be waiting inside it, so the run must end with MPI_Abort.
    bool split_node_unfinished() const;
    /// After the run, on every rank: takes part in the agreement of every split chain this rank
    /// has not reached (`ok` false: this rank failed), so that no rank waits for it.
    void finish(bool ok);
    /// Another rank failed: this rank's run was stopped at an agreement.
    bool stopped() const { return m_stopped; }
    /// Whether every sink of the run is a `save` that this split writes itself (MPI-IO): the run
    /// then skips the sinks on every rank.
    bool writes_every_sink() const { return m_writes_every_sink; }
    /// Collective, before the run: rank 0 stages each file written with MPI-IO in `tx` and every
    /// rank opens its temporary. Throws on failure (the same on every rank).
    void open_files(host::FileTransaction* tx);
    /// Collective, after the run: closes the files; the final paths written (rank 0's to commit).
    std::vector<std::string> close_files();
    /// Notes for rank 0 to print: which chains run over the ranks, which do not and why.
    std::vector<std::string> notes() const;
    /// Payload bytes this rank sent (rows, scanned rows, agreement flags).
    long long bytes_sent() const { return m_bytes; }
    /// Of those, the halo rows sent to the neighbours (and their flags).
    long long halo_bytes_sent() const { return m_halo_bytes; }
    /// Microseconds this rank waited for relayed carried states (the serial part of a chain).
    long long relay_wait_us() const { return m_relay_wait_us; }
    const std::vector<ChainShare>& shares() const { return m_chains; }

  private:
    friend struct CollectiveCalls;
    /// Rows [r0, r1) of `out`, this rank's, completed from the others': at rank 0 (gather) or
    /// on every rank (allgather). Collective over `comm`.
    void complete_rows(MPI_Comm comm, Exchange how, const pf_image& out, int r0, int r1);
    /// Waits for `req`, testing under the lock with growing sleeps.
    void wait(MPI_Request& req);
    /// The chain's agreement: true when every rank got here without failing.
    bool agree_ok(ChainShare& c, bool ok);
    /// The state rank - 1 sends for `r` into `into` (bytes; nullptr: dropped). A "failed" flag
    /// stops this rank's run (throws) when `stop`.
    void receive(ChainShare& c, Relay& r, void* into, bool stop);
    /// Sends `from` (or zeros), with flag `ok`, to rank + 1; completed by settle().
    void send(ChainShare& c, Relay& r, const void* from, bool ok);
    /// The halo exchange of node i's window (`win`: nullptr after this rank failed, `ok` false:
    /// zeros and a "failed" flag are sent, what comes is dropped). A "failed" flag from a
    /// neighbour stops this rank's run (throws) when `stop`.
    void exchange_halo(int ci, int i, char* win, std::size_t pitch, bool ok, bool stop);
    /// Waits for this rank's sends of chain `c`.
    void settle(ChainShare& c);

    const Session& m_s;
    const host::Graph& m_g;
    const host::Plan& m_p;
    std::vector<ChainShare> m_chains;
    std::vector<std::unique_ptr<NodeShare>> m_nodes;
    std::mutex m_mu; ///< MPI_THREAD_SERIALIZED: one thread in MPI at a time
    std::atomic<bool> m_stopped{false};
    bool m_writes_every_sink = false;
    long long m_bytes = 0, m_halo_bytes = 0;
    std::atomic<long long> m_relay_wait_us{0};
};

/// `pixflow run P.toml` (no --input) in one rank of an mpirun of more than one rank.
int run_image_command(const Session& s, const host::Registry& reg, const cli::RunArgs& a);

} // namespace pixflow::mpi
