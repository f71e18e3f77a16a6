// pipeline/: the TOML pipeline as written (PipelineSpec), then checked against the loaded
// operators and turned into a Graph: every parameter resolved, every input wired, every output
// shape inferred. Nothing runs here; every user error is collected with its file:line:col.
#pragma once

#include "loader/registry.hpp"
#include "pipeline/diagnostic.hpp"
#include "pipeline/node_id.hpp"

#include <pixflow/abi.h>

#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace pixflow::host {

/// A value as written in TOML or --set, before it meets a schema.
struct RawValue {
    enum class Kind { boolean, integer, floating, string, other } kind = Kind::other;
    bool b = false;
    std::int64_t i = 0;
    double f = 0;
    std::string s; ///< the string, or for `other` the TOML type name
    SourceLoc loc;
    std::string to_toml() const; ///< as it would be written back: 1.5, true, "zero"
};

struct InputSpec {
    std::string port;     ///< the consumer's input port
    std::string node;     ///< producer node id
    std::string out_port; ///< producer port; empty = its default (first) output
    SourceLoc loc;
};

struct NodeSpec {
    std::string id;
    SourceLoc loc;
    std::string op;
    SourceLoc op_loc;
    std::optional<std::string> backend;
    SourceLoc backend_loc;
    std::vector<std::pair<std::string, RawValue>> params; ///< in file order
    std::vector<InputSpec> inputs;
    bool inputs_as_table = false;     ///< `inputs = {...}` rather than `input = "..."`
    std::optional<pf_image> external; ///< an image handed in by the caller (tests, batch)
};

struct PipelineSpec {
    std::string file;
    std::string name;
    std::string backend = "auto";
    SourceLoc backend_loc;
    std::vector<NodeSpec> nodes; ///< in file order
};

/// One `--set node.key=value` (or Pipeline::set): `node` may be "pipeline" for pipeline.name and
/// pipeline.backend; `key` may be op, backend, input or inputs.<port> as well as a parameter.
struct Override {
    std::string node, key;
    RawValue value; ///< value.loc says where the override came from
};

/// Parses a pipeline file and applies `--set node.key=value` overrides (a value is read as a
/// TOML value when it parses as one, else as a string), then `overrides`. Throws UserError.
PipelineSpec parse_pipeline_file(const std::filesystem::path& file, const std::vector<std::string>& sets = {},
                                 const std::vector<Override>& overrides = {});
PipelineSpec parse_pipeline_text(const std::string& text, const std::string& file_name,
                                 const std::vector<std::string>& sets = {},
                                 const std::vector<Override>& overrides = {});
/// "" when `path` is a regular file (symbolic links followed) or does not exist; otherwise what
/// it is, for messages: "a directory", "a FIFO (named pipe)", "a character device", ...
std::string non_regular_file_kind(const std::filesystem::path& path);
/// Reads one --set style value.
RawValue parse_value(const std::string& text, SourceLoc loc);
/// Reads one `node.key=value` as given to --set; throws UserError (also for a control character
/// anywhere in it, or an empty part of the key such as `blur.inputs.=src`).
Override parse_override(const std::string& assignment);
/// `s` with control characters written as \n, \r, \t or \xNN, so that it fits a one-line message.
std::string escape_control(const std::string& s);

/// A validated node. `op == nullptr` marks an external input (spec.external).
struct Node {
    std::string id;
    const OpInfo* op = nullptr;
    SourceLoc loc;
    std::vector<pf_value> params; ///< one per schema parameter, in schema order
    /// Storage behind params[k].s, shared by copies so the pointers stay valid.
    std::shared_ptr<std::deque<std::string>> strings = std::make_shared<std::deque<std::string>>();
    struct Input {
        NodeId node;
        int port = 0;
        SourceLoc loc;
    };
    std::vector<Input> inputs;     ///< one per input port of the op
    std::vector<pf_image> outputs; ///< inferred shapes (data == nullptr)
    std::string backend;           ///< "auto" | "cpu" | "cuda" as requested
    SourceLoc backend_loc;
    bool backend_explicit = false; ///< set on the node itself
    std::map<std::string, SourceLoc> param_locs;
    std::vector<std::string> replaced; ///< a fused node: the ids of the nodes it stands for

    bool is_external() const { return op == nullptr; }
    bool is_source() const { return op && (op->desc->flags & PF_OP_SOURCE); }
    bool is_sink() const { return op && (op->desc->flags & PF_OP_SINK); }
    /// The string value of a parameter with `flag`, e.g. PF_PARAM_OUTPUT_PATH, if any.
    std::vector<std::pair<std::string, std::string>> paths(std::uint32_t flag) const;
};

struct Graph {
    std::string file;
    std::string name;
    NodeMap<Node> nodes;
    std::vector<NodeId> order; ///< topological
    /// The node called `id`; an invalid NodeId when there is none. O(1) once index() ran.
    NodeId find(const std::string& id) const;
    /// Consumers of (node, port): pairs of (consumer node, consumer input index), in node order.
    /// O(consumers) once index() ran.
    std::vector<std::pair<NodeId, int>> consumers(NodeId node, int port) const;
    /// Builds the id and consumer indexes; build_graph and fuse call it once the nodes and their
    /// inputs are final. Without it (or after nodes are added) find and consumers scan every
    /// node, which makes whole-graph passes quadratic: 40,000 nodes took 26 s.
    void index();

  private:
    std::unordered_map<std::string, NodeId> m_by_id;
    NodeMap<std::vector<std::pair<NodeId, int>>> m_consumers; ///< per producer, over all its ports
};

/// Checks the spec against the registry; throws UserError listing every problem found.
Graph build_graph(const PipelineSpec& spec, const Registry& reg);

/// One diagnostic per output of a node that no node reads (nor the caller: `read_by_caller` holds
/// "node" for a node's first output or "node.port"). For notes, never errors.
std::vector<Diagnostic> unread_outputs(const Graph& g, const std::set<std::string>& read_by_caller);
/// Whether any node is a sink (PF_OP_SINK: it writes a file or has another effect).
bool writes_something(const Graph& g);

/// "a float in [0.1, 100]", "one of zero, replicate, reflect101"...
std::string describe_accepted(const pf_param_desc& d);
/// A parameter's type as `pixflow describe`, the API and docs/operators.md name it: "bool", "int",
/// "float", "choice" or "string".
const char* param_type_name(int type);
/// What limits a parameter's value, for describe and the API: its range or choices, "a file to
/// read" / "a file to write (atomically)" for paths, "" when any value of its type is accepted.
std::string describe_limits(const pf_param_desc& d);
std::string describe_ports(std::uint32_t dtypes, std::uint32_t channels);
std::string format_value(const pf_value& v);
std::string format_shape(const pf_image& im);

} // namespace pixflow::host
