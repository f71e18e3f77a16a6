// loader/scan_protocol.hpp: what the plugin scanner (framework/scanner/) tells the host about one
// plugin, one line per fact, on file descriptor 3 (stdout when run by hand):
//
//   pixflow-plugin-scanner 1        hello: the scanner started and speaks version 1
//   phase load                      about to dlopen (static constructors run here)
//   phase entry                     about to call pixflow_plugin_entry()
//   abi <major> <minor>             what the descriptor's header says
//   phase check                     about to validate the descriptor (descriptor_check.hpp)
//   phase init                      about to call the plugin's init()
//   plugin <name>                   facts for `pixflow plugins`, once accepted
//   version <version>
//   op <name>                       one line per operator
//   result ok | result rejected <reason>
//   phase unload                    about to dlclose (static destructors run here)
//   done                            the scanner is about to _exit(0)
//
// The host trusts a result only with `done` and exit status 0; otherwise the last phase names
// where the plugin crashed, exited or hung. Values are escaped: bytes below 0x20, 0x7f and '\'
// are written \xHH, so a line is always one line.
#pragma once

#include <string>
#include <string_view>

namespace pixflow::host::scan_protocol {

inline constexpr const char* hello = "pixflow-plugin-scanner 1";
/// The descriptor the scanner writes its report to when the host started it.
inline constexpr int report_fd = 3;

inline std::string escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7F || c == '\\') {
            out += "\\x";
            out += "0123456789abcdef"[c >> 4];
            out += "0123456789abcdef"[c & 15];
        } else {
            out += ch;
        }
    }
    return out;
}

inline std::string unescape(std::string_view s) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && hex(s[i + 2]) >= 0 && hex(s[i + 3]) >= 0) {
            out += char(hex(s[i + 2]) * 16 + hex(s[i + 3]));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

} // namespace pixflow::host::scan_protocol
