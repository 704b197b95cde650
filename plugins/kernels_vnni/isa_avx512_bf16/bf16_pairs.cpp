// The integer road's BF16 activations (bf16_pair_kernels.hpp) on vdpbf16ps: a step takes 32 BF16
// weights of an output and the 32 BF16 activations of a row at the same positions, and adds to
// each of 16 float lanes the products of one pair of them (each add rounded, in the order the
// instruction takes them; subnormal inputs read as zeros and subnormal results flushed, whatever
// MXCSR says).
// The float road's FMA multiplies 16 values an instruction, so a tile of several rows (decode of
// several sequences, a verify, a prompt) does half as many multiply instructions; one row is bound
// by reading the weights either way.
//
// The activations are rounded once per call (vcvtne2ps2bf16, which rounds as the reference's
// bf16_activations::round_bits) into BF16 words laid out as the weights' words come: in order for BF16, and for
// BF16_PACKED in each group's slot order, as packed_bf16_words512.hpp's unpacks give the weights
// (no widening at all: the words go to vdpbf16ps as they are). A packed tile holding a row with
// patches decodes its rows through the SDK's row decoder and puts each group's words back in slot
// order with two permutes, so its rows take exactly the steps of unpatched ones.
#include "avx512_intrinsics.hpp"

#include "bf16_pair_kernels.hpp"
#include "isa_avx512_float/packed_bf16_words512.hpp"
#include "isa_avx512_float/simd512.hpp"  // hsum16
#include "scratch.hpp"
#include "simd.hpp"  // prefetch_l2
#include "stormo/packed_bf16_layout.hpp"

namespace stormo::simd::avx512 {
namespace {

constexpr size_t kStep = 32;                     // values a vdpbf16ps takes per lane pair
constexpr size_t kGroup = packed_bf16::kGroup;  // two steps
constexpr size_t kOutputChunk = 32;              // outputs whose weights stay in L2 while every row reads them

[[gnu::always_inline]] inline __m512 pairs(__m512 acc, __m512i w, __m512i x) {
    return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)x);
}

// The rows of x as BF16 words, `stride` words a row, zeros past cols.
struct Rows16 {
    Scratch<uint16_t> words;
    size_t stride = 0;
    const uint16_t* row(size_t r) const { return words.data() + r * stride; }
};

// 32 values from p (zeros past `left`) as BF16 words in order. vcvtne2ps2bf16 rounds as
// bf16_activations::round_bits defines it (to nearest even, a subnormal input read as zero, NaN
// quieted); Bf16PairsRoundAsTheReference checks the kernels' products against round_bits.
[[gnu::always_inline]] inline __m512i round32(const float* p, size_t left) {
    const __mmask16 m0 = left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const size_t rest = left > 16 ? left - 16 : 0;
    const __mmask16 m1 = rest >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << rest) - 1u);
    const __m512 lo = _mm512_maskz_loadu_ps(m0, p), hi = _mm512_maskz_loadu_ps(m1, p + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

void prepare_in_order(const float* x, size_t n_x, size_t xs, size_t cols, Rows16& p) {
    p.stride = (cols + kStep - 1) / kStep * kStep;
    p.words.resize(n_x * p.stride);
    for (size_t r = 0; r < n_x; ++r)
        for (size_t i = 0; i < p.stride; i += kStep)
            _mm512_storeu_si512(p.words.data() + r * p.stride + i, round32(x + r * xs + i, cols - i));
}

// Word k of a group's lo half is slot 16 (k / 8) + k % 8, of its hi half that slot + 8.
constexpr size_t lo_slot(size_t k) { return 16 * (k / 8) + k % 8; }

// A group's words in slot order from its 64 words in order (a group of x, or a patched row
// decoded): lo and hi as packed_bf16_words512.hpp's unpacks give a packed group's words.
[[gnu::always_inline]] inline void words_in_slots(__m512i first, __m512i second, __m512i& lo, __m512i& hi) {
    alignas(64) static constexpr uint16_t kLo[32] = {
#define STORMO_SLOT(k) static_cast<uint16_t>(packed_bf16::slot_of(lo_slot(k)))
        STORMO_SLOT(0),  STORMO_SLOT(1),  STORMO_SLOT(2),  STORMO_SLOT(3),  STORMO_SLOT(4),  STORMO_SLOT(5),
        STORMO_SLOT(6),  STORMO_SLOT(7),  STORMO_SLOT(8),  STORMO_SLOT(9),  STORMO_SLOT(10), STORMO_SLOT(11),
        STORMO_SLOT(12), STORMO_SLOT(13), STORMO_SLOT(14), STORMO_SLOT(15), STORMO_SLOT(16), STORMO_SLOT(17),
        STORMO_SLOT(18), STORMO_SLOT(19), STORMO_SLOT(20), STORMO_SLOT(21), STORMO_SLOT(22), STORMO_SLOT(23),
        STORMO_SLOT(24), STORMO_SLOT(25), STORMO_SLOT(26), STORMO_SLOT(27), STORMO_SLOT(28), STORMO_SLOT(29),
        STORMO_SLOT(30), STORMO_SLOT(31)};
#undef STORMO_SLOT
    const __m512i lo_index = _mm512_load_si512(kLo);
    // The hi slot of a lo slot holds the value 32 further on (slot bit 3 is value bit 5).
    lo = _mm512_permutex2var_epi16(first, lo_index, second);
    hi = _mm512_permutex2var_epi16(first, _mm512_add_epi16(lo_index, _mm512_set1_epi16(32)), second);
}

void prepare_in_slots(const float* x, size_t n_x, size_t xs, size_t cols, Rows16& p) {
    const size_t groups = packed_bf16::groups(cols);
    p.stride = groups * kGroup;
    p.words.resize(n_x * p.stride);
    for (size_t r = 0; r < n_x; ++r)
        for (size_t g = 0; g < groups; ++g) {
            const size_t i = g * kGroup;
            const float* v = x + r * xs + i;
            __m512i lo, hi;
            words_in_slots(round32(v, cols - i), round32(v + kStep, cols > i + kStep ? cols - i - kStep : 0), lo, hi);
            uint16_t* out = p.words.data() + r * p.stride + i;
            _mm512_storeu_si512(out, lo);
            _mm512_storeu_si512(out + kStep, hi);
        }
}

// ---- BF16 ----------------------------------------------------------------------------------

// Outputs o..o+O-1 for R rows from row0: step s into accumulator s % 2.
template <int O, int R>
void plain_tile(const WeightView& w, size_t o, const Rows16& x, size_t row0, float* y, size_t ys) {
    const size_t cols = w.cols, steps = (cols + kStep - 1) / kStep, full = cols / kStep;
    const uint16_t* row[O];
    __m512 acc[2][O][R];
#pragma GCC unroll 8
    for (int k = 0; k < O; ++k) {
        row[k] = static_cast<const uint16_t*>(w.data) + (o + k) * cols;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[0][k][r] = acc[1][k][r] = _mm512_setzero_ps();
    }
    auto step = [&](size_t s, int a) [[gnu::always_inline]] {
        const __mmask32 m = s < full ? ~__mmask32{0} : static_cast<__mmask32>((1ull << (cols - s * kStep)) - 1);
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            prefetch_l2(row[k], (O * cols + s * kStep) * 2);
            const __m512i wv = _mm512_maskz_loadu_epi16(m, row[k] + s * kStep);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                acc[a][k][r] = pairs(acc[a][k][r], wv, _mm512_loadu_si512(x.row(row0 + r) + s * kStep));
        }
    };
    size_t s = 0;
    for (; s + 2 <= steps; s += 2) {
        step(s, 0);
        step(s + 1, 1);
    }
    if (s < steps) step(s, 0);
#pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            y[static_cast<size_t>(r) * ys + o + k] = hsum16(_mm512_add_ps(acc[0][k][r], acc[1][k][r]));
}

// ---- BF16_PACKED ---------------------------------------------------------------------------

// Outputs o..o+O-1 for R rows: group g's lo half into accumulator 0, its hi half into 1.
template <int O, int R, bool Patched>
void packed_tile(const WeightView& w, size_t o, const Rows16& x, size_t row0, float* y, size_t ys) {
    const size_t cols = w.cols, groups = packed_bf16::groups(cols), row_bytes = packed_bf16::row_bytes(cols);
    const uint8_t* base = static_cast<const uint8_t*>(w.data);
    const uint8_t* row[O];
    __m512i table[O];
    __m512 acc[2][O][R];
    Scratch<uint16_t> decoded;  // a patched tile's rows, in order
    if constexpr (Patched) {
        decoded.resize(O * groups * kGroup);
        for (int k = 0; k < O; ++k)
            decode_packed_bf16_row(decode_groups, w, o + k, decoded.data() + static_cast<size_t>(k) * groups * kGroup);
    }
#pragma GCC unroll 8
    for (int k = 0; k < O; ++k) {
        row[k] = base + (o + k) * row_bytes;
        table[k] = row_table(row[k], cols);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[0][k][r] = acc[1][k][r] = _mm512_setzero_ps();
    }
    for (size_t g = 0; g < groups; ++g) {
        prefetch_next_rows<O>(row, row_bytes, g);
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            __m512i lo, hi;
            if constexpr (Patched) {
                const uint16_t* values = decoded.data() + (static_cast<size_t>(k) * groups + g) * kGroup;
                words_in_slots(_mm512_loadu_si512(values), _mm512_loadu_si512(values + kStep), lo, hi);
            }
            else group_words(row[k], cols, table[k], g, lo, hi);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint16_t* xv = x.row(row0 + r) + g * kGroup;
                acc[0][k][r] = pairs(acc[0][k][r], lo, _mm512_loadu_si512(xv));
                acc[1][k][r] = pairs(acc[1][k][r], hi, _mm512_loadu_si512(xv + kStep));
            }
        }
    }
#pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            y[static_cast<size_t>(r) * ys + o + k] = hsum16(_mm512_add_ps(acc[0][k][r], acc[1][k][r]));
}

template <int O, int R>
void packed_tile(const WeightView& w, size_t o, const Rows16& x, size_t row0, float* y, size_t ys) {
    if (w.patch_begin != nullptr && w.patch_begin[o + O] != w.patch_begin[o]) packed_tile<O, R, true>(w, o, x, row0, y, ys);
    else packed_tile<O, R, false>(w, o, x, row0, y, ys);
}

struct Plain {
    static void prepare(const float* x, size_t n_x, size_t xs, size_t cols, Rows16& p) { prepare_in_order(x, n_x, xs, cols, p); }
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const Rows16& x, size_t row0, float* y, size_t ys) {
        plain_tile<O, R>(w, o, x, row0, y, ys);
    }
};
struct Packed {
    static void prepare(const float* x, size_t n_x, size_t xs, size_t cols, Rows16& p) { prepare_in_slots(x, n_x, xs, cols, p); }
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const Rows16& x, size_t row0, float* y, size_t ys) {
        packed_tile<O, R>(w, o, x, row0, y, ys);
    }
};

// Outputs [c0, c1) for R rows from row0: tiles of 8 outputs for a lone row (more weight streams in
// flight: as fast as the float road from RAM, where 4 were 10% slower), 4 for a pair, 2 for a quad
// (16 accumulators each), then single outputs.
template <class K, int R>
void outputs(const WeightView& w, const Rows16& x, size_t row0, float* y, size_t ys, size_t c0, size_t c1) {
    constexpr int kWide = R == 1 ? 8 : R == 2 ? 4 : 2;
    size_t o = c0;
    for (; o + kWide <= c1; o += kWide) K::template tile<kWide, R>(w, o, x, row0, y, ys);
    for (; o < c1; ++o) K::template tile<1, R>(w, o, x, row0, y, ys);
}

// Chunks of outputs outermost (their weights stay in L2 while every row reads them), then rows in
// quads (a weight decode serves four rows: a tile of one or two rows is bound by the decodes, not
// by its products), a pair, a lone last row.
template <class K>
void drive(const WeightView& w, const Rows16& x, size_t n_x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    for (size_t c0 = o_begin; c0 < o_end; c0 += kOutputChunk) {
        const size_t c1 = c0 + kOutputChunk < o_end ? c0 + kOutputChunk : o_end;
        size_t r = 0;
        for (; r + 4 <= n_x; r += 4) outputs<K, 4>(w, x, r, y + r * ys, ys, c0, c1);
        for (; r + 2 <= n_x; r += 2) outputs<K, 2>(w, x, r, y + r * ys, ys, c0, c1);
        if (r < n_x) outputs<K, 1>(w, x, r, y + r * ys, ys, c0, c1);
    }
}

// The rows rounded once per call, laid out as K's weights come, then the tiles.
template <class K>
void run(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    Rows16 words;
    K::prepare(x, n_x, xs, w.cols, words);
    drive<K>(w, words, n_x, y, ys, o_begin, o_end);
}

}  // namespace

void matmul_bf16_pairs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end) {
    run<Plain>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_bf16_packed_pairs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                                     size_t y_stride, size_t o_begin, size_t o_end) {
    run<Packed>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd::avx512
