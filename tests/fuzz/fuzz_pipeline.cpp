// libFuzzer target: the pipeline front end, from bytes to a checked graph.
// Input: a TOML pipeline, optionally followed by a line "%%" and one `--set` argument per line
// (node.key=value). Every input must end in a Graph or a UserError with a diagnostic; anything
// else (another exception, a crash, a sanitizer report, a hang) is a finding.
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
pixflow::host::Registry* registry = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    registry = new pixflow::host::Registry();
    registry->load_all(pixflow::host::Registry::search_path({}));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string all(reinterpret_cast<const char*>(data), size);
    std::string text = all;
    std::vector<std::string> sets;
    if (std::size_t cut = all.find("\n%%\n"); cut != std::string::npos) {
        text = all.substr(0, cut + 1);
        std::size_t pos = cut + 4;
        while (pos < all.size()) {
            std::size_t end = all.find('\n', pos);
            if (end == std::string::npos) end = all.size();
            sets.push_back(all.substr(pos, end - pos));
            pos = end + 1;
        }
    }
    try {
        auto spec = pixflow::host::parse_pipeline_text(text, "fuzz.toml", sets);
        auto graph = pixflow::host::build_graph(spec, *registry);
        (void)graph;
    } catch (const pixflow::host::UserError& e) {
        if (e.diagnostics().empty()) std::abort(); // an error must say what is wrong
    }
    return 0;
}
