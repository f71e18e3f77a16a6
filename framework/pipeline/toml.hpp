// toml++ as pixflow uses it: the one include of <toml++/toml.h> in the host (every other file
// includes this one; a test checks it), with the parser's internal checks made defined.
//
// Debian 12 ships toml++ 3.3.0, which has two known bugs reached by malformed input (upstream
// PRs #301 and #305): `[ = "cpu"` trips an assertion, and a non-ASCII byte outside a string can
// reach TOML_UNREACHABLE, i.e. __builtin_unreachable(): undefined behaviour in a release build.
// Here TOML_ASSERT is always on and, like TOML_UNREACHABLE, throws TomlInternalError instead;
// parse_toml() also refuses non-ASCII bytes outside strings and comments before toml++ sees them,
// with the line and column, so the user gets a diagnostic and never the internal error.
#pragma once

#include <stdexcept>
#include <string>

namespace pixflow::host::detail {
/// toml++ reached a state its authors thought impossible (one of the known 3.3.0 bugs).
struct TomlInternalError : std::logic_error {
    using std::logic_error::logic_error;
};
[[noreturn]] void toml_internal_failure(const char* what, const char* file, int line);
} // namespace pixflow::host::detail

#include <toml++/impl/preprocessor.h> // defines the macros first; #pragma once keeps our overrides
#undef TOML_ASSERT
#define TOML_ASSERT(expr)                                                                                              \
    ((expr) ? static_cast<void>(0) : ::pixflow::host::detail::toml_internal_failure(#expr, __FILE__, __LINE__))
#undef TOML_ASSERT_ASSUME
#define TOML_ASSERT_ASSUME(expr) TOML_ASSERT(expr)
#undef TOML_UNREACHABLE
#define TOML_UNREACHABLE ::pixflow::host::detail::toml_internal_failure("unreachable code", __FILE__, __LINE__)
#include <toml++/toml.h>

namespace pixflow::host {

/// Where a pre-check refused the text (1-based), and why.
struct TomlScanError {
    int line = 0, column = 0;
    std::string message;
};

/// Finds the first byte toml++ 3.3.0 must not see: a non-ASCII byte outside a string or a
/// comment (TOML allows them nowhere else). Returns false and fills `err` when there is one.
bool toml_precheck(const std::string& text, TomlScanError& err);

/// toml::parse with the pre-check: throws toml::parse_error for every malformed input, the
/// pre-check's findings and the parser's internal failures included (never undefined behaviour).
toml::table parse_toml(const std::string& text, const std::string& source_path);

} // namespace pixflow::host
