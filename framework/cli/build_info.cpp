// What this build of pixflow can do, for `pixflow --version`: the CUDA architectures it was
// compiled for, whether OpenImageIO backs load/save and which formats it brings, and MPI.
#include "cli/build_info.hpp"

#include <pixflow/abi.h>

#ifdef PIXFLOW_WITH_OIIO
#include <oiio_module.h> // plugins/io: the C entry point of the io plugin's OpenImageIO module

#include <dlfcn.h>

#include <filesystem>
#endif

#ifdef PIXFLOW_WITH_MPI
#include <mpi.h>
#endif

#include <cstdlib>
#include <string>

// The formats the io plugin builds in (plugins/io/CMakeLists.txt defines this for the executable).
#ifndef PIXFLOW_IO_BUILTIN_EXTS
#define PIXFLOW_IO_BUILTIN_EXTS ".pgm .ppm .pnm .pfm .npy"
#endif

namespace pixflow::cli {

#ifdef PIXFLOW_WITH_OIIO
namespace {
/// The OpenImageIO line's text, from the io plugin's module (plugins/io/oiio_module.h): the
/// executable links no OpenImageIO (issue 18), so only `--version` loads it. The module is
/// $PIXFLOW_IO_OIIO_MODULE, else <bin>/../<plugin folder>/io/pixflow_io_oiio.so.
std::string oiio_text() {
    namespace fs = std::filesystem;
    std::string path;
    if (const char* env = std::getenv(PIXFLOW_IO_OIIO_ENV); env && *env)
        path = env;
    else {
        std::error_code ec;
        const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
        path = (exe.parent_path() / ".." / PIXFLOW_PLUGIN_SUBDIR / PIXFLOW_IO_OIIO_SUBDIR / PIXFLOW_IO_OIIO_FILE)
                   .lexically_normal()
                   .string();
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); // kept: the process ends soon
    const char* why = handle ? nullptr : dlerror();
    auto entry = handle ? reinterpret_cast<pf_io_oiio_entry_fn>(dlsym(handle, PIXFLOW_IO_OIIO_ENTRY)) : nullptr;
    const pf_io_oiio_module* m = entry ? entry() : nullptr;
    if (m && m->abi_version == PIXFLOW_IO_OIIO_ABI_VERSION && m->struct_size >= sizeof(pf_io_oiio_module))
        return m->version_text();
    return "on, but its module '" + path + "' cannot be loaded (" +
           (why ? std::string(why)
                : std::string("no entry point of module ABI ") + std::to_string(PIXFLOW_IO_OIIO_ABI_VERSION)) +
           "); load/save formats: " PIXFLOW_IO_BUILTIN_EXTS;
}
} // namespace
#endif

std::string version_text() {
    std::string s = std::string("pixflow ") + PIXFLOW_VERSION + " (plugin ABI " + std::to_string(PIXFLOW_ABI_MAJOR) +
                    "." + std::to_string(PIXFLOW_ABI_MINOR) + ")\n";
    s += "  CUDA:        " PIXFLOW_FEATURE_CUDA "\n";
#ifdef PIXFLOW_WITH_OIIO
    s += "  OpenImageIO: " + oiio_text() + "\n";
#else
    s += "  OpenImageIO: off; load/save formats: " PIXFLOW_IO_BUILTIN_EXTS "\n";
#endif
#ifdef PIXFLOW_WITH_MPI
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(lib, &len); // one of the few calls allowed without MPI_Init
    std::string name(lib, std::size_t(len));
    s += "  MPI:         on (" + name.substr(0, name.find(',')) + "): batches over the ranks of mpirun (docs/mpi.md)";
#else
    s += "  MPI:         off (built without MPI)";
#endif
    return s;
}

} // namespace pixflow::cli
