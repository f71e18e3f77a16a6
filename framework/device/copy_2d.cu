// copy_2d.cu: pitched copies within one device's memory, at any alignment of rows and pitches.
//
// What it is for: the embedding API stages a caller's device image whose rows do not start
// 256-byte aligned (a packed torch tensor 1920 x 1080 x 3: 5760-byte rows) into an aligned buffer
// before every run, and copies outputs into such buffers after it; chains of strips copy rows
// between device buffers. cudaMemcpy2DAsync moves those at about half the card's copy rate.
//
// Thread i writes the 16-byte-aligned block i % nb of destination row i / nb (nb: the most such
// blocks a row can touch). A block that lies inside the row is one 16-byte store, made from the
// one or two aligned 16-byte source loads that hold its bytes (a funnel shift by the row's
// relative misalignment); the first and last block of a row, and blocks whose source loads would
// reach past the source row, go byte by byte, so nothing outside either row is read or written.
//
// Measured on an H200 (scripts/bench/copy2d.cu, this kernel against cudaMemcpy2DAsync in one
// run, medians of 21, GB/s = bytes read + written per second; 2026-11-30):
//   8191 x 8192 u8, pitch 8191 -> 8192         1412 GB/s  ->  3134 GB/s
//   8191 x 8192 u8, pitch 8192 -> 8191         1413       ->  3165
//   1920 x 1080 x 3 u8, pitch 5760 -> 5888      872       ->  1549 (8 us: launch-bound)
//   3840 x 2160 x 4 f32, pitch 61440, +4 bytes 1616       ->  3638
//   8192 x 8192 u8, both pitch 8192 (packed)   1563       ->  3427
#include "device/device.hpp"
#include "device/copy_2d_kernel.cuh"
#include "device/cuda_check.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace pixflow::host {

void copy_2d_device_async(void* dst, std::int64_t dst_pitch, const void* src, std::int64_t src_pitch,
                          std::size_t row_bytes, int rows, const Stream& s) {
    // A kernel goes to a stream of the current device: make it s's for the launch.
    int current = 0;
    check_cuda(cudaGetDevice(&current), "cudaGetDevice", __FILE__, __LINE__);
    if (current != s.device())
        check_cuda(cudaSetDevice(s.device()), "cudaSetDevice(" + std::to_string(s.device()) + ")", __FILE__, __LINE__);
    struct Restore {
        int device;
        bool set;
        ~Restore() {
            if (set) cudaSetDevice(device);
        }
    } restore{current, current != s.device()};
    check_cuda(
        detail::launch_copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, rows, static_cast<cudaStream_t>(s.get())),
        "copy_2d_kernel of " + std::to_string(rows) + " rows of " + std::to_string(row_bytes) + " bytes (pitches " +
            std::to_string(src_pitch) + " -> " + std::to_string(dst_pitch) + ") on a stream of device " +
            std::to_string(s.device()),
        __FILE__, __LINE__);
}

} // namespace pixflow::host
