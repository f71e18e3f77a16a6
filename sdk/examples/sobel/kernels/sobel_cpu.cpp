#include "sobel.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>

namespace sobel {

void sobel_cpu(const pixflow::ImageView& in, const pixflow::ImageView& out, float scale) {
    const int W = in.width, H = in.height, C = in.channels;
    tbb::parallel_for(tbb::blocked_range<int>(0, H), [&](const tbb::blocked_range<int>& rows) {
        for (int y = rows.begin(); y != rows.end(); ++y) {
            const std::uint8_t* r[3] = {in.row<std::uint8_t>(std::max(y - 1, 0)), in.row<std::uint8_t>(y),
                                        in.row<std::uint8_t>(std::min(y + 1, H - 1))};
            std::uint8_t* o = out.row<std::uint8_t>(y);
            for (int x = 0; x < W; ++x) {
                const int xs[3] = {std::max(x - 1, 0), x, std::min(x + 1, W - 1)};
                for (int c = 0; c < C; ++c) {
                    int p[9];
                    for (int j = 0; j < 3; ++j)
                        for (int i = 0; i < 3; ++i) p[j * 3 + i] = r[j][xs[i] * C + c];
                    o[x * C + c] = sobel_sample(p, scale);
                }
            }
        }
    });
}

} // namespace sobel
