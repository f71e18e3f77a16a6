// device.hpp: the few CUDA runtime calls the Python module makes itself: device memory for the
// outputs it returns, and stream ordering between pixflow and the caller's framework (PyTorch,
// CuPy) when a device array changes hands. Built without CUDA, available() is false and every
// other call throws pixflow::UserError saying so.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pixflow::pydevice {

/// Whether this module was built with the CUDA runtime.
bool available();
/// `bytes` of device memory on CUDA device `device` (cudaMalloc: at least 256-byte aligned).
void* allocate(std::size_t bytes, int device);
/// Frees what allocate() returned; waits for work still using it (cudaFree does).
void release(void* p, int device) noexcept;
/// Work enqueued on `consumer` from now on runs after the work already on `producer` (an event
/// recorded on the producer, waited on by the consumer). Streams are cudaStream_t values as
/// integers; 1 and 2 are the legacy and the per-thread default streams (as in DLPack).
void order_after(std::uintptr_t consumer, std::uintptr_t producer, int device);
/// Waits on the host until the work on `stream` is done.
void synchronize(std::uintptr_t stream, int device);
/// The CUDA device that owns device (or managed) memory at `p`; -1 for host memory or when
/// built without CUDA.
int device_of(const void* p);
/// Copies rows from device memory to the host, and waits for the copy (after the work on `stream`).
void copy_to_host(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch, std::size_t row_bytes,
                  int rows, std::uintptr_t stream, int device);

} // namespace pixflow::pydevice
