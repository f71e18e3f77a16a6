// Runs one operator on host images through the whole machinery (validation, planning,
// transfers, the plugin's entry point): what operator tests and the SDK's testing header use.
#pragma once

#include "executor/executor.hpp"
#include "loader/registry.hpp"

#include <map>
#include <string>
#include <vector>

namespace pixflow::host {

/// `backend` is "cpu" or "cuda"; parameter values are written as in TOML or --set.
/// Throws UserError for bad parameters or inputs (also when the operator refuses them while
/// running) and InternalError when the operator fails otherwise.
std::vector<HostImage> run_single_op(const Registry& reg, const std::string& op, const std::string& backend,
                                     const std::vector<pf_image>& inputs,
                                     const std::map<std::string, std::string>& params, RunReport* report = nullptr);

} // namespace pixflow::host
