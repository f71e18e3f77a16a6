// codec_limit.cpp: the codec limit of a batch (issue 18, "Batches at the speed of their codecs"):
// the images of a folder read and decoded, and outputs encoded and written, by a plain
// multithreaded loop that computes nothing, with the io plugin's own codecs
// (plugins/io/kernels/codecs.hpp: PGM/PPM, PNG (libpng) and JPEG (libjpeg) built in, the rest
// through OpenImageIO where it is linked). A batch
// (`pixflow run P.toml --input DIR --output DIR`) does this and its compute, so this loop's rate
// is the most a batch of the same files can reach on this machine. scripts/bench-codecs.sh
// builds it (with the io plugin's sources) and runs it beside the batch.
//
//   codec_limit --input DIR --output DIR [--ext .png] [--threads N] [--repeat R] [--half]
//
// Every file of DIR with the extension --ext (default: .ppm) is an input; each output is
// <output>/<stem><ext> in the same format (--out-ext to change it), written directly (the batch
// writes a temporary and renames it: one rename more per image). --half encodes the top-left
// quarter of each image (width / 2 x height / 2: a view, nothing copied), the output shape of
// pipelines/batch-blur-pool.toml, whose 2x2 max-pool halves each side. But an encoder's speed
// depends on what it encodes (PNG's deflate takes 0.62 s for a blurred 1024 x 1024 output and
// 0.24 s for the unblurred crop), so `--encode-from DIR` encodes instead the pixels of
// DIR/<stem>.npy, a batch's own outputs saved losslessly as .npy, read once before the loop (not
// timed): the loop then decodes exactly the batch's inputs and encodes exactly the images the
// batch encodes, into the same bytes.
//
// The loop: tbb::parallel_for over the images, N threads (tbb::global_control), each thread
// decoding into its own buffer reused from image to image; per image read_image() then
// write_image(), exactly the calls of the io plugin's load and save. R rounds; the figure is the
// best round's images/s (the first round also warms the page cache, as a batch rerun on the
// same inputs finds it). --fresh allocates each image's buffer (aligned_alloc) and frees it
// after, as the batch's Executor does for host buffers.
//
// The loop's CPU time (user + system, all threads) per image is printed too: on a shared
// machine it moves less with the load than the wall time does.
//
// The parts, measured apart after the loop (--no-parts: not), each over every image on one
// thread at a time (ms per image, so they add up to one thread's work per image):
//   read     the file's bytes into memory (plain read(2) of a cached file, into a reused buffer)
//   decode   read_image() minus read: what decoding adds to reading
//   encode   write_image() minus write: what encoding adds to writing
//   write    the encoded bytes (read back from the output) written to a new file with write(2)
//            and closed (no fsync: neither the io plugin nor the batch syncs)
#include "codecs.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace pixflow;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// User + system CPU time of the whole process so far, in ms.
double cpu_ms() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) * 1e-3; };
    return ms(u.ru_utime) + ms(u.ru_stime);
}

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "codec_limit: %s\nusage: codec_limit --input DIR --output DIR [--ext .ppm] [--out-ext EXT] "
                 "[--threads N] [--repeat R] [--half] [--no-parts] [--fresh] [--encode-from DIR]\n",
                 why.c_str());
    std::exit(1);
}

/// The whole file's bytes into b (its memory reused from call to call), by read(2).
void slurp(const fs::path& p, std::vector<char>& b) {
    b.resize(fs::file_size(p));
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) usage("cannot open '" + p.string() + "'");
    std::size_t got = 0;
    while (got < b.size()) {
        ssize_t n = ::read(fd, b.data() + got, b.size() - got);
        if (n <= 0) usage("cannot read '" + p.string() + "'");
        got += std::size_t(n);
    }
    ::close(fd);
}

void spill(const fs::path& p, const std::vector<char>& b) {
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) usage("cannot create '" + p.string() + "'");
    std::size_t put = 0;
    while (put < b.size()) {
        ssize_t n = ::write(fd, b.data() + put, b.size() - put);
        if (n <= 0) usage("cannot write '" + p.string() + "'");
        put += std::size_t(n);
    }
    if (::close(fd) != 0) usage("cannot close '" + p.string() + "'");
}

/// A decoded image's buffer, kept by a thread from image to image.
struct Slot {
    std::vector<unsigned char> bytes;
    static ImageView shape(const io::Header& h) {
        ImageView v;
        v.width = h.width;
        v.height = h.height;
        v.channels = h.channels;
        v.dtype = h.dtype;
        v.pitch = std::int64_t(h.width) * h.channels * std::int64_t(dtype_size(h.dtype));
        return v;
    }
    ImageView view(const io::Header& h) {
        ImageView v = shape(h);
        bytes.resize(std::size_t(v.pitch) * std::size_t(h.height));
        v.data = bytes.data();
        return v;
    }
};

ImageView output_of(ImageView v, bool half) {
    if (half) {
        v.width /= 2;
        v.height /= 2;
    }
    return v;
}

} // namespace

int main(int argc, char** argv) {
    std::string in_dir, out_dir, ext = ".ppm", out_ext, encode_from;
    int threads = 0, repeat = 3;
    bool half = false, parts = true, fresh = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--input")
            in_dir = value();
        else if (a == "--output")
            out_dir = value();
        else if (a == "--ext")
            ext = value();
        else if (a == "--out-ext")
            out_ext = value();
        else if (a == "--threads")
            threads = std::atoi(value().c_str());
        else if (a == "--repeat")
            repeat = std::max(1, std::atoi(value().c_str()));
        else if (a == "--half")
            half = true;
        else if (a == "--no-parts")
            parts = false;
        else if (a == "--fresh")
            fresh = true;
        else if (a == "--encode-from")
            encode_from = value();
        else
            usage("unknown argument '" + a + "'");
    }
    if (in_dir.empty() || out_dir.empty()) usage("--input and --output are required");
    if (out_ext.empty()) out_ext = ext;
    std::vector<fs::path> inputs;
    for (const auto& e : fs::directory_iterator(in_dir))
        if (e.is_regular_file() && io::extension_of(e.path().string()) == ext) inputs.push_back(e.path());
    std::sort(inputs.begin(), inputs.end());
    if (inputs.empty()) usage("no " + ext + " file in '" + in_dir + "'");
    fs::create_directories(out_dir);
    std::vector<fs::path> outputs;
    for (const auto& p : inputs) outputs.push_back(fs::path(out_dir) / (p.stem().string() + out_ext));
    // --encode-from: the images to encode, decoded now.
    std::vector<Slot> given(encode_from.empty() ? 0 : inputs.size());
    std::vector<ImageView> given_view(given.size());
    for (std::size_t i = 0; i < given.size(); ++i) {
        const std::string p = (fs::path(encode_from) / (inputs[i].stem().string() + ".npy")).string();
        if (!fs::exists(p)) usage("--encode-from: no '" + p + "'");
        given_view[i] = given[i].view(io::read_header(p));
        io::read_image(p, given_view[i]);
    }
    auto to_encode = [&](std::size_t i, const ImageView& decoded) {
        return given.empty() ? output_of(decoded, half) : given_view[i];
    };
    if (threads <= 0) threads = int(std::thread::hardware_concurrency());
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, std::size_t(threads));
    const std::size_t n = inputs.size();

    // The loop, R rounds.
    tbb::enumerable_thread_specific<Slot> slots;
    double best = 0, best_cpu = 0;
    for (int r = 0; r < repeat; ++r) {
        auto t0 = Clock::now();
        const double c0 = cpu_ms();
        tbb::parallel_for(std::size_t(0), n, [&](std::size_t i) {
            const std::string in = inputs[i].string();
            io::Header h = io::read_header(in); // shape inference does the same, once per image
            if (fresh) {                        // as the batch's Executor does: a buffer of its own per image
                ImageView v = Slot::shape(h);
                const std::size_t bytes = std::size_t(v.pitch) * std::size_t(h.height);
                v.data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
                io::read_image(in, v);
                io::write_image(outputs[i].string(), to_encode(i, v));
                std::free(v.data);
                return;
            }
            ImageView v = slots.local().view(h);
            io::read_image(in, v);
            io::write_image(outputs[i].string(), to_encode(i, v));
        });
        double s = ms_since(t0) / 1e3, cpu = (cpu_ms() - c0) / double(n);
        std::printf("round %d: %zu images in %.3f s, %.1f images/s, CPU time %.2f ms per image\n", r + 1, n, s,
                    double(n) / s, cpu);
        if (double(n) / s > best) best = double(n) / s, best_cpu = cpu;
    }
    std::printf("codec limit: %.1f images/s, CPU time %.2f ms per image (%zu %s images, %d threads, best of %d "
                "rounds)\n",
                best, best_cpu, n, ext.c_str(), threads, repeat);
    if (!parts) return 0;

    // The parts, one thread, every image (sums over the images, reported per image).
    double t_read = 0, t_decode_read = 0, t_encode_write = 0, t_write = 0;
    std::uintmax_t in_bytes = 0, out_bytes = 0;
    Slot slot;
    std::vector<char> raw, enc;
    const fs::path spare = fs::path(out_dir) / (".codec_limit_spare" + out_ext);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string in = inputs[i].string();
        auto t0 = Clock::now();
        slurp(inputs[i], raw);
        t_read += ms_since(t0);
        in_bytes += raw.size();
        t0 = Clock::now();
        io::Header h = io::read_header(in);
        ImageView v = slot.view(h);
        io::read_image(in, v);
        t_decode_read += ms_since(t0);
        t0 = Clock::now();
        io::write_image(outputs[i].string(), to_encode(i, v));
        t_encode_write += ms_since(t0);
        slurp(outputs[i], enc);
        out_bytes += enc.size();
        t0 = Clock::now();
        spill(spare, enc);
        t_write += ms_since(t0);
    }
    fs::remove(spare);
    const double k = 1.0 / double(n);
    const double read = t_read * k, decode = std::max(0.0, t_decode_read * k - read), write = t_write * k,
                 encode = std::max(0.0, t_encode_write * k - write), total = read + decode + encode + write;
    std::printf("per image, one thread: read %.2f ms (%.0f%%), decode %.2f ms (%.0f%%), encode %.2f ms (%.0f%%), "
                "write %.2f ms (%.0f%%); %.2f ms in all, %.1f images/s per thread\n",
                read, 100 * read / total, decode, 100 * decode / total, encode, 100 * encode / total, write,
                100 * write / total, total, 1e3 / total);
    std::printf("bytes per image: in %.2f MB, out %.2f MB\n", double(in_bytes) * k / 1e6, double(out_bytes) * k / 1e6);
    return 0;
}
