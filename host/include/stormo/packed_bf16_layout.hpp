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
// Within a group, value j sits in slot slot_of(j), in the order two levels of 128-bit unpacks
// produce it in: byte unpacks (punpcklbw / punpckhbw) of the low bytes with the looked-up high
// bytes give BF16 words, and word unpacks of those under zeros (punpcklwd / punpckhwd) put each
// word in the high half of a dword, which is the value as a float. Slot 16l + 4k + e (lane l,
// e < 4) holds value 16k + 4l + e, so the k-th word unpack of a 512-bit group is values
// 16k..16k+15 in order, and of a 256-bit half h values 16k+8h..16k+8h+7. A slot s < 32 has its
// code in the low nibble of the group's code byte s, a slot s >= 32 in the high nibble of code
// byte s - 32, so one shift and one mask give the slots' codes in order.
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

// The slot of value j (0..63) of a group: j's bits 2-3 and 4-5 swapped.
static constexpr size_t slot_of(size_t j) { return (j & 0x03u) | (j & 0x0Cu) << 2 | (j & 0x30u) >> 2; }

// A patch: the value at `column` of its row has high byte `high`.
static constexpr uint32_t make_patch(size_t column, uint8_t high) { return static_cast<uint32_t>(column) << 8 | high; }
static constexpr size_t patch_column(uint32_t patch) { return patch >> 8; }
static constexpr uint8_t patch_high(uint32_t patch) { return static_cast<uint8_t>(patch & 0xFFu); }
// Columns a patch can name (24 bits).
constexpr size_t kMaxCols = size_t{1} << 24;

}  // namespace stormo::packed_bf16
