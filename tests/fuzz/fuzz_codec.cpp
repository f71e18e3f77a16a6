// libFuzzer target: one image codec of the io plugin, through the `load` operator as a user
// reaches it (header check, size checks, decode). PIXFLOW_FUZZ_EXT names the format (".npy").
// Every input must load or fail with a UserError/RunError naming the file; anything else (another
// exception, a crash, a sanitizer report, a hang) is a finding.
#include "executor/run_op.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {
pixflow::host::Registry* registry = nullptr;
std::string path;
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    registry = new pixflow::host::Registry();
    registry->load_all(pixflow::host::Registry::search_path({}));
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/pixflow-fuzz-" + std::to_string(getpid()) + PIXFLOW_FUZZ_EXT;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    }
    try {
        auto images = pixflow::host::run_single_op(*registry, "load", "cpu", {}, {{"path", "\"" + path + "\""}});
        (void)images;
    } catch (const pixflow::host::UserError& e) {
        if (e.diagnostics().empty()) std::abort();
        // A codec refusing the file while running (the diagnostic has the running node's
        // context) must name the file, as any failure while running.
        if (!e.diagnostics()[0].context.empty() && std::string(e.what()).find(path) == std::string::npos) {
            std::fprintf(stderr, "error without the file name: %s\n", e.what());
            std::abort();
        }
    } catch (const pixflow::host::InternalError& e) {
        if (std::string(e.what()).find(path) == std::string::npos) {
            std::fprintf(stderr, "error without the file name: %s\n", e.what());
            std::abort(); // a codec error must name the file
        }
    }
    return 0;
}
