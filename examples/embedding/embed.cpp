// A program that runs a pixflow pipeline on an image it holds in memory, twice, and checks the
// results. Built out of tree against an installed pixflow (see CMakeLists.txt next to it).
#include <pixflow/pixflow.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>

// The pipeline: the caller's image, blurred, then halved by 2x2 max pooling.
const char* const kPipeline = R"(
[nodes.src]
op = "memory"             # the image this program binds with input("src", ...)

[nodes.blur]
op = "gauss5x5"
input = "src"
border = "replicate"

[nodes.small]
op = "maxpool2x2"
input = "blur"
)";

int main() {
    try {
        pixflow::Engine engine; // the installed plugins; $PIXFLOW_PLUGIN_PATH is searched first
        pixflow::Pipeline pipeline = engine.load_string(kPipeline, "embed.toml");

        pixflow::Image frame(640, 480, 3, pixflow::DType::u8); // our image, in our memory
        pixflow::Image small(320, 240, 3, pixflow::DType::u8); // where the result goes
        pipeline.input("src", frame.view()).output("small", small.view());

        // A flat image stays flat under a blur and a max pool: every sample keeps its value.
        for (std::uint8_t level : {200, 37}) {
            for (int y = 0; y < frame.height(); ++y)
                for (int x = 0; x < frame.width(); ++x)
                    for (int c = 0; c < 3; ++c) frame.at<std::uint8_t>(x, y, c) = level;
            pixflow::RunReport report = pipeline.run(); // compiles on the first run only
            for (int y = 0; y < small.height(); ++y)
                for (int x = 0; x < small.width(); ++x)
                    for (int c = 0; c < 3; ++c)
                        if (small.at<std::uint8_t>(x, y, c) != level) {
                            std::fprintf(stderr, "sample (%d, %d, %d) is %d, expected %d\n", x, y, c,
                                         small.at<std::uint8_t>(x, y, c), level);
                            return 1;
                        }
            std::printf("%s", report.table().c_str());
        }
        std::printf("ok: %dx%d -> %dx%d, twice\n", frame.width(), frame.height(), small.width(), small.height());
        return 0;
    } catch (const pixflow::UserError& e) { // a mistake in the pipeline or the images
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "failure: %s\n", e.what());
        return 2;
    }
}
