// libFuzzer target: one image codec of the io plugin (PIXFLOW_FUZZ_EXT names the format, ".npy"),
// called directly: plugins/io/kernels is linked in as it is, with no framework, registry or
// executor around it, so an input costs a few file operations on a RAM file system instead of a
// whole pipeline run (300-1,900 executions/s that way; this target's speed: scripts/fuzz.sh).
//
// For each input, as `load` does it: read_header, then an image of that shape, then read_image.
// Every input must either decode or be refused with a UserError whose message names the file;
// anything else (another exception, an internal error, a crash, a sanitizer report, a hang) is a
// finding. A decoded image must then survive a round trip: when the format can store it
// (check_can_save), write_image and read it back, and the samples must be the same bytes (the
// same shape for JPEG, which is lossy). .png and .jpg exercise the libpng and libjpeg codecs
// (png.cpp, jpeg.cpp) and their error handlers, where a longjmp leaves the library.
#include "codecs.hpp"

#include <pixflow/error.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

constexpr bool kLossy = std::string_view(PIXFLOW_FUZZ_EXT) == ".jpg";
std::string in_path, out_path;

/// A folder on a RAM file system when there is one (the codecs read paths, not memory).
std::string scratch_dir() {
    if (const char* d = std::getenv("PIXFLOW_FUZZ_DIR"); d && *d) return d;
    if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
    const char* t = std::getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
    std::fprintf(stderr, "fuzz_codec: %s: %s\n", what, detail.c_str());
    std::abort();
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) finding("cannot create the input file", path);
    for (size_t done = 0; done < size;) {
        const ssize_t n = ::write(fd, data + done, size - done);
        if (n <= 0) finding("cannot write the input file", path);
        done += size_t(n);
    }
    ::close(fd);
}

/// A host image of the header's shape, rows packed.
struct Buffer {
    std::vector<unsigned char> bytes;
    pixflow::ImageView view;
    explicit Buffer(const pixflow::io::Header& h) {
        view.width = h.width;
        view.height = h.height;
        view.channels = h.channels;
        view.dtype = h.dtype;
        view.device = PF_HOST;
        view.pitch = std::int64_t(view.row_bytes());
        bytes.resize(std::size_t(view.pitch) * std::size_t(h.height) + 1); // +1: never empty
        view.data = bytes.data();
    }
};

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const std::string base = scratch_dir() + "/pixflow-fuzz-" + std::to_string(getpid());
    in_path = base + "-in" PIXFLOW_FUZZ_EXT;
    out_path = base + "-out" PIXFLOW_FUZZ_EXT;
    std::atexit([] {
        ::unlink(in_path.c_str());
        ::unlink(out_path.c_str());
    });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace pixflow::io;
    write_file(in_path, data, size);
    Header h;
    std::unique_ptr<Buffer> image;
    try {
        h = read_header(in_path);
        // The header was checked against the file's size, so this allocation is bounded by it.
        if (h.width < 1 || h.height < 1 || h.channels < 1 || h.channels > 4)
            finding("read_header accepted a shape no image has",
                    std::to_string(h.width) + "x" + std::to_string(h.height) + "x" + std::to_string(h.channels));
        image = std::make_unique<Buffer>(h);
        read_image(in_path, image->view);
    } catch (const pixflow::Error& e) {
        if (!e.is_user_error()) finding("not a user error", e.what());
        if (std::string(e.what()).find(in_path) == std::string::npos)
            finding("an error without the file name", e.what());
        return 0;
    }

    // The round trip: what was read, written and read again, is the same bytes.
    try {
        check_can_save(out_path, h.dtype, h.channels);
    } catch (const pixflow::Error&) {
        return 0; // e.g. a P6 file named .pgm: decodable, not storable under that extension
    }
    try {
        write_image(out_path, image->view);
        const Header again = read_header(out_path);
        if (again.width != h.width || again.height != h.height || again.channels != h.channels ||
            again.dtype != h.dtype)
            finding("the round trip changed the shape", out_path);
        Buffer back(again);
        read_image(out_path, back.view);
        // JPEG is lossy: its round trip must keep the shape and decode, not the bytes.
        if (!kLossy && back.bytes != image->bytes) finding("the round trip changed the samples", out_path);
    } catch (const pixflow::Error& e) { finding("the round trip of a decoded image failed", e.what()); }
    return 0;
}
