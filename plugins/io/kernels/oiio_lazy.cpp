// oiio_lazy.cpp: the io plugin's OpenImageIO row (codec.hpp's oiio_codec), which loads the module
// pixflow_io_oiio.so (oiio_module.h) on the first file that needs it and forwards every call to
// it. The row's data (name, extensions, what each stores) is here (oiio_formats.hpp), so that
// choosing a codec and save's checks and messages load nothing: a batch of .pgm .ppm .pnm .pfm
// .npy files (and .png .jpg, built in where libpng and libjpeg are) never loads OpenImageIO and its ~261 libraries (docs/performance.md, "Batches
// against the codec limit").
//
// Where the module is, first found:
//   1. $PIXFLOW_IO_OIIO_MODULE, when set and not empty: that file only;
//   2. <folder of the file holding this code>/io/pixflow_io_oiio.so: beside pixflow_io.so, in the
//      build tree and installed (dladdr names the plugin's file);
//   3. <folder of the file>/../lib/pixflow/plugins/io/pixflow_io_oiio.so (PIXFLOW_IO_OIIO_FROM_EXE),
//      for code linked straight into an executable in bin/ (the tests link the kernels), as the
//      plugin registry finds the executable's plugins.
// It is loaded once (thread-safe; RTLD_LOCAL) and never unloaded (its decoders and encoders may
// be kept open between bands). A module that cannot be loaded is an error for every file that
// needs it, naming that file, the module's path, dlerror() and the built-in formats.
#include "../oiio_module.h"
#include "codec.hpp"
#include "oiio_formats.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace pixflow::io::detail {
namespace {

// the built-in formats this build adds to those of every build, for messages
#if defined(PIXFLOW_IO_PNG) && defined(PIXFLOW_IO_JPEG)
#define k_png_jpeg " .png .jpg"
#elif defined(PIXFLOW_IO_PNG)
#define k_png_jpeg " .png"
#elif defined(PIXFLOW_IO_JPEG)
#define k_png_jpeg " .jpg"
#else
#define k_png_jpeg ""
#endif

struct Loaded {
    const pf_io_oiio_module* module = nullptr;
    std::string path;  ///< the module tried (the first candidate when none exists)
    std::string error; ///< why it is not loaded (dlerror() or the entry point's complaint)
};

std::string module_path() {
    namespace fs = std::filesystem;
    if (const char* env = std::getenv(PIXFLOW_IO_OIIO_ENV); env && *env) return env;
    std::string beside;
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&module_path), &info) && info.dli_fname && *info.dli_fname) {
        std::error_code ec;
        fs::path self = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);
        beside = (self.parent_path() / PIXFLOW_IO_OIIO_SUBDIR / PIXFLOW_IO_OIIO_FILE).string();
        if (fs::exists(beside, ec)) return beside;
#ifdef PIXFLOW_IO_OIIO_FROM_EXE
        const fs::path from_exe =
            (self.parent_path() / PIXFLOW_IO_OIIO_FROM_EXE / PIXFLOW_IO_OIIO_FILE).lexically_normal();
        if (fs::exists(from_exe, ec)) return from_exe.string();
#endif
    }
    return beside.empty() ? std::string(PIXFLOW_IO_OIIO_SUBDIR "/" PIXFLOW_IO_OIIO_FILE) : beside;
}

Loaded load() {
    Loaded l;
    l.path = module_path();
    void* handle = dlopen(l.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        l.error = e ? e : "dlopen failed";
        return l;
    }
    auto entry = reinterpret_cast<pf_io_oiio_entry_fn>(dlsym(handle, PIXFLOW_IO_OIIO_ENTRY));
    const pf_io_oiio_module* m = entry ? entry() : nullptr;
    if (!m)
        l.error = std::string("it has no entry point " PIXFLOW_IO_OIIO_ENTRY);
    else if (m->abi_version != PIXFLOW_IO_OIIO_ABI_VERSION || m->struct_size < sizeof(pf_io_oiio_module))
        l.error = "it is of module ABI " + std::to_string(m->abi_version) + " (size " + std::to_string(m->struct_size) +
                  "), this plugin needs " + std::to_string(PIXFLOW_IO_OIIO_ABI_VERSION) + " (size " +
                  std::to_string(sizeof(pf_io_oiio_module)) + "): install the plugin and its module together";
    else
        l.module = m;
    return l; // the handle stays open when refused too: the module may have started threads
}

/// The module, loaded on the first call; else the error for `path`, read or written.
const pf_io_oiio_module& module_for(const std::string& path, bool reading) {
    static const Loaded loaded = load(); // thread-safe, once
    if (loaded.module) return *loaded.module;
    const std::string what = extension_of(path) + " files need OpenImageIO, whose module '" + loaded.path +
                             "' cannot be loaded (" + loaded.error +
                             "); built-in formats are .pgm .ppm .pnm .pfm .npy" k_png_jpeg
                             " (or set " PIXFLOW_IO_OIIO_ENV " to the module's path)";
    if (reading) fail_read(path, what);
    fail_write(path, what, PF_ERR_UNSUPPORTED);
}

/// Collects an error from the module and throws it again, as the module threw it.
struct Failure {
    int kind = PF_IO_OIIO_OTHER;
    int status = PF_ERR_RUNTIME;
    std::string text;
    pf_io_oiio_sink sink{this, [](void* ctx, int kind, int status, const char* text) {
                             auto* f = static_cast<Failure*>(ctx);
                             f->kind = kind;
                             f->status = status;
                             f->text = text ? text : "";
                         }};
    void check(int rc) const {
        if (rc == PF_IO_OIIO_OK) return;
        switch (kind) {
        case PF_IO_OIIO_USER: throw UserError(text, pf_status(status));
        case PF_IO_OIIO_ERROR: throw Error(text, pf_status(status));
        case PF_IO_OIIO_INTERNAL: throw InternalError(text);
        default: throw std::runtime_error(text);
        }
    }
};

/// ReadOptions in C, with a sink for its warn.
struct Options {
    explicit Options(const ReadOptions& o) : options(&o) {
        c.max_pixels = o.max_pixels;
        c.fail_on = int32_t(o.fail_on);
        c.warn = o.warn ? &warn : nullptr;
    }
    const ReadOptions* options;
    pf_io_oiio_options c{};
    pf_io_oiio_sink warn{this, [](void* ctx, int, int, const char* line) {
                             static_cast<Options*>(ctx)->options->warn(line ? line : "");
                         }};
};

pf_io_oiio_header c_header(const Header& h) { return {h.width, h.height, h.channels, int32_t(h.dtype)}; }

Header lazy_read_header(const std::string& path, const ReadOptions& options) {
    const pf_io_oiio_module& m = module_for(path, true);
    Failure f;
    Options o(options);
    pf_io_oiio_header h{};
    f.check(m.read_header(path.c_str(), &o.c, &h, &f.sink));
    return Header{h.width, h.height, h.channels, DType(h.dtype)};
}

void lazy_read(const std::string& path, const Header& want, const ImageView& dst, const ReadOptions& options) {
    const pf_io_oiio_module& m = module_for(path, true);
    Failure f;
    Options o(options);
    const pf_io_oiio_header w = c_header(want);
    const pf_image d = dst.to_c();
    f.check(m.read(path.c_str(), &w, &d, &o.c, &f.sink));
}

void lazy_write(const std::string& path, const ImageView& src) {
    const pf_io_oiio_module& m = module_for(path, false);
    Failure f;
    const pf_image s = src.to_c();
    f.check(m.write(path.c_str(), &s, &f.sink));
}

bool ask(int (*q)(const char*, int*, const pf_io_oiio_sink*), const std::string& path) {
    Failure f;
    int yes = 0;
    f.check(q(path.c_str(), &yes, &f.sink));
    return yes != 0;
}

bool lazy_writes(const std::string& path) { return ask(module_for(path, false).writes, path); }
bool lazy_reads_rows(const std::string& path) { return ask(module_for(path, true).reads_rows, path); }
bool lazy_writes_rows(const std::string& path) { return ask(module_for(path, false).writes_rows, path); }

void lazy_read_rows(const std::string& path, const Header& want, int row0, const ImageView& dst,
                    const ReadOptions& options) {
    const pf_io_oiio_module& m = module_for(path, true);
    Failure f;
    Options o(options);
    const pf_io_oiio_header w = c_header(want);
    const pf_image d = dst.to_c();
    f.check(m.read_rows(path.c_str(), &w, row0, &d, &o.c, &f.sink));
}

void lazy_write_rows(const std::string& path, int height, int row0, const ImageView& src) {
    const pf_io_oiio_module& m = module_for(path, false);
    Failure f;
    const pf_image s = src.to_c();
    f.check(m.write_rows(path.c_str(), height, row0, &s, &f.sink));
}

/// At validation: a save to a format of the module fails then, not after the run's work.
void lazy_check_writer(const std::string& path) { (void)module_for(path, false); }

std::string lazy_whole_why(const std::string& path) {
    const pf_io_oiio_module& m = module_for(path, true);
    Failure f;
    std::string why;
    const pf_io_oiio_sink sink{
        &why, [](void* ctx, int, int, const char* text) { *static_cast<std::string*>(ctx) = text ? text : ""; }};
    f.check(m.whole_why(path.c_str(), &sink, &f.sink));
    return why;
}

} // namespace

constexpr Codec oiio_codec{.name = "OpenImageIO",
                           .formats = kOiioFormats,
                           .fallback = true,
                           .read_header = &lazy_read_header,
                           .read = &lazy_read,
                           .write = &lazy_write,
                           .reads = nullptr,
                           .writes = &lazy_writes,
                           .other = kOiioOther,
                           .read_rows = &lazy_read_rows,
                           .write_rows = &lazy_write_rows,
                           .reads_rows = &lazy_reads_rows,
                           .writes_rows = &lazy_writes_rows,
                           .whole_why = &lazy_whole_why,
                           .check_writer = &lazy_check_writer};

} // namespace pixflow::io::detail
