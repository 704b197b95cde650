// The integer road's MXFP4 x int8 matrix kernel on 512-bit vpdpbusd (AVX512-VNNI with BW and VL).
// The 256-bit loops of q8_mxfp4.hpp spend about 45 instructions per 8 blocks of a row in matrix x
// vector (two blocks per register: nibble split, lookups, dot steps, horizontal adds), which kept a
// core below the RAM stream. Here a register holds four blocks, one per 128-bit lane, which is
// where pshufb looks up and where a block's 16 weight bytes sit in memory: the weights need no
// shuffling at all, and the eight block sums of two registers come out in order through two
// unpacks, two adds and one permute.
//
// Bit-exact against reference::matmul_q8_mxfp4_out_in: the block sums are exact integers whatever
// the order, and the float work after them is q8_mxfp4.hpp's (add_terms, half_scales,
// reduce_lanes: eight block sums a vector, lane b % 8, padded lanes adding an exact +0), reused
// from that header. Weights biased by 12 as there (docs/kernels.md).
#include "avx512_intrinsics.hpp"

#include "int8_kernels.hpp"
#include "q8_mxfp4.hpp"

namespace stormo::simd {
// Named for the ISA: the build test (IsaKernelsBuild) finds AVX-512 code by namespace.
namespace avx512 {
namespace {
namespace q8w {

using q8::kBias;

// Rows of activations rearranged per group of four blocks (a quad) as the 16 even elements of
// each block, then the 16 odd ones: [eA eB eC eD | oA oB oC oD], 128 bytes, zeros past the last
// block. Per row and block, 12 * sum(q) and the scale, padded with zeros to a multiple of 8 blocks.
struct Prepared {
    Scratch<int8_t> bytes;
    Scratch<int32_t> bias;
    Scratch<float> scales;
    size_t quads = 0;
    size_t padded_blocks = 0;

    const int8_t* row(size_t r) const { return bytes.data() + r * quads * 128; }
};

[[gnu::always_inline]] inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// The 16 per-lane dword sums of two quads' dot results to the 8 block sums in order:
// p0 holds blocks 0-3 (lane k: 4 partial sums of block k), p1 blocks 4-7.
[[gnu::always_inline]] inline __m256i quad_sums(__m512i p0, __m512i p1) {
    // Lane k: [p0k0 + p0k2, p1k0 + p1k2, p0k1 + p0k3, p1k1 + p1k3].
    const __m512i m = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
    // Lane k: [block k, block 4 + k, block k, block 4 + k].
    const __m512i n = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, n));
}

// Dot steps of one quad: per lane, the sums of u * s over its even and odd bytes.
[[gnu::always_inline]] inline __m512i quad_dot(__m512i u_even, __m512i u_odd, const int8_t* x) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u_even, load64(x)), u_odd,
                               load64(x + 64));
}

void prepare(const Q8Rows& x, size_t r_begin, size_t r_end, Prepared& p) {
    const size_t nb = x.blocks;
    p.quads = (nb + 3) / 4;
    p.padded_blocks = (nb + 7) / 8 * 8;
    const size_t rows = r_end - r_begin;
    p.bytes.assign(rows * p.quads * 128, 0);
    p.bias.assign(rows * p.padded_blocks, 0);
    p.scales.assign(rows * p.padded_blocks, 0.0f);
    const __m512i ones = _mm512_set1_epi8(1);
    for (size_t r = r_begin; r < r_end; ++r) {
        const int8_t* q = x.q + r * nb * kQ8Block;
        int8_t* out = p.bytes.data() + (r - r_begin) * p.quads * 128;
        for (size_t b = 0; b < nb; ++b) {
            __m128i even, odd;
            q8::split_block(q + b * kQ8Block, even, odd);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (b / 4) * 128 + (b % 4) * 16), even);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (b / 4) * 128 + 64 + (b % 4) * 16), odd);
        }
        // 12 * sum(q) per block, through the same dot steps with u = 1 (padding quads are zeros).
        int32_t* bias = p.bias.data() + (r - r_begin) * p.padded_blocks;
        for (size_t b0 = 0; b0 < nb; b0 += 8) {
            const size_t quad = b0 / 4;
            const __m512i p0 = quad_dot(ones, ones, out + quad * 128);
            const __m512i p1 = quad + 1 < p.quads ? quad_dot(ones, ones, out + (quad + 1) * 128) : _mm512_setzero_si512();
            q8::store32(bias + b0, _mm256_mullo_epi32(quad_sums(p0, p1), _mm256_set1_epi32(kBias)));
        }
        __builtin_memcpy(p.scales.data() + (r - r_begin) * p.padded_blocks, x.scales + r * nb, nb * sizeof(float));
    }
}

// q8_mxfp4.hpp's table (twice each E2M1 value plus 12) in every 128-bit lane.
[[gnu::always_inline]] inline __m512i biased_lut512() {
    return _mm512_broadcast_i32x4(_mm256_castsi256_si128(q8::biased_lut()));
}

// Biased weights of `count` (1-4) consecutive blocks, one per lane, for the even and odd elements;
// missing blocks read nothing and decode as code 0 (their activations are zero).
[[gnu::always_inline]] inline void decode_quad(const uint8_t* blocks, size_t count, __m512i lut, __m512i& even,
                                               __m512i& odd) {
    const __m512i v = count == 4 ? load64(blocks)
                                 : _mm512_maskz_loadu_epi8((__mmask64{1} << (16 * count)) - 1, blocks);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    even = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, low4));
    odd = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
}

// Outputs o..o+O-1 (weights from `blocks`, scales from `scales`, nb blocks a row) for R prepared
// rows from `row0`, into y[r * ys + k]. Several outputs a tile give a lone row independent work
// to overlap; each (output, row) pair still sees exactly the operations of any other tile shape.
// While it runs it asks for the next tile's weights in L2 (see q8_mxfp4.hpp).
template <int O, int R, bool Plain>
void output_tile(const uint8_t* blocks, const uint8_t* scales, size_t nb, const Prepared& p, size_t row0, float* y,
                 size_t ys) {
    const __m512i lut = biased_lut512();
    const int8_t* xv[R];
    const int32_t* xb[R];
    const float* xs[R];
    __m256 acc[O][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const size_t row = row0 + static_cast<size_t>(r);
        xv[r] = p.row(row);
        xb[r] = p.bias.data() + row * p.padded_blocks;
        xs[r] = p.scales.data() + row * p.padded_blocks;
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) acc[k][r] = _mm256_setzero_ps();
    }
    const uint8_t* next_blocks = blocks + O * nb * 16;
    _mm_prefetch(reinterpret_cast<const char*>(scales + O * nb), _MM_HINT_T1);
    for (size_t b0 = 0; b0 < nb; b0 += 8) {
        const size_t n = nb - b0 < 8 ? nb - b0 : 8;
        const bool second = n > 4;
        __m512i e0[O], o0[O], e1[O], o1[O];
        __m256 ws[O];
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const uint8_t* kb = blocks + static_cast<size_t>(k) * nb * 16;
            const uint8_t* ks = scales + static_cast<size_t>(k) * nb;
            _mm_prefetch(reinterpret_cast<const char*>(next_blocks + (static_cast<size_t>(k) * nb + b0) * 16), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(next_blocks + (static_cast<size_t>(k) * nb + b0) * 16 + 64),
                         _MM_HINT_T1);
            decode_quad(kb + b0 * 16, n < 4 ? n : 4, lut, e0[k], o0[k]);
            if (second) decode_quad(kb + (b0 + 4) * 16, n - 4, lut, e1[k], o1[k]);
            if (n == 8) {
                ws[k] = q8::half_scales<Plain>(ks + b0);
            } else {
                // Padding lanes: scale byte 127 (plain), x scale 0, sum and bias 0 give an exact +0 term.
                uint8_t tail_scales[8] = {127, 127, 127, 127, 127, 127, 127, 127};
                __builtin_memcpy(tail_scales, ks + b0, n);
                ws[k] = q8::half_scales<Plain>(tail_scales);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int8_t* v = xv[r] + (b0 / 4) * 128;
#pragma GCC unroll 8
            for (int k = 0; k < O; ++k) {
                const __m512i p0 = quad_dot(e0[k], o0[k], v);
                const __m512i p1 = second ? quad_dot(e1[k], o1[k], v + 128) : _mm512_setzero_si512();
                acc[k][r] = q8::add_terms(acc[k][r], quad_sums(p0, p1), xb[r] + b0, xs[r] + b0, ws[k]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) y[static_cast<size_t>(r) * ys + static_cast<size_t>(k)] = q8::reduce_lanes(acc[k][r]);
}

template <int O, int R>
void output_tile(const uint8_t* blocks, const uint8_t* scales, size_t nb, const Prepared& p, size_t row0, float* y,
                 size_t ys) {
    if (q8::plain_scales(scales, O * nb)) output_tile<O, R, true>(blocks, scales, nb, p, row0, y, ys);
    else output_tile<O, R, false>(blocks, scales, nb, p, row0, y, ys);
}

// Outputs [o_begin, o_end) for R prepared rows from `row0`: O outputs a tile, then single ones.
template <int O, int R>
void outputs(const WeightView& w, const Prepared& p, size_t row0, float* y, size_t ys, size_t o_begin, size_t o_end) {
    const size_t nb = w.cols / 32;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    size_t o = o_begin;
    if constexpr (O > 1)
        for (; o + O <= o_end; o += O) output_tile<O, R>(data + o * nb * 16, w.scales + o * nb, nb, p, row0, y + o, ys);
    for (; o < o_end; ++o) output_tile<1, R>(data + o * nb * 16, w.scales + o * nb, nb, p, row0, y + o, ys);
}

}  // namespace q8w
}  // namespace
}  // namespace avx512

void matmul_q8_mxfp4_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                 size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    avx512::q8w::Prepared p;
    const size_t pass = q8::rows_per_pass(x.blocks, x.n_x);
    for (size_t r0 = 0; r0 < x.n_x; r0 += pass) {
        const size_t r1 = r0 + pass < x.n_x ? r0 + pass : x.n_x;
        avx512::q8w::prepare(x, r0, r1, p);
        // Row groups of 4 share each weight decode; the last 1-3 rows take more outputs a tile.
        size_t r = r0;
        for (; r + 4 <= r1; r += 4) avx512::q8w::outputs<1, 4>(w, p, r - r0, y + r * ys, ys, o_begin, o_end);
        switch (r1 - r) {
            case 3: avx512::q8w::outputs<1, 3>(w, p, r - r0, y + r * ys, ys, o_begin, o_end); break;
            case 2: avx512::q8w::outputs<2, 2>(w, p, r - r0, y + r * ys, ys, o_begin, o_end); break;
            case 1: avx512::q8w::outputs<4, 1>(w, p, r - r0, y + r * ys, ys, o_begin, o_end); break;
            default: break;
        }
    }
}

}  // namespace stormo::simd
