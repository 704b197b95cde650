#pragma once
// The layout of WeightFormat::BF16_PACKED (free of std:: templates, so ISA files include it):
// a BF16 out_in matrix held losslessly in about 12 bits a value. A BF16
// value is a high byte (sign and the exponent's top seven bits) and a low byte (the exponent's last
// bit and the mantissa). Trained and random weights alike use few high bytes in a row (9-17 over
// rows of 64-2880 values), so each row keeps its 16 most frequent high bytes in a table and every
// value a 4-bit code into it beside its low byte; a value whose high byte is not in the table
// (rare: NaN, infinity, a far outlier or a tiny value) takes code 0 and a patch that restores it.
//
// A row of cols values is cut into groups of 64 (the last padded with zeros); with G = groups(cols),
// row o starts at data + o * row_bytes(cols) and holds
//   [G x 64 low bytes][G x 32 code bytes][16-byte table][zeros to a multiple of 16 bytes].
// Within a group, value j sits in slot slot_of(j), in the order 128-bit byte unpacks (punpcklbw /
// punpckhbw) of the low bytes with the looked-up high bytes produce it in: the slots a 128-bit lane
// holds at 0-7 come out as 8 consecutive values of the first half, those at 8-15 of the second. A
// slot s < 32 has its code in the low nibble of the group's code byte s, a slot s >= 32 in the high
// nibble of code byte s - 32, so one shift and one mask give the slots' codes in order.
#include <cstddef>
#include <cstdint>

namespace stormo::packed_bf16 {

// Internal linkage throughout (static functions, non-inline constants): ISA files include this,
// and an inline function's weak copy built with wide instructions could be the one the linker
// keeps for baseline code (tests/isa_weak_symbols.cmake).

constexpr size_t kGroup = 64;      // values per group
constexpr size_t kTable = 16;      // high bytes a row's codes name
// Rows start on 16 bytes: whole cache lines would cost the small rows of small models their gain
// (64 values: 112 bytes against BF16's 128) and save nothing measurable on long ones.
constexpr size_t kRowAlign = 16;

static constexpr size_t groups(size_t cols) { return (cols + kGroup - 1) / kGroup; }
static constexpr size_t codes_offset(size_t cols) { return groups(cols) * kGroup; }
static constexpr size_t table_offset(size_t cols) { return codes_offset(cols) + groups(cols) * (kGroup / 2); }
static constexpr size_t row_bytes(size_t cols) {
    return (table_offset(cols) + kTable + kRowAlign - 1) / kRowAlign * kRowAlign;
}

// The slot of value j (0..63) of a group.
static constexpr size_t slot_of(size_t j) {
    return j < 32 ? 16 * (j / 8) + j % 8 : 16 * ((j - 32) / 8) + 8 + (j - 32) % 8;
}

// A patch: the value at `column` of its row has high byte `high`.
static constexpr uint32_t make_patch(size_t column, uint8_t high) { return static_cast<uint32_t>(column) << 8 | high; }
static constexpr size_t patch_column(uint32_t patch) { return patch >> 8; }
static constexpr uint8_t patch_high(uint32_t patch) { return static_cast<uint8_t>(patch & 0xFFu); }
// Columns a patch can name (24 bits).
constexpr size_t kMaxCols = size_t{1} << 24;

}  // namespace stormo::packed_bf16
