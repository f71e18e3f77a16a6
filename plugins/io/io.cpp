// io.cpp: the `load` and `save` operators, thin adapters over codecs.hpp. CPU only: they do
// file I/O; the host moves the image to or from a device as the pipeline needs.
#include "codecs.hpp"

#include <pixflow/operator.hpp>

#include <string>

namespace {

using namespace pixflow;

/// Reads an image file (format by extension; see codecs.hpp).
struct Load {
    static Schema schema() {
        // Returned by name: a copy of the builder chain's Schema& would leave the parameter
        // descriptors pointing at a temporary's strings.
        Schema s("load",
                 "read an image file: .pgm .ppm .pfm .npy built in, others via OpenImageIO");
        s.flags(PF_OP_SOURCE)
            .output("out", all_dtypes(), channels(1, 4), "the image, in the file's own dtype")
            .param_string("path", nullptr,
                          "image file to read; the extension picks the format "
                          "(.pgm .ppm .pnm .pfm .npy, or .png .jpg .tif .exr... with OpenImageIO)",
                          PF_PARAM_REQUIRED | PF_PARAM_INPUT_PATH);
        return s;
    }

    static void infer(const Params& p, const Shapes&, Shapes& out) {
        io::Header h = io::read_header(std::string(p.s("path")));
        out[0].width = h.width;
        out[0].height = h.height;
        out[0].channels = h.channels;
        out[0].dtype = h.dtype;
    }

    static void run_cpu(Context& ctx) {
        io::read_image(std::string(ctx.params().s("path")), ctx.output(0));
    }
};

/// Writes an image file (format by extension; see codecs.hpp).
struct Save {
    static Schema schema() {
        Schema s("save",
                 "write an image file: .pgm .ppm .pfm .npy built in, others via OpenImageIO");
        s.flags(PF_OP_SINK)
            .input("in", all_dtypes(), channels(1, 4),
                   "the image to write, stored without conversion")
            .param_string("path", nullptr,
                          "file to write; the extension picks the format, which must hold the "
                          "input's dtype and channels (.npy holds anything)",
                          PF_PARAM_REQUIRED | PF_PARAM_OUTPUT_PATH);
        return s;
    }

    static void infer(const Params& p, const Shapes& in, Shapes&) {
        io::check_can_save(std::string(p.s("path")), in[0].dtype, in[0].channels);
    }

    static void run_cpu(Context& ctx) {
        io::write_image(std::string(ctx.params().s("path")), ctx.input(0));
    }
};

} // namespace

PIXFLOW_PLUGIN("io", "1.0.0", Load, Save)
