// What this build of pixflow can do, for `pixflow --version`: the CUDA architectures it was
// compiled for, whether OpenImageIO backs load/save and which formats it brings, and MPI.
#include "cli/build_info.hpp"

#include <pixflow/abi.h>

#ifdef PIXFLOW_WITH_OIIO
#include <OpenImageIO/imageio.h>
#endif

#ifdef PIXFLOW_WITH_MPI
#include <mpi.h>
#endif

#include <string>

namespace pixflow::cli {

std::string version_text() {
    std::string s = std::string("pixflow ") + PIXFLOW_VERSION + " (plugin ABI " + std::to_string(PIXFLOW_ABI_MAJOR) +
                    "." + std::to_string(PIXFLOW_ABI_MINOR) + ")\n";
    s += "  CUDA:        " PIXFLOW_FEATURE_CUDA "\n";
#ifdef PIXFLOW_WITH_OIIO
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
    s += "  OpenImageIO: on (" OIIO_VERSION_STRING "); load/save formats: .pgm .ppm .pfm .npy built in, and" + exts + "\n";
#else
    s += "  OpenImageIO: off; load/save formats: .pgm .ppm .pnm .pfm .npy\n";
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
