// planner/ strips: which chains of nodes run in horizontal strips, and the rows of every strip.
//
// An operator declares how it reads its input rows (abi.h, pf_access_kind). A *chain* is a run of
// nodes that are not whole-image, each reading its producer's only output through its only
// input, where every output but the last one's is read by the next node alone:
//
//   load -> [ gauss5x5 -> gauss5x5 -> maxpool2x2 ] -> save        (chain in brackets)
//
// A streamed chain runs as one step: for each strip of rows of its last node's output, each node
// from the first computes the rows the next one needs, back to front:
//
//   maxpool2x2 out rows [a, b)    needs   gauss #2 out rows [2a, 2b)
//   gauss #2   out rows [2a, 2b)  needs   gauss #1 out rows [2a-2, 2b+2)   (halo 2, clipped)
//   gauss #1   out rows [2a-2, 2b+2) needs    load's rows [2a-4, 2b+4)
//
// A stencil computes its halo rows again in every strip that needs them ("recompute the halo"), a
// block operator a whole number of blocks, and a carried operator (integral) each row once, in
// order, keeping the rows the next strip reads again. So the rows kept are exactly those of the
// whole-image run, bit for bit. Only the chain's input and its last node's output exist whole;
// between the nodes of a chain there are only strips.
//
// When: the planner streams chains when the run's estimated peak memory (its live buffers, host
// and device counted apart, in the order the steps run) would exceed a budget (--memory-limit,
// --device-memory-limit, by default 3/4 of what is available), or always with --strip-rows. A
// budget that the whole-image nodes alone exceed is an error before anything runs.
#pragma once

#include "pipeline/pipeline.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace pixflow::host {

struct Plan;

/// An operator's access pattern as the planner uses it (abi.h, pf_access_desc).
struct RowAccess {
    pf_access_kind kind = PF_ACCESS_WHOLE;
    int halo = 0;
    int in_rows = 1, out_rows = 1; ///< blocks
};
/// The access of node n's operator; whole-image for external nodes and undeclared operators.
RowAccess row_access(const Node& n);

/// The most scratch memory one run call of node n takes, {host, device} (abi.h,
/// pf_scratch_bytes_fn): on the CUDA side when `cuda`, with its images' shapes, the first input's
/// and output's heights replaced by `in_rows` and `out_rows` when they are >= 0 (a strip's call).
std::array<std::size_t, 2> node_scratch(const Graph& g, const Node& n, bool cuda, int in_rows = -1, int out_rows = -1);
/// "pointwise", "stencil (halo 2)", "blocks of 2 -> 1 rows", "carried", "whole image".
std::string access_text(const pf_access_desc* a);

struct StripOptions {
    /// Budgets in bytes for the run's buffers; 0: none (nothing is streamed unless strip_rows).
    std::size_t host_budget = 0, device_budget = 0;
    /// Where each budget came from, for messages: "--memory-limit 512M", "3/4 of the 3.1 GiB of
    /// host memory available".
    std::string host_from, device_from;
    /// Above these a run is refused; between a budget and its limit it runs, with a note. The
    /// default budgets are 3/4 of the memory there is and their limits all of it; a budget given
    /// (--memory-limit) is its own limit. 0: the budget.
    std::size_t host_limit = 0, device_limit = 0;
    /// Stream every chain, in strips of this many rows of its last node's output (0: only when
    /// a budget needs it, with the tallest strips that fit).
    int strip_rows = 0;
    /// Nodes whose outputs the caller reads (the embedding API's output()): never inside a chain.
    std::vector<NodeId> read_by_caller;
    /// false: sinks (save) never join a chain, they get its whole output. One image over MPI ranks
    /// (mpi/image.hpp) needs it: each rank computes a band of the chain, the bands are completed
    /// by an exchange, and a sink writing in order from strip 0 cannot be split.
    bool stream_sinks = true;
    /// Tests: every node of a chain is a stage of its own (see StripChain::stage), so that chains
    /// of CPU nodes run through the pipelined path too.
    bool stage_per_node = false;
    /// --devices with two or more GPUs on one image: every chain of CUDA nodes whose input and
    /// output lie on the host spreads its strips over these devices (the plan's device first),
    /// strip k on devices[k % n], and is streamed even when it fits.
    std::vector<int> devices;
};

/// The rows of one node of a chain in one strip, in rows of its whole images; [x0, x1) ranges.
struct StripRows {
    int in0 = 0, in1 = 0;   ///< input rows it reads (a source: 0, 0)
    int out0 = 0, out1 = 0; ///< output rows it computes (empty: a carried node with nothing new)
    int win0 = 0, win1 = 0; ///< output rows its buffer holds: computed ones, plus for a carried
                            ///< node those kept from the strip before
    int use0 = 0, use1 = 0; ///< output rows read from it: by the next node, or (the last node)
                            ///< the strip's own rows of the chain's output
    int own0 = 0, own1 = 0; ///< chain_bands only: the output rows this band owns, right here
                            ///< (a stencil computes [out0, out1), as many as its input view)
};

struct StripChain {
    std::vector<NodeId> nodes;                  ///< data-flow order
    int rows = 0;                               ///< rows of the last node's output per strip (the last strip: fewer)
    int height = 0;                             ///< rows of the last node's output (its input's, for a sink)
    std::vector<std::vector<StripRows>> strips; ///< [strip][node of the chain]
    std::vector<int> max_window, max_input;     ///< per node: most rows of its buffer, of its input
    std::vector<std::size_t> carry_bytes;       ///< per node: carried state (0: none)
    std::vector<int> last_block;                ///< per node: blocks: index of its last block (see strips.cpp)
    bool ordered = false;                       ///< a carried node: strips one after the other, on one stream
    int streams[2] = {-1, -1};                  ///< CUDA: the stream(s) its strips alternate on
    /// Stages: runs of consecutive nodes on the same side of the bus (per node: its stage). With
    /// more than one, the strips flow through the stages as a pipeline: the host reads strip k+2
    /// while the device computes strip k+1 and the host writes strip k (executor/strips.cpp).
    std::vector<int> stage;
    int n_stages = 1;
    /// Buffer sets: strips in flight at once, each with its own windows and input copies (a
    /// carried node keeps at least two windows). 2 for a chain of CUDA nodes only whose strips
    /// alternate between two streams, up to 3 for a pipeline of stages, else 1.
    int sets = 1;
    /// The GPUs its strips are spread over, strip k on gpus[k % n] (each with its own streams and
    /// `sets` sets of device buffers; the host holds sets x n); empty: the plan's device alone.
    std::vector<int> gpus;
    std::size_t host_bytes = 0, device_bytes = 0;     ///< its strip buffers and scratch, as estimated
    std::size_t host_scratch = 0, device_scratch = 0; ///< of those: its nodes' scratch (abi.h, pf_scratch_desc)
    int count() const { return int(strips.size()); }
    NodeId tail() const { return nodes.back(); }
};

/// What the planner decided about strips; empty when every node runs on whole images.
struct StripPlan {
    std::vector<StripChain> chains;
    NodeMap<int> chain_of; ///< per node: index into chains, or -1
    /// Per transfer of the plan: 1 when a streamed chain moves its rows itself, strip by strip
    /// (between two of its nodes, into its first node, or out of its last node into the
    /// transfer's buffer); the transfer's own step then copies nothing.
    std::vector<char> absorbed;
    /// Per transfer: 1 when it is absorbed by the chain it feeds (read by that chain's first node
    /// alone): that chain copies rows of the producer's own buffer, and when the producer is the
    /// last node of another chain, that chain does not fill the transfer's buffer.
    std::vector<char> into;
    bool is_into(int t) const { return !into.empty() && into[std::size_t(t)]; }
    /// The estimated peak of the run's buffers, host and device, whole-image and as planned.
    std::size_t whole_host_peak = 0, whole_device_peak = 0, host_peak = 0, device_peak = 0;
    std::size_t host_budget = 0, device_budget = 0;
    bool active() const { return !chains.empty(); }
    bool in_chain(NodeId v) const { return !chain_of.empty() && chain_of[v] >= 0; }
};

/// Decides the strips of plan p (after make_plan and fuse) into p.strips. Throws UserError when
/// the whole-image part of the run cannot fit the budget, naming the node, the image sizes and
/// the budget; the plan's notes say which chains stream and why.
void plan_strips(const Graph& g, Plan& p, const StripOptions& opt);

/// The strips of one chain in strips of `rows` rows of its last node's output (planner tests).
void chain_strips(const Graph& g, StripChain& c, int rows);

/// One image over MPI ranks, halos exchanged (mpi/image.hpp): one strip per band of rows of the
/// last node's output, [edges[k], edges[k + 1]), in which every node computes exactly its own
/// band of rows [own0, own1) (the rows its successor needs, without the halo), once over the
/// bands. A stencil's halo rows outside its producer's band are not computed: the producer's
/// window still holds them (win0 < own0, own1 < win1), to be filled by the neighbour bands
/// before the stencil runs. (A stencil's kernel fills as many output rows as its input view
/// holds, border rule at the view's edges (abi.h): its rows outside [own0, own1) are thrown away,
/// overwritten by the exchange.)
void chain_bands(const Graph& g, StripChain& c, const std::vector<int>& edges);

/// "512 MiB", "3.0 GiB", "700 B".
std::string bytes_text(double bytes);

} // namespace pixflow::host
