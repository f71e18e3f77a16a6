// pixflow/diagnostic.hpp: the two kinds of error pixflow raises, in the CLI and in the library.
//
//   UserError      the caller's mistake: the pipeline, a parameter, a --set or set(), an input
//                  binding, or an input an operator refused (its PF_ERR_INVALID or
//                  PF_ERR_UNSUPPORTED). It lists diagnostics that say where, what was received
//                  and what would be accepted, one per line:
//                    pipelines/blur.toml:17:10: node 'blur': border = "mirror" is not one of ...
//   InternalError  not the caller's doing: a bug in pixflow or in a plugin, or the machine failing
//                  under them (a CUDA call, a file that cannot be moved, an operator's
//                  PF_ERR_RUNTIME or PF_ERR_CUDA). The message names pixflow's file:line, or the
//                  node and the plugin's own message.
//
// The `pixflow` CLI exits 1 for a UserError raised before anything ran, 2 for any failure while
// running. Library calls throw these two (and std::bad_alloc); nothing else escapes.
//
// The classes themselves live in the SDK's <pixflow/error.hpp>, shared with operators, so that
// "the user's fault" means one type from a plugin to an application.
#pragma once

#include <pixflow/error.hpp>
