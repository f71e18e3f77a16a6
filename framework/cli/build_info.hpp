// The features of this build, as `pixflow --version` prints them.
#pragma once

#include <string>

namespace pixflow::cli {
/// "pixflow X.Y.Z (plugin ABI a.b)" and one line per optional feature (CUDA and its
/// architectures, OpenImageIO and its formats, MPI).
std::string version_text();
} // namespace pixflow::cli
