// api/: what stands behind pixflow::Engine and pixflow::Pipeline (include/pixflow/pixflow.hpp).
// Private to api/ (and to the CLI, which reaches the engine's registry through Access).
#pragma once

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "loader/registry.hpp"

#include <pixflow/pixflow.hpp>

#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pixflow::detail {

struct EngineState {
    host::Registry registry;
    /// Whether CUDA is usable, asked once on first use (starting the CUDA runtime takes a while,
    /// and `pixflow ops` should not wait for it).
    bool cuda() const;

  private:
    mutable std::once_flag m_cuda_once;
    mutable bool m_cuda = false;
};

/// An output asked for with Pipeline::output, resolved against the compiled graph.
struct OutputSlot {
    host::NodeId node;
    int port = 0;
    std::optional<ImageView> dest; ///< caller memory to write into
    bool in_place = false;         ///< this run: the node writes dest itself
};

/// A bound input's copy where the bound memory does not suit the operators' layout rules.
struct Staging {
    Image host;                ///< host: packed, 64-byte aligned
    host::DeviceBuffer device; ///< device: rows 256-byte aligned
    std::int64_t pitch = 0;
};

struct PipelineState {
    std::shared_ptr<const EngineState> engine;
    std::string text, file;
    // What is compiled.
    std::vector<host::Override> overrides;
    host::CompileOptions options;
    std::map<std::string, ImageView> inputs;
    std::map<std::string, std::optional<ImageView>> outputs; ///< "node[.port]" -> where to
    CUstream_st* stream = nullptr;
    bool dirty = true;
    // What compiling made (the executor refers to `compiled`, so it goes first).
    std::map<std::string, pf_image> compiled_inputs; ///< shapes and locations compiled for
    std::unique_ptr<host::Compiled> compiled;
    std::unique_ptr<host::Executor> executor;
    std::map<std::string, OutputSlot> slots;
    std::map<std::string, Staging> staging;
    host::RunResources resources;
    std::unique_ptr<host::PinnedCache> pinned;
    host::Stream own_stream;                           ///< for copies when the caller gives none
    host::Stream caller_stream;                        ///< the caller's, borrowed
    host::RunOptions run_options;                      ///< kept between runs: its maps keep their nodes
    std::vector<std::pair<host::NodeId, int>> claimed; ///< outputs given a caller buffer this run
    std::vector<std::string> copies;                   ///< this run's staged inputs and copied outputs (notes)
    RunReport last;
    bool ran = false;
    int compiles = 0; ///< how often compile_state ran (tests)

    ~PipelineState();
};

struct Access {
    static const host::Registry& registry(const Engine& e) { return e.m->registry; }
    static int compiles(const Pipeline& p) { return p.m->compiles; }
};

/// The shape and location of a view as the compile step wants it (data left out).
pf_image pf_shape_of(const ImageView& v);
/// The view with pitch 0 read as tightly packed.
ImageView packed_pitch(ImageView v);

// pipeline.cpp
void compile_state(PipelineState& s);
OutputSlot resolve_output(const host::Graph& g, const std::string& name);
// bindings.cpp
/// This run's external images: each bound input in place, or its staging copy.
void bind_inputs(PipelineState& s);
/// This run's outputs: written in place where they can be, kept otherwise.
void bind_outputs(PipelineState& s);
/// Copies the outputs not written in place into their buffers; true when it waited for the
/// device (so the run's device work is done).
bool copy_outputs(PipelineState& s);
/// The stream copies go on: the caller's, else one of the pipeline's own.
const host::Stream& copy_stream(PipelineState& s, int device);

} // namespace pixflow::detail
