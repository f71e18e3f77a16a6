// floyd_steinberg.hpp: error-diffusion halftoning, bit-exact with Pillow's Image.convert('1').
//
// u8 in, 1 to 4 interleaved channels, each channel halftoned on its own; out: same shape, u8,
// every sample 0 or 255. Errors are integers in units of 1/16 and every row is scanned left to
// right (no serpentine):
//
//            x-1     x      x+1
//   y-1   [  1   ][  5  ][  3  ]      v(y,x)   = clamp(in(y,x) + trunc(sum / 16), 0, 255)
//   y     [  7   ][  *  ]             out(y,x) = v > 128 ? 255 : 0,   e(y,x) = v - out
//
// where sum is the weighted errors of the four causal neighbours shown, trunc is C integer
// division (toward zero) and e outside the image is 0: the error pushed left of column 0 or right
// of the last column is dropped, as is the remainder of the division.
//
// Pixel (y,x) depends on (y,x-1) and (y-1,x+1), so row y+1 may compute column x once row y has
// finished column x+1: a wavefront, (y,x) at step x + 2y. Every implementation below gives the
// same bytes as the sequential scan.
#pragma once

#include <pixflow/image.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace pixflow::floyd_steinberg {

/// How the CPU runs the scan (the same bytes either way): the wavefront over TBB workers, or the
/// one-thread reference. The choices of the operator's `cpu_schedule` parameter, in this order.
enum class Schedule { wavefront, sequential };
constexpr std::array<const char*, 2> pixflow_choices(Schedule) { return {"wavefront", "sequential"}; }

/// Strips (a band of rows of a larger image, docs/strips.md): the state carried from one band to
/// the next is the error row that the band's last row diffuses into the row below it, int16,
/// channel by channel:
///
///   carry[c * width + x] = e(last row of the band, x) of channel c,   x = 0 .. width-1
///
/// in [-126, 128]; carry_bytes(width, channels) bytes. Every dither_* below takes it as `above` (the errors
/// of the row just above the band; null: the band starts at the image's top, e = 0 there) and,
/// when `last` is not null, leaves its band's in `last` (which may be `above`: it is written
/// after every read). A band run from `above` gives exactly the rows of the whole-image run: the
/// rule reads nothing of the rows above but these errors.
constexpr std::size_t carry_bytes(int width, int channels) {
    return std::size_t(width) * std::size_t(channels) * sizeof(std::int16_t);
}

/// The reference: one thread, channel by channel, row by row. `scratch` holds
/// sequential_scratch_bytes(in) bytes (host).
void dither_sequential(const ImageView& in, const ImageView& out, void* scratch, const std::int16_t* above = nullptr,
                       std::int16_t* last = nullptr);
std::size_t sequential_scratch_bytes(const ImageView& in);

/// The most the wavefront may use (the bytes are the same at every level; tests compare them on
/// one machine): the SSE2 row-group scan on x86-64 (every x86-64 has SSE2), or the portable
/// scan of the same recurrence, lane by lane (the only one elsewhere).
enum class CpuLevel { best, portable };

/// The CPU operator: channels in parallel and, within a channel, groups of rows as a wavefront
/// over TBB workers (see the design note in floyd_steinberg.cpp). `workers` is the most threads
/// that will run it (tbb::this_task_arena::max_concurrency()); `scratch` holds
/// wavefront_scratch_bytes(in, workers) bytes of host memory aligned to 64. `cancelled` is polled
/// between row groups; returns false when it said so (the output is then incomplete).
bool dither_wavefront(const ImageView& in, const ImageView& out, int workers, void* scratch,
                      const std::function<bool()>& cancelled, const std::int16_t* above = nullptr,
                      std::int16_t* last = nullptr, CpuLevel level = CpuLevel::best);
std::size_t wavefront_scratch_bytes(const ImageView& in, int workers);

/// The CUDA operator (floyd_steinberg.cu): images in device memory, launched on `stream` (a
/// cudaStream_t), never synchronised. `scratch` is cuda_scratch_bytes(in, out) bytes of device
/// memory; the kernel zeroes what it needs on the stream. `above` and `last` (the carried error
/// row, as above) are device memory.
void dither_cuda(const ImageView& in, const ImageView& out, void* scratch, void* stream,
                 const std::int16_t* above = nullptr, std::int16_t* last = nullptr);
/// Includes a plane of in's size per channel for several channels, or for views whose rows do not
/// start on 16-byte boundaries (a shape with no data and no pitch counts as aligned).
std::size_t cuda_scratch_bytes(const ImageView& in, const ImageView& out);

/// Throws unless in/out are u8, 1..4 channels (else UserError, PF_ERR_UNSUPPORTED), of one shape,
/// and on the host (on_host) or on one CUDA device (else InternalError: the host guarantees it).
void check_views(const ImageView& in, const ImageView& out, bool on_host);

} // namespace pixflow::floyd_steinberg
