// device/: the host's only contact with the CUDA runtime. Everything here compiles without CUDA
// too (PIXFLOW_HOST_WITH_CUDA unset): then no device is ever usable and the CPU path runs.
//
// Resources are move-only RAII handles; every CUDA call is checked and a failure throws
// InternalError naming the call, the CUDA error and file:line.
#pragma once

#include <pixflow/diagnostic.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace pixflow::host {

using pixflow::InternalError;

/// Whether a CUDA device can be used; `why` says why not (built without CUDA, no driver...).
bool cuda_usable(std::string* why = nullptr);
/// Number of usable CUDA devices (0 without).
int cuda_device_count();
/// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" or "none".
std::string cuda_device_name(int device);

/// A CUDA stream (or nothing, without CUDA): one it created, or a caller's that it only uses.
class Stream {
  public:
    Stream() = default;
    explicit Stream(int device);
    /// The caller's stream `handle` (a cudaStream_t) of `device`, not destroyed by this object.
    static Stream borrow(void* handle, int device);
    Stream(Stream&& o) noexcept : m_s(o.m_s), m_device(o.m_device), m_owned(o.m_owned) { o.m_s = nullptr; }
    Stream& operator=(Stream&& o) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();
    void* get() const { return m_s; }
    int device() const { return m_device; }
    void synchronize() const;

  private:
    void* m_s = nullptr;
    int m_device = 0;
    bool m_owned = true;
};

/// A CUDA event, with timing enabled unless it only orders streams.
class Event {
  public:
    Event() = default;
    explicit Event(bool create, bool timing = true);
    Event(Event&& o) noexcept : m_e(o.m_e) { o.m_e = nullptr; }
    Event& operator=(Event&& o) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event();
    void record(const Stream& s);
    void synchronize() const;
    /// Whether the work it records has ended (or it was never recorded), without waiting.
    bool ready() const;
    /// Makes `s` wait for this event (no host blocking).
    void wait_on(const Stream& s) const;
    /// Milliseconds between two recorded, completed events.
    static float elapsed_ms(const Event& start, const Event& end);
    bool valid() const { return m_e != nullptr; }

  private:
    void* m_e = nullptr;
};

/// Device memory of its own (cudaMalloc), for buffers that live across runs; freed at destruction.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    DeviceBuffer(std::size_t bytes, int device);
    DeviceBuffer(DeviceBuffer&& o) noexcept : m_p(o.m_p), m_bytes(o.m_bytes), m_device(o.m_device) { o.m_p = nullptr; }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer();
    void* get() const { return m_p; }
    std::size_t size() const { return m_bytes; }
    int device() const { return m_device; }

  private:
    void* m_p = nullptr;
    std::size_t m_bytes = 0;
    int m_device = 0;
};

/// Stream-ordered device allocation from the device's default memory pool (cudaMallocAsync).
void* device_alloc_async(std::size_t bytes, const Stream& s);
void device_free_async(void* p, const Stream& s);
/// Page-locked host memory, so transfers run at full speed and asynchronously: registered with
/// the driver for every device (portable), aligned to 4 KiB, and to 2 MiB with transparent huge
/// pages asked for when `bytes` >= 2 MiB (pinning them is faster, and threads pin at once, where
/// cudaHostAlloc serialises them). Throws on failure; bytes == 0 gives a valid buffer.
void* pinned_alloc(std::size_t bytes);
void pinned_free(void* p);
/// Whether the driver knows `p` as page-locked host memory (false without CUDA).
bool host_is_pinned(const void* p);

/// Pinned host buffers kept for reuse, so that runs over many images pin memory once rather
/// than per image (pinning maps and locks pages: milliseconds per buffer). take() hands out a cached
/// buffer of at least `bytes` and at most twice that, else pins a new one; give() takes it
/// back, freeing cached buffers (largest first) while more than `limit` bytes are cached.
/// Thread-safe. The destructor frees every cached buffer; buffers still out are the caller's.
class PinnedCache {
  public:
    explicit PinnedCache(std::size_t limit = std::size_t(2) << 30) : m_limit(limit) {}
    PinnedCache(const PinnedCache&) = delete;
    PinnedCache& operator=(const PinnedCache&) = delete;
    ~PinnedCache();
    void* take(std::size_t bytes);
    void give(void* p);
    /// How many buffers were pinned so far (not counting reuses).
    std::size_t pinned_count() const;

  private:
    mutable std::mutex m_mu;
    std::multimap<std::size_t, void*> m_free; ///< size -> buffer
    std::map<void*, std::size_t> m_out;       ///< buffers handed out, with their sizes
    std::size_t m_cached = 0, m_limit, m_pinned = 0;
};

/// Makes the device's default memory pool (the one cudaMallocAsync uses) keep the memory that
/// is freed into it instead of returning it to the driver at every synchronisation, so repeated
/// runs reuse it. Process-wide for that device.
void keep_device_pool(int device);
/// Bytes the device's default memory pool holds from the driver now (used or cached).
std::size_t device_pool_reserved_bytes(int device);
/// Creates the CUDA context of each device now, one thread per device, so that they are made at
/// once instead of one after the other (the driver makes one in about 0.1 s) and before any image
/// needs them. A batch on several GPUs calls it at set-up: the first image of a second GPU used to
/// wait for that GPU's context, leaving the GPU idle for the first 85 ms of a 0.38 s run (two
/// H200s). The calling thread's current device is unchanged.
void init_devices(const std::vector<int>& devices);

/// Bytes of device memory free now (cudaMemGetInfo): the default of the device memory budget.
std::size_t device_free_bytes(int device);

/// 2D copy between any two locations, ordered on `s`.
void copy_2d_async(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch, std::size_t row_bytes,
                   int rows, const Stream& s);
/// 2D copy within the memory of `s`'s device (both sides there), rows and pitches of any
/// alignment, ordered on `s`: pixflow's kernel (device/copy_2d.cu), about twice the rate of
/// cudaMemcpy2DAsync there.
void copy_2d_device_async(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch,
                          std::size_t row_bytes, int rows, const Stream& s);

/// Sets `bytes` bytes of device memory at `dst` to `value`, ordered on `s`.
void memset_async(void* dst, int value, std::size_t bytes, const Stream& s);

/// Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written, measured
/// now with events (median of several 256 MiB copies after a warm-up).
double measure_device_copy_bandwidth(int device);

void set_device(int device);
void device_synchronize(int device);

} // namespace pixflow::host
