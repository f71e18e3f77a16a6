// pixflow/error.hpp: the exception operators throw. The operator thunks catch it and turn it into
// a pf_status plus message, so nothing unwinds across the C ABI.
#pragma once

#include <pixflow/abi.h>

#include <stdexcept>
#include <string>

namespace pixflow {

/// An error the operator reports; `status` tells the host whose fault it is
/// (PF_ERR_INVALID: the user's input or parameters; PF_ERR_RUNTIME, PF_ERR_CUDA: ours).
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what, pf_status status = PF_ERR_INVALID)
        : std::runtime_error(what), m_status(status) {}
    pf_status status() const { return m_status; }

  private:
    pf_status m_status;
};

} // namespace pixflow
