#pragma once
// Tiles of 4 outputs in which every dword lane of a vpdpbusd accumulator sums one block of one
// output, so a block's sum needs no horizontal adds (quads512.hpp's output_tile spends two
// unpacks, two adds and a permute per 8 blocks, per output and per row, to fold four partial sums
// a block). The four outputs' decoded quads (W::quad: four blocks, one per 128-bit lane) are
// transposed once, dwords within 128-bit lanes, so lane (block b, output k) of the k-th vector
// holds output k's dword of block b; every row then runs 8 vpdpbusd, each against one in-lane
// shuffle of the row's prepared halves that spreads each block's matching dword over its 128-bit
// lane, starting from -kOffset * sum(q) so the lane ends on the exact block sum. The float work stays the
// reference's, lane for lane: term = float(isum) * (d * 2^(s-128)), lane b % 8 from +0 in
// ascending blocks (blocks 0-3 of a group of 8 in one accumulator, 4-7 in the other), then
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). So every (output, row) value has the bits of
// output_tile's, and both tile kinds can share a matrix (docs/kernels.md, "The 512-bit integer
// road").
//
// The decode and the transposition are paid once per tile and shared by its rows; a row costs
// 8 vpdpbusd, 8 shuffles and about 5 other operations per 16 (output, block) pairs against about
// 30 operations in output_tile. (Prepared step vectors, one per vpdpbusd, saved the shuffles but
// made a row 640 bytes a quad instead of 256, and 4 rows no longer fit L1 beside the weights:
// 1.6x slower than output_tile.)
#include "quads512.hpp"

namespace stormo::simd {
namespace avx512 {
namespace {
namespace q8w {

// Per row and quad: the activations as quads512.hpp's Prepared holds them ([low halves of blocks
// A-D | high halves], 128 bytes), then -kOffset * sum(q) (int32) and the row's block scale
// (float), each repeated over the block's 128-bit lane. Zeros past the last block. A step's
// vector (each block's dword k over its lane) is one in-lane shuffle of the halves. Not
// quads512.hpp's Prepared itself: its per-block sums and scales would need a permute each per
// row and quad on the hot path to reach their lanes, and a row's four vectors here are one
// 256-byte run.
struct LanePrepared {
    static constexpr size_t kQuadBytes = 256;
    static constexpr size_t kBias = 128;
    static constexpr size_t kScale = 192;
    Scratch<int8_t> bytes;
    size_t quads = 0;

    const int8_t* quad(size_t r, size_t q) const { return bytes.data() + (r * quads + q) * kQuadBytes; }
};

inline size_t lane_rows_per_pass(size_t blocks, size_t n_x) {
    return q8::rows_fitting_a_pass((blocks + 3) / 4 * LanePrepared::kQuadBytes, n_x);
}

template <class W>
void prepare_lanes(const Q8Rows& x, size_t r_begin, size_t r_end, LanePrepared& p) {
    const size_t nb = x.blocks;
    p.quads = (nb + 3) / 4;
    p.bytes.assign((r_end - r_begin) * p.quads * LanePrepared::kQuadBytes, 0);
    for (size_t r = r_begin; r < r_end; ++r) {
        const int8_t* q = x.q + r * nb * kQ8Block;
        for (size_t b = 0; b < nb; ++b) {
            int8_t* out = p.bytes.data() + ((r - r_begin) * p.quads + b / 4) * LanePrepared::kQuadBytes + (b % 4) * 16;
            __m128i low, high;
            W::split(q + b * kQ8Block, low, high);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out), low);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 64), high);
            int32_t sum = 0;
            for (size_t i = 0; i < kQ8Block; ++i) sum += q[b * kQ8Block + i];
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + LanePrepared::kBias), _mm_set1_epi32(-W::kOffset * sum));
            _mm_storeu_ps(reinterpret_cast<float*>(out + LanePrepared::kScale), _mm_set1_ps(x.scales[r * nb + b]));
        }
    }
}

// Dwords transposed within each 128-bit lane: v[k] lane (b, j) becomes v[j] lane (b, k).
[[gnu::always_inline]] inline void transpose_dwords(__m512i (&v)[4]) {
    const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]);
    const __m512i t1 = _mm512_unpackhi_epi32(v[0], v[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]);
    const __m512i t3 = _mm512_unpackhi_epi32(v[2], v[3]);
    v[0] = _mm512_unpacklo_epi64(t0, t2);
    v[1] = _mm512_unpackhi_epi64(t0, t2);
    v[2] = _mm512_unpacklo_epi64(t1, t3);
    v[3] = _mm512_unpackhi_epi64(t1, t3);
}

// [a | b] (AVX512F has no 256-bit float insert; the double one moves the same bits).
[[gnu::always_inline]] inline __m512 join(__m256 a, __m256 b) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(a)), _mm256_castps_pd(b), 1));
}

// Outputs o..o+3 for R prepared rows from `row0`, into y[r * ys + k].
template <class W, int R, bool Plain>
void lane_tile(const W& w, size_t nb, size_t o, const LanePrepared& p, size_t row0, float* y, size_t ys) {
    __m512 acc[2][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm512_setzero_ps();
    // The 4 outputs' 8 weight scales as [out 0 | out 1] and [out 2 | out 3] to lane (b, k) of
    // blocks 4h .. 4h + 3: element 4b + k is output k's scale of block 4h + b.
    const __m512i pick[2] = {
        _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27),
        _mm512_setr_epi32(4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31)};
    auto group = [&]<bool Full>(size_t b0, size_t n) [[gnu::always_inline]] {
        __m256 ws[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            w.prefetch(o + 4 + static_cast<size_t>(k), b0);
            ws[k] = w.template scales<Plain>(o + static_cast<size_t>(k), b0, Full ? 8 : n);
        }
        const __m512 wa = join(ws[0], ws[1]);
        const __m512 wb = join(ws[2], ws[3]);
        const int halves = Full || n > 4 ? 2 : 1;
#pragma GCC unroll 2
        for (int h = 0; h < halves; ++h) {
            const size_t bq = b0 + 4 * static_cast<size_t>(h);
            const size_t count = Full ? 4 : (n - 4 * static_cast<size_t>(h) < 4 ? n - 4 * static_cast<size_t>(h) : 4);
            __m512i low[4], high[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) w.quad(o + static_cast<size_t>(k), bq, count, low[k], high[k]);
            transpose_dwords(low);
            transpose_dwords(high);
            const __m512 wsz = _mm512_permutex2var_ps(wa, pick[h], wb);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const int8_t* v = p.quad(row0 + static_cast<size_t>(r), bq / 4);
                const __m512i xl = load64(v);
                const __m512i xh = load64(v + 64);
                // Two chains (low and high halves), so a lone row does not wait on 8 dependent steps.
                __m512i sl = load64(v + LanePrepared::kBias);
                __m512i sh = _mm512_dpbusd_epi32(_mm512_setzero_si512(), high[0], _mm512_shuffle_epi32(xh, _MM_PERM_AAAA));
                sl = _mm512_dpbusd_epi32(sl, low[0], _mm512_shuffle_epi32(xl, _MM_PERM_AAAA));
                sh = _mm512_dpbusd_epi32(sh, high[1], _mm512_shuffle_epi32(xh, _MM_PERM_BBBB));
                sl = _mm512_dpbusd_epi32(sl, low[1], _mm512_shuffle_epi32(xl, _MM_PERM_BBBB));
                sh = _mm512_dpbusd_epi32(sh, high[2], _mm512_shuffle_epi32(xh, _MM_PERM_CCCC));
                sl = _mm512_dpbusd_epi32(sl, low[2], _mm512_shuffle_epi32(xl, _MM_PERM_CCCC));
                sh = _mm512_dpbusd_epi32(sh, high[3], _mm512_shuffle_epi32(xh, _MM_PERM_DDDD));
                sl = _mm512_dpbusd_epi32(sl, low[3], _mm512_shuffle_epi32(xl, _MM_PERM_DDDD));
                const __m512i s = _mm512_add_epi32(sl, sh);
                const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(v + LanePrepared::kScale), wsz);
                acc[h][r] = _mm512_add_ps(acc[h][r], _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
            }
        }
    };
    size_t b0 = 0;
    for (; b0 + 8 <= nb; b0 += 8) group.template operator()<true>(b0, 8);
    if (b0 < nb) group.template operator()<false>(b0, nb - b0);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        // Lane (i, k): l_i + l_{i+4} of output k; then lanes 0 + 2 and 1 + 3; then their sum.
        const __m512 s = _mm512_add_ps(acc[0][r], acc[1][r]);
        const __m512 t = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, _MM_SHUFFLE(1, 0, 3, 2)));
        const __m128 out = _mm_add_ps(_mm512_castps512_ps128(t), _mm512_extractf32x4_ps(t, 1));
        _mm_storeu_ps(y + static_cast<size_t>(r) * ys, out);
    }
}

template <class W, int R>
void lane_tile(const W& w, size_t nb, size_t o, const LanePrepared& p, size_t row0, float* y, size_t ys) {
    if (w.plain(o, 4)) lane_tile<W, R, true>(w, nb, o, p, row0, y, ys);
    else lane_tile<W, R, false>(w, nb, o, p, row0, y, ys);
}

// Outputs [o_begin, o_end) of every row of x: 4 outputs a tile over groups of up to 4 rows, in
// passes that keep the prepared rows in L2; the last 1-3 outputs through quads512.hpp's tiles
// (the same bits).
template <class W>
void run_lanes(const W& w, size_t nb, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    const size_t o_lanes = o_begin + (o_end - o_begin) / 4 * 4;
    LanePrepared p;
    const size_t pass = lane_rows_per_pass(x.blocks, x.n_x);
    for (size_t r0 = 0; o_lanes > o_begin && r0 < x.n_x; r0 += pass) {
        const size_t r1 = r0 + pass < x.n_x ? r0 + pass : x.n_x;
        prepare_lanes<W>(x, r0, r1, p);
        for (size_t o = o_begin; o < o_lanes; o += 4) {
            row_tiles(r0, r1, [&]<int R>(size_t r) { lane_tile<W, R>(w, nb, o, p, r - r0, y + r * ys + o, ys); });
        }
    }
    if (o_lanes < o_end) run(w, nb, x, y, ys, o_lanes, o_end);
}

// The kernel for x's row count: one or two rows through quads512.hpp's output_tile (its tiles of
// 4 outputs x 1 row and 2 x 2 ran as fast or faster: the transposition is paid by too few rows),
// three and more through the lane tiles (docs/kernels.md, "Block lanes").
template <class W>
void run_by_rows(const W& w, size_t nb, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x >= 3) run_lanes(w, nb, x, y, ys, o_begin, o_end);
    else run(w, nb, x, y, ys, o_begin, o_end);
}

}  // namespace q8w
}  // namespace
}  // namespace avx512
}  // namespace stormo::simd
