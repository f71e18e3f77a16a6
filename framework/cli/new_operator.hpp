// `pixflow new-operator NAME --dir D`: writes a compile-ready operator folder, laid out as every
// built-in plugin is (CMakeLists.txt, NAME.cpp, NAME.toml, kernels/, test/).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace pixflow::host {

/// Writes the folder; returns the files written. Throws std::runtime_error on a bad name or a
/// non-empty target folder (nothing is overwritten).
std::vector<std::filesystem::path> write_operator_skeleton(const std::string& name, const std::filesystem::path& dir);

} // namespace pixflow::host
