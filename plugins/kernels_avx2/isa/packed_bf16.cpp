// BF16_PACKED on AVX2 (stormo/packed_bf16_layout.hpp), decoded inside the tile, a group of 64
// values in its two halves of 32 slots: per half, the code bytes' low or high nibbles (the codes of
// slots 0-31 or 32-63), a byte shuffle looks each code up in the row's 16-byte table (copied into
// both 128-bit lanes), two byte unpacks of the low bytes with those high bytes give BF16 words,
// and four word unpacks of those under zeros give floats: half h's k-th is values 16k + 8h + 0-7,
// in order (the layout's slot order is chosen so that these in-lane unpacks are the widening).
//
// The tile adds exactly what this plugin's BF16 tile adds, in its order: per 16 values, the
// products of the first 8 into accumulator a and of the next 8 into b; over the last group, its
// 16-steps, one 8-step into a and a masked step into b. So every (output, row) value has the
// BF16 kernel's bits. A tile holding a row with patches (rare) decodes its rows through the
// SDK's row decoder (decode_packed_bf16_row) into BF16 and runs the BF16 kernel over them.
#include <immintrin.h>

#include "float_kernels.hpp"
#include "out_in_tiles.hpp"  // drive
#include "scratch.hpp"
#include "simd.hpp"  // prefetch_l2, first_lanes, hsum
#include "stormo/packed_bf16_layout.hpp"

namespace stormo::simd {
namespace {

constexpr size_t kGroup = packed_bf16::kGroup;

inline __m256i row_table(const uint8_t* row, size_t cols) {
    return _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + packed_bf16::table_offset(cols))));
}

// BF16 words of group g in slot order: words[2h] holds half h's slots 0-7 and 16-23 (its lanes'
// first eight), words[2h + 1] its slots 8-15 and 24-31.
inline void group_words(const uint8_t* row, size_t cols, __m256i table, size_t g, __m256i words[4]) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i c =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + packed_bf16::codes_offset(cols) + g * 32));
    const __m256i high_a = _mm256_shuffle_epi8(table, _mm256_and_si256(c, nibble));
    const __m256i high_b = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(c, 4), nibble));
    const __m256i low_a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + g * kGroup));
    const __m256i low_b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + g * kGroup + 32));
    words[0] = _mm256_unpacklo_epi8(low_a, high_a);
    words[1] = _mm256_unpackhi_epi8(low_a, high_a);
    words[2] = _mm256_unpacklo_epi8(low_b, high_b);
    words[3] = _mm256_unpackhi_epi8(low_b, high_b);
}

// Group g of a row as eight vectors of 8 floats (values 0-7, 8-15, ..., 56-63): each word
// unpacked under a zero word is the high half of a dword, the float the BF16 value widens to.
inline void group_floats(const uint8_t* row, size_t cols, __m256i table, size_t g, __m256 v[8]) {
    __m256i words[4];
    group_words(row, cols, table, g, words);
    const __m256i zero = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        v[h] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, words[2 * h]));
        v[2 + h] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, words[2 * h]));
        v[4 + h] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, words[2 * h + 1]));
        v[6 + h] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, words[2 * h + 1]));
    }
}

// The group decoder decode_packed_bf16_row runs for a patched tile's rows. words[2h] holds, as
// 64-bit quarters, values 8h + 0-3, 16 + 8h + 0-3, 8h + 4-7, 16 + 8h + 4-7 (words[2h + 1] the same
// plus 32): quarters 0, 2, 1, 3 are two runs of 8 values in order.
void decode_groups(const uint8_t* row, size_t groups, uint16_t* out) {
    const size_t cols = groups * kGroup;
    const __m256i table = row_table(row, cols);
    for (size_t g = 0; g < groups; ++g) {
        __m256i words[4];
        group_words(row, cols, table, g, words);
        uint16_t* o = out + g * kGroup;
        for (int h = 0; h < 2; ++h)
            for (int q = 0; q < 2; ++q) {
                const __m256i runs = _mm256_permute4x64_epi64(words[2 * h + q], 0xD8);  // quarters 0, 2, 1, 3
                _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 32 * q + 8 * h), _mm256_castsi256_si128(runs));
                _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 32 * q + 16 + 8 * h),
                                 _mm256_extracti128_si256(runs, 1));
            }
    }
}

// A tile whose rows hold patches: the rows decoded into BF16, then the BF16 kernel over them.
template <int O, int R>
void patched_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t cols = w.cols, padded = packed_bf16::groups(cols) * kGroup;
    Scratch<uint16_t> rows;  // not std::vector: see scratch.hpp
    rows.resize(O * cols + padded);
    for (int k = 0; k < O; ++k) decode_packed_bf16_row(decode_groups, w, o + k, rows.data() + k * cols);
    WeightView decoded = w;
    decoded.format = WeightFormat::BF16;
    decoded.data = rows.data();
    decoded.rows = O;
    matmul_bf16_out_in(decoded, x, R, xs, y + o, ys, 0, O);
}

// The first `left` of a group's 64 decoded values v (left <= 64) times x into a and b, in the
// BF16 tile's steps: whole 16s (8 into a, 8 into b), one 8 into a, then a masked part into b. A
// full group is four 16s.
[[gnu::always_inline]] inline void add_group(const __m256 (&v)[8], const float* x, size_t left, __m256& a,
                                             __m256& b) {
    size_t j = 0;
    for (; left >= 16; left -= 16, j += 2) {
        a = _mm256_fmadd_ps(v[j], _mm256_loadu_ps(x + 8 * j), a);
        b = _mm256_fmadd_ps(v[j + 1], _mm256_loadu_ps(x + 8 * j + 8), b);
    }
    if (left >= 8) {
        a = _mm256_fmadd_ps(v[j], _mm256_loadu_ps(x + 8 * j), a);
        left -= 8;
        ++j;
    }
    if (left > 0) {
        // The lanes past cols hold padding: +0 there, as the BF16 tile's partial load.
        const __m256i mask = first_lanes(left);
        const __m256 part = _mm256_and_ps(v[j], _mm256_castsi256_ps(mask));
        b = _mm256_fmadd_ps(part, _mm256_maskload_ps(x + 8 * j, mask), b);
    }
}

template <int O, int R>
void packed_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    if (w.patch_begin[o + O] != w.patch_begin[o]) {
        patched_tile<O, R>(w, o, x, xs, y, ys);
        return;
    }
    const size_t cols = w.cols, full = cols / kGroup, row_bytes = packed_bf16::row_bytes(cols);
    const uint8_t* base = static_cast<const uint8_t*>(w.data);
    const uint8_t* row[O];
    __m256i table[O];
    __m256 a[O][R];
    __m256 b[O][R];
    for (int k = 0; k < O; ++k) {
        row[k] = base + (o + k) * row_bytes;
        table[k] = row_table(row[k], cols);
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm256_setzero_ps();
    }
    for (size_t g = 0; g < full; ++g) {
        // The next tile's rows, 96 bytes a group, as the BF16 tile asks for its next rows.
        for (int k = 0; k < O; ++k) {
            prefetch_l2(row[k], O * row_bytes + g * 96);
            prefetch_l2(row[k], O * row_bytes + g * 96 + 64);
        }
        for (int k = 0; k < O; ++k) {
            __m256 v[8];
            group_floats(row[k], cols, table[k], g, v);
            for (int r = 0; r < R; ++r) add_group(v, x + r * xs + g * kGroup, kGroup, a[k][r], b[k][r]);
        }
    }
    if (const size_t rest = cols - full * kGroup; rest > 0) {
        for (int k = 0; k < O; ++k) {
            __m256 v[8];
            group_floats(row[k], cols, table[k], full, v);
            for (int r = 0; r < R; ++r) add_group(v, x + r * xs + full * kGroup, rest, a[k][r], b[k][r]);
        }
    }
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum(_mm256_add_ps(a[k][r], b[k][r]));
}

struct PackedKernel {
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        packed_tile<O, R>(w, o, x, xs, y, ys);
    }
};

}  // namespace

void matmul_bf16_packed_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    drive<PackedKernel>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd
