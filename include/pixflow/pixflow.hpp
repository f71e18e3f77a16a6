// pixflow/pixflow.hpp: pixflow as a library. Run a pipeline on images you already hold, on the
// host or on a CUDA device, as often as you like; link pixflow::pixflow (find_package(pixflow)).
//
//   pixflow::Engine engine;                            // loads the plugins, once; share it freely
//   pixflow::Pipeline p = engine.load_file("blur.toml");
//   p.set("blur.sigma", 2.0);                          // as --set blur.sigma=2
//   p.input("src", frame.view());                      // a node with op = "memory" reads it
//   p.output("blur", result.view());                   // the result lands in your buffer
//   pixflow::RunReport r = p.run();                    // compiles on the first run only
//
// Conventions, once for everything below:
//  - Images cross as pixflow::ImageView (pixflow/image.hpp): width, height, channels, dtype,
//    device (PF_HOST or a CUDA ordinal), pitch (bytes between rows; 0 means tightly packed) and
//    data. pixflow never frees, and never writes into, an input; views must stay valid until the
//    run that uses them has finished (with a stream: until the stream got there).
//
//        data ->  [c0 c1 c2][c0 c1 c2] ... [c0 c1 c2] (padding)   <- row 0, `pitch` bytes
//                 [c0 c1 c2][c0 c1 c2] ... [c0 c1 c2] (padding)   <- row 1
//
//  - Compiling (parse, validate, plan, fuse) happens once, at compile() or the first run(), and
//    again only after set(), backend() or fuse(), or when a bound input changes its shape, dtype or
//    location. Binding new pointers of the same shape costs nothing.
//  - Errors throw pixflow::UserError (your pipeline, parameters or images: with the
//    `file:line:col: node 'x': ...` diagnostics the CLI prints) or pixflow::InternalError
//    (pixflow/diagnostic.hpp); a failed run writes no output file.
//  - An Engine is immutable once built: share it between threads. A Pipeline is used by one thread
//    at a time; two threads run two Pipelines of one Engine concurrently.
//  - Without a stream (stream(nullptr), the default) run() returns when all of its work is done.
//    With a CUDA stream, pixflow's device work is ordered after what is already on that stream,
//    and run() returns as soon as it is enqueued when every bound output stays on the device; the
//    stream is then ordered after pixflow's work, so your next kernel on it sees the results.
#pragma once

#include <pixflow/diagnostic.hpp>
#include <pixflow/image.hpp>
#include <pixflow/report.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

struct CUstream_st; // cudaStream_t is CUstream_st*: pass yours as it is

namespace pixflow {

class Pipeline;

/// An operator as `pixflow describe` shows it (Engine::describe): its ports and parameters.
struct OperatorInfo {
    struct Port {
        std::string name;
        std::string accepts; ///< dtypes and channel counts, e.g. "u8, f32 with 1 to 4 channels"
        std::string doc;
    };
    struct Param {
        std::string name;
        std::string type; ///< bool, int, float, choice or string
        bool required = false;
        std::string default_value; ///< as TOML ("1.5", "\"zero\""); empty when required
        std::string accepted;      ///< the range or the choices, or what a path names; may be empty
        std::string doc;
    };
    std::string name, doc;
    std::string plugin, path;          ///< the plugin's name and file (the host's own for built-ins)
    std::vector<std::string> backends; ///< "cpu", then "cuda" when it has a CUDA implementation
    std::string fuses;                 ///< a fused operator: the chain it stands for ("a -> b"); else ""
    std::vector<Port> inputs, outputs; ///< outputs[0] is the default output
    std::vector<Param> params;
};

namespace detail {
struct EngineState;
struct PipelineState;
struct Access;
} // namespace detail

/// An image on the host that owns its samples: tightly packed, 64-byte aligned (so pixflow can
/// write a result straight into it). Copying copies the samples.
class Image {
  public:
    Image() = default;
    /// A zeroed image.
    Image(int width, int height, int channels, DType dtype);
    Image(const Image& o);
    Image& operator=(const Image& o);
    Image(Image&& o) noexcept;
    Image& operator=(Image&& o) noexcept;
    ~Image();

    int width() const { return m_view.width; }
    int height() const { return m_view.height; }
    int channels() const { return m_view.channels; }
    DType dtype() const { return m_view.dtype; }
    bool empty() const { return m_view.data == nullptr; }
    std::int64_t pitch() const { return m_view.pitch; }
    std::size_t size_bytes() const { return std::size_t(m_view.pitch) * std::size_t(m_view.height); }
    std::byte* data() { return static_cast<std::byte*>(m_view.data); }
    const std::byte* data() const { return static_cast<const std::byte*>(m_view.data); }
    /// The view to hand to Pipeline::input or Pipeline::output.
    ImageView view() const { return m_view; }
    /// Sample c of pixel (x, y), as T (which must match dtype()).
    template <class T> T& at(int x, int y, int c = 0) { return m_view.at<T>(x, y, c); }
    template <class T> const T& at(int x, int y, int c = 0) const { return m_view.at<T>(x, y, c); }
    /// Same shape and dtype and the same bytes.
    friend bool operator==(const Image& a, const Image& b);

  private:
    ImageView m_view;
};

/// The plugins, loaded once. Cheap to copy (copies share one set of loaded plugins).
class Engine {
  public:
    /// Loads every plugin on the search path, as the CLI does: `plugin_paths` (folders or files,
    /// like --plugin-path), then $PIXFLOW_PLUGIN_PATH, then the installation's plugin folder. A
    /// plugin that cannot be loaded is skipped (see rejected_plugins()).
    explicit Engine(const std::vector<std::filesystem::path>& plugin_paths = {});

    /// A pipeline from a TOML file; throws UserError when it cannot be read or parsed.
    Pipeline load_file(const std::filesystem::path& toml) const;
    /// A pipeline from TOML text; `name` stands for the file in diagnostics.
    Pipeline load_string(std::string_view toml, std::string name = "<string>") const;

    /// Every operator's name (`pixflow ops`), the built-in `memory` source included.
    std::vector<std::string> operators() const;
    /// What `pixflow describe op` shows; throws UserError for an unknown name (with the closest).
    OperatorInfo describe(std::string_view op) const;
    /// One line per plugin file that was found but rejected: "path: why".
    std::vector<std::string> rejected_plugins() const;
    /// Whether a CUDA device is usable (and pixflow was built with CUDA).
    bool cuda_available() const;

  private:
    friend struct detail::Access;
    std::shared_ptr<const detail::EngineState> m;
};

/// One pipeline of one Engine, compiled once and run any number of times.
class Pipeline {
  public:
    Pipeline(Pipeline&& o) noexcept;
    Pipeline& operator=(Pipeline&& o) noexcept;
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;
    ~Pipeline();

    // ---- what is compiled: each call makes the next run() compile again ------------------------
    /// "node.key=value" exactly as `--set` takes it (the value read as TOML when it parses as TOML).
    Pipeline& set(std::string_view assignment);
    /// set("blur.sigma", 2.0), set("blur.border", "zero"), set("src.width", 640), set("x.y", true).
    template <class T> Pipeline& set(std::string_view key, const T& value) {
        using U = std::decay_t<T>;
        if constexpr (std::is_same_v<U, bool>)
            return set_value(key, 'b', value ? 1 : 0, 0, {});
        else if constexpr (std::is_integral_v<U>)
            return set_value(key, 'i', static_cast<long long>(value), 0, {});
        else if constexpr (std::is_floating_point_v<U>)
            return set_value(key, 'f', 0, static_cast<double>(value), {});
        else {
            static_assert(std::is_convertible_v<const T&, std::string_view>,
                          "set(): a bool, an integer, a number or a string");
            return set_value(key, 's', 0, 0, std::string_view(value));
        }
    }
    /// The default backend of nodes that set none: "auto" (the default), "cpu" or "cuda" (--backend).
    Pipeline& backend(std::string_view backend);
    /// false: run every node as written, no fused implementations (--no-fuse).
    Pipeline& fuse(bool on);

    // ---- memory in, memory out -------------------------------------------------------------------
    /// Binds `image` to the node `node`, whose op must be "memory", for every following run. The
    /// node takes the image's shape (a declared width, height, channels or dtype must agree) and
    /// runs where the image lies: its consumers read it in place, on the host or on its device.
    Pipeline& input(std::string_view node, const ImageView& image);
    /// Keeps the output "node" or "node.port" after each run, for result() and view() (an output
    /// no node reads is always kept).
    Pipeline& output(std::string_view node_port);
    /// Writes the output "node" or "node.port" into `dest` at each run: host or device memory, any
    /// pitch, of exactly the output's shape and dtype. When `dest` lies where the node runs and
    /// suits its layout, the node writes there directly; otherwise pixflow copies.
    Pipeline& output(std::string_view node_port, const ImageView& dest);
    /// The CUDA stream (a cudaStream_t) to order the device work on; nullptr: pixflow's own
    /// streams, and run() waits for them (see the conventions at the top).
    Pipeline& stream(CUstream_st* stream);

    // ---- compile and run -------------------------------------------------------------------------
    /// Parses, validates, plans and fuses now (run() does it when needed). Throws UserError.
    void compile();
    /// Runs the pipeline once: outputs written, files renamed into place, the report returned.
    /// CUDA nodes' times are NaN when run() did not wait for the device; report() fills them in.
    RunReport run();
    /// The last run's report, waiting for its device work to have the CUDA nodes' times.
    RunReport report();
    /// A copy on the host of a kept output of the last run (see output(node_port)).
    Image result(std::string_view node_port) const;
    /// pixflow's own buffer of a kept output of the last run, where it was produced (host or
    /// device): valid until the next run() or the Pipeline's end; do not write into it.
    ImageView view(std::string_view node_port) const;

    // ---- what compile() decided (each compiles first when needed) ---------------------------------
    /// The images no node reads, which every run keeps (its results): "node", or "node.port" for
    /// each port of a node with several outputs. Bound inputs are not listed.
    std::vector<std::string> results() const;
    /// The output "node" or "node.port" as the next run will produce it: width, height, channels,
    /// dtype, and device = where it is produced (PF_HOST, or the CUDA ordinal of a CUDA node);
    /// data is null and pitch that of packed rows. Lets a caller allocate a buffer the node can
    /// write into directly (see output(node_port, dest)). Throws UserError for an unknown output.
    ImageView shape(std::string_view node_port) const;
    /// The planner's notes: an `auto` fallback to the CPU, a fusion.
    std::vector<std::string> notes() const;
    /// What compiles and runs but is most likely not meant (operators that belong together
    /// disagreeing: quantize at quality 20, dequantize at 75), one diagnostic each.
    std::vector<Diagnostic> warnings() const;
    /// The plan as Graphviz dot, as `pixflow graph` prints it.
    std::string graphviz() const;

  private:
    friend class Engine;
    friend struct detail::Access;
    explicit Pipeline(std::unique_ptr<detail::PipelineState> s);
    Pipeline& set_value(std::string_view key, char kind, long long i, double f, std::string_view s);
    std::unique_ptr<detail::PipelineState> m;
};

} // namespace pixflow
