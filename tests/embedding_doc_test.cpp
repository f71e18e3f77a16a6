// docs/embedding.md cannot drift from examples/embedding/, which CI builds out of tree: each line
// "<!-- file: PATH -->" of the page is followed by a fenced block that must be PATH's exact text,
// and every file of the example is shown.
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;

TEST(Docs, EmbeddingPageShowsTheExampleFilesVerbatim) {
    const fs::path src = pixflow::testing::source_dir();
    const std::string doc_name = "docs/embedding.md", example = "examples/embedding";
    auto slurp = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    std::vector<std::string> lines;
    std::istringstream doc(slurp(src / doc_name));
    for (std::string line; std::getline(doc, line);) lines.push_back(line);
    ASSERT_FALSE(lines.empty()) << "cannot read " << src / doc_name;

    const std::string open = "<!-- file: ", close = " -->", fence = "```";
    std::set<std::string> shown;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& marker = lines[i];
        if (marker.rfind(open, 0) != 0) continue;
        const std::string where = doc_name + ":" + std::to_string(i + 1);
        ASSERT_TRUE(marker.size() > open.size() + close.size() &&
                    marker.compare(marker.size() - close.size(), close.size(), close) == 0)
            << where << ": a marker reads <!-- file: PATH -->, got: " << marker;
        const std::string path = marker.substr(open.size(), marker.size() - open.size() - close.size());
        ASSERT_TRUE(i + 1 < lines.size() && lines[i + 1].rfind(fence, 0) == 0)
            << where << ": the marker for " << path << " must be followed by a ``` line";
        std::string shown_text;
        std::size_t j = i + 2;
        for (; j < lines.size() && lines[j] != fence; ++j) shown_text += lines[j] + "\n";
        ASSERT_LT(j, lines.size()) << where << ": the code block of " << path << " is not closed";
        ASSERT_TRUE(fs::is_regular_file(src / path)) << where << ": " << path << " does not exist";
        EXPECT_EQ(shown_text, slurp(src / path))
            << where << ": the block differs from " << path << "; paste the file's current text";
        shown.insert(path);
        i = j;
    }
    for (const auto& entry : fs::directory_iterator(src / example))
        if (entry.is_regular_file()) {
            const std::string path = example + "/" + entry.path().filename().string();
            EXPECT_TRUE(shown.count(path))
                << doc_name << " does not show " << path << " (add it after a line <!-- file: " << path << " -->)";
        }
}
