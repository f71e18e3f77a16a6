#include "device/device.hpp"

#include "common/assert.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#ifdef PIXFLOW_HOST_WITH_CUDA
#include "device/cuda_check.hpp"

#include <cuda_runtime.h>
#include <sys/mman.h>

#define CHECK(expr) check_cuda((expr), #expr, __FILE__, __LINE__)

namespace pixflow::host {

void check_cuda(cudaError_t e, std::string_view what, const char* file, int line) {
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // read: the next launch check must not report this failure again
        throw InternalError("CUDA error: " + std::string(what) + " failed with " + cudaGetErrorName(e) + " (" +
                            cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
    }
}

namespace {
cudaStream_t st(const Stream& s) { return static_cast<cudaStream_t>(s.get()); }
} // namespace

bool cuda_usable(std::string* why) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || (e == cudaSuccess && n == 0)) {
        // Without a GPU the runtime finds no driver (libcuda) or no device: say that, not the
        // runtime's "driver version is insufficient", which reads like an upgrade would help.
        if (why) *why = "no GPU or NVIDIA driver was found";
        cudaGetLastError();
        return false;
    }
    if (e != cudaSuccess) {
        if (why) *why = std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
        cudaGetLastError();
        return false;
    }
    return true;
}

int cuda_device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

std::string cuda_device_name(int device) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "none";
    return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
           std::to_string(p.multiProcessorCount) + " SMs)";
}

Stream::Stream(int device) : m_device(device) {
    CHECK(cudaSetDevice(device));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    m_s = s;
}
Stream Stream::borrow(void* handle, int device) {
    Stream s;
    s.m_s = handle;
    s.m_device = device;
    s.m_owned = false;
    return s;
}
Stream& Stream::operator=(Stream&& o) noexcept {
    std::swap(m_s, o.m_s);
    std::swap(m_device, o.m_device);
    std::swap(m_owned, o.m_owned);
    return *this;
}
Stream::~Stream() {
    if (m_s && m_owned) cudaStreamDestroy(static_cast<cudaStream_t>(m_s));
}
void Stream::synchronize() const { CHECK(cudaStreamSynchronize(st(*this))); }

Event::Event(bool create, bool timing) {
    if (!create) return;
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
    m_e = e;
}
Event& Event::operator=(Event&& o) noexcept {
    std::swap(m_e, o.m_e);
    return *this;
}
Event::~Event() {
    if (m_e) cudaEventDestroy(static_cast<cudaEvent_t>(m_e));
}
void Event::record(const Stream& s) { CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_e), st(s))); }
void Event::synchronize() const { CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(m_e))); }
bool Event::ready() const {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(m_e));
    if (e == cudaErrorNotReady) return false;
    CHECK(e);
    return true;
}
void Event::wait_on(const Stream& s) const { CHECK(cudaStreamWaitEvent(st(s), static_cast<cudaEvent_t>(m_e), 0)); }
float Event::elapsed_ms(const Event& a, const Event& b) {
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a.m_e), static_cast<cudaEvent_t>(b.m_e)));
    return ms;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device) : m_bytes(bytes), m_device(device) {
    set_device(device);
    CHECK(cudaMalloc(&m_p, std::max<std::size_t>(bytes, 1)));
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    std::swap(m_p, o.m_p);
    std::swap(m_bytes, o.m_bytes);
    std::swap(m_device, o.m_device);
    return *this;
}
DeviceBuffer::~DeviceBuffer() {
    if (m_p) cudaFree(m_p); // waits for the device; nothing to report from a destructor
}

void* device_alloc_async(std::size_t bytes, const Stream& s) {
    void* p = nullptr;
    CHECK(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), st(s)));
    return p;
}
void device_free_async(void* p, const Stream& s) {
    if (p) CHECK(cudaFreeAsync(p, st(s)));
}
// Pinned host memory is ordinary memory, backed by transparent huge pages where it is large,
// then registered with the driver (page-locked and mapped for DMA), rather than cudaHostAlloc's.
// Measured on an H200 machine (16 cores; scripts/bench/pinning.cu), 16 buffers of 12.6 MB:
// cudaHostAlloc 5.6 ms each, and the driver serialises the calls (16 threads at once: 89 ms, as
// one after the other); registering 4 KiB pages 7.9 ms each but 19 ms for 16 threads at once;
// huge pages registered 2.9 ms each, 11 ms for 16 threads at once; every way uploads at the same
// 54 GB/s. A CUDA batch's first images each pin their staging buffers, and its trace showed
// them waiting in turn on cudaHostAlloc for the first 90 ms of a 200 ms run (docs/performance.md).
namespace {
constexpr std::size_t kPage = 4096, kHugePage = std::size_t(2) << 20;
std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
// Buffers that came from cudaHostAlloc because registering failed (below), so pinned_free knows.
std::mutex g_host_alloc_mu;
std::set<void*> g_host_alloc;
/// PIXFLOW_PINNED=hostalloc asks for cudaHostAlloc's pinned memory instead of registered
/// memory (the tests use it to reach that path); any other value is named on
/// stderr (once) rather than ignored. Read at each allocation, so a test can switch it.
bool pinned_by_host_alloc() {
    const char* how = std::getenv("PIXFLOW_PINNED");
    if (!how || !*how || std::string_view(how) == "register") return false;
    if (std::string_view(how) == "hostalloc") return true;
    static std::once_flag warned;
    std::call_once(warned, [how] {
        std::fprintf(stderr,
                     "pixflow: warning: PIXFLOW_PINNED=%s is not understood (accepted: register, hostalloc); "
                     "using register\n",
                     how);
    });
    return false;
}
void* pinned_host_alloc(std::size_t bytes) {
    void* p = nullptr;
    CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    std::lock_guard lk(g_host_alloc_mu);
    g_host_alloc.insert(p);
    return p;
}
} // namespace

void* pinned_alloc(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 1);
    if (pinned_by_host_alloc()) return pinned_host_alloc(bytes);
    // Buffers of a huge page or more are aligned to one, so the kernel can back them with 2 MiB
    // pages (madvise: systems whose transparent_hugepage is "madvise" need the request; with
    // "never" the request fails and the buffer stays on 4 KiB pages, which works, slower).
    const std::size_t align = bytes >= kHugePage ? kHugePage : kPage;
    const std::size_t size = round_up(bytes, align);
    void* p = std::aligned_alloc(align, size);
    if (!p) throw std::bad_alloc();
    if (align == kHugePage) madvise(p, size, MADV_HUGEPAGE); // advice only: no error to report
    // Fault the pages in before registering (one write a page; with huge pages one fault each).
    for (std::size_t i = 0; i < size; i += kPage) static_cast<volatile char*>(p)[i] = 0;
    // portable: pinned for every device's context, not only the current one's (a buffer that
    // strips spread over several GPUs copy from is pinned for each of them, else each copy is
    // staged like pageable memory and the GPUs' copies queue behind each other)
    if (cudaHostRegister(p, size, cudaHostRegisterPortable) == cudaSuccess) return p;
    // Where the driver will not register ordinary memory (a platform without it, a limit on
    // locked memory), cudaHostAlloc still gives pinned memory, only slower to get.
    cudaGetLastError();
    std::free(p);
    return pinned_host_alloc(bytes);
}
void pinned_free(void* p) {
    if (!p) return;
    {
        std::lock_guard lk(g_host_alloc_mu);
        if (g_host_alloc.erase(p)) {
            CHECK(cudaFreeHost(p));
            return;
        }
    }
    const cudaError_t e = cudaHostUnregister(p);
    std::free(p);
    check_cuda(e, "cudaHostUnregister(p)", __FILE__, __LINE__);
}
bool host_is_pinned(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}
void copy_2d_async(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch, std::size_t row_bytes,
                   int rows, const Stream& s) {
    if (rows == 0 || row_bytes == 0) return;
    const cudaError_t e = cudaMemcpy2DAsync(dst, std::size_t(dst_pitch), src, std::size_t(src_pitch), row_bytes,
                                            std::size_t(rows), cudaMemcpyDefault, st(s));
    if (e == cudaSuccess) return;
    auto where = [](const void* p) { // what the driver says the memory is
        cudaPointerAttributes a{};
        if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
            cudaGetLastError();
            return std::string("unknown memory");
        }
        const char* kind = a.type == cudaMemoryTypeDevice    ? "device"
                           : a.type == cudaMemoryTypeHost    ? "pinned host"
                           : a.type == cudaMemoryTypeManaged ? "managed"
                                                             : "pageable host";
        return std::string(kind) +
               (a.type == cudaMemoryTypeDevice ? " memory of device " + std::to_string(a.device) : " memory");
    };
    int current = -1;
    cudaGetDevice(&current);
    check_cuda(e,
               ("cudaMemcpy2DAsync of " + std::to_string(rows) + " rows of " + std::to_string(row_bytes) +
                " bytes to " + where(dst) + " (pitch " + std::to_string(dst_pitch) + ") from " + where(src) +
                " (pitch " + std::to_string(src_pitch) + ") on a stream of device " + std::to_string(s.device()) +
                ", current device " + std::to_string(current))
                   .c_str(),
               __FILE__, __LINE__);
}

void memset_async(void* dst, int value, std::size_t bytes, const Stream& s) {
    if (bytes == 0) return;
    CHECK(cudaMemsetAsync(dst, value, bytes, st(s)));
}

double measure_device_copy_bandwidth(int device) {
    set_device(device);
    Stream s(device);
    const std::size_t bytes = std::size_t(256) << 20;
    void* a = device_alloc_async(bytes, s);
    void* b = device_alloc_async(bytes, s);
    CHECK(cudaMemsetAsync(a, 1, bytes, st(s)));
    Event e0(true), e1(true);
    std::vector<float> ms;
    for (int k = 0; k < 12; ++k) {
        e0.record(s);
        CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, st(s)));
        e1.record(s);
        e1.synchronize();
        if (k >= 2) ms.push_back(Event::elapsed_ms(e0, e1));
    }
    device_free_async(a, s);
    device_free_async(b, s);
    s.synchronize();
    std::sort(ms.begin(), ms.end());
    return 2.0 * double(bytes) / (double(ms[ms.size() / 2]) * 1e-3);
}

void keep_device_pool(int device) {
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    std::uint64_t threshold = ~std::uint64_t(0);
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
}
void init_devices(const std::vector<int>& devices) {
    std::vector<std::exception_ptr> errors(devices.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < devices.size(); ++i)
        threads.emplace_back([&, i] {
            try {
                set_device(devices[i]);
                CHECK(cudaFree(nullptr)); // the primary context, if cudaSetDevice has not made it
            } catch (...) { errors[i] = std::current_exception(); }
        });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}
std::size_t device_pool_reserved_bytes(int device) {
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    std::uint64_t bytes = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes));
    return std::size_t(bytes);
}

std::size_t device_free_bytes(int device) {
    set_device(device);
    std::size_t free = 0, total = 0;
    CHECK(cudaMemGetInfo(&free, &total));
    return free;
}

void set_device(int device) { CHECK(cudaSetDevice(device)); }
void device_synchronize(int device) {
    set_device(device);
    CHECK(cudaDeviceSynchronize());
}

} // namespace pixflow::host

#else // without CUDA: nothing is usable, and nothing device-side may be called.

namespace pixflow::host {
namespace {
[[noreturn]] void no_cuda() { throw InternalError("pixflow was built without CUDA, yet a CUDA function was called"); }
} // namespace
bool cuda_usable(std::string* why) {
    if (why) *why = "pixflow was built without CUDA (PIXFLOW_WITH_CUDA=OFF)";
    return false;
}
int cuda_device_count() { return 0; }
std::string cuda_device_name(int) { return "none"; }
Stream::Stream(int) { no_cuda(); }
Stream Stream::borrow(void*, int) { no_cuda(); }
Stream& Stream::operator=(Stream&& o) noexcept {
    std::swap(m_s, o.m_s);
    std::swap(m_owned, o.m_owned);
    return *this;
}
Stream::~Stream() = default;
void Stream::synchronize() const {}
Event::Event(bool create, bool) {
    if (create) no_cuda();
}
Event& Event::operator=(Event&& o) noexcept {
    std::swap(m_e, o.m_e);
    return *this;
}
Event::~Event() = default;
void Event::record(const Stream&) { no_cuda(); }
void Event::synchronize() const {}
bool Event::ready() const { return true; }
void Event::wait_on(const Stream&) const { no_cuda(); }
float Event::elapsed_ms(const Event&, const Event&) { no_cuda(); }
DeviceBuffer::DeviceBuffer(std::size_t, int) { no_cuda(); }
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    std::swap(m_p, o.m_p);
    return *this;
}
DeviceBuffer::~DeviceBuffer() = default;
void* device_alloc_async(std::size_t, const Stream&) { no_cuda(); }
void device_free_async(void*, const Stream&) { no_cuda(); }
void* pinned_alloc(std::size_t) { no_cuda(); }
void pinned_free(void*) { no_cuda(); }
bool host_is_pinned(const void*) { return false; }
void copy_2d_async(void*, std::int64_t, const void*, std::int64_t, std::size_t, int, const Stream&) { no_cuda(); }
void copy_2d_device_async(void*, std::int64_t, const void*, std::int64_t, std::size_t, int, const Stream&) {
    no_cuda();
}
void memset_async(void*, int, std::size_t, const Stream&) { no_cuda(); }
double measure_device_copy_bandwidth(int) { no_cuda(); }
void keep_device_pool(int) { no_cuda(); }
void init_devices(const std::vector<int>&) { no_cuda(); }
std::size_t device_pool_reserved_bytes(int) { no_cuda(); }
std::size_t device_free_bytes(int) { no_cuda(); }
void set_device(int) { no_cuda(); }
void device_synchronize(int) { no_cuda(); }
} // namespace pixflow::host

#endif

namespace pixflow::host {

PinnedCache::~PinnedCache() {
    for (auto& [bytes, p] : m_free) {
        try {
            pinned_free(p);
        } catch (...) {}
    }
}

void* PinnedCache::take(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 1);
    {
        std::lock_guard lk(m_mu);
        auto it = m_free.lower_bound(bytes);
        if (it != m_free.end() && it->first / 2 <= bytes) {
            void* p = it->second;
            m_out[p] = it->first;
            m_cached -= it->first;
            m_free.erase(it);
            return p;
        }
    }
    void* p = pinned_alloc(bytes); // outside the lock: pinning takes a while
    std::lock_guard lk(m_mu);
    m_out[p] = bytes;
    ++m_pinned;
    return p;
}

void PinnedCache::give(void* p) {
    if (!p) return;
    std::vector<void*> to_free;
    {
        std::lock_guard lk(m_mu);
        auto it = m_out.find(p);
        PIXFLOW_ASSERT(it != m_out.end(), "PinnedCache::give of a buffer it did not hand out");
        m_free.emplace(it->second, p);
        m_cached += it->second;
        m_out.erase(it);
        while (m_cached > m_limit && !m_free.empty()) {
            auto last = std::prev(m_free.end());
            m_cached -= last->first;
            to_free.push_back(last->second);
            m_free.erase(last);
        }
    }
    for (void* q : to_free) pinned_free(q);
}

std::size_t PinnedCache::pinned_count() const {
    std::lock_guard lk(m_mu);
    return m_pinned;
}

} // namespace pixflow::host
