// pixflow/dispatch.hpp: from a run-time dtype and channel count to compile-time types, written
// once for every kernel (DALI's TYPE_SWITCH). Usable in .cpp and (host code of) .cu files.
//
//   pixflow::visit_dtype<DType::u8, DType::u16, DType::f32>("gauss5x5", in.dtype, [&](auto tag) {
//       using T = decltype(tag);                       // std::uint8_t, std::uint16_t or float
//       pixflow::visit_channels("gauss5x5", in.channels, [&](auto c) {
//           launch<T, c()>(in, out);                   // c is std::integral_constant<int, C>
//       });
//   });
//
// A value outside the set throws UserError(PF_ERR_UNSUPPORTED) naming the operator, the value
// and the accepted ones ("gauss5x5: dtype i32 is not supported; accepted: u8, u16, f32"). The
// host checks dtypes and channels against the schema first, so through pixflow that means a
// schema that promises more than the kernel does; called on their own, the kernels report it.
#pragma once

#include <pixflow/error.hpp>
#include <pixflow/image.hpp>

#include <string>
#include <type_traits>

namespace pixflow {
namespace detail {

[[noreturn]] inline void unsupported_dtype(const char* op, DType d, std::initializer_list<DType> ok) {
    std::string list;
    for (DType a : ok) list += (list.empty() ? "" : ", ") + std::string(dtype_name(a));
    throw UserError(std::string(op) + ": dtype " + dtype_name(d) + " is not supported; accepted: " + list,
                    PF_ERR_UNSUPPORTED);
}

[[noreturn]] inline void unsupported_channels(const char* op, int c, std::initializer_list<int> ok) {
    std::string list;
    for (int a : ok) list += (list.empty() ? "" : ", ") + std::to_string(a);
    throw UserError(std::string(op) + ": " + std::to_string(c) + " channels are not supported; accepted: " + list,
                    PF_ERR_UNSUPPORTED);
}

template <DType D, DType... Rest, class F>
decltype(auto) visit_dtype_of(const char* op, DType d, F& f, std::initializer_list<DType> all) {
    if (d == D) return f(sample_t<D>{});
    if constexpr (sizeof...(Rest) > 0)
        return visit_dtype_of<Rest...>(op, d, f, all);
    else
        unsupported_dtype(op, d, all);
}

template <int C, int... Rest, class F>
decltype(auto) visit_channels_of(const char* op, int c, F& f, std::initializer_list<int> all) {
    if (c == C) return f(std::integral_constant<int, C>{});
    if constexpr (sizeof...(Rest) > 0)
        return visit_channels_of<Rest...>(op, c, f, all);
    else
        unsupported_channels(op, c, all);
}

} // namespace detail

/// Calls f(T{}) with T the sample type of `d`, one of Ds; any other dtype throws (see the top).
template <DType... Ds, class F> decltype(auto) visit_dtype(const char* op, DType d, F&& f) {
    static_assert(sizeof...(Ds) > 0, "name the accepted dtypes: visit_dtype<DType::u8, ...>");
    return detail::visit_dtype_of<Ds...>(op, d, f, {Ds...});
}

/// Calls f(std::integral_constant<int, C>{}) for C = `channels`, one of Cs (default 1, 2, 3, 4):
/// the channel count as a compile-time constant; any other count throws (see the top).
template <int... Cs, class F> decltype(auto) visit_channels(const char* op, int channels, F&& f) {
    if constexpr (sizeof...(Cs) == 0)
        return detail::visit_channels_of<1, 2, 3, 4>(op, channels, f, {1, 2, 3, 4});
    else
        return detail::visit_channels_of<Cs...>(op, channels, f, {Cs...});
}

} // namespace pixflow
