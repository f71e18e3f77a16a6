// builtin/: operators the host itself provides, registered before any plugin file is loaded so
// that `pixflow ops` and `pixflow describe` list them and no plugin can take their names.
//
//   memory   a source whose image is the caller's memory (host, or a CUDA device), bound by node
//            id through the embedding API (Pipeline::input); the executor never runs it, it only
//            points the node's output at that memory. Its width, height, channels and dtype
//            parameters declare the shape when nothing is bound (`pixflow validate`); a bound
//            image must agree with what is declared.
#pragma once

#include "loader/registry.hpp"

#include <filesystem>
#include <vector>

namespace pixflow::host {

inline constexpr const char* kMemoryOp = "memory";
inline constexpr const char* kBuiltinPlugin = "built into pixflow";

/// The descriptor of the built-in operators, as a plugin's would be.
const pf_plugin_desc& builtin_plugin();

/// A registry as the CLI and the embedding API see it: the built-in operators, then every plugin
/// on the search path of `plugin_paths` (Registry::search_path).
void load_registry(Registry& reg, const std::vector<std::filesystem::path>& plugin_paths);

} // namespace pixflow::host
