// device.cpp: see device.hpp. Every CUDA call is checked; a failure throws pixflow::InternalError
// naming the call and this file's line.
#include "device.hpp"

#include <pixflow/diagnostic.hpp>

#include <string>

#if PIXFLOW_PY_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace pixflow::pydevice {

#if PIXFLOW_PY_WITH_CUDA
namespace {

void check(cudaError_t e, const char* expr, int line) {
    if (e == cudaSuccess) return;
    cudaGetLastError(); // clear it, so the next call does not report it again
    throw InternalError(std::string(expr) + " failed: " + cudaGetErrorString(e) +
                        " (python/src/device.cpp:" + std::to_string(line) + ")");
}
#define PF_CUDA(expr) check((expr), #expr, __LINE__)

/// Makes `device` current for its lifetime, then restores the caller's.
class DeviceScope {
  public:
    explicit DeviceScope(int device) {
        PF_CUDA(cudaGetDevice(&m_old));
        if (device != m_old) PF_CUDA(cudaSetDevice(device));
    }
    ~DeviceScope() { cudaSetDevice(m_old); }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

  private:
    int m_old = 0;
};

cudaStream_t as_stream(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); } // 1, 2: legacy, per-thread

} // namespace

bool available() { return true; }

void* allocate(std::size_t bytes, int device) {
    DeviceScope scope(device);
    void* p = nullptr;
    PF_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

void release(void* p, int device) noexcept {
    int old = 0;
    if (cudaGetDevice(&old) != cudaSuccess) return;
    cudaSetDevice(device);
    cudaFree(p); // nothing to report to from a destructor; cudaFree waits for the work using p
    cudaSetDevice(old);
}

void order_after(std::uintptr_t consumer, std::uintptr_t producer, int device) {
    if (consumer == producer) return;
    DeviceScope scope(device);
    cudaEvent_t ev = nullptr;
    PF_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaError_t e = cudaEventRecord(ev, as_stream(producer));
    if (e == cudaSuccess) e = cudaStreamWaitEvent(as_stream(consumer), ev, 0);
    cudaEventDestroy(ev); // released once the wait has happened
    PF_CUDA(e);
}

void synchronize(std::uintptr_t stream, int device) {
    DeviceScope scope(device);
    PF_CUDA(cudaStreamSynchronize(as_stream(stream)));
}

int device_of(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

void copy_to_host(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch, std::size_t row_bytes,
                  int rows, std::uintptr_t stream, int device) {
    DeviceScope scope(device);
    PF_CUDA(cudaMemcpy2DAsync(dst, std::size_t(dst_pitch), src, std::size_t(src_pitch), row_bytes, std::size_t(rows),
                              cudaMemcpyDeviceToHost, as_stream(stream)));
    PF_CUDA(cudaStreamSynchronize(as_stream(stream)));
}

#else // built without CUDA

namespace {
[[noreturn]] void no_cuda() {
    throw UserError("device memory: this pixflow module was built without CUDA (PIXFLOW_WITH_CUDA=OFF or no CUDA "
                    "toolkit found); use host (numpy) arrays");
}
} // namespace

bool available() { return false; }
void* allocate(std::size_t, int) { no_cuda(); }
void release(void*, int) noexcept {}
void order_after(std::uintptr_t, std::uintptr_t, int) { no_cuda(); }
void synchronize(std::uintptr_t, int) { no_cuda(); }
int device_of(const void*) { return -1; }
void copy_to_host(void*, std::int64_t, const void*, std::int64_t, std::size_t, int, std::uintptr_t, int) { no_cuda(); }

#endif

} // namespace pixflow::pydevice
