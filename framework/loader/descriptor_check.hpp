// loader/descriptor_check.hpp: the one validator of a plugin's descriptor, a pure function over
// a `pf_plugin_desc` and everything it points to. It runs twice: in the plugin scanner, a child
// process where an invalid pointer only kills the child (framework/scanner/), and again in the
// host before any operator is indexed (defence in depth). tests/fuzz/fuzz_descriptor.cpp fuzzes it.
//
// What it promises when it returns "" (accepted), for everything the host reads later:
//  - every string the host reads is non-NULL (port docs may be NULL), NUL-terminated within its
//    bound (`DescriptorLimits`), and operator, port and parameter names are [A-Za-z0-9_-]+;
//    docs, choices, plugin name and version are one line of UTF-8 text;
//  - every count is within its bound and every array with a count > 0 is non-NULL;
//  - array elements have the struct_size of the plugin's ABI (the host indexes arrays with its
//    sizeof, except access patterns of ABI 1.2, whose elements are shorter: access_entry);
//  - flags and dtype/channel masks have only known bits and masks are not empty; PF_OP_SPLIT
//    only from ABI 1.4 on;
//  - parameters: known type, ranges ordered (no NaN), defaults of the declared type and inside
//    the range or among the choices; path flags only on strings;
//  - names unique among an op's ports, its parameters, and the plugin's operators;
//  - fusions (ABI >= 1.1, when struct_size covers them) name an operator of the plugin, a chain of
//    2 or more names, binds to parameters of the fused operator and nodes inside the chain;
//  - access patterns (ABI >= 1.2, when struct_size covers them) name an operator of the plugin,
//    each at most once, with a known kind, a halo or block rows in 1 .. 4096 exactly where the
//    kind has them, a carry_bytes function exactly when carried, and a source neither stencil nor blocks;
//  - scratch estimates (ABI >= 1.5, when struct_size covers them) name an operator of the plugin,
//    each at most once, and have a function.
// How it reads: it checks a count before touching its array and the NULL-ness of a pointer
// before following it, reads at most bound + 1 bytes of any string, and reads no field outside
// the struct_size of the plugin descriptor. It cannot tell a wild pointer from a valid one:
// following one crashes, which is why the scanner runs it first, in a child process.
#pragma once

#include <pixflow/abi.h>

#include <cstddef>
#include <string>

namespace pixflow::host {

/// Bounds of a sane descriptor. Real plugins are far below them (the largest, jpeg, has 5 ops).
struct DescriptorLimits {
    static constexpr std::size_t name_bytes = 128; ///< op, port, parameter, plugin names
    static constexpr std::size_t version_bytes = 64;
    static constexpr std::size_t doc_bytes = 4096; ///< docs and string defaults
    static constexpr std::size_t choice_bytes = 128;
    static constexpr int ops = 1024;
    static constexpr int ports = 64; ///< inputs, and outputs, per op
    static constexpr int params = 256;
    static constexpr int choices = 1024;
    static constexpr int fusions = 256;
    static constexpr int chain = 64;
    static constexpr int binds = 256;
    static constexpr int same = 256;
    static constexpr int access_rows = 4096; ///< a stencil's halo, a block's rows
};

/// The reason `d` must be rejected, or "" when it is valid. The reason is one line and quotes
/// only strings it has already validated ("operator 'blur', parameter 'border': ...", else
/// "operator #3: ...").
std::string check_plugin_descriptor(const pf_plugin_desc* d);

/// Bytes between the entries of d's access array: sizeof(pf_access_desc) of d's ABI (an ABI 1.2
/// plugin's entries end before whole_reason).
std::size_t access_stride(const pf_plugin_desc& d);
/// Entry k of d's access array (d has access patterns: ABI >= 1.2 and a struct_size that covers them).
const pf_access_desc& access_entry(const pf_plugin_desc& d, int k);
/// Whether d has access patterns (ABI >= 1.2: its minor and struct_size cover them).
bool has_access_patterns(const pf_plugin_desc& d);
/// Whether d has the scratch estimates of ABI 1.5 (its minor and struct_size cover them).
bool has_scratch_estimates(const pf_plugin_desc& d);

/// A message a plugin wrote into a host buffer of `size` bytes, read safely: at most size - 1
/// bytes, stopped at the first NUL, control bytes replaced (one line). The buffer's last byte is
/// forced to NUL first, so a plugin that left it unterminated cannot make any reader overrun it.
std::string terminated_message(char* buf, std::size_t size);

} // namespace pixflow::host
