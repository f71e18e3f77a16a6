// tables.hpp: the JPEG quantisation tables, as libjpeg makes them.
//
// The base tables are those of ITU-T T.81 Annex K (K.1 luminance, K.2 chrominance), in natural
// (row-major) order: entry v * 8 + u divides coefficient F[v][u], v the vertical and u the
// horizontal frequency. They are scaled as libjpeg's jpeg_set_quality does:
//
//   scale = quality < 50 ? 5000 / quality : 200 - 2 * quality      (jpeg_quality_scaling)
//   entry = clamp((base * scale + 50) / 100, 1, 32767)             (jpeg_add_quant_table,
//   entry = min(entry, 255) with baseline = true                     integer arithmetic)
#pragma once

#include <array>
#include <cstdint>

namespace pixflow::jpeg {

enum class Table : int { luma = 0, chroma = 1 };
/// The tables' names, in the enum's order: the choices of the operators' `table` parameter.
constexpr std::array<const char*, 2> pixflow_choices(Table) { return {"luma", "chroma"}; }

/// One quantisation table, natural order, as floats (every entry is an integer in 1..32767),
/// with the correctly rounded reciprocals the kernels divide with (jpeg_math.hpp, div_by).
struct QuantTable {
    float q[64];
    float r[64]; ///< r[i] = RN(1 / q[i])
};

/// The Annex K base table.
const std::array<int, 64>& base_table(Table t);

/// libjpeg's jpeg_quality_scaling: quality (clamped to 1..100) to a percentage scale factor.
int quality_scaling(int quality);

/// The table jpeg_set_quality(quality, force_baseline = baseline) installs. quality in 1..100.
QuantTable quant_table(int quality, Table t, bool baseline);

} // namespace pixflow::jpeg
