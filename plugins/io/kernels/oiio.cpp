// oiio_codec.cpp: every format that is not built in, through OpenImageIO (compiled only with
// PIXFLOW_WITH_OIIO).
//
// Samples keep the file's own type where pixflow has it (u8, u16, i16, i32, u32, u64, f32, f64);
// half becomes f32 and int8 becomes i16. Alpha is read and written unassociated (as stored in
// PNG), so a round trip never premultiplies or divides colours. Only the first subimage and MIP
// level are read.
#include "codec.hpp"

#include <OpenImageIO/imageio.h>

#include <filesystem>
#include <memory>
#include <system_error>

namespace pixflow::io::detail {
namespace {

OIIO::TypeDesc type_of(DType d) {
    switch (d) {
    case DType::u8: return OIIO::TypeDesc::UINT8;
    case DType::u16: return OIIO::TypeDesc::UINT16;
    case DType::i16: return OIIO::TypeDesc::INT16;
    case DType::i32: return OIIO::TypeDesc::INT32;
    case DType::u32: return OIIO::TypeDesc::UINT32;
    case DType::u64: return OIIO::TypeDesc::UINT64;
    case DType::f32: return OIIO::TypeDesc::FLOAT;
    case DType::f64: return OIIO::TypeDesc::DOUBLE;
    }
    return OIIO::TypeDesc::UINT8;
}

std::string last_error(const std::string& fallback) {
    std::string e = OIIO::geterror();
    return e.empty() ? fallback : e;
}

std::unique_ptr<OIIO::ImageInput> open_input(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail_read(path, "no such file");
    OIIO::ImageSpec config;
    config.attribute("oiio:UnassociatedAlpha", 1);
    auto in = OIIO::ImageInput::open(path, &config);
    if (!in) fail_read(path, last_error("OpenImageIO cannot open it"));
    return in;
}

Header header_from(const std::string& path, const OIIO::ImageSpec& spec) {
    if (spec.deep) fail_read(path, "deep images are not supported");
    if (spec.depth > 1) fail_read(path, "volume images are not supported");
    if (spec.width < 1 || spec.height < 1) fail_read(path, "the image is empty");
    if (spec.nchannels < 1 || spec.nchannels > 4)
        fail_read(path, "the image has " + std::to_string(spec.nchannels) +
                            " channels; pixflow images have 1 to 4");
    Header h;
    h.width = spec.width;
    h.height = spec.height;
    h.channels = spec.nchannels;
    switch (OIIO::TypeDesc::BASETYPE(spec.format.basetype)) {
    case OIIO::TypeDesc::UINT8: h.dtype = DType::u8; break;
    case OIIO::TypeDesc::INT8:
    case OIIO::TypeDesc::INT16: h.dtype = DType::i16; break;
    case OIIO::TypeDesc::UINT16: h.dtype = DType::u16; break;
    case OIIO::TypeDesc::INT32: h.dtype = DType::i32; break;
    case OIIO::TypeDesc::UINT32: h.dtype = DType::u32; break;
    case OIIO::TypeDesc::UINT64: h.dtype = DType::u64; break;
    case OIIO::TypeDesc::HALF:
    case OIIO::TypeDesc::FLOAT: h.dtype = DType::f32; break;
    case OIIO::TypeDesc::DOUBLE: h.dtype = DType::f64; break;
    default:
        fail_read(path,
                  std::string("samples of type ") + spec.format.c_str() + " have no pixflow dtype");
    }
    return h;
}

Header oiio_read_header(const std::string& path) {
    auto in = open_input(path);
    return header_from(path, in->spec());
}

void oiio_read(const std::string& path, const Header& h, const ImageView& dst) {
    auto in = open_input(path);
    expect_header(path, h, header_from(path, in->spec()));
    if (!in->read_image(0, 0, 0, h.channels, type_of(h.dtype), dst.data, OIIO::AutoStride,
                        OIIO::stride_t(dst.pitch))) {
        std::string e = in->geterror();
        fail_read(path, e.empty() ? std::string("OpenImageIO failed to decode it") : e);
    }
    in->close();
}

bool oiio_can_write(const std::string& path) {
    auto out = OIIO::ImageOutput::create(path);
    if (!out) (void)OIIO::geterror(); // clear it
    return out != nullptr;
}

void oiio_write(const std::string& path, const ImageView& src) {
    auto out = OIIO::ImageOutput::create(path);
    if (!out) fail_write(path, last_error("OpenImageIO has no writer for it"), PF_ERR_INVALID);
    OIIO::ImageSpec spec(src.width, src.height, src.channels, type_of(src.dtype));
    spec.attribute("oiio:UnassociatedAlpha", 1);
    if (!out->open(path, spec)) {
        std::string e = out->geterror();
        fail_write(path, e.empty() ? std::string("OpenImageIO cannot create it") : e);
    }
    if (!out->write_image(type_of(src.dtype), src.data, OIIO::AutoStride,
                          OIIO::stride_t(src.pitch))) {
        std::string e = out->geterror();
        fail_write(path, e.empty() ? std::string("OpenImageIO failed to write it") : e);
    }
    if (!out->close()) {
        std::string e = out->geterror();
        fail_write(path, e.empty() ? std::string("OpenImageIO failed to finish it") : e);
    }
}

// What OpenImageIO's writers store without converting (OIIO 2.4). Alpha is written unassociated.
constexpr std::uint32_t bit(DType d) { return PF_DTYPE_BIT(int(d)); }
constexpr std::uint32_t kU8U16 = bit(DType::u8) | bit(DType::u16);
constexpr Format kOiioFormats[] = {
    {".png", kU8U16, PF_ALL_CHANNELS},
    {".jpg .jpeg .jpe .jif .jfif .jfi", bit(DType::u8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3)},
    {".tif .tiff",
     kU8U16 | bit(DType::i16) | bit(DType::i32) | bit(DType::u32) | bit(DType::f32) | bit(DType::f64),
     PF_ALL_CHANNELS},
    {".exr", bit(DType::u32) | bit(DType::f32), PF_ALL_CHANNELS},
    {".hdr .rgbe", bit(DType::f32), PF_CHANNELS_BIT(3)},
    {".bmp .dib", bit(DType::u8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4)},
    {".tga", bit(DType::u8), PF_CHANNELS_BIT(1) | PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4)},
    {".webp", bit(DType::u8), PF_CHANNELS_BIT(3) | PF_CHANNELS_BIT(4)},
};

} // namespace

// The fallback: every extension the built-in rows do not list; any other extension it can write
// stores u8, whatever channels it takes.
constexpr Codec oiio_codec{"OpenImageIO", kOiioFormats, true, &oiio_read_header, &oiio_read, &oiio_write,
                           nullptr, &oiio_can_write, Format{"", bit(DType::u8), PF_ALL_CHANNELS}};

} // namespace pixflow::io::detail
