// oiio_formats.hpp: what OpenImageIO's writers store without converting (OIIO 2.4), the data of
// its codec row. Shared by the module's row (oiio.cpp) and the plugin's row that loads the module
// on first use (oiio_lazy.cpp), so that save's checks and messages need no module: a PPM batch
// never loads OpenImageIO. Alpha is written unassociated.
#pragma once

#include "codec.hpp"

namespace pixflow::io::detail {

constexpr std::uint32_t bit(DType d) { return PF_DTYPE_BIT(int(d)); }
constexpr std::uint32_t kU8U16 = bit(DType::u8) | bit(DType::u16);
inline constexpr Format kOiioFormats[] = {
    {".png", kU8U16, PF_ALL_CHANNELS},
    {".jpg .jpeg .jpe .jif .jfif .jfi", bit(DType::u8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3)},
    {".tif .tiff", kU8U16 | bit(DType::i16) | bit(DType::i32) | bit(DType::u32) | bit(DType::f32) | bit(DType::f64),
     PF_ALL_CHANNELS},
    {".exr", bit(DType::u32) | bit(DType::f32), PF_ALL_CHANNELS},
    {".hdr .rgbe", bit(DType::f32), PF_CHANNELS_BIT(3)},
    {".bmp .dib", bit(DType::u8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4)},
    {".tga", bit(DType::u8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4)},
    {".webp", bit(DType::u8), PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4)},
};
/// Any other extension OpenImageIO can write stores u8, whatever channels it takes.
inline constexpr Format kOiioOther{"", bit(DType::u8), PF_ALL_CHANNELS};

} // namespace pixflow::io::detail
