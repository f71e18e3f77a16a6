// pinning.cu: what pinning a batch's host staging buffers costs (issue 18, "Batches at the speed
// of their codecs"). A CUDA batch's trace showed its first images waiting in turn for
// cudaHostAlloc (one 12.6 MB buffer about every 5 ms, the driver serialising the calls across
// threads), so this times the ways to get N pinned buffers of B bytes, one at a time and from N
// threads at once, and checks that each gives the full upload bandwidth:
//   hostalloc    cudaHostAlloc(cudaHostAllocPortable), as device.cpp's pinned_alloc does
//   register     aligned_alloc (4 KiB), pages touched, cudaHostRegister(cudaHostRegisterPortable)
//   thp-register aligned_alloc (2 MiB), madvise(MADV_HUGEPAGE), pages touched, cudaHostRegister:
//                transparent huge pages, so the kernel pins 2 MiB pages instead of 4 KiB ones
//   slab         one cudaHostAlloc of N * B bytes (and one of thp-register), cut into N buffers
//
//   nvcc -O2 -std=c++20 -arch=sm_90 -Isdk/include scripts/bench/pinning.cu -o pinning -lpthread
//   pinning [--bytes B] [--count N] [--rounds R]
// Every CUDA call is checked. Times are wall clock (steady_clock), medians of R rounds.
#include <pixflow/cuda.hpp>

#include <cuda_runtime.h>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#define CK(x) PIXFLOW_CUDA_CHECK(x) // throws pixflow::Error, naming the call

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Way {
    const char* name;
    std::function<void*(std::size_t)> get;
    std::function<void(void*, std::size_t)> put;
};

void touch(void* p, std::size_t n) { std::memset(p, 0, n); }

} // namespace

int main(int argc, char** argv) {
    std::size_t bytes = std::size_t(2048) * 2048 * 3;
    int count = 16, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--bytes")
            bytes = std::strtoull(argv[i + 1], nullptr, 10);
        else if (a == "--count")
            count = std::atoi(argv[i + 1]);
        else if (a == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    CK(cudaFree(nullptr)); // the context, outside the timings
    std::string thp;
    std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), thp);
    std::printf("pinning: %d buffers of %.2f MB, medians of %d rounds; transparent_hugepage: %s\n", count, bytes / 1e6,
                rounds, thp.c_str());

    const std::size_t huge = std::size_t(2) << 20;
    auto round_up = [](std::size_t n, std::size_t a) { return (n + a - 1) / a * a; };
    // ordinary memory aligned to `align`, on transparent huge pages if `thp`, touched, registered
    auto registered = [&](std::size_t n, std::size_t align, bool thp) {
        const std::size_t m = round_up(n, align);
        void* p = std::aligned_alloc(align, m);
        if (thp && madvise(p, m, MADV_HUGEPAGE) != 0) std::perror("madvise");
        touch(p, n);
        CK(cudaHostRegister(p, n, cudaHostRegisterPortable));
        return p;
    };
    auto unregister = [](void* p, std::size_t) {
        CK(cudaHostUnregister(p));
        std::free(p);
    };
    std::vector<Way> ways = {
        {"hostalloc",
         [](std::size_t n) {
             void* p = nullptr;
             CK(cudaHostAlloc(&p, n, cudaHostAllocPortable));
             return p;
         },
         [](void* p, std::size_t) { CK(cudaFreeHost(p)); }},
        {"register", [&](std::size_t n) { return registered(n, 4096, false); }, unregister},
        {"thp-register", [&](std::size_t n) { return registered(n, huge, true); }, unregister},
    };

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void* dev = nullptr;
    CK(cudaMalloc(&dev, bytes));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto upload_gbs = [&](void* host) { // median of 7 uploads of one buffer, GB/s
        std::vector<double> v;
        for (int k = 0; k < 8; ++k) {
            CK(cudaEventRecord(e0, s));
            CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (k) v.push_back(bytes / (ms * 1e6));
        }
        return median(v);
    };

    for (const Way& w : ways) {
        std::vector<double> serial, serial_free, threaded, gbs;
        for (int r = 0; r < rounds; ++r) {
            std::vector<void*> ps(count);
            auto t0 = Clock::now();
            for (int i = 0; i < count; ++i) ps[i] = w.get(bytes);
            serial.push_back(ms_since(t0));
            gbs.push_back(upload_gbs(ps[0]));
            t0 = Clock::now();
            for (int i = 0; i < count; ++i) w.put(ps[i], bytes);
            serial_free.push_back(ms_since(t0));
            t0 = Clock::now();
            std::vector<std::thread> th;
            for (int i = 0; i < count; ++i) th.emplace_back([&, i] { ps[i] = w.get(bytes); });
            for (auto& t : th) t.join();
            threaded.push_back(ms_since(t0));
            for (int i = 0; i < count; ++i) w.put(ps[i], bytes);
        }
        std::printf(
            "%-13s %d one after another %7.1f ms (%.2f ms each, freed in %.1f ms) | %d threads at once %7.1f ms | upload %.1f GB/s\n",
            w.name, count, median(serial), median(serial) / count, median(serial_free), count, median(threaded),
            median(gbs));
        std::fflush(stdout);
    }
    // one slab for all the buffers
    for (const Way& w : {ways[0], ways[2]}) {
        std::vector<double> v, gbs;
        for (int r = 0; r < rounds; ++r) {
            const auto t0 = Clock::now();
            void* p = w.get(bytes * count);
            v.push_back(ms_since(t0));
            gbs.push_back(upload_gbs(static_cast<char*>(p) + bytes * (count - 1)));
            w.put(p, bytes * count);
        }
        std::printf("slab %-13s one buffer of %.0f MB %7.1f ms | upload %.1f GB/s\n", w.name, bytes * count / 1e6,
                    median(v), median(gbs));
    }
    // pageable, for scale
    {
        std::vector<char> pg(bytes, 1);
        std::printf("pageable upload (no pinning): %.1f GB/s\n", upload_gbs(pg.data()));
    }
    CK(cudaFree(dev));
    CK(cudaStreamDestroy(s));
    return 0;
}
