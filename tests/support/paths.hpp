// Where the build put things, and small helpers shared by the framework tests.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace pixflow::testing {

/// The source tree: $PIXFLOW_SOURCE_DIR when set (a copy of the tree on another machine), else
/// where it was at build time.
inline std::filesystem::path source_dir() {
    const char* env = std::getenv("PIXFLOW_SOURCE_DIR");
    return env && *env ? std::filesystem::path(env) : std::filesystem::path(PIXFLOW_SOURCE_DIR);
}
/// The build tree, found from the running test executable (<build>/bin/pixflow_tests), so a
/// build tree that was moved still finds its own plugins.
inline std::filesystem::path build_dir() {
    return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
}
inline std::filesystem::path plugin_dir() { return build_dir() / PIXFLOW_PLUGIN_SUBDIR; }
inline std::filesystem::path test_plugin_dir() { return build_dir() / "tests/test_plugins"; }
inline std::filesystem::path pixflow_exe() { return build_dir() / "bin/pixflow"; }
inline std::filesystem::path test_plugin(const std::string& name) {
    return test_plugin_dir() / ("pixflow_test_" + name + ".so");
}

/// A fresh empty folder under the system temp dir, removed when the object goes.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::random_device rd;
        path = std::filesystem::temp_directory_path() / ("pixflow-test-" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

struct CommandResult {
    int exit_code = -1;
    std::string out, err;
};

/// Runs the pixflow executable with `args` (shell words), from the source dir.
inline CommandResult run_pixflow(const std::string& args) {
    TempDir t;
    std::string cmd = "cd '" + source_dir().string() + "' && PIXFLOW_PLUGIN_PATH= '" + pixflow_exe().string() + "' " +
                      args + " >'" + (t / "out") + "' 2>'" + (t / "err") + "'";
    int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    auto slurp = [](const std::string& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    r.out = slurp(t / "out");
    r.err = slurp(t / "err");
    return r;
}

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

/// A file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// A binary PPM (P6, u8, 3 channels) of deterministic noise; its folder is created.
inline void write_ppm(const std::filesystem::path& p, int w, int h, unsigned seed) {
    std::filesystem::create_directories(p.parent_path());
    std::mt19937 rng(seed);
    std::string data(std::size_t(w) * std::size_t(h) * 3, '\0');
    for (char& c : data) c = char(rng() & 0xff);
    std::ofstream(p, std::ios::binary) << "P6\n" << w << " " << h << "\n255\n" << data;
}

/// `s` in single quotes, for a shell word (paths without quotes in them).
inline std::string q(const std::string& s) { return "'" + s + "'"; }

} // namespace pixflow::testing
