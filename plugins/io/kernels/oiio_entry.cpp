// oiio_entry.cpp: the C entry point of the module pixflow_io_oiio.so (oiio_module.h): the
// OpenImageIO row of oiio.cpp behind functions of C types that catch every exception and hand
// its kind, status and message to the caller, which throws the same again (oiio_lazy.cpp). Also
// the OpenImageIO line of `pixflow --version`, which needs OpenImageIO's format list.
#include "../oiio_module.h"
#include "codec.hpp"

#include <OpenImageIO/imageio.h>

#include <exception>
#include <string>

namespace pixflow::io::detail {
namespace {

/// Runs f, turning an exception into err->put and PF_IO_OIIO_FAILED.
template <class F> int guarded(const pf_io_oiio_sink* err, F&& f) noexcept {
    try {
        f();
        return PF_IO_OIIO_OK;
    } catch (const InternalError& e) {
        err->put(err->ctx, PF_IO_OIIO_INTERNAL, e.status(), e.what());
    } catch (const UserError& e) { err->put(err->ctx, PF_IO_OIIO_USER, e.status(), e.what()); } catch (const Error& e) {
        err->put(err->ctx, PF_IO_OIIO_ERROR, e.status(), e.what());
    } catch (const std::exception& e) { err->put(err->ctx, PF_IO_OIIO_OTHER, PF_ERR_RUNTIME, e.what()); } catch (...) {
        err->put(err->ctx, PF_IO_OIIO_OTHER, PF_ERR_RUNTIME, "unknown exception in pixflow_io_oiio.so");
    }
    return PF_IO_OIIO_FAILED;
}

ReadOptions options_of(const pf_io_oiio_options* o) {
    ReadOptions r;
    r.max_pixels = o->max_pixels;
    r.fail_on = FailOn(o->fail_on);
    if (const pf_io_oiio_sink* w = o->warn)
        r.warn = [w](const std::string& line) { w->put(w->ctx, 0, 0, line.c_str()); };
    return r;
}

Header header_of(const pf_io_oiio_header* h) { return Header{h->width, h->height, h->channels, DType(h->dtype)}; }

const Codec& row() { return oiio_direct_codec; }

/// " .png .jpg" where the plugin has libpng and libjpeg (CMake gives the module the same
/// definitions), whose extensions OpenImageIO then only lists too.
std::string builtin_png_jpeg() {
    std::string s;
#ifdef PIXFLOW_IO_PNG
    s += " .png";
#endif
#ifdef PIXFLOW_IO_JPEG
    s += " .jpg";
#endif
    return s;
}

const char* version_text() {
    static const std::string text = [] {
        // "tiff:tif,tiff;png:png;..." -> ".tif .tiff .png ..."
        std::string list = OIIO::get_string_attribute("extension_list"), exts;
        for (std::size_t pos = 0; pos < list.size();) {
            std::size_t end = list.find(';', pos);
            if (end == std::string::npos) end = list.size();
            std::string entry = list.substr(pos, end - pos);
            std::size_t colon = entry.find(':');
            for (std::size_t p = colon + 1; colon != std::string::npos && p < entry.size();) {
                std::size_t comma = entry.find(',', p);
                if (comma == std::string::npos) comma = entry.size();
                exts += " ." + entry.substr(p, comma - p);
                p = comma + 1;
            }
            pos = end + 1;
        }
        return "on (" OIIO_VERSION_STRING "); load/save formats: .pgm .ppm .pfm .npy" + builtin_png_jpeg() +
               " built in, and" + exts;
    }();
    return text.c_str();
}

int read_header(const char* path, const pf_io_oiio_options* o, pf_io_oiio_header* out, const pf_io_oiio_sink* err) {
    return guarded(err, [&] {
        const Header h = row().read_header(path, options_of(o));
        *out = pf_io_oiio_header{h.width, h.height, h.channels, int32_t(h.dtype)};
    });
}

int read(const char* path, const pf_io_oiio_header* want, const pf_image* dst, const pf_io_oiio_options* o,
         const pf_io_oiio_sink* err) {
    return guarded(err, [&] { row().read(path, header_of(want), ImageView(*dst), options_of(o)); });
}

int write(const char* path, const pf_image* src, const pf_io_oiio_sink* err) {
    return guarded(err, [&] { row().write(path, ImageView(*src)); });
}

int writes(const char* path, int* yes, const pf_io_oiio_sink* err) {
    return guarded(err, [&] { *yes = row().writes(path) ? 1 : 0; });
}

int read_rows(const char* path, const pf_io_oiio_header* want, int row0, const pf_image* dst,
              const pf_io_oiio_options* o, const pf_io_oiio_sink* err) {
    return guarded(err, [&] { row().read_rows(path, header_of(want), row0, ImageView(*dst), options_of(o)); });
}

int write_rows(const char* path, int height, int row0, const pf_image* src, const pf_io_oiio_sink* err) {
    return guarded(err, [&] { row().write_rows(path, height, row0, ImageView(*src)); });
}

int reads_rows(const char* path, int* yes, const pf_io_oiio_sink* err) {
    return guarded(err, [&] { *yes = row().reads_rows(path) ? 1 : 0; });
}

int writes_rows(const char* path, int* yes, const pf_io_oiio_sink* err) {
    return guarded(err, [&] { *yes = row().writes_rows(path) ? 1 : 0; });
}

int whole_why(const char* path, const pf_io_oiio_sink* why, const pf_io_oiio_sink* err) {
    return guarded(err, [&] {
        const std::string text = row().whole_why(path);
        if (!text.empty()) why->put(why->ctx, 0, 0, text.c_str());
    });
}

constexpr pf_io_oiio_module k_module{
    PIXFLOW_IO_OIIO_ABI_VERSION,
    sizeof(pf_io_oiio_module),
    &version_text,
    &read_header,
    &read,
    &write,
    &writes,
    &read_rows,
    &write_rows,
    &reads_rows,
    &writes_rows,
    &whole_why,
};

} // namespace
} // namespace pixflow::io::detail

extern "C" __attribute__((visibility("default"))) const pf_io_oiio_module* pixflow_io_oiio_entry(void) {
    return &pixflow::io::detail::k_module;
}
