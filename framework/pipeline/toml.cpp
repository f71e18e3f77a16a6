// The defined-behaviour wrapper around toml++ (see toml.hpp).
#include "pipeline/toml.hpp"

#include <cstdio>
#include <memory>

namespace pixflow::host {

namespace detail {
void toml_internal_failure(const char* what, const char* file, int line) {
    throw TomlInternalError(std::string("toml++ internal check failed: ") + what + " (" + file + ":" +
                            std::to_string(line) + ")");
}
} // namespace detail

bool toml_precheck(const std::string& text, TomlScanError& err) {
    enum class In { code, comment, basic, literal, ml_basic, ml_literal } in = In::code;
    int line = 1, col = 1;
    auto starts = [&](std::size_t i, const char* s) { return text.compare(i, std::char_traits<char>::length(s), s) == 0; };
    for (std::size_t i = 0; i < text.size(); ++i, ++col) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\n') {
            ++line;
            col = 0;
            if (in == In::comment) in = In::code;
            // a single-line string does not span lines: toml++ reports that itself
            if (in == In::basic || in == In::literal) in = In::code;
            continue;
        }
        switch (in) {
        case In::code:
            if (c >= 0x80) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02X", c);
                err = {line, col, std::string("a non-ASCII byte (") + hex +
                                      ") outside a string or comment; TOML allows them only inside \"strings\" and # comments"};
                return false;
            }
            if (c == '#') in = In::comment;
            else if (starts(i, "\"\"\"")) { in = In::ml_basic; i += 2; col += 2; }
            else if (starts(i, "'''")) { in = In::ml_literal; i += 2; col += 2; }
            else if (c == '"') in = In::basic;
            else if (c == '\'') in = In::literal;
            break;
        case In::comment: break;
        case In::basic:
            if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') { ++i; ++col; }
            else if (c == '"') in = In::code;
            break;
        case In::literal:
            if (c == '\'') in = In::code;
            break;
        case In::ml_basic:
            if (c == '\\' && i + 1 < text.size()) { ++i; ++col; if (text[i] == '\n') { ++line; col = 0; } }
            else if (starts(i, "\"\"\"")) { in = In::code; i += 2; col += 2; }
            break;
        case In::ml_literal:
            if (starts(i, "'''")) { in = In::code; i += 2; col += 2; }
            break;
        }
    }
    return true;
}

toml::table parse_toml(const std::string& text, const std::string& source_path) {
    auto path = std::make_shared<const std::string>(source_path);
    TomlScanError scan;
    if (!toml_precheck(text, scan)) {
        toml::source_position p{static_cast<toml::source_index>(scan.line), static_cast<toml::source_index>(scan.column)};
        throw toml::parse_error(scan.message.c_str(), p, path);
    }
    try {
        return toml::parse(text, source_path);
    } catch (const detail::TomlInternalError& e) {
        // The input is malformed in a way toml++ 3.3.0 does not diagnose itself.
        throw toml::parse_error(("malformed TOML that the parser could not place; look for an empty or badly quoted key or "
                                 "table header (" + std::string(e.what()) + ")").c_str(),
                                toml::source_position{1, 1}, path);
    }
}

} // namespace pixflow::host
