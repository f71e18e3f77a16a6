// --input expansion (glob, folder, @list, file) and output naming for batch runs.
#include "batch/batch.hpp"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

/// Extensions a folder input picks up (lower case). Anything else in the folder is left alone;
/// name other files through a glob or a list.
const std::set<std::string>& image_extensions() {
    static const std::set<std::string> exts{".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif",  ".webp", ".exr",
                                            ".hdr", ".tga", ".dpx",  ".jp2", ".j2k",  ".jxl", ".avif", ".heic", ".psd",
                                            ".sgi", ".rgb", ".ico",  ".dds", ".pgm",  ".ppm", ".pnm",  ".pfm",  ".npy"};
    return exts;
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool has_wildcard(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

[[noreturn]] void input_error(const std::string& value, const std::string& message) {
    throw UserError(Diagnostic{SourceLoc{"--input " + value, 0, 0}, "", message});
}

bool is_under(const fs::path& p, const fs::path& dir) {
    if (dir.empty()) return false;
    auto rel = p.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

std::string accepted_extensions() {
    std::string s;
    for (const auto& e : image_extensions()) s += (s.empty() ? "" : " ") + e;
    return s;
}

void expand_folder(const std::string& value, const fs::path& dir, const fs::path& skip_abs,
                   std::vector<BatchInput>& out) {
    std::vector<BatchInput> found;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) input_error(value, "cannot read the folder: " + ec.message());
    for (; it != end; it.increment(ec)) {
        if (ec) input_error(value, "cannot read the folder: " + ec.message());
        const fs::path& p = it->path();
        bool hidden = p.filename().string().rfind('.', 0) == 0; // temporaries (.x.pixflow-tmp-...) too
        bool skipped =
            is_under(fs::absolute(p).lexically_normal(), skip_abs) || fs::absolute(p).lexically_normal() == skip_abs;
        if (hidden || skipped) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file(ec) || !image_extensions().count(lower(p.extension().string()))) continue;
        found.push_back({p, p.lexically_relative(dir).parent_path()});
    }
    if (found.empty())
        input_error(value, "the folder holds no image file (looked for " + accepted_extensions() +
                               "); name other files with a glob or an @list");
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    out.insert(out.end(), found.begin(), found.end());
}

void expand_glob(const std::string& value, std::vector<BatchInput>& out) {
    // The fixed leading folders: every component before the first one with a wildcard.
    fs::path pattern(value), base;
    for (const auto& part : pattern.parent_path()) {
        if (has_wildcard(part.string())) break;
        base /= part;
    }
    glob_t g{};
    int rc = ::glob(value.c_str(), GLOB_ERR, nullptr, &g);
    std::vector<BatchInput> found;
    if (rc == 0)
        for (std::size_t k = 0; k < g.gl_pathc; ++k) {
            fs::path p(g.gl_pathv[k]);
            std::error_code ec;
            if (!fs::is_regular_file(p, ec)) continue;
            found.push_back({p, base.empty() ? p.parent_path() : p.lexically_relative(base).parent_path()});
        }
    ::globfree(&g);
    if (rc == GLOB_ABORTED) input_error(value, "cannot read a folder the pattern goes through");
    if (found.empty()) input_error(value, "the pattern matches no file");
    out.insert(out.end(), found.begin(), found.end()); // glob(3) sorts them
}

void expand_list(const std::string& value, std::vector<BatchInput>& out) {
    std::string file = value.substr(1);
    std::ifstream in(file);
    if (!in) input_error(value, "cannot read the list file '" + file + "'");
    std::size_t before = out.size();
    for (std::string line; std::getline(in, line);) {
        auto b = line.find_first_not_of(" \t\r");
        auto e = line.find_last_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        out.push_back({fs::path(line.substr(b, e - b + 1)), {}});
    }
    if (out.size() == before) input_error(value, "the list file '" + file + "' names no file");
}

} // namespace

std::vector<BatchInput> expand_inputs(const std::vector<std::string>& values, const fs::path& skip_dir) {
    std::vector<BatchInput> all;
    fs::path skip_abs = skip_dir.empty() ? fs::path() : fs::absolute(skip_dir).lexically_normal();
    if (!skip_abs.empty() && !skip_abs.has_filename()) skip_abs = skip_abs.parent_path(); // "out/" -> "out"
    for (const auto& v : values) {
        std::error_code ec;
        if (v.empty()) input_error("''", "an empty input; give a glob, a folder, @list.txt or a file");
        if (v[0] == '@')
            expand_list(v, all);
        else if (fs::is_directory(v, ec))
            expand_folder(v, fs::path(v), skip_abs, all);
        else if (has_wildcard(v) && !fs::exists(v, ec))
            expand_glob(v, all);
        else if (fs::exists(v, ec))
            all.push_back({fs::path(v), {}});
        else
            input_error(v, "no such file or folder");
    }
    // Without duplicates, first occurrence kept.
    std::set<fs::path> seen;
    std::vector<BatchInput> out;
    for (auto& in : all)
        if (seen.insert(in.path.lexically_normal()).second) out.push_back(std::move(in));
    return out;
}

fs::path batch_output_path(const fs::path& out_dir, const BatchInput& in, const std::string& save_id,
                           const std::string& ext) {
    std::string name = in.path.stem().string();
    if (!save_id.empty()) name += "-" + save_id;
    return (out_dir / in.sub / (name + ext)).lexically_normal();
}

} // namespace pixflow::host
