#pragma once
// The integer road for GGUF's block formats (MatmulQ8Fn), written once over a `Dot` type that
// supplies the byte dot steps, as q8_mxfp4.hpp is: pmaddubsw + pmaddwd (AVX2: matmul_q8_gguf.cpp),
// vpdpbusd and vpdpwssd (the vnni plugin's two flavours), or SIMDe's emulation of those (the unit
// tests, on any CPU). Bit-identical to host/sdk/reference_kernels/reference_q8_gguf.cpp: block sums are
// exact integers whatever order computes them, and everything after them is the reference's float
// steps in the reference's order.
//
// The includer declares the AVX2 intrinsics first (<immintrin.h> in an ISA file compiled with
// -ffp-contract=off: a fused multiply-add would break the bit-exactness; SIMDe with native aliases
// in a test) and gguf::f16 (a block's f16 scale as float) in stormo::simd's unnamed namespace
// (gguf_decode.hpp in the ISA files). Everything here has internal linkage, and every
// function that is not always inlined is a template over Dot, so an AVX-512 flavour's copies
// carry its Dot's name (the build test finds AVX-512 code by name).
//
// Per output row, each group of up to 8 weight blocks (or one K-quant super-block) is decoded
// once into registers and applied to every activation row; a row's 8 float lanes live in memory
// between groups. Integer products:
//   Q4_0, MXFP4: unsigned weights (nibble; doubled E2M1 + 12) x signed activations through
//     Dot::dot2, two blocks a vector, then minus 8 (12) times the block's activation sum;
//   Q8_0: Dot::kAnyUnsigned (vpdpbusd, no int16 stage): w + 128 x activations, minus 128 times
//     the activation sum; otherwise |w| x (x signed by w), or, when an activation is -128, both
//     widened to int16 and pmaddwd;
//   Q4_K, Q5_K, Q6_K: unsigned 4, 5, 6-bit values x activations through pmaddubsw (a pair is at
//     most 2 * 63 * 128 < 2^15: no saturation), then Dot::scaled by the sub-block's scale
//     (llama.cpp's shape: scale x pair sums), minus the minimums (Q4_K, Q5_K) or
//     32 x scale x sums of 16 (Q6_K) from the activations' per-16 sums.
//
// Dot provides (256-bit vectors V):
//   V dot1(V u, V s): per 32-bit lane, the sum of its 4 products u * s (unsigned x signed bytes);
//   V dot2(V u0, V s0, V u1, V s1): the same over both pairs;
//   V scaled(V acc, V u, V s, V w16): acc plus, per 32-bit lane, the sum of its two int16 pair sums
//     of u * s (pmaddubsw) times the int16 lanes of w16;
//   static constexpr bool kAnyUnsigned: dot1 is exact for any unsigned byte (not only u <= 127).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gguf_scales.hpp"
#include "scratch.hpp"
#include "stormo/kernels.hpp"

namespace stormo::simd {
namespace {
namespace q8g {


[[gnu::always_inline]] inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Per 32-bit lane, the sum of 4 signed x signed byte products, widened to int16 first.
[[gnu::always_inline]] inline __m256i dot_i8i8(__m256i a, __m256i b) {
    const __m256i lo = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(a)),
                                         _mm256_cvtepi8_epi16(_mm256_castsi256_si128(b)));
    const __m256i hi = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(a, 1)),
                                         _mm256_cvtepi8_epi16(_mm256_extracti128_si256(b, 1)));
    // Lane k now holds products of elements {2k, 2k+1} and {16 + 2k, 17 + 2k}: the block's sum is
    // the same over all lanes.
    return _mm256_add_epi32(lo, hi);
}

// 8 vectors of per-lane partial sums (block k in vector k) to the 8 block sums, in order.
[[gnu::always_inline]] inline __m256i block_sums8(const __m256i p[8]) {
    __m256i q[4];
    for (int k = 0; k < 4; ++k)
        q[k] = _mm256_add_epi32(_mm256_permute2x128_si256(p[2 * k], p[2 * k + 1], 0x20),
                                _mm256_permute2x128_si256(p[2 * k], p[2 * k + 1], 0x31));
    // q[k]: low half block 2k, high half block 2k+1 (4 lanes each).
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(q[0], q[1]), _mm256_hadd_epi32(q[2], q[3]));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

[[gnu::always_inline]] inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), the reference's lane reduction.
[[gnu::always_inline]] inline float reduce_lanes(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// ---- 32-value blocks: Q8_0, Q4_0, MXFP4 -----------------------------------------------------

// A block type gives its bytes, weight scale and the offset its unsigned form adds
// (sum(w * x) = sum(u * x) - off * sum(x)); Q8_0 its 32 weights in element order. Q8_0 has three
// dot steps. Where Dot takes any unsigned byte exactly (vpdpbusd: no int16 stage), the weights
// biased by 128 (w ^ 0x80), offset 128. Through pmaddubsw: |w| x (x with w's sign), a pair at most
// 2 * 128 * 127 < 2^15, exact unless an activation is -128 (its negation wraps), which the
// quantizer never produces but a caller may (MatmulQ8Fn accepts any int8); calls whose
// activations hold a -128 take the int16 step.
enum class Q8Step { biased, signs, widened };
template <class Dot, Q8Step Step>
struct BlockQ8_0 {
    static constexpr size_t kBytes = 34;
    static constexpr int32_t kOffset = Step == Q8Step::biased ? 128 : 0;
    [[gnu::always_inline]] static __m256i weights(const uint8_t* b) {
        if constexpr (Step == Q8Step::biased) return _mm256_xor_si256(load32(b + 2), _mm256_set1_epi8(-128));
        else return load32(b + 2);
    }
    [[gnu::always_inline]] static float scale(const uint8_t* b) { return gguf::f16(b); }
    [[gnu::always_inline]] static __m256i dot(__m256i w, __m256i x) {
        if constexpr (Step == Q8Step::widened) return dot_i8i8(w, x);
        else if constexpr (Step == Q8Step::signs) return Dot::dot1(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
        else return Dot::dot1(w, x);
    }
};

// Whether any of the n activation bytes is -128.
template <class Dot>
bool holds_int8_min(const int8_t* q, size_t n) {
    size_t i = 0;
    __m256i any = _mm256_setzero_si256();
    const __m256i min = _mm256_set1_epi8(-128);
    for (; i + 32 <= n; i += 32) any = _mm256_or_si256(any, _mm256_cmpeq_epi8(load32(q + i), min));
    if (_mm256_movemask_epi8(any) != 0) return true;
    for (; i < n; ++i)
        if (q[i] == -128) return true;
    return false;
}
// Q4_0 and MXFP4: 16 bytes of nibbles at kQs (elements 0-15 low, 16-31 high), each nibble the
// unsigned value values(nibble) (Q4_0: the nibble, offset 8; MXFP4: doubled E2M1 + 12, offset 12).
struct BlockQ4_0 {
    static constexpr size_t kBytes = 18, kQs = 2;
    static constexpr int32_t kOffset = 8;
    [[gnu::always_inline]] static __m256i values(__m256i nibbles) { return nibbles; }
    [[gnu::always_inline]] static float scale(const uint8_t* b) { return gguf::f16(b); }
};
struct BlockMxfp4 {
    static constexpr size_t kBytes = 17, kQs = 1;
    static constexpr int32_t kOffset = 12;
    [[gnu::always_inline]] static __m256i values(__m256i nibbles) {
        const __m256i lut = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
                                             12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
        return _mm256_shuffle_epi8(lut, nibbles);
    }
    [[gnu::always_inline]] static float scale(const uint8_t* b) { return gguf::e8m0_half(b[0]); }
};

// offset * sum(q) of every 32-block of every row, padded with zeros to a multiple of 8 blocks, and
// the activation scales padded likewise (a padded lane adds float(0) * (0 * 0) = +0).
struct Prepared32 {
    Scratch<int32_t> bias;
    Scratch<float> scales;
    size_t padded = 0;
};

template <class Dot>
void prepare32(const Q8Rows& x, int32_t offset, Prepared32& p) {
    p.padded = (x.blocks + 7) / 8 * 8;
    p.bias.assign(x.n_x * p.padded, 0);
    p.scales.assign(x.n_x * p.padded, 0.0f);
    for (size_t r = 0; r < x.n_x; ++r)
        for (size_t b = 0; b < x.blocks; ++b) {
            const int8_t* q = x.q + (r * x.blocks + b) * 32;
            int32_t s = 0;
            for (size_t k = 0; k < 32; ++k) s += q[k];
            p.bias.data()[r * p.padded + b] = offset * s;
            p.scales.data()[r * p.padded + b] = x.scales[r * x.blocks + b];
        }
}

// Every output row of [o_begin, o_end): its 8 float lanes per activation row from +0, then
// `blocks(row, lanes)` adds every weight block's terms, then the lanes reduced into y in the
// reference's order.
template <class Dot, class Blocks>
void per_output(const WeightView& w, size_t row_bytes, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                size_t o_end, const Blocks& blocks) {
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    const size_t block = w.format == WeightFormat::GGUF_Q4_K || w.format == WeightFormat::GGUF_Q5_K ||
                                 w.format == WeightFormat::GGUF_Q6_K
                             ? kQ8KBlock
                             : kQ8Block;
    if (x.block != block || (block == kQ8KBlock && x.sums == nullptr)) {
        // Activations quantized for another format (the reference's q8_rows_fit, which this ISA
        // file must not call: an inline SDK function compiled here would be an AVX2 COMDAT copy).
        for (size_t o = o_begin; o < o_end; ++o)
            for (size_t r = 0; r < x.n_x; ++r) y[r * ys + o] = __builtin_nanf("");
        return;
    }
    Scratch<float> lanes;
    lanes.resize(x.n_x * 8);
    for (size_t o = o_begin; o < o_end; ++o) {
        for (size_t i = 0; i < x.n_x * 8; ++i) lanes.data()[i] = 0.0f;
        blocks(data + o * row_bytes, lanes.data());
        for (size_t r = 0; r < x.n_x; ++r) y[r * ys + o] = reduce_lanes(_mm256_loadu_ps(lanes.data() + r * 8));
    }
}

// Asks for the next output row's bytes [begin, end) in L2 while this one runs (a prefetch past the
// matrix's end never faults).
[[gnu::always_inline]] inline void prefetch_next(const uint8_t* row, size_t row_bytes, size_t begin, size_t end) {
    for (size_t off = begin; off < end; off += 64) _mm_prefetch(reinterpret_cast<const char*>(row + row_bytes + off), _MM_HINT_T1);
}

template <class Dot, class B>
void matmul_blocks32(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    const size_t nb = w.cols / 32;
    const size_t row_bytes = nb * B::kBytes;
    Prepared32 p;
    prepare32<Dot>(x, B::kOffset, p);
    per_output<Dot>(w, row_bytes, x, y, ys, o_begin, o_end, [&](const uint8_t* row, float* lanes) {
        for (size_t g = 0; g < nb; g += 8) {
            const size_t n = nb - g < 8 ? nb - g : 8;
            prefetch_next(row, row_bytes, g * B::kBytes, (g + n) * B::kBytes);
            __m256i wv[8];
            float ws[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (size_t k = 0; k < n; ++k) {
                wv[k] = B::weights(row + (g + k) * B::kBytes);
                ws[k] = B::scale(row + (g + k) * B::kBytes);
            }
            const __m256 wscale = _mm256_loadu_ps(ws);
            for (size_t r = 0; r < x.n_x; ++r) {
                const int8_t* q = x.q + (r * x.blocks + g) * 32;
                __m256i part[8];
                for (size_t k = 0; k < 8; ++k) part[k] = k < n ? B::dot(wv[k], load32(q + 32 * k)) : _mm256_setzero_si256();
                const __m256i isum = _mm256_sub_epi32(block_sums8(part),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.bias.data() + r * p.padded + g)));
                const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(p.scales.data() + r * p.padded + g), wscale);
                float* lane = lanes + r * 8;
                _mm256_storeu_ps(lane, _mm256_add_ps(_mm256_loadu_ps(lane), _mm256_mul_ps(_mm256_cvtepi32_ps(isum), scale)));
            }
        }
    });
}

// Q4_0 and MXFP4 two blocks at a time: the 16 nibble bytes of blocks A and B as one vector [A | B],
// whose low nibbles are [A 0-15 | B 0-15] and high nibbles [A 16-31 | B 16-31]; the activations are
// rearranged once per call to match (per pair: [xA 0-15 | xB 0-15], [xA 16-31 | xB 16-31]; a lone
// last block keeps its order), so one Dot::dot2 yields block A's partial sums in the low lanes and
// B's in the high lanes, which is what block_sums takes.

// A lone block's lanes hold elements 0-15 (lanes 0-3) and 16-31 (4-7): folded into the low half,
// so it sits where the first block of a pair does, and zero above.
[[gnu::always_inline]] inline __m256i fold_single(__m256i p) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(p, p, 0x80), _mm256_permute2x128_si256(p, p, 0x81));
}

// Four pair results (low half block 2k, high half block 2k+1) to the 8 block sums in order.
[[gnu::always_inline]] inline __m256i pair_sums(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <class Dot>
void prepare_pairs(const Q8Rows& x, Scratch<int8_t>& out) {
    const size_t row = x.blocks * 32;
    out.resize(x.n_x * row);
    for (size_t r = 0; r < x.n_x; ++r) {
        const int8_t* q = x.q + r * row;
        int8_t* dst = out.data() + r * row;
        size_t b = 0;
        for (; b + 2 <= x.blocks; b += 2) {
            const __m256i a = load32(q + 32 * b), c = load32(q + 32 * b + 32);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * b), _mm256_permute2x128_si256(a, c, 0x20));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * b + 32), _mm256_permute2x128_si256(a, c, 0x31));
        }
        if (b < x.blocks) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * b), load32(q + 32 * b));
    }
}

template <class Dot, class B>
void matmul_nibble_pairs(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    const size_t nb = w.cols / 32;
    const size_t row_bytes = nb * B::kBytes;
    Prepared32 p;
    prepare32<Dot>(x, B::kOffset, p);
    Scratch<int8_t> xq;
    prepare_pairs<Dot>(x, xq);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    per_output<Dot>(w, row_bytes, x, y, ys, o_begin, o_end, [&](const uint8_t* row, float* lanes) {
        for (size_t g = 0; g < nb; g += 8) {
            const size_t n = nb - g < 8 ? nb - g : 8;
            prefetch_next(row, row_bytes, g * B::kBytes, (g + n) * B::kBytes);
            __m256i lo[4], hi[4];
            float ws[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (size_t k = 0; k < n; ++k) ws[k] = B::scale(row + (g + k) * B::kBytes);
            for (size_t k = 0; 2 * k < n; ++k) {
                const uint8_t* a = row + (g + 2 * k) * B::kBytes + B::kQs;
                const __m128i qa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
                // A lone last block pairs with itself; fold_single drops the copy.
                const __m128i qb = 2 * k + 1 < n ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + B::kBytes)) : qa;
                const __m256i v = _mm256_set_m128i(qb, qa);
                lo[k] = B::values(_mm256_and_si256(v, low4));
                hi[k] = B::values(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
            }
            const __m256 wscale = _mm256_loadu_ps(ws);
            for (size_t r = 0; r < x.n_x; ++r) {
                const int8_t* q = xq.data() + (r * x.blocks + g) * 32;
                __m256i part[4];
                for (size_t k = 0; k < 4; ++k) {
                    if (2 * k + 1 < n) {
                        part[k] = Dot::dot2(lo[k], load32(q + 64 * k), hi[k], load32(q + 64 * k + 32));
                    } else if (2 * k < n) {  // lone last block, activations in their own order
                        const __m256i u = _mm256_permute2x128_si256(lo[k], hi[k], 0x20);
                        part[k] = fold_single(Dot::dot1(u, load32(q + 64 * k)));
                    } else {
                        part[k] = _mm256_setzero_si256();
                    }
                }
                const __m256i isum = _mm256_sub_epi32(pair_sums(part[0], part[1], part[2], part[3]),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.bias.data() + r * p.padded + g)));
                const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(p.scales.data() + r * p.padded + g), wscale);
                float* lane = lanes + r * 8;
                _mm256_storeu_ps(lane, _mm256_add_ps(_mm256_loadu_ps(lane), _mm256_mul_ps(_mm256_cvtepi32_ps(isum), scale)));
            }
        }
    });
}

// ---- K-quant super-blocks: Q4_K, Q5_K, Q6_K ----------------------------------------------------

// Q4_K / Q5_K: the 8 sub-blocks' unsigned values (32 bytes each), scales and mins.
template <class Dot, bool FifthBit>
struct SuperK45 {
    static constexpr size_t kBytes = FifthBit ? 176 : 144;
    __m256i u[8];
    __m256i sc16[8];  // each sub-block's scale in every int16 lane
    __m256i m16;  // [m0, m0, m1, m1, ..., m7, m7] as int16: pmaddwd with the 16 sums gives m_s * (bs_2s + bs_2s+1)
    float d, dmin;

    [[gnu::always_inline]] void decode(const uint8_t* b) {
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        const __m256i qh = FifthBit ? load32(b + 16) : _mm256_setzero_si256();
        const uint8_t* qs = b + (FifthBit ? 48 : 16);
        for (size_t c = 0; c < 4; ++c) {
            const __m256i bytes = load32(qs + 32 * c);
            u[2 * c] = _mm256_and_si256(bytes, low4);
            u[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
        }
        if constexpr (FifthBit) {
            const __m256i one = _mm256_set1_epi8(1);
            for (int s = 0; s < 8; ++s) {
                const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(s)), one);
                u[s] = _mm256_or_si256(u[s], _mm256_slli_epi16(bit, 4));
            }
        }
        uint8_t scv[8], mv[8];
        gguf::scales_mins_k4(b, scv, mv);
        for (size_t s = 0; s < 8; ++s) sc16[s] = _mm256_set1_epi16(static_cast<int16_t>(scv[s]));
        const __m128i m8 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mv)));
        m16 = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
        d = gguf::f16(b);
        dmin = gguf::f16(b + 2);
    }

    // The block's float term against one activation block (q, its scale dx, its 16 per-16 sums).
    [[gnu::always_inline]] float term(const int8_t* q, float dx, const int16_t* bs) const {
        // Two chains: vpdpwssd's latency would otherwise bound a chain of eight.
        __m256i acc[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int s = 0; s < 8; ++s) acc[s % 2] = Dot::scaled(acc[s % 2], u[s], load32(q + 32 * s), sc16[s]);
        const int32_t isum = hsum_i32(_mm256_add_epi32(acc[0], acc[1]));
        const int32_t imin = hsum_i32(_mm256_madd_epi16(load32(bs), m16));
        return static_cast<float>(isum) * (dx * d) - static_cast<float>(imin) * (dx * dmin);
    }
};

// Q6_K: the 8 units' unsigned 6-bit values (32 bytes each: two scale groups of 16), the 16 scales.
template <class Dot>
struct SuperQ6K {
    static constexpr size_t kBytes = 210;
    __m256i u[8];
    __m256i scales16[8];  // per unit: [scale of group 2u x 8 | scale of group 2u + 1 x 8] as int16
    __m256i sc16;         // the 16 scales as int16: pmaddwd with the 16 sums gives sum_g sc_g * bs_g
    float d;

    [[gnu::always_inline]] void decode(const uint8_t* b) {
        const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
        for (size_t c = 0; c < 2; ++c) {
            const __m256i qh = load32(b + 128 + 32 * c);
            for (size_t g = 0; g < 4; ++g) {
                const __m256i ql = load32(b + 64 * c + 32 * (g % 2));
                const __m256i lo = g < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
                const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(static_cast<int>(2 * g))), low2);
                u[4 * c + g] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
            }
        }
        const int8_t* s8 = reinterpret_cast<const int8_t*>(b + 192);
        sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s8)));
        for (size_t k = 0; k < 8; ++k)
            scales16[k] = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(s8[2 * k + 1])),
                                           _mm_set1_epi16(static_cast<int16_t>(s8[2 * k])));
        d = gguf::f16(b + 208);
    }

    [[gnu::always_inline]] float term(const int8_t* q, float dx, const int16_t* bs) const {
        __m256i acc[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int k = 0; k < 8; ++k) acc[k % 2] = Dot::scaled(acc[k % 2], u[k], load32(q + 32 * k), scales16[k]);
        const int32_t offset = hsum_i32(_mm256_madd_epi16(load32(bs), sc16));
        const int32_t isum = hsum_i32(_mm256_add_epi32(acc[0], acc[1])) - 32 * offset;
        return static_cast<float>(isum) * (dx * d);
    }
};

template <class Dot, class S>
void matmul_super(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    const size_t nb = w.cols / 256;
    const size_t row_bytes = nb * S::kBytes;
    S block;
    // A block type may take the activations in its own order, rearranged once per call
    // (S::reorder; only for rows of 256-blocks: others make per_output write NaN).
    const int8_t* q = x.q;
    Scratch<int8_t> reordered;
    if constexpr (requires { S::reorder(x, reordered); })
        if (x.block == kQ8KBlock) {
            S::reorder(x, reordered);
            q = reordered.data();
        }
    per_output<Dot>(w, row_bytes, x, y, ys, o_begin, o_end, [&](const uint8_t* row, float* lanes) {
        for (size_t b = 0; b < nb; ++b) {
            prefetch_next(row, row_bytes, b * S::kBytes, (b + 1) * S::kBytes);
            block.decode(row + b * S::kBytes);
            for (size_t r = 0; r < x.n_x; ++r) {
                float& lane = lanes[r * 8 + b % 8];
                lane = lane + block.term(q + (r * x.blocks + b) * 256, x.scales[r * x.blocks + b],
                                         x.sums + (r * x.blocks + b) * 16);
            }
        }
    });
}

// The MatmulQ8Fn of each format on Dot.
template <class Dot>
void matmul_q8_0(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if constexpr (Dot::kAnyUnsigned) matmul_blocks32<Dot, BlockQ8_0<Dot, Q8Step::biased>>(w, x, y, ys, o_begin, o_end);
    else if (holds_int8_min<Dot>(x.q, x.n_x * x.blocks * 32))
        matmul_blocks32<Dot, BlockQ8_0<Dot, Q8Step::widened>>(w, x, y, ys, o_begin, o_end);
    else matmul_blocks32<Dot, BlockQ8_0<Dot, Q8Step::signs>>(w, x, y, ys, o_begin, o_end);
}
template <class Dot>
void matmul_q4_0(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    matmul_nibble_pairs<Dot, BlockQ4_0>(w, x, y, ys, o_begin, o_end);
}
template <class Dot>
void matmul_mxfp4(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    matmul_nibble_pairs<Dot, BlockMxfp4>(w, x, y, ys, o_begin, o_end);
}
template <class Dot>
void matmul_q4_k(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    matmul_super<Dot, SuperK45<Dot, false>>(w, x, y, ys, o_begin, o_end);
}
template <class Dot>
void matmul_q5_k(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    matmul_super<Dot, SuperK45<Dot, true>>(w, x, y, ys, o_begin, o_end);
}
template <class Dot>
void matmul_q6_k(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    matmul_super<Dot, SuperQ6K<Dot>>(w, x, y, ys, o_begin, o_end);
}

}  // namespace q8g
}  // namespace
}  // namespace stormo::simd
