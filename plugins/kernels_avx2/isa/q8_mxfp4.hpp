#pragma once
// The integer road's MXFP4 x int8 matrix kernel (MatmulQ8Fn), written once over a `Dot` type that
// supplies the 4-byte dot-product step: pmaddubsw + pmaddwd (AVX2, this plugin), vpdpbusd
// (AVX-VNNI or AVX512-VNNI, the vnni plugin), or SIMDe's emulation of vpdpbusd (the unit tests, on
// any CPU). The includer declares the AVX2 intrinsics first: <immintrin.h> in an ISA file compiled
// with -mavx2 (and -ffp-contract=off: a fused multiply-add would break the bit-exactness), or
// SIMDe with native aliases in a test. Everything here has internal linkage (so no COMDAT copy built with these flags can stand in for baseline code).
// The small helpers are always inlined: none is worth a call, and a 256-bit value passed to an
// out-of-line function of the baseline-compiled SIMDe test would change the ABI (-Wpsabi).
//
// Bit-exact against reference::matmul_q8_mxfp4_out_in (host/src/reference_kernels/reference_q8.cpp): the
// per-block sums are exact integers whatever the order, and the float work after them is the
// reference's, lane for lane: eight block sums at a time go into one vector, are multiplied by
// (x scale * 2^(s-128)) and added to an 8-lane accumulator, so block b lands in lane b % 8; a last
// group of fewer than 8 blocks adds exact +0 to the other lanes (an accumulator that starts at +0
// is never -0, so adding +0 changes nothing); the lanes are reduced in the reference's order.
//
// The integer sums use biased weights: u = w + 12 is in [0, 24], an unsigned byte, so the weights
// are the unsigned operand and the activations (any int8, -128 included) the signed one with no
// sign juggling; sum(u * x) - 12 * sum(x) is sum(w * x) exactly, with 12 * sum(x) computed once
// per call when the activations are prepared. pmaddubsw cannot saturate: 2 * 24 * 128 < 2^15.
//
// Dot provides:
//   V dot2(V u_even, V s_even, V u_odd, V s_odd): per 32-bit lane, the sum of the 8 products
//     u * s (unsigned x signed bytes) of that lane's 4 bytes in both pairs of vectors;
//   V dot1(V u, V s): the same for one pair.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "scratch.hpp"
#include "row_tiles.hpp"
#include "stormo/kernels.hpp"

namespace stormo::simd {
namespace {
namespace q8 {

constexpr int kBias = 12;  // |doubled E2M1| <= 12

// Rows of activations rearranged once per call for the kernel. "Even" and "odd" are the
// elements a weight byte's low and high nibble multiply. Per pair of blocks (A, B): even as
// [A | B], then odd (two vectors); a lone last block as [even | odd]. Per row and block,
// 12 * sum(q) and the scale, both padded with zeros to a multiple of 8 blocks.
struct Prepared {
    // Scratch, not std::vector: no std:: template instantiated with this file's flags (scratch.hpp).
    Scratch<int8_t> bytes;  // 32 bytes a vector, read and written unaligned
    Scratch<int32_t> bias;
    Scratch<float> scales;
    size_t bytes_per_row = 0;
    size_t padded_blocks = 0;

    const int8_t* row(size_t r) const { return bytes.data() + r * bytes_per_row; }
};

[[gnu::always_inline]] inline __m256i load32(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
[[gnu::always_inline]] inline void store32(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

// The 16 even and 16 odd values of one 32-value block.
[[gnu::always_inline]] inline void split_block(const int8_t* q, __m128i& even, __m128i& odd) {
    const __m128i select = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i lo = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), select);
    const __m128i hi = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)), select);
    even = _mm_unpacklo_epi64(lo, hi);
    odd = _mm_unpackhi_epi64(lo, hi);
}

// A lone block's lanes hold its even (0-3) and odd (4-7) partial sums: fold them into the low
// half, so the block occupies the low half like the first block of a pair, and zero the rest.
[[gnu::always_inline]] inline __m256i fold_single(__m256i p) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(p, p, 0x80), _mm256_permute2x128_si256(p, p, 0x81));
}

// Four pair results (low half block 2k, high half block 2k+1) to the 8 block sums in order.
[[gnu::always_inline]] inline __m256i block_sums(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
    // h holds blocks [0, 2, 4, 6, 1, 3, 5, 7].
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The prepared vectors of block b (even b: its pair; the lone last block: its one vector).
[[gnu::always_inline]] inline const int8_t* block_vectors(const int8_t* row, size_t b) { return row + (b / 2) * 64; }

template <class Dot>
void prepare(const Q8Rows& x, size_t r_begin, size_t r_end, Prepared& p) {
    const size_t nb = x.blocks;
    const size_t pairs = nb / 2;
    p.bytes_per_row = pairs * 64 + (nb % 2) * 32;
    p.padded_blocks = (nb + 7) / 8 * 8;
    const size_t rows = r_end - r_begin;
    p.bytes.assign(rows * p.bytes_per_row, 0);
    p.bias.assign(rows * p.padded_blocks, 0);
    p.scales.assign(rows * p.padded_blocks, 0.0f);
    const __m256i ones = _mm256_set1_epi8(1);
    for (size_t r = r_begin; r < r_end; ++r) {
        const int8_t* q = x.q + r * nb * kQ8Block;
        int8_t* out = p.bytes.data() + (r - r_begin) * p.bytes_per_row;
        for (size_t k = 0; k < pairs; ++k) {
            __m128i ea, oa, eb, ob;
            split_block(q + 2 * k * kQ8Block, ea, oa);
            split_block(q + (2 * k + 1) * kQ8Block, eb, ob);
            store32(out + 64 * k, _mm256_set_m128i(eb, ea));
            store32(out + 64 * k + 32, _mm256_set_m128i(ob, oa));
        }
        if (nb % 2 != 0) {
            __m128i e, o;
            split_block(q + (nb - 1) * kQ8Block, e, o);
            store32(out + 64 * pairs, _mm256_set_m128i(o, e));
        }
        // 12 * sum(q) per block, through the same dot step with u = 1.
        int32_t* bias = p.bias.data() + (r - r_begin) * p.padded_blocks;
        for (size_t b0 = 0; b0 < nb; b0 += 8) {
            __m256i part[4];
            for (size_t k = 0; k < 4; ++k) {
                const size_t b = b0 + 2 * k;
                const int8_t* v = block_vectors(out, b);
                if (b + 1 < nb) part[k] = Dot::dot2(ones, load32(v), ones, load32(v + 32));
                else if (b < nb) part[k] = fold_single(Dot::dot1(ones, load32(v)));
                else part[k] = _mm256_setzero_si256();
            }
            const __m256i sums = block_sums(part[0], part[1], part[2], part[3]);
            store32(bias + b0, _mm256_mullo_epi32(sums, _mm256_set1_epi32(kBias)));
        }
        std::memcpy(p.scales.data() + (r - r_begin) * p.padded_blocks, x.scales + r * nb, nb * sizeof(float));
    }
}

// Twice each E2M1 value plus 12, per 128-bit half (pshufb looks up within halves).
[[gnu::always_inline]] inline __m256i biased_lut() {
    return _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
                            12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
}

// Biased weights of two consecutive blocks as [A | B] for the even and the odd elements.
[[gnu::always_inline]] inline void decode_pair(const uint8_t* blocks, __m256i lut, __m256i& even, __m256i& odd) {
    const __m256i v = load32(blocks);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    even = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low4));
    odd = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
}

// Biased weights of one block as [even | odd].
[[gnu::always_inline]] inline __m256i decode_single(const uint8_t* block, __m256i lut) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_shuffle_epi8(lut, _mm256_and_si256(v, _mm256_set1_epi8(0x0F)));
}

// True when every scale byte is in [2, 254], where 2^(s-128) is a normal float with bits
// (s - 1) << 23 (the common case: real checkpoints use scales near 127).
[[gnu::always_inline]] inline bool plain_scales(const uint8_t* s, size_t n) {
    size_t i = 0;
    const __m128i one = _mm_set1_epi8(1);
    const __m128i all = _mm_set1_epi8(-1);
    for (; i + 16 <= n; i += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        const __m128i odd = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, one), v), _mm_cmpeq_epi8(v, all));
        if (_mm_movemask_epi8(odd) != 0) return false;
    }
    for (; i < n; ++i)
        if (s[i] < 2 || s[i] == 255) return false;
    return true;
}

// 2^(s-128) for 8 scale bytes, with mxfp4::half_scale's bits (subnormals for s < 2, NaN for 255);
// Plain: the bytes are known to be in [2, 254].
template <bool Plain>
[[gnu::always_inline]] inline __m256 half_scales(__m128i bytes) {
    const __m256i s = _mm256_cvtepu8_epi32(bytes);  // the low 8 bytes
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(s, one), 23);
    if constexpr (Plain) {
        return _mm256_castsi256_ps(normal);
    } else {
        const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), s);
        const __m256i bits = _mm256_blendv_epi8(tiny, normal, _mm256_cmpgt_epi32(s, one));
        const __m256i nan = _mm256_and_si256(_mm256_cmpeq_epi32(s, _mm256_set1_epi32(255)),
                                             _mm256_set1_epi32(0x7FC00000));
        return _mm256_castsi256_ps(_mm256_or_si256(bits, nan));
    }
}

template <bool Plain>
[[gnu::always_inline]] inline __m256 half_scales(const uint8_t* s8) {
    return half_scales<Plain>(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
}

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), the reference's lane reduction.
[[gnu::always_inline]] inline float reduce_lanes(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// One group of 8 blocks' terms into the accumulator: (isum - bias) * (x scale * weight scale).
[[gnu::always_inline]] inline __m256 add_terms(__m256 acc, __m256i sums, const int32_t* bias, const float* xs,
                                               __m256 ws) {
    const __m256i isum = _mm256_sub_epi32(sums, load32(bias));
    const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(xs), ws);
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(isum), scale));
}

// Output o (weights `blocks`, scales `scales`) for R prepared rows from `row0`, into y[r * ys].
// While it runs it asks for the next output's weights in L2 (a prefetch never faults, so the
// row after the matrix's last is harmless): a decode step is bound by the misses a core keeps in
// flight, and each output row starts a stream the hardware prefetcher finds only late.
template <class Dot, int R, bool Plain>
void output_tile(const uint8_t* blocks, const uint8_t* scales, size_t nb, const Prepared& p, size_t row0,
                 float* y, size_t ys) {
    const __m256i lut = biased_lut();
    const int8_t* xv[R];
    const int32_t* xb[R];
    const float* xs[R];
    __m256 acc[R];
    for (int r = 0; r < R; ++r) {
        const size_t row = row0 + static_cast<size_t>(r);
        xv[r] = p.row(row);
        xb[r] = p.bias.data() + row * p.padded_blocks;
        xs[r] = p.scales.data() + row * p.padded_blocks;
        acc[r] = _mm256_setzero_ps();
    }
    const size_t full_groups = nb / 8;
    const uint8_t* next_blocks = blocks + nb * 16;
    _mm_prefetch(reinterpret_cast<const char*>(scales + nb), _MM_HINT_T1);
    for (size_t g = 0; g < full_groups; ++g) {
        const uint8_t* gb = blocks + g * 128;
        _mm_prefetch(reinterpret_cast<const char*>(next_blocks + g * 128), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(next_blocks + g * 128 + 64), _MM_HINT_T1);
        __m256i part[R][4];
        for (int k = 0; k < 4; ++k) {
            __m256i we, wo;
            decode_pair(gb + 32 * k, lut, we, wo);
            for (int r = 0; r < R; ++r) {
                const int8_t* v = xv[r] + (4 * g + static_cast<size_t>(k)) * 64;
                part[r][k] = Dot::dot2(we, load32(v), wo, load32(v + 32));
            }
        }
        const __m256 ws = half_scales<Plain>(scales + 8 * g);
        for (int r = 0; r < R; ++r)
            acc[r] = add_terms(acc[r], block_sums(part[r][0], part[r][1], part[r][2], part[r][3]), xb[r] + 8 * g,
                               xs[r] + 8 * g, ws);
    }
    if (nb % 8 != 0) {
        const size_t b0 = full_groups * 8;
        const size_t n = nb - b0;
        for (size_t b = b0; b < nb; b += 4) _mm_prefetch(reinterpret_cast<const char*>(next_blocks + b * 16), _MM_HINT_T1);
        // Padding lanes: scale byte 127 (plain), x scale 0, sum and bias 0 give an exact +0 term.
        uint8_t tail_scales[8] = {127, 127, 127, 127, 127, 127, 127, 127};
        std::memcpy(tail_scales, scales + b0, n);
        __m256i part[R][4];
        for (int k = 0; k < 4; ++k) {
            const size_t b = b0 + 2 * static_cast<size_t>(k);
            if (b + 1 < nb) {
                __m256i we, wo;
                decode_pair(blocks + b * 16, lut, we, wo);
                for (int r = 0; r < R; ++r) {
                    const int8_t* v = block_vectors(xv[r], b);
                    part[r][k] = Dot::dot2(we, load32(v), wo, load32(v + 32));
                }
            } else if (b < nb) {  // the lone last block of an odd count
                const __m256i w = decode_single(blocks + b * 16, lut);
                for (int r = 0; r < R; ++r) part[r][k] = fold_single(Dot::dot1(w, load32(block_vectors(xv[r], b))));
            } else {
                for (int r = 0; r < R; ++r) part[r][k] = _mm256_setzero_si256();
            }
        }
        const __m256 ws = half_scales<Plain>(tail_scales);
        for (int r = 0; r < R; ++r)
            acc[r] = add_terms(acc[r], block_sums(part[r][0], part[r][1], part[r][2], part[r][3]), xb[r] + b0,
                               xs[r] + b0, ws);
    }
    for (int r = 0; r < R; ++r) y[static_cast<size_t>(r) * ys] = reduce_lanes(acc[r]);
}

template <class Dot, int R>
void output_tile(const uint8_t* blocks, const uint8_t* scales, size_t nb, const Prepared& p, size_t row0,
                 float* y, size_t ys) {
    if (plain_scales(scales, nb)) output_tile<Dot, R, true>(blocks, scales, nb, p, row0, y, ys);
    else output_tile<Dot, R, false>(blocks, scales, nb, p, row0, y, ys);
}

// Rows prepared per pass when a row takes `per_row` bytes prepared: about 256 KiB of them, so
// they stay in L2 while every output of the range reads them; a multiple of 4 (the row-tile size).
inline size_t rows_fitting_a_pass(size_t per_row, size_t n_x) {
    size_t rows = (size_t{256} << 10) / per_row;
    rows = rows < 4 ? 4 : rows - rows % 4;
    return rows < n_x ? rows : n_x;
}
inline size_t rows_per_pass(size_t blocks, size_t n_x) { return rows_fitting_a_pass(blocks * 40 + 64, n_x); }

template <class Dot>
void matmul_q8_mxfp4(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    const size_t nb = w.cols / 32;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    Prepared p;
    const size_t pass = rows_per_pass(x.blocks, x.n_x);
    for (size_t r0 = 0; r0 < x.n_x; r0 += pass) {
        const size_t r1 = r0 + pass < x.n_x ? r0 + pass : x.n_x;
        prepare<Dot>(x, r0, r1, p);
        for (size_t o = o_begin; o < o_end; ++o) {
            const uint8_t* blocks = data + o * nb * 16;
            const uint8_t* scales = w.scales + o * nb;
            row_tiles(r0, r1, [&]<int R>(size_t r) {
                output_tile<Dot, R>(blocks, scales, nb, p, r - r0, y + r * ys + o, ys);
            });
        }
    }
}

}  // namespace q8
}  // namespace
}  // namespace stormo::simd
