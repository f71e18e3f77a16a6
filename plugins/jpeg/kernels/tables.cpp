// tables.cpp: the Annex K tables and libjpeg's quality scaling (see tables.hpp).
#include "tables.hpp"

namespace pixflow::jpeg {

namespace {
// ITU-T T.81 Annex K, Table K.1 (luminance) and K.2 (chrominance), natural order.
constexpr std::array<int, 64> kLuma = {16, 11, 10, 16, 24,  40,  51,  61,  12, 12, 14, 19, 26,  58,  60,  55,
                                       14, 13, 16, 24, 40,  57,  69,  56,  14, 17, 22, 29, 51,  87,  80,  62,
                                       18, 22, 37, 56, 68,  109, 103, 77,  24, 35, 55, 64, 81,  104, 113, 92,
                                       49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99};
constexpr std::array<int, 64> kChroma = {17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
                                         24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
                                         99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
                                         99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};
} // namespace

const std::array<int, 64>& base_table(Table t) { return t == Table::luma ? kLuma : kChroma; }

int quality_scaling(int quality) {
    if (quality <= 0) quality = 1;
    if (quality > 100) quality = 100;
    return quality < 50 ? 5000 / quality : 200 - quality * 2;
}

QuantTable quant_table(int quality, Table t, bool baseline) {
    const long scale = quality_scaling(quality);
    const auto& base = base_table(t);
    QuantTable out{};
    for (int i = 0; i < 64; ++i) {
        long v = (long(base[std::size_t(i)]) * scale + 50L) / 100L;
        if (v <= 0L) v = 1L;
        if (v > 32767L) v = 32767L;
        if (baseline && v > 255L) v = 255L;
        out.q[i] = float(v);
        out.r[i] = 1.0f / out.q[i];
    }
    return out;
}

} // namespace pixflow::jpeg
