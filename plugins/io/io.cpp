// io.cpp: the `load` and `save` operators, thin adapters over the codec table
// (kernels/codecs.hpp). CPU only: they do file I/O; the host moves the image to or from a device
// as the pipeline needs.
#include "kernels/codecs.hpp"

#include <pixflow/operator.hpp>

#include <string>

namespace pixflow::io {

/// The one parameter of load and save.
struct PathParams {
    std::string path;
};

/// Reads an image file (format by extension; see kernels/codecs.hpp).
struct Load {
    using Params = PathParams;

    static Schema schema() {
        return Schema("load", "read an image file: .pgm .ppm .pfm .npy built in, others via OpenImageIO")
            .flags(PF_OP_SOURCE)
            .output("out", all_dtypes(), channels(1, 4), "the image, in the file's own dtype")
            .param(&Params::path, "path",
                   "image file to read; the extension picks the format (.pgm .ppm .pnm .pfm .npy, or "
                   ".png .jpg .tif .exr... with OpenImageIO)",
                   PF_PARAM_REQUIRED | PF_PARAM_INPUT_PATH);
    }

    static void infer(const Params& p, const Shapes&, Shapes& out) {
        const Header h = read_header(p.path);
        out[0].width = h.width;
        out[0].height = h.height;
        out[0].channels = h.channels;
        out[0].dtype = h.dtype;
    }

    static void run_cpu(Context& ctx, const Params& p) { read_image(p.path, ctx.output()); }
};

/// Writes an image file (format by extension; see kernels/codecs.hpp).
struct Save {
    using Params = PathParams;

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
