// BF16_PACKED on 512-bit registers (stormo/packed_bf16_layout.hpp), decoded inside the tile: a
// group of 64 values is its BF16 words in slot order (packed_bf16_words512.hpp: one byte shuffle,
// two byte unpacks), then four word unpacks of those under zeros, which give the floats of values 0-15, 16-31,
// 32-47 and 48-63 in order: the layout's slot order is chosen so that these in-lane unpacks are
// the whole widening. AVX512BW only (no VBMI): the 16-entry table fits a lane.
//
// The tile adds exactly what dense_tile<bf16> adds, in its order: per 64 values, the products of
// values 0-15 into accumulator a, 16-31 into b, 32-47 into a, 48-63 into b (two of its 32-steps),
// then its 32-, 16- and masked steps over the last group; so every (output, row) value has the
// BF16 kernel's bits. A tile holding a row with patches (rare) decodes its rows through the SDK's
// row decoder into BF16 and runs dense_tile itself over them.
#include "avx512_float_kernels.hpp"
#include "dense_tile512.hpp"  // dense_tile
#include "packed_bf16_words512.hpp"  // row_table, group_words, decode_groups, prefetch_next_rows
#include "scratch.hpp"
#include "simd.hpp"  // Dense, prefetch_l2
#include "simd512.hpp"
#include "stormo/packed_bf16_layout.hpp"
#include "tiles512.hpp"  // drive

namespace stormo::simd::avx512 {
namespace {

constexpr size_t kGroup = packed_bf16::kGroup;

// Group g of a row as four vectors of 16 floats (values 0-15, 16-31, 32-47, 48-63): each word
// unpacked under a zero word is the high half of a dword, the float the BF16 value widens to.
inline void group_floats(const uint8_t* row, size_t cols, __m512i table, size_t g, __m512 v[4]) {
    __m512i lo, hi;
    group_words(row, cols, table, g, lo, hi);
    const __m512i zero = _mm512_setzero_si512();
    v[0] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, lo));
    v[1] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, lo));
    v[2] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, hi));
    v[3] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, hi));
}

// A tile whose rows hold patches: the rows decoded into BF16, then the BF16 tile over them.
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
    dense_tile<Dense::bf16, O, R, false>(decoded, 0, x, xs, y + o, ys);
}

// The first `left` of a group's 64 decoded values v (left <= 64) times x into a and b, in
// dense_tile's steps: whole 32s (16 into a, 16 into b), one 16 into a, then a masked part into b.
// A full group is two 32s.
[[gnu::always_inline]] inline void add_group(const __m512 (&v)[4], const float* x, size_t left, __m512& a,
                                             __m512& b) {
    size_t j = 0;
    for (; left >= 32; left -= 32, j += 2) {
        a = _mm512_fmadd_ps(v[j], _mm512_loadu_ps(x + 16 * j), a);
        b = _mm512_fmadd_ps(v[j + 1], _mm512_loadu_ps(x + 16 * j + 16), b);
    }
    if (left >= 16) {
        a = _mm512_fmadd_ps(v[j], _mm512_loadu_ps(x + 16 * j), a);
        left -= 16;
        ++j;
    }
    if (left > 0) {
        const __mmask16 m = first16(left);
        b = _mm512_fmadd_ps(_mm512_maskz_mov_ps(m, v[j]), _mm512_maskz_loadu_ps(m, x + 16 * j), b);
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
    __m512i table[O];
    __m512 a[O][R];
    __m512 b[O][R];
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k) {
        row[k] = base + (o + k) * row_bytes;
        table[k] = row_table(row[k], cols);
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm512_setzero_ps();
    }
    for (size_t g = 0; g < full; ++g) {
        const size_t i = g * kGroup;
        prefetch_next_rows<O>(row, row_bytes, g);
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            __m512 v[4];
            group_floats(row[k], cols, table[k], g, v);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r) add_group(v, x + r * xs + i, kGroup, a[k][r], b[k][r]);
        }
    }
    if (const size_t rest = cols - full * kGroup; rest > 0) {
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            __m512 v[4];
            group_floats(row[k], cols, table[k], full, v);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r) add_group(v, x + r * xs + full * kGroup, rest, a[k][r], b[k][r]);
        }
    }
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum16(_mm512_add_ps(a[k][r], b[k][r]));
}

struct PackedKernel {
    static constexpr int kRowOutputs = 4;  // tiles512.hpp
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

}  // namespace stormo::simd::avx512
