// loader/checked_size.hpp: byte sizes computed from what a plugin answered (an `infer` output
// shape, a pitch), overflow-checked. A plugin can claim any int32 width, height and channel
// count; width * height * channels * 8 reaches 2^67, and an unchecked size_t product wraps
// (2^64 bytes became a 64-byte allocation). Every size the host derives from a plugin's shape
// goes through these functions. Sizes are capped at PTRDIFF_MAX so that `y * pitch` offsets
// and the int64 `pf_image.pitch` always hold them.
#pragma once

#include <pixflow/abi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace pixflow::host {

/// The largest buffer the host will compute a size for.
inline constexpr std::size_t max_buffer_bytes = std::size_t(PTRDIFF_MAX);

/// Bytes per sample of a pf_dtype; 0 for anything else.
constexpr std::size_t checked_dtype_size(std::int32_t dtype) {
    switch (dtype) {
    case PF_U8: return 1;
    case PF_U16:
    case PF_I16: return 2;
    case PF_I32:
    case PF_U32:
    case PF_F32: return 4;
    case PF_U64:
    case PF_F64: return 8;
    default: return 0;
    }
}

/// a * b, or nothing when it exceeds max_buffer_bytes.
constexpr std::optional<std::size_t> checked_mul(std::size_t a, std::size_t b) {
    std::size_t r = 0;
    if (__builtin_mul_overflow(a, b, &r) || r > max_buffer_bytes) return std::nullopt;
    return r;
}

/// v rounded up to a multiple of `align` (> 0), or nothing when that exceeds max_buffer_bytes.
constexpr std::optional<std::size_t> checked_round_up(std::size_t v, std::size_t align) {
    std::size_t r = 0;
    if (align == 0 || __builtin_add_overflow(v, align - 1, &r)) return std::nullopt;
    r = r / align * align;
    if (r > max_buffer_bytes) return std::nullopt;
    return r;
}

/// Bytes of one tightly packed row (width * channels * sample size), or nothing when the shape
/// cannot be sized (negative width or height, channels outside 1..4, unknown dtype) or the
/// product overflows. An empty image (width or height 0) has a size, 0; pipeline validation
/// refuses it separately.
constexpr std::optional<std::size_t> checked_row_bytes(const pf_image& shape) {
    std::size_t ds = checked_dtype_size(shape.dtype);
    if (shape.width < 0 || shape.height < 0 || shape.channels < 1 || shape.channels > 4 || ds == 0) return std::nullopt;
    return checked_mul(std::size_t(shape.width), std::size_t(shape.channels) * ds);
}

/// Bytes of `shape.height` rows of `pitch` bytes each (pitch >= the row's bytes), or nothing.
constexpr std::optional<std::size_t> checked_image_bytes(const pf_image& shape, std::size_t pitch) {
    auto rb = checked_row_bytes(shape);
    if (!rb || pitch < *rb) return std::nullopt;
    return checked_mul(pitch, std::size_t(shape.height));
}

/// Bytes of the tightly packed image, or nothing.
constexpr std::optional<std::size_t> checked_image_bytes(const pf_image& shape) {
    auto rb = checked_row_bytes(shape);
    return rb ? checked_image_bytes(shape, *rb) : std::nullopt;
}

/// "WxH, C channel(s) of f32" for messages about a shape a plugin answered (any values).
inline std::string shape_for_message(const pf_image& s) {
    static constexpr const char* names[] = {"?", "u8", "u16", "i16", "i32", "u32", "u64", "f32", "f64"};
    std::string dtype = s.dtype >= PF_U8 && s.dtype <= PF_F64 ? names[s.dtype] : "dtype " + std::to_string(s.dtype);
    return std::to_string(s.width) + "x" + std::to_string(s.height) + ", " + std::to_string(s.channels) +
           " channel(s) of " + dtype;
}

/// The throwing forms, for code that already checked the shape once and must not trust it
/// blindly a second time (the executor). The message names the shape.
inline std::size_t row_bytes_or_throw(const pf_image& shape) {
    if (auto rb = checked_row_bytes(shape)) return *rb;
    throw std::length_error("the image size of " + shape_for_message(shape) + " overflows or is invalid");
}
inline std::size_t image_bytes_or_throw(const pf_image& shape, std::size_t pitch) {
    if (auto b = checked_image_bytes(shape, pitch)) return *b;
    throw std::length_error("the image size of " + shape_for_message(shape) + " with a pitch of " +
                            std::to_string(pitch) + " bytes overflows");
}

} // namespace pixflow::host
