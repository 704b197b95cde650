#pragma once
// BF16_PACKED's groups decoded to BF16 words in 512-bit registers (stormo/packed_bf16_layout.hpp),
// shared by the float road's tiles (packed_bf16.cpp) and the BF16 pairs of the integer road
// (isa_avx512_bf16/bf16_pairs.cpp): one byte shuffle of a group's 64 codes through the row's table
// (copied into the four 128-bit lanes), then two byte unpacks with its 64 low bytes. AVX512BW only
// (no VBMI): the 16-entry table fits a lane. Unnamed namespace, as every ISA helper.
#include "avx512_intrinsics.hpp"

#include <cstddef>
#include <cstdint>

#include "stormo/packed_bf16_layout.hpp"

namespace stormo::simd::avx512 {
namespace {

// The codes' byte shuffle table of a row, in all four lanes. The masked forms here and below:
// GCC 12's plain ones start from an "undefined" register it warns about.
inline __m512i row_table(const uint8_t* row, size_t cols) {
    return _mm512_maskz_broadcast_i32x4(
        0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + packed_bf16::table_offset(cols))));
}

// The 32 code bytes of a group in both halves, shifted by 0 (slots 0-31: low nibbles) and 4
// (slots 32-63: high nibbles), masked: the 64 slots' codes in order.
inline __m512i group_codes(const uint8_t* codes) {
    const __m512i shift = _mm512_set_epi64(0x0004000400040004LL, 0x0004000400040004LL, 0x0004000400040004LL,
                                           0x0004000400040004LL, 0, 0, 0, 0);
    const __m512i both = _mm512_maskz_broadcast_i64x4(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
    return _mm512_and_si512(_mm512_srlv_epi16(both, shift), _mm512_set1_epi8(0x0F));
}

// BF16 words of group g in slot order: slots 16l + 0-7 of each lane l in lo, 16l + 8-15 in hi.
inline void group_words(const uint8_t* row, size_t cols, __m512i table, size_t g, __m512i& lo, __m512i& hi) {
    const __m512i high = _mm512_shuffle_epi8(table, group_codes(row + packed_bf16::codes_offset(cols) + g * 32));
    const __m512i low = _mm512_loadu_si512(row + g * packed_bf16::kGroup);
    lo = _mm512_unpacklo_epi8(low, high);
    hi = _mm512_unpackhi_epi8(low, high);
}

// Asks for the next tile's rows (O rows on from each of `row`), group g's 96 bytes of each, in
// L2, as dense_tile asks for its next rows.
template <int O>
[[gnu::always_inline]] inline void prefetch_next_rows(const uint8_t* const (&row)[O], size_t row_bytes, size_t g) {
#pragma GCC unroll 8
    for (int k = 0; k < O; ++k) {
        _mm_prefetch(reinterpret_cast<const char*>(row[k] + O * row_bytes + g * 96), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(row[k] + O * row_bytes + g * 96 + 64), _MM_HINT_T1);
    }
}

// The group decoder decode_packed_bf16_row runs for a patched tile's rows. In lo, lane l holds
// values 4l + 0-3 and 16 + 4l + 0-3 (in hi the same plus 32) as 64-bit quarters: gathering the
// even quarters, then the odd ones, puts the values in order.
inline void decode_groups(const uint8_t* row, size_t groups, uint16_t* out) {
    const size_t cols = groups * packed_bf16::kGroup;
    const __m512i table = row_table(row, cols);
    const __m512i in_order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    for (size_t g = 0; g < groups; ++g) {
        __m512i lo, hi;
        group_words(row, cols, table, g, lo, hi);
        _mm512_storeu_si512(out + g * packed_bf16::kGroup, _mm512_permutexvar_epi64(in_order, lo));
        _mm512_storeu_si512(out + g * packed_bf16::kGroup + 32, _mm512_permutexvar_epi64(in_order, hi));
    }
}

}  // namespace
}  // namespace stormo::simd::avx512
