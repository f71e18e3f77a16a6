// batch/ side outputs (--report, --trace, graph -o): checked before anything runs against every
// file the command reads or writes, so that none of them can overwrite an input image, the
// pipeline file or an image output.
#include "batch/phases.hpp"

#include <sys/stat.h>

namespace fs = std::filesystem;

namespace pixflow::host {
namespace {

/// A path with `.`, `..` and symbolic links resolved as far as they exist.
fs::path canonical_of(const std::string& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return ec ? fs::absolute(p).lexically_normal() : c;
}

struct Identity {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
};

Identity identity_of(const std::string& p) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) return {};
    return {true, st.st_dev, st.st_ino};
}

} // namespace

std::vector<NamedPath> pipeline_files(const Graph& g) {
    std::vector<NamedPath> out;
    if (!g.file.empty()) out.push_back({g.file, "the pipeline file"});
    for (NodeId v : g.nodes.ids()) {
        const Node& n = g.nodes[v];
        for (const auto& [param, path] : n.paths(PF_PARAM_INPUT_PATH))
            out.push_back({path, "the file that node '" + n.id + "' reads"});
        for (const auto& [param, path] : n.paths(PF_PARAM_OUTPUT_PATH))
            out.push_back({path, "the output of node '" + n.id + "'"});
    }
    return out;
}

void check_side_outputs(const std::vector<NamedPath>& side, const std::vector<NamedPath>& taken) {
    std::vector<Diagnostic> errs;
    std::vector<fs::path> canon;
    std::vector<Identity> ids;
    for (const NamedPath& s : side) {
        canon.push_back(canonical_of(s.path));
        ids.push_back(identity_of(s.path));
    }
    // The same file: one identity (the same path, a symbolic or a hard link), or, for files that
    // do not exist yet, one path once resolved (only worth resolving when the names agree).
    auto same = [&](std::size_t k, const std::string& path, const Identity& id) {
        if (id.exists && ids[k].exists) return ids[k].dev == id.dev && ids[k].ino == id.ino;
        return fs::path(path).filename() == canon[k].filename() && canonical_of(path) == canon[k];
    };
    for (std::size_t k = 0; k < side.size(); ++k) {
        SourceLoc where{side[k].what + " " + side[k].path, 0, 0};
        std::error_code ec;
        if (fs::is_directory(side[k].path, ec)) {
            errs.push_back({where, "", "is a folder; name a file", {}});
            continue;
        }
        for (std::size_t j = 0; j < k; ++j)
            if (canon[j] == canon[k] || same(k, side[j].path, ids[j]))
                errs.push_back({where, "", "is also where " + side[j].what + " goes; give each its own file", {}});
        for (const NamedPath& t : taken)
            if (same(k, t.path, identity_of(t.path))) {
                errs.push_back({where, "", "would overwrite " + t.what + " (" + t.path + "); write it elsewhere", {}});
                break;
            }
    }
    if (!errs.empty()) throw UserError(errs);
}

namespace batch {

std::vector<NamedPath> batch_files(const PipelineSpec& spec, const BatchOptions& opt, const BatchPlan& b) {
    std::vector<NamedPath> out;
    if (!spec.file.empty()) out.push_back({spec.file, "the pipeline file"});
    for (const auto& v : opt.inputs)
        if (!v.empty() && v[0] == '@') out.push_back({v.substr(1), "the input list"});
    for (std::size_t i = 0; i < b.inputs.size(); ++i) {
        out.push_back({b.inputs[i].path.string(), "the input"});
        for (const auto& o : b.out_paths[i]) out.push_back({o, "the output of '" + b.inputs[i].path.string() + "'"});
    }
    return out;
}

} // namespace batch
} // namespace pixflow::host
