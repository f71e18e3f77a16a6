// io.cpp: the `load` and `save` operators, thin adapters over the codec table
// (kernels/codecs.hpp). CPU only: they do file I/O; the host moves the image to or from a device
// as the pipeline needs.
//
// Strips (docs/strips.md): for the formats read and written by rows (.npy, PGM/PPM, PFM, PNG (not
// interlaced when read); TIFF through OpenImageIO), load is a pointwise source (it reads any band of rows on its own, as synth makes
// one) and save a carried sink (its bands in order, the first creating the file; its state counts
// the rows written); whole_reason makes a node of any other format whole-image.
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
        return Schema(
                   "load",
                   "read an image file: .pgm .ppm .pfm .npy .png .jpg built in (PNG and JPEG on libpng "
                   "and libjpeg), others via OpenImageIO; in strips, .npy .pgm .ppm .pfm .tif .png (not interlaced) are read by rows, the others whole")
            .flags(PF_OP_SOURCE)
            .access(pixflow::pointwise())
            .output("out", all_dtypes(), channels(1, 4),
                    "the image, in the file's own dtype; a BMP or PNG of indices into an all-grey palette "
                    "(a 1-bit BMP) has 1 channel")
            .param(&Params::path, "path",
                   "image file to read; the extension picks the format (.pgm .ppm .pnm .pfm .npy .png .jpg, "
                   "or .tif .exr... with OpenImageIO; a CMYK JPEG too)",
                   PF_PARAM_REQUIRED | PF_PARAM_INPUT_PATH)
            .param(&Params::max_pixels, "max_pixels", range(0, 1e15),
                   "refuse a file whose header claims more than this many pixels (width x height), "
                   "before anything is allocated or decoded; 268435456 = 16384 x 16384; 0: no limit. "
                   "The CLI's --max-pixels sets it on every load")
            .param(
                &Params::fail_on, "fail_on",
                "which decoder complaints fail the load (PNG, JPEG and OpenImageIO formats; the "
                "other built-in ones fail on any problem): warning (any, such as a corrupt or truncated JPEG or TIFF), "
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

    static std::string whole_reason(const Params& p, const Shapes&, const Shapes&) { return whole_read_reason(p.path); }

    static void run_cpu(Context& ctx, const Params& p) {
        const ReadOptions options{p.max_pixels, p.fail_on, [&ctx](const std::string& msg) { ctx.warn(msg); }};
        const Strip s = ctx.strip();
        if (s.out_row0 == 0 && ctx.output().height == s.out_height)
            read_image(p.path, ctx.output(), options);
        else
            read_rows(p.path, s.out_height, s.out_row0, ctx.output(), options);
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
        return Schema(
                   "save",
                   "write an image file: .pgm .ppm .pfm .npy .png .jpg built in (PNG and JPEG on "
                   "libpng and libjpeg), others via OpenImageIO; in strips, .npy .pgm .ppm .pfm .tif .png are written by rows, the others whole")
            .flags(PF_OP_SINK)
            .access(pixflow::carried())
            .input("in", all_dtypes(), channels(1, 4), "the image to write, stored without conversion")
            .param(&Params::path, "path",
                   "file to write; the extension picks the format, which must hold the input's dtype "
                   "and channels (.npy holds anything)",
                   PF_PARAM_REQUIRED | PF_PARAM_OUTPUT_PATH);
    }

    static void infer(const Params& p, const Shapes& in, Shapes&) {
        check_can_save(p.path, in[0].dtype, in[0].channels);
    }

    static std::string whole_reason(const Params& p, const Shapes&, const Shapes&) {
        return whole_write_reason(p.path);
    }

    /// The state between strips: the rows written so far, which the next band must start at.
    static std::size_t carry_bytes(const Params&, const Shapes&, const Shapes&) { return sizeof(std::uint64_t); }

    static void run_cpu(Context& ctx, const Params& p) {
        const Strip s = ctx.strip();
        if (!s.carry) return write_image(p.path, ctx.input());
        auto* written = s.carry_as<std::uint64_t>();
        PIXFLOW_INTERNAL_CHECK(std::uint64_t(s.in_row0) == *written, "save: a band of rows out of order (rows " +
                                                                         std::to_string(s.in_row0) + ".. after " +
                                                                         std::to_string(*written) + ")");
        write_rows(p.path, s.in_height, s.in_row0, ctx.input());
        *written += std::uint64_t(ctx.input().height);
    }
};

} // namespace pixflow::io

PIXFLOW_PLUGIN("io", "1.0.0", pixflow::io::Load, pixflow::io::Save)
