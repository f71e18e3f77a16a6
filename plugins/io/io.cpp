// io.cpp: the `load` and `save` operators, thin adapters over the codec table
// (kernels/codecs.hpp). CPU only: they do file I/O; the host moves the image to or from a device
// as the pipeline needs.
#include "kernels/codecs.hpp"

#include <pixflow/operator.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace pixflow::io {

/// load's fail_on: its names, in the order of the enum.
constexpr std::array<std::pair<const char*, FailOn>, 3> pixflow_choices(FailOn) {
    return {{{"warning", FailOn::warning}, {"error", FailOn::error}, {"none", FailOn::none}}};
}

struct LoadParams {
    std::string path;
    std::int64_t max_pixels = default_max_pixels;
    FailOn fail_on = FailOn::warning;
};

/// Reads an image file (format by extension; see kernels/codecs.hpp).
struct Load {
    using Params = LoadParams;

    static Schema schema() {
        return Schema("load", "read an image file: .pgm .ppm .pfm .npy built in, others via OpenImageIO")
            .flags(PF_OP_SOURCE)
            .output("out", all_dtypes(), channels(1, 4),
                    "the image, in the file's own dtype; a BMP or PNG of indices into an all-grey palette "
                    "(a 1-bit BMP) has 1 channel")
            .param(&Params::path, "path",
                   "image file to read; the extension picks the format (.pgm .ppm .pnm .pfm .npy, or "
                   ".png .jpg .tif .exr... with OpenImageIO)",
                   PF_PARAM_REQUIRED | PF_PARAM_INPUT_PATH)
            .param(&Params::max_pixels, "max_pixels", range(0, 1e15),
                   "refuse a file whose header claims more than this many pixels (width x height), "
                   "before anything is allocated or decoded; 268435456 = 16384 x 16384; 0: no limit. "
                   "The CLI's --max-pixels sets it on every load")
            .param(&Params::fail_on, "fail_on",
                   "which decoder complaints fail the load (OpenImageIO formats; the built-in ones "
                   "fail on any problem): warning (any, such as a corrupt or truncated JPEG or TIFF), "
                   "error (only where the decoder gives up, as on a truncated PNG; warnings are "
                   "printed), none (nothing: the complaint is printed, and what could not be decoded "
                   "is 0 or the decoder's fill)");
    }

    static void infer(const Params& p, const Shapes&, Shapes& out) {
        const Header h = read_header(p.path, ReadOptions{p.max_pixels, p.fail_on, nullptr});
        out[0].width = h.width;
        out[0].height = h.height;
        out[0].channels = h.channels;
        out[0].dtype = h.dtype;
    }

    static void run_cpu(Context& ctx, const Params& p) {
        read_image(p.path, ctx.output(),
                   ReadOptions{p.max_pixels, p.fail_on, [&ctx](const std::string& msg) { ctx.warn(msg); }});
    }
};

/// save's one parameter.
struct SaveParams {
    std::string path;
};

/// Writes an image file (format by extension; see kernels/codecs.hpp).
struct Save {
    using Params = SaveParams;

    static Schema schema() {
        return Schema("save", "write an image file: .pgm .ppm .pfm .npy built in, others via OpenImageIO")
            .flags(PF_OP_SINK)
            .input("in", all_dtypes(), channels(1, 4), "the image to write, stored without conversion")
            .param(&Params::path, "path",
                   "file to write; the extension picks the format, which must hold the input's dtype "
                   "and channels (.npy holds anything)",
                   PF_PARAM_REQUIRED | PF_PARAM_OUTPUT_PATH);
    }

    static void infer(const Params& p, const Shapes& in, Shapes&) {
        check_can_save(p.path, in[0].dtype, in[0].channels);
    }

    static void run_cpu(Context& ctx, const Params& p) { write_image(p.path, ctx.input()); }
};

} // namespace pixflow::io

PIXFLOW_PLUGIN("io", "1.0.0", pixflow::io::Load, pixflow::io::Save)
