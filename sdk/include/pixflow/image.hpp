// pixflow/image.hpp: typed, non-owning views over pf_image, usable from .cpp and .cu files.
//
// An ImageView never owns memory: the framework allocates every image and hands views to
// operators. `row<T>(y)` is the first sample of row y; sample c of pixel x is row<T>(y)[x*C + c].
// Views are trivially copyable, so a kernel can take one by value.
#pragma once

#include <pixflow/abi.h>

#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define PIXFLOW_HD __host__ __device__
#else
#define PIXFLOW_HD
#endif

namespace pixflow {

enum class DType : int32_t {
    u8 = PF_U8,
    u16 = PF_U16,
    i16 = PF_I16,
    i32 = PF_I32,
    u32 = PF_U32,
    u64 = PF_U64,
    f32 = PF_F32,
    f64 = PF_F64,
};

/// Bytes per sample.
constexpr std::size_t dtype_size(DType d) {
    switch (d) {
    case DType::u8: return 1;
    case DType::u16:
    case DType::i16: return 2;
    case DType::i32:
    case DType::u32:
    case DType::f32: return 4;
    case DType::u64:
    case DType::f64: return 8;
    }
    return 0;
}

constexpr const char* dtype_name(DType d) {
    switch (d) {
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    }
    return "invalid";
}

constexpr bool dtype_is_float(DType d) { return d == DType::f32 || d == DType::f64; }

/// The C++ type of a sample of dtype D.
template <DType D> struct SampleOf;
template <> struct SampleOf<DType::u8> { using type = std::uint8_t; };
template <> struct SampleOf<DType::u16> { using type = std::uint16_t; };
template <> struct SampleOf<DType::i16> { using type = std::int16_t; };
template <> struct SampleOf<DType::i32> { using type = std::int32_t; };
template <> struct SampleOf<DType::u32> { using type = std::uint32_t; };
template <> struct SampleOf<DType::u64> { using type = std::uint64_t; };
template <> struct SampleOf<DType::f32> { using type = float; };
template <> struct SampleOf<DType::f64> { using type = double; };
template <DType D> using sample_t = typename SampleOf<D>::type;

/// Calls f(T{}) with T the sample type of d: the usual way to instantiate a kernel per dtype.
///   visit_dtype(in.dtype, [&](auto tag) { using T = decltype(tag); run<T>(in, out); });
template <class F> decltype(auto) visit_dtype(DType d, F&& f) {
    switch (d) {
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::i16: return f(std::int16_t{});
    case DType::i32: return f(std::int32_t{});
    case DType::u32: return f(std::uint32_t{});
    case DType::u64: return f(std::uint64_t{});
    case DType::f32: return f(float{});
    default: return f(double{});
    }
}

/// A non-owning view of an image (host or device memory).
struct ImageView {
    int width = 0;
    int height = 0;
    int channels = 0;
    DType dtype = DType::u8;
    int device = PF_HOST;   ///< PF_HOST or a CUDA device ordinal
    std::int64_t pitch = 0; ///< bytes between rows
    void* data = nullptr;

    ImageView() = default;
    explicit ImageView(const pf_image& im)
        : width(im.width), height(im.height), channels(im.channels), dtype(DType(im.dtype)), device(im.device),
          pitch(im.pitch), data(im.data) {}

    PIXFLOW_HD std::size_t row_samples() const { return std::size_t(width) * channels; }
    std::size_t row_bytes() const { return row_samples() * dtype_size(dtype); }
    bool on_host() const { return device == PF_HOST; }

    template <class T> PIXFLOW_HD T* row(int y) const {
        return reinterpret_cast<T*>(static_cast<char*>(data) + std::int64_t(y) * pitch);
    }
    template <class T> PIXFLOW_HD T& at(int x, int y, int c = 0) const {
        return row<T>(y)[std::size_t(x) * channels + c];
    }

    pf_image to_c() const {
        return pf_image{sizeof(pf_image), width, height, channels, int32_t(dtype), device, pitch, data};
    }
};

/// "64x48x3 u8": a view's size, channels and dtype, for messages.
inline std::string shape_of(const ImageView& v) {
    return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" + std::to_string(v.channels) + " " +
           dtype_name(v.dtype);
}

/// True when the view's data and pitch are multiples of `bytes`, so that every row starts on
/// such a boundary: the condition for vector loads and stores of that width. Buffers from the
/// host qualify for 256 bytes (device) and 64 bytes (host); views made elsewhere may not.
inline bool is_aligned(const ImageView& v, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(v.data) % bytes == 0 && static_cast<std::uint64_t>(v.pitch) % bytes == 0;
}

} // namespace pixflow
