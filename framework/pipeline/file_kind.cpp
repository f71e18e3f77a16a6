// What kind of file a path names, for the checks that accept only regular files: the pipeline
// file itself and every file a node reads. A FIFO or a character device (/dev/zero, /dev/stdin
// on a terminal) would block or never end when read; a directory reads as nothing.
#include "pipeline/pipeline.hpp"

namespace fs = std::filesystem;

namespace pixflow::host {

std::string non_regular_file_kind(const fs::path& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec); // follows symbolic links: a link to /dev/zero is a device
    if (ec) return "";                         // missing or unreadable: the reader says so
    std::string kind;
    switch (st.type()) {
    case fs::file_type::regular:
    case fs::file_type::not_found:
    case fs::file_type::none: return "";
    case fs::file_type::directory: kind = "a directory"; break;
    case fs::file_type::fifo: kind = "a FIFO (named pipe)"; break;
    case fs::file_type::character: kind = "a character device"; break;
    case fs::file_type::block: kind = "a block device"; break;
    case fs::file_type::socket: kind = "a socket"; break;
    default: kind = "not a regular file"; break;
    }
    if (fs::is_symlink(fs::symlink_status(path, ec))) {
        fs::path target = fs::canonical(path, ec);
        if (!ec) return "a symbolic link to " + escape_control(target.string()) + ", " + kind;
    }
    return kind;
}

} // namespace pixflow::host
