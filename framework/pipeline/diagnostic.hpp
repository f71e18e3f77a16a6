// Where in the user's input something is, the one-line errors that point there, and the two
// kinds of error the host raises (pixflow/diagnostic.hpp says which is which):
//   pipelines/blur.toml:12:9: node 'blur': border = "mirror" is not one of reflect101, replicate, zero
#pragma once

#include "common/assert.hpp"

#include <pixflow/abi.h>
#include <pixflow/diagnostic.hpp>

#include <string>

namespace pixflow::host {

using pixflow::Diagnostic;
using pixflow::InternalError;
using pixflow::SourceLoc;
using pixflow::UserError;

/// An operator's failure status as the error it is: PF_ERR_INVALID and PF_ERR_UNSUPPORTED are the
/// user's (a parameter or an input the operator refused), the others are not.
[[noreturn]] inline void throw_status(int32_t status, Diagnostic d) {
    if (status == PF_ERR_INVALID || status == PF_ERR_UNSUPPORTED) throw UserError(std::move(d));
    throw InternalError(d.str());
}

} // namespace pixflow::host
