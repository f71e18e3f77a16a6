// kernel_cpu_time.cpp: the CPU time one core spends in each CPU kernel issue 18 speeds up, called
// directly on host images (no framework), for a comparison that other work on a shared machine
// does not skew: a thread's CPU time does not count the time it waits for a core, while wall
// time does. scripts/bench-opencv.sh --per-core builds it against build/ and prints it beside
// OpenCV's figures taken the same way (scripts/bench/opencv_compare.py).
//
//   kernel_cpu_time [--repeat N] [--threads T]
//
// Images: 8192 x 2048 noise (a quarter of the 8k benchmarks, same rows), RGB u8 unless said,
// in 2 MiB-aligned buffers with MADV_HUGEPAGE (as numpy's large arrays get them; pixflow's own
// buffers are large mmaps that the kernel backs with huge pages too, with THP "always"). Each
// kernel runs once to warm up, then N times; the figure is the smallest CPU time (CLOCK_PROCESS_
// CPUTIME_ID: every thread of the process), in ms and in ns per sample. With --threads 1 (the
// default) TBB runs everything on the calling thread.
#include "chan_vese.hpp"
#include "floyd_steinberg.hpp"
#include "gauss5x5.hpp"
#include "grayscale.hpp"
#include "integral.hpp"
#include "maxpool2x2.hpp"

#include <tbb/global_control.h>

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace pixflow;

namespace {

double cpu_ms() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

/// A host buffer on huge pages where the kernel allows it.
struct Buffer {
    void* p = nullptr;
    explicit Buffer(std::size_t bytes) {
        const std::size_t huge = std::size_t(1) << 21, size = (bytes + huge - 1) / huge * huge;
        p = std::aligned_alloc(huge, size);
        madvise(p, size, MADV_HUGEPAGE);
        std::memset(p, 0, size);
    }
    ~Buffer() { std::free(p); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

ImageView view(void* data, int w, int h, int c, DType d) {
    ImageView v{};
    v.width = w;
    v.height = h;
    v.channels = c;
    v.dtype = d;
    v.device = PF_HOST;
    v.pitch = std::int64_t(w) * c * std::int64_t(dtype_size(d));
    v.data = data;
    return v;
}

void noise(const ImageView& v) {
    std::mt19937_64 rng(1);
    auto* p = static_cast<std::uint64_t*>(v.data);
    for (std::size_t k = 0; k < std::size_t(v.pitch) * std::size_t(v.height) / 8; ++k) p[k] = rng();
}

void report(const char* name, double samples, int repeat, const std::function<void()>& run) {
    run();
    double best = 1e300;
    for (int r = 0; r < repeat; ++r) {
        const double t = cpu_ms();
        run();
        best = std::min(best, cpu_ms() - t);
    }
    std::printf("%-34s %9.2f ms %7.3f ns/sample\n", name, best, best * 1e6 / samples);
}

} // namespace

int main(int argc, char** argv) {
    int repeat = 5, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--repeat")
            repeat = std::atoi(argv[i + 1]);
        else if (std::string(argv[i]) == "--threads")
            threads = std::atoi(argv[i + 1]);
    }
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, std::size_t(threads));
    const int w = 8192, h = 2048;
    const double rgb = double(w) * h * 3, gray = double(w) * h;
    Buffer in3{std::size_t(rgb)}, out3{std::size_t(rgb)}, out1{std::size_t(gray)}, out32{std::size_t(rgb) * 4},
        in1{std::size_t(gray)};
    const ImageView src = view(in3.p, w, h, 3, DType::u8), src1 = view(in1.p, w, h, 1, DType::u8);
    noise(src);
    noise(src1);
    std::printf("one process, %d thread(s), %d x %d, best of %d\n", threads, w, h, repeat);

    const auto taps = gauss5x5::gauss5x5_taps(1.5);
    report("gauss5x5 RGB u8", rgb, repeat,
           [&] { gauss5x5::gauss5x5_cpu(src, view(out3.p, w, h, 3, DType::u8), taps, gauss5x5::Border::reflect101); });
    report("grayscale RGB u8", rgb, repeat, [&] { basic::grayscale_cpu(src, view(out1.p, w, h, 1, DType::u8)); });
    const ImageView sat = view(out32.p, w, h, 3, DType::u32);
    std::vector<char> scratch(integral::integral_cpu_scratch_bytes(src, sat));
    report("integral RGB u8 -> u32", rgb, repeat, [&] { integral::integral_cpu(src, sat, scratch.data()); });
    report("maxpool2x2 RGB u8", rgb, repeat,
           [&] { maxpool2x2::maxpool2x2_cpu(src, view(out3.p, w / 2, h / 2, 3, DType::u8)); });
    const ImageView dithered = view(out1.p, w, h, 1, DType::u8);
    Buffer fs{floyd_steinberg::wavefront_scratch_bytes(src1, threads)};
    report("floyd_steinberg gray u8", gray, repeat,
           [&] { floyd_steinberg::dither_wavefront(src1, dithered, threads, fs.p, nullptr); });
    {
        const int cw = 1000, ch = 1000, iters = 100;
        const ImageView cin = view(in1.p, cw, ch, 1, DType::u8);
        Buffer mask{std::size_t(cw) * ch}, phi{std::size_t(cw) * ch * 4}, cs{chan_vese::cpu_scratch_bytes(cw, ch)};
        chan_vese::Settings s;
        s.tol = 0;
        s.max_iter = iters;
        chan_vese::Outcome o;
        // per iteration: samples = pixels x iterations
        report("chan_vese 1000x1000 gray, 100 it.", double(cw) * ch * iters, repeat, [&] {
            chan_vese::chan_vese_cpu(cin, view(mask.p, cw, ch, 1, DType::u8), view(phi.p, cw, ch, 1, DType::f32), s,
                                     cs.p, o, nullptr);
        });
    }
    return 0;
}
