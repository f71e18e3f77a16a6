// integral.hpp: inclusive integral image (summed-area table), per channel.
//
//     out(x, y, c) = sum of in(i, j, c) over i <= x, j <= y
//
// Same size and channels as the input. Inputs u8, u16, u32 or f32; outputs u32, u64 or f64 (the
// operator picks one, see integral.cpp; an f32 input goes to f64 only). 1 to 4 channels.
//
// u32 and u64 outputs are computed modulo 2^32 or 2^64, so the order of the additions does not
// matter and every backend gives the same bits. A u32 output of a large image wraps; a box sum
// out(x1,y1) - out(x0-1,y1) - out(x1,y0-1) + out(x0-1,y0-1) computed in u32 is still exact
// while the true box sum is below 2^32.
//
// f64 outputs are summed in double in one fixed order, on every backend:
//   1. each row's inclusive prefix sum, left to right: r(x, y) = r(x-1, y) + in(x, y);
//   2. then down each column:                        out(x, y) = out(x, y-1) + r(x, y).
// Both backends perform exactly these additions, so they agree bit for bit (a NaN's payload
// excepted: x86 keeps it, CUDA makes it canonical).
#pragma once

#include <pixflow/image.hpp>

#include <cstddef>

namespace pixflow::integral {

/// Bytes of host scratch that integral_cpu needs for these views (0 for f64 outputs).
std::size_t integral_cpu_scratch_bytes(const ImageView& in, const ImageView& out);

/// The most the CPU kernel may use (the bits are the same at every level; tests compare them on
/// one machine): the best the CPU has (u32 outputs on x86-64: AVX-512, else AVX2), AVX2 at most,
/// or the portable loops alone.
enum class CpuLevel { best, avx2, portable };

/// in: u8, u16, u32 or f32; out: same size and channels, u32, u64 or f64 (f64 only for f32);
/// host memory. `scratch` holds integral_cpu_scratch_bytes(in, out) bytes of host memory.
///
/// A band of rows of a larger image (strips): `above` is the output row just above the band
/// (out's dtype, width * channels samples), the integral of everything above it, or null for a
/// band that starts at the image's top. The band's rows are then exactly those of the whole
/// image: integer sums modulo 2^n in any order, and for f64 out(y) = out(y-1) + r(y) continues
/// with out(y-1) = above. When `last` is not null, the band's last output row is copied there
/// (it may be `above`: the copy comes after every read).
void integral_cpu(const ImageView& in, const ImageView& out, void* scratch, const void* above = nullptr,
                  void* last = nullptr, CpuLevel level = CpuLevel::best);

#ifdef PIXFLOW_WITH_CUDA
/// Bytes of device scratch that integral_cuda needs for these views.
std::size_t integral_cuda_scratch_bytes(const ImageView& in, const ImageView& out);

/// Of those, the bytes that may live in memory kept between calls (pf_host.persistent): the
/// one-pass kernel's flags (u8 -> u32); 0 for the other kernels.
std::size_t integral_cuda_kept_bytes(const ImageView& in, const ImageView& out);

/// Same as integral_cpu on device memory; `scratch` holds integral_cuda_scratch_bytes(in, out)
/// bytes of device memory, or that less integral_cuda_kept_bytes(in, out) when `kept` holds those
/// (device memory that only this caller's launches of integral_cuda ever touch, with
/// `kept_state` a host word beside it: both zero when new). With kept memory the one-pass kernel
/// clears its flags only when the layout differs from the last launch's on it. `above` and
/// `last` are device memory. Launches on `stream` (a cudaStream_t); does not synchronise.
void integral_cuda(const ImageView& in, const ImageView& out, void* scratch, void* stream, const void* above = nullptr,
                   void* last = nullptr, void* kept = nullptr, std::uint64_t* kept_state = nullptr);
#endif

} // namespace pixflow::integral
