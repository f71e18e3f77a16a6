// upload_paths.cu: how a batch's files can reach the GPU and come back (issue 18, "Batches at the
// speed of their codecs"), measured without any compute or codec: what each way of moving a PPM
// image's bytes between a file and the device costs, with many threads at once, so that the
// host-memory traffic argument of docs/performance.md ("Why about two thirds is the ceiling")
// can be tested against the alternatives to read(2) into a pinned buffer.
//
//   nvcc -O2 -std=c++20 -arch=sm_90 -Isdk/include scripts/bench/upload_paths.cu -o upload_paths -lpthread
//   upload_paths [--dir D] [--out O] [--images N] [--size S] [--threads T] [--rounds R]
//
// It writes N binary PPM files of S x S RGB (random bytes) to D (default /tmp/upload_paths_in;
// they stay in the page cache, as a batch rerun on the same inputs finds them), then, per way,
// R rounds of T threads taking the images from an atomic counter, and prints the best round's
// images/s and the host-memory bytes per image each way moves by design. Ways, in (input) and
// out (output, a quarter of the input: the blur-pool batch's 2x2 pooled output):
//   read            read(2) of the pixels into a reused buffer: no GPU (the codec loop's read)
//   read+write      read(2) in, write(2) of a quarter-size output: the codec limit without codecs
//   pinned          read(2) into a reused pinned buffer, cudaMemcpyAsync to the device: the batch
//   pageable        read(2) into a reused malloc buffer, then a copy from pageable memory
//   mmap-copy       the file mmap'ed, the copy from the mapping (pageable: the driver stages it)
//   mmap-register   the file mmap'ed and registered (cudaHostRegisterReadOnly), the device
//                   copies straight out of the page cache; unregistered and unmapped after
//   out-pinned      device -> reused pinned buffer, write(2) to a new file on O
//   out-register    the new file ftruncate'd, mmap'ed, registered; device -> page cache directly
//   batch-now       pinned in + out-pinned (what a batch does today, less compute and codecs)
//   batch-register  mmap-register in + out-pinned
// Every CUDA call is checked; the device data is checked against the file after the rounds.
#include <pixflow/cuda.hpp>

#include <cuda_runtime.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#define CK(x) PIXFLOW_CUDA_CHECK(x) // throws pixflow::Error, naming the call
#define SYS(x)                                                                                                         \
    do {                                                                                                               \
        if ((x) < 0) {                                                                                                 \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, std::strerror(errno));                     \
            std::exit(2);                                                                                              \
        }                                                                                                              \
    } while (0)

namespace {

struct Opts {
    std::string dir = "/tmp/upload_paths_in", out = "/dev/shm/upload_paths_out";
    int images = 64, size = 2048, threads = 16, rounds = 3;
};

struct Worker {
    cudaStream_t stream{};
    unsigned char* dev = nullptr;
    unsigned char* pinned_in = nullptr;
    unsigned char* pinned_out = nullptr;
    std::vector<unsigned char> pageable;
};

std::string header(int s) { return "P6\n" + std::to_string(s) + " " + std::to_string(s) + "\n255\n"; }

void read_all(int fd, unsigned char* dst, std::size_t n, off_t off) {
    while (n) {
        const ssize_t r = pread(fd, dst, n, off);
        SYS(r);
        if (r == 0) {
            std::fprintf(stderr, "short file\n");
            std::exit(2);
        }
        dst += r, n -= std::size_t(r), off += r;
    }
}
void write_all(int fd, const unsigned char* src, std::size_t n) {
    while (n) {
        const ssize_t r = write(fd, src, n);
        SYS(r);
        src += r, n -= std::size_t(r);
    }
}

} // namespace

int main(int argc, char** argv) {
    Opts o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--dir")
            o.dir = argv[i + 1];
        else if (a == "--out")
            o.out = argv[i + 1];
        else if (a == "--images")
            o.images = std::atoi(argv[i + 1]);
        else if (a == "--size")
            o.size = std::atoi(argv[i + 1]);
        else if (a == "--threads")
            o.threads = std::atoi(argv[i + 1]);
        else if (a == "--rounds")
            o.rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    const std::string hdr = header(o.size);
    const std::size_t pix = std::size_t(o.size) * o.size * 3, out_pix = pix / 4;
    std::string cmd = "mkdir -p '" + o.dir + "' '" + o.out + "'";
    if (std::system(cmd.c_str()) != 0) return 2;
    std::vector<std::string> files;
    {
        std::mt19937 rng(7);
        std::vector<unsigned char> buf(pix);
        for (int i = 0; i < o.images; ++i) {
            for (auto& b : buf) b = static_cast<unsigned char>(rng());
            files.push_back(o.dir + "/img" + std::to_string(i) + ".ppm");
            const int fd = open(files.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            SYS(fd);
            write_all(fd, reinterpret_cast<const unsigned char*>(hdr.data()), hdr.size());
            write_all(fd, buf.data(), pix);
            SYS(close(fd));
        }
    }
    int ro = 0;
    CK(cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, 0));
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("upload_paths: %s, %d images of %dx%d RGB (%.2f MB), %d threads, best of %d rounds; "
                "cudaHostRegisterReadOnly supported: %d\n",
                prop.name, o.images, o.size, o.size, pix / 1e6, o.threads, o.rounds, ro);

    std::vector<Worker> ws(o.threads);
    for (auto& w : ws) {
        CK(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
        CK(cudaMalloc(&w.dev, pix));
        CK(cudaHostAlloc(reinterpret_cast<void**>(&w.pinned_in), pix, cudaHostAllocDefault));
        CK(cudaHostAlloc(reinterpret_cast<void**>(&w.pinned_out), out_pix, cudaHostAllocDefault));
        w.pageable.resize(pix);
    }
    std::vector<double> reg_ms; // cudaHostRegister of one input, ms (mmap-register, all rounds)
    std::mutex reg_mu;

    // ---- the ways, per image -------------------------------------------------------------------
    auto in_read = [&](Worker& w, int i, bool gpu, bool pinned) {
        const int fd = open(files[i].c_str(), O_RDONLY);
        SYS(fd);
        unsigned char* dst = pinned ? w.pinned_in : w.pageable.data();
        read_all(fd, dst, pix, off_t(hdr.size()));
        SYS(close(fd));
        if (gpu) {
            CK(cudaMemcpyAsync(w.dev, dst, pix, cudaMemcpyHostToDevice, w.stream));
            CK(cudaStreamSynchronize(w.stream));
        }
    };
    auto in_mmap = [&](Worker& w, int i, bool reg) {
        const int fd = open(files[i].c_str(), O_RDONLY);
        SYS(fd);
        struct stat st {};
        SYS(fstat(fd, &st));
        if (std::size_t(st.st_size) < hdr.size() + pix) {
            std::fprintf(stderr, "short file\n");
            std::exit(2);
        }
        void* m = mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            std::perror("mmap");
            std::exit(2);
        }
        SYS(close(fd));
        if (reg) {
            const auto t0 = std::chrono::steady_clock::now();
            CK(cudaHostRegister(m, std::size_t(st.st_size), cudaHostRegisterReadOnly));
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            std::lock_guard<std::mutex> g(reg_mu);
            reg_ms.push_back(ms);
        }
        CK(cudaMemcpyAsync(w.dev, static_cast<unsigned char*>(m) + hdr.size(), pix, cudaMemcpyHostToDevice, w.stream));
        CK(cudaStreamSynchronize(w.stream));
        if (reg) CK(cudaHostUnregister(m));
        SYS(munmap(m, std::size_t(st.st_size)));
    };
    auto out_name = [&](int i) { return o.out + "/img" + std::to_string(i) + ".ppm"; };
    const std::string out_hdr = header(o.size / 2);
    auto out_pinned = [&](Worker& w, int i, bool gpu) {
        if (gpu) {
            CK(cudaMemcpyAsync(w.pinned_out, w.dev, out_pix, cudaMemcpyDeviceToHost, w.stream));
            CK(cudaStreamSynchronize(w.stream));
        }
        const int fd = open(out_name(i).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        SYS(fd);
        write_all(fd, reinterpret_cast<const unsigned char*>(out_hdr.data()), out_hdr.size());
        write_all(fd, w.pinned_out, out_pix);
        SYS(close(fd));
    };
    auto out_register = [&](Worker& w, int i) {
        const int fd = open(out_name(i).c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
        SYS(fd);
        const std::size_t n = out_hdr.size() + out_pix;
        SYS(ftruncate(fd, off_t(n)));
        void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            std::perror("mmap");
            std::exit(2);
        }
        SYS(close(fd));
        std::memcpy(m, out_hdr.data(), out_hdr.size());
        CK(cudaHostRegister(m, n, cudaHostRegisterDefault));
        CK(cudaMemcpyAsync(static_cast<unsigned char*>(m) + out_hdr.size(), w.dev, out_pix, cudaMemcpyDeviceToHost,
                           w.stream));
        CK(cudaStreamSynchronize(w.stream));
        CK(cudaHostUnregister(m));
        SYS(munmap(m, n));
    };

    struct Way {
        const char* name;
        double mb; // host-memory MB per image by design (reads + writes of host memory)
        std::function<void(Worker&, int)> f;
    };
    const double in_mb = pix / 1e6, out_mb = out_pix / 1e6;
    std::vector<Way> ways = {
        {"read", 2 * in_mb, [&](Worker& w, int i) { in_read(w, i, false, false); }},
        {"read+write", 2 * in_mb + 2 * out_mb,
         [&](Worker& w, int i) {
             in_read(w, i, false, false);
             out_pinned(w, i, false);
         }},
        {"pinned", 3 * in_mb, [&](Worker& w, int i) { in_read(w, i, true, true); }},
        {"pageable", 5 * in_mb, [&](Worker& w, int i) { in_read(w, i, true, false); }},
        {"mmap-copy", 3 * in_mb, [&](Worker& w, int i) { in_mmap(w, i, false); }},
        {"mmap-register", 1 * in_mb, [&](Worker& w, int i) { in_mmap(w, i, true); }},
        {"out-pinned", 3 * out_mb, [&](Worker& w, int i) { out_pinned(w, i, true); }},
        {"out-register", 1 * out_mb, [&](Worker& w, int i) { out_register(w, i); }},
        {"batch-now", 3 * in_mb + 3 * out_mb,
         [&](Worker& w, int i) {
             in_read(w, i, true, true);
             out_pinned(w, i, true);
         }},
        {"batch-register", 1 * in_mb + 3 * out_mb,
         [&](Worker& w, int i) {
             in_mmap(w, i, true);
             out_pinned(w, i, true);
         }},
        {"batch-register2", 1 * in_mb + 1 * out_mb,
         [&](Worker& w, int i) {
             in_mmap(w, i, true);
             out_register(w, i);
         }},
    };

    for (const Way& way : ways) {
        double best = 0;
        std::vector<double> rates;
        for (int r = 0; r < o.rounds + 1; ++r) { // round 0 warms up (page cache, first faults)
            std::atomic<int> next{0};
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<std::thread> th;
            for (int t = 0; t < o.threads; ++t)
                th.emplace_back([&, t] {
                    for (int i; (i = next.fetch_add(1)) < o.images;) way.f(ws[t], i);
                });
            for (auto& t : th) t.join();
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r > 0) rates.push_back(o.images / s), best = std::max(best, o.images / s);
        }
        std::printf("%-16s %8.1f img/s best (rounds:", way.name, best);
        for (double x : rates) std::printf(" %.0f", x);
        std::printf(")  host MB/img by design %.1f -> %.1f GB/s\n", way.mb, way.mb * best / 1e3);
        std::fflush(stdout);
    }
    if (!reg_ms.empty()) {
        std::sort(reg_ms.begin(), reg_ms.end());
        std::printf(
            "cudaHostRegister of one %.1f MB file mapping: median %.3f ms, p90 %.3f ms (%zu calls, 16 threads)\n",
            (hdr.size() + pix) / 1e6, reg_ms[reg_ms.size() / 2], reg_ms[reg_ms.size() * 9 / 10], reg_ms.size());
    }
    // Check: the device holds each image's pixels after mmap-register (the last way that filled it).
    {
        Worker& w = ws[0];
        std::vector<unsigned char> a(pix), b(pix);
        for (int i : {0, o.images - 1}) {
            in_mmap(w, i, true);
            CK(cudaMemcpy(a.data(), w.dev, pix, cudaMemcpyDeviceToHost));
            const int fd = open(files[i].c_str(), O_RDONLY);
            SYS(fd);
            read_all(fd, b.data(), pix, off_t(hdr.size()));
            SYS(close(fd));
            if (a != b) {
                std::fprintf(stderr, "image %d: device bytes differ from the file\n", i);
                return 1;
            }
            out_register(w, i);
            const int fo = open(out_name(i).c_str(), O_RDONLY);
            SYS(fo);
            std::vector<unsigned char> c(out_pix);
            read_all(fo, c.data(), out_pix, off_t(out_hdr.size()));
            SYS(close(fo));
            if (std::memcmp(c.data(), a.data(), out_pix) != 0) {
                std::fprintf(stderr, "image %d: output differs\n", i);
                return 1;
            }
        }
        std::printf("check: device bytes equal the files (mmap-register), outputs equal the device (out-register)\n");
    }
    for (auto& w : ws) {
        CK(cudaStreamDestroy(w.stream));
        CK(cudaFree(w.dev));
        CK(cudaFreeHost(w.pinned_in));
        CK(cudaFreeHost(w.pinned_out));
    }
    return 0;
}
