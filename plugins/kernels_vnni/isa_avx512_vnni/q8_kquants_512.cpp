// GGUF's K-quants (Q4_K, Q5_K, Q6_K) x int8 on 512-bit registers (AVX512-VNNI, BW): q8_gguf.hpp's
// driver (per output row, one super-block decoded once, then its term against every row) with
// super-blocks of 64 values a register: per row and super-block, four pmaddubsw and four
// vpdpwssd (the pair sums times the sub-block scales, added) in two chains, and one horizontal
// sum, where the 256-bit shape needs eight of each.
//
// A register holds 64 values:
//   Q4_K, Q5_K: sub-blocks [0 | 2], [1 | 3], [4 | 6], [5 | 7], the low and high nibbles of 64
//     consecutive bytes (plus, for Q5_K, bit s of qh's bytes as bit 4: one variable shift of
//     [qh | qh] by the halves' sub-block numbers); the activations are rearranged once per call to
//     that order (q8_gguf.hpp's driver asks the block type);
//   Q6_K: register k = scale groups 4k .. 4k + 3 (64 consecutive values, activations as they
//     are): 64 bytes of ql (low or high nibbles) and two bits of [qh | qh] shifted by [4h | 4h + 2].
// The sub-block scales are spread over each register's int16 lanes by vpermw. Bit-exact against
// host/sdk/reference_kernels/reference_q8_gguf.cpp: exact integer sums (pmaddubsw pairs at most
// 2 * 63 * 128 < 2^15; vpdpwssd adds in int32), then the reference's float term.
#include "avx512_intrinsics.hpp"

#include "gguf_decode.hpp"  // gguf::f16, gguf::scales_mins_k4_vec
#include "int8_kernels.hpp"
#include "q8_gguf.hpp"  // q8g::matmul_super, hsum_i32, load32
#include "row_tiles.hpp"

namespace stormo::simd {
namespace avx512 {
namespace {
namespace q8k {

using q8g::load32;

// q8_gguf.hpp's driver takes a Dot type for its names only here (the blocks below do their own
// dot steps); this one carries the flavour's name into the instantiations.
struct Avx512Vnni {};

[[gnu::always_inline]] inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// int16 lanes [a x 16 | b x 16].
[[gnu::always_inline]] inline __m512i halves16(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(static_cast<int16_t>(a))),
                              _mm256_set1_epi16(static_cast<int16_t>(b)), 1);
}

// Per row: over the four registers, (u * q pair sums) * scales in 16 int32 lanes, two chains.
[[gnu::always_inline]] inline __m512i scaled_lanes(const __m512i u[4], const __m512i sc[4], const int8_t* q) {
    __m512i acc0 = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(u[0], load64(q)), sc[0]);
    __m512i acc1 = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(u[1], load64(q + 64)), sc[1]);
    acc0 = _mm512_dpwssd_epi32(acc0, _mm512_maddubs_epi16(u[2], load64(q + 128)), sc[2]);
    acc1 = _mm512_dpwssd_epi32(acc1, _mm512_maddubs_epi16(u[3], load64(q + 192)), sc[3]);
    return _mm512_add_epi32(acc0, acc1);
}
// One output's term (q8_gguf.hpp's driver): its sums reduced, then lane 0 of the block's terms(),
// so the float steps are written once for one output and for four.
template <class S>
[[gnu::always_inline]] inline float lane0_term(const S& s, const int8_t* q, float dx, const int16_t* bs) {
    const __m128i isum = _mm_cvtsi32_si128(_mm512_reduce_add_epi32(s.sum_lanes(q)));
    const __m128i imin = _mm_cvtsi32_si128(q8g::hsum_i32(s.min_lanes(bs)));
    return _mm_cvtss_f32(S::terms(isum, imin, dx, _mm_set1_ps(s.d), _mm_set1_ps(s.dmin)));
}

// The lane sums of four outputs' vectors, [sum v0, sum v1, sum v2, sum v3] (exact integers, so
// any order is the reference's).
[[gnu::always_inline]] inline __m128i sums4(__m512i v0, __m512i v1, __m512i v2, __m512i v3) {
    const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1), _mm512_unpackhi_epi32(v0, v1));
    const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(v2, v3), _mm512_unpackhi_epi32(v2, v3));
    const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
    const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
[[gnu::always_inline]] inline __m128i sums4(__m128i v0, __m128i v1, __m128i v2, __m128i v3) {
    const __m128i t0 = _mm_add_epi32(_mm_unpacklo_epi32(v0, v1), _mm_unpackhi_epi32(v0, v1));
    const __m128i t1 = _mm_add_epi32(_mm_unpacklo_epi32(v2, v3), _mm_unpackhi_epi32(v2, v3));
    return _mm_add_epi32(_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1));
}
[[gnu::always_inline]] inline __m128i sums4(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    const __m256i t0 = _mm256_add_epi32(_mm256_unpacklo_epi32(v0, v1), _mm256_unpackhi_epi32(v0, v1));
    const __m256i t1 = _mm256_add_epi32(_mm256_unpacklo_epi32(v2, v3), _mm256_unpackhi_epi32(v2, v3));
    const __m256i u = _mm256_add_epi32(_mm256_unpacklo_epi64(t0, t1), _mm256_unpackhi_epi64(t0, t1));
    return _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
}

// Q4_K / Q5_K: term = float(isum) * (dx * d) - float(imin) * (dx * dmin). Register j holds two
// sub-blocks: [0 | 2], [1 | 3], [4 | 6], [5 | 7] (kOrder), the low or high nibbles of 64
// consecutive bytes, so a super-block decodes in two loads, two shifts and four masks; the
// activations are rearranged once per call to match (reorder).
template <bool FifthBit>
struct SuperK45 {
    static constexpr size_t kBytes = FifthBit ? 176 : 144;
    static constexpr int kOrder[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    __m512i u[4];
    __m512i sc[4];  // int16 lanes: [scale of the low sub-block x 16 | of the high one x 16]
    __m256i m16;    // [m0, m0, m1, m1, ..., m7, m7] as int16: pmaddwd with the 16 sums gives m_s * (bs_2s + bs_2s+1)
    __m128i m8;     // [m0, ..., m7] as int16: pmaddwd with the 8 per-32 sums gives the same products, paired
    float d, dmin;

    // tile4's minimum terms take the activations' sums per 32 values (sub-block), made once per call.
    static constexpr bool kPairSums = true;
    // d and dmin of four outputs' blocks: their f16 pairs (bytes 0-3) converted in one instruction.
    [[gnu::always_inline]] static void half_scales(const uint8_t* const b[4], __m128& d4, __m128& dmin4) {
        uint32_t h[4];
        for (int k = 0; k < 4; ++k) __builtin_memcpy(&h[k], b[k], 4);
        const __m256 both = _mm256_cvtph_ps(_mm_setr_epi32(static_cast<int>(h[0]), static_cast<int>(h[1]),
                                                           static_cast<int>(h[2]), static_cast<int>(h[3])));
        const __m256 split = _mm256_permutevar8x32_ps(both, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
        d4 = _mm256_castps256_ps128(split);
        dmin4 = _mm256_extractf128_ps(split, 1);
    }

    // Every row's 256-blocks with their 32-value sub-blocks in kOrder.
    static void reorder(const Q8Rows& x, Scratch<int8_t>& out) {
        const size_t blocks = x.n_x * x.blocks;
        out.resize(blocks * 256);
        for (size_t b = 0; b < blocks; ++b)
            for (int s = 0; s < 8; ++s)
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.data() + b * 256 + 32 * s),
                                    load32(x.q + b * 256 + 32 * kOrder[s]));
    }

    [[gnu::always_inline]] void decode(const uint8_t* b) {
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        const uint8_t* qs = b + (FifthBit ? 48 : 16);
        const __m128i scales_mins = gguf::scales_mins_k4_vec(b);
        const __m512i sc8 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(scales_mins));
        __m512i qh2 = _mm512_setzero_si512();
        if constexpr (FifthBit) qh2 = _mm512_broadcast_i64x4(load32(b + 16));
#pragma GCC unroll 2
        for (int c = 0; c < 2; ++c) {
            const __m512i v = load64(qs + 64 * c);  // chunks 2c, 2c + 1: sub-blocks 4c, 4c + 2 low, 4c + 1, 4c + 3 high
            u[2 * c] = _mm512_and_si512(v, low4);
            u[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            const __m512i pair = halves16(kOrder[2 * j], kOrder[2 * j + 1]);
            if constexpr (FifthBit) {
                // Bit s of qh's byte l is sub-block s's fifth bit: one variable shift per half.
                const __m512i bit = _mm512_and_si512(_mm512_srlv_epi16(qh2, pair), _mm512_set1_epi8(1));
                u[j] = _mm512_or_si512(u[j], _mm512_slli_epi16(bit, 4));
            }
            sc[j] = _mm512_permutexvar_epi16(pair, sc8);
        }
        m8 = _mm_cvtepu8_epi16(_mm_srli_si128(scales_mins, 8));
        m16 = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
        d = gguf::f16(b);
        dmin = gguf::f16(b + 2);
    }

    // The integer sums, unreduced (tile4 reduces four outputs' together).
    [[gnu::always_inline]] __m512i sum_lanes(const int8_t* q) const { return scaled_lanes(u, sc, q); }
    [[gnu::always_inline]] __m256i min_lanes(const int16_t* bs) const { return _mm256_madd_epi16(load32(bs), m16); }
    [[gnu::always_inline]] __m128i min_tile(const int16_t*, const int16_t* bs32) const {
        return _mm_madd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bs32)), m8);
    }
    // The float steps, lane by lane, for up to four outputs (their d and dmin in d4, dmin4).
    [[gnu::always_inline]] static __m128 terms(__m128i isum, __m128i imin, float dx, __m128 d4, __m128 dmin4) {
        const __m128 x = _mm_set1_ps(dx);
        return _mm_sub_ps(_mm_mul_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(x, d4)),
                          _mm_mul_ps(_mm_cvtepi32_ps(imin), _mm_mul_ps(x, dmin4)));
    }
    [[gnu::always_inline]] float term(const int8_t* q, float dx, const int16_t* bs) const {
        return lane0_term<SuperK45>(*this, q, dx, bs);
    }
};

// Q6_K: term = float(isum - 32 * sum_g sc_g * bs_g) * (dx * d).
struct SuperQ6K {
    static constexpr size_t kBytes = 210;
    __m512i u[4];
    __m512i sc[4];  // int16 lanes: scale 4k + j in lanes 8j .. 8j + 7 (16 bytes each)
    __m256i sc16;   // the 16 scales as int16: pmaddwd with the 16 sums gives sum_g sc_g * bs_g
    float d;

    [[gnu::always_inline]] void decode(const uint8_t* b) {
        const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(0x03);
        sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
        const __m512i scz = _mm512_castsi256_si512(sc16);
#pragma GCC unroll 2
        for (int c = 0; c < 2; ++c) {
            const __m512i ql = load64(b + 64 * c);  // low nibbles: groups 0, 1 of half c; high: 2, 3
            const __m512i qh2 = _mm512_broadcast_i64x4(load32(b + 128 + 32 * c));
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                const int k = 2 * c + h;
                const __m512i lo = h == 0 ? _mm512_and_si512(ql, low4) : _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4);
                const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(qh2, halves16(4 * h, 4 * h + 2)), low2);
                u[k] = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
                const __m512i idx = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(4 * k + 1)),
                                                            _mm_set1_epi16(static_cast<int16_t>(4 * k)))),
                    _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(4 * k + 3)), _mm_set1_epi16(static_cast<int16_t>(4 * k + 2))),
                    1);
                sc[k] = _mm512_permutexvar_epi16(idx, scz);
            }
        }
        d = gguf::f16(b + 208);
    }

    // As SuperK45's; min_lanes gives sum_g sc_g * bs_g, and dmin is unused (Q6_K has no minimums).
    float dmin = 0.0f;
    static constexpr bool kPairSums = false;
    [[gnu::always_inline]] static void half_scales(const uint8_t* const b[4], __m128& d4, __m128& dmin4) {
        uint16_t h[4];
        for (int k = 0; k < 4; ++k) __builtin_memcpy(&h[k], b[k] + 208, 2);
        d4 = _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(h[0]), static_cast<short>(h[1]), static_cast<short>(h[2]),
                                         static_cast<short>(h[3]), 0, 0, 0, 0));
        dmin4 = _mm_setzero_ps();
    }
    [[gnu::always_inline]] __m512i sum_lanes(const int8_t* q) const { return scaled_lanes(u, sc, q); }
    [[gnu::always_inline]] __m256i min_lanes(const int16_t* bs) const { return _mm256_madd_epi16(load32(bs), sc16); }
    [[gnu::always_inline]] __m256i min_tile(const int16_t* bs, const int16_t*) const { return min_lanes(bs); }
    [[gnu::always_inline]] static __m128 terms(__m128i isum, __m128i offset, float dx, __m128 d4, __m128) {
        const __m128i exact = _mm_sub_epi32(isum, _mm_slli_epi32(offset, 5));
        return _mm_mul_ps(_mm_cvtepi32_ps(exact), _mm_mul_ps(_mm_set1_ps(dx), d4));
    }
    [[gnu::always_inline]] float term(const int8_t* q, float dx, const int16_t* bs) const {
        return lane0_term<SuperQ6K>(*this, q, dx, bs);
    }
};

// Rows r0 .. r0 + R - 1 of activations (R = 1 to 4) against four outputs at a time: each
// output's super-block is decoded once, as matmul_super does, and used by every row; its sums
// stay in their lanes, and each row's four outputs are reduced together (one transpose-and-add
// tree instead of four horizontal sums), after which the float steps run four outputs to a
// vector, each lane the reference's scalar steps: term, lane b % 8, the final lane reduction.
// Bits are those of matmul_super, whatever R is.
template <class S, int R>
void tile4(const uint8_t* data, size_t row_bytes, size_t nb, const int8_t* q, const Q8Rows& x, const int16_t* pair_sums,
           float* y, size_t ys, size_t o, size_t r0) {
    __m128 lanes[R][8];
    for (auto& row : lanes)
        for (__m128& l : row) l = _mm_setzero_ps();
    // The tile's four rows are contiguous, and so are the next tile's: while super-block b of these
    // rows is read, the next tile's bytes are asked for in L2 in a straight sweep, a quarter row a step.
    const uint8_t* next = data + (o + 4) * row_bytes;
    constexpr size_t kSweep = 4 * S::kBytes;  // bytes of the next tile asked for per super-block
    for (size_t b = 0; b < nb; ++b) {
#pragma GCC unroll 16
        for (size_t off = 0; off < kSweep; off += 64) _mm_prefetch(reinterpret_cast<const char*>(next + b * kSweep + off), _MM_HINT_T1);
        const uint8_t* blocks[4];
        __m512i s[R][4];
        decltype(S{}.min_tile(nullptr, nullptr)) m[R][4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            blocks[k] = data + (o + static_cast<size_t>(k)) * row_bytes + b * S::kBytes;
            S blk;
            blk.decode(blocks[k]);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const size_t rb = (r0 + static_cast<size_t>(r)) * nb + b;
                s[r][k] = blk.sum_lanes(q + rb * 256);
                m[r][k] = blk.min_tile(x.sums + rb * 16, S::kPairSums ? pair_sums + rb * 8 : nullptr);
            }
        }
        __m128 d4, dmin4;
        S::half_scales(blocks, d4, dmin4);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const size_t rb = (r0 + static_cast<size_t>(r)) * nb + b;
            const __m128 t = S::terms(sums4(s[r][0], s[r][1], s[r][2], s[r][3]), sums4(m[r][0], m[r][1], m[r][2], m[r][3]),
                                      x.scales[rb], d4, dmin4);
            lanes[r][b % 8] = _mm_add_ps(lanes[r][b % 8], t);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        const __m128* l = lanes[r];
        const __m128 a = _mm_add_ps(l[0], l[4]), bb = _mm_add_ps(l[2], l[6]);
        const __m128 c = _mm_add_ps(l[1], l[5]), e = _mm_add_ps(l[3], l[7]);
        _mm_storeu_ps(y + (r0 + static_cast<size_t>(r)) * ys + o, _mm_add_ps(_mm_add_ps(a, bb), _mm_add_ps(c, e)));
    }
}

// tile4 over every row of activations quantized for the K-quants, 4 rows a tile (the last 1-3
// together), for the outputs in fours; any other case (the last outputs, rows quantized for
// another format) is matmul_super's. Several rows used to go through matmul_super one output at
// a time with a horizontal sum per row and super-block: 2 rows cost 2.75x one in cache.
template <class S>
void matmul_k(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    if (x.n_x > 0 && x.block == kQ8KBlock && x.sums != nullptr && o + 4 <= o_end) {
        const size_t nb = w.cols / 256;
        const int8_t* q = x.q;
        Scratch<int8_t> reordered;
        if constexpr (requires { S::reorder(x, reordered); }) {
            S::reorder(x, reordered);
            q = reordered.data();
        }
        // Per row and super-block, the sums of each 32 activations (two of the per-16 sums; at most 32 * 128).
        Scratch<int16_t> pair_sums;
        if constexpr (S::kPairSums) {
            pair_sums.resize(x.n_x * nb * 8);
            for (size_t i = 0; i < x.n_x * nb * 8; ++i)
                pair_sums.data()[i] = static_cast<int16_t>(x.sums[2 * i] + x.sums[2 * i + 1]);
        }
        const uint8_t* data = static_cast<const uint8_t*>(w.data);
        const size_t row_bytes = nb * S::kBytes;
        for (; o + 4 <= o_end; o += 4)
            row_tiles(0, x.n_x, [&]<int R>(size_t r) { tile4<S, R>(data, row_bytes, nb, q, x, pair_sums.data(), y, ys, o, r); });
    }
    if (o < o_end) q8g::matmul_super<Avx512Vnni, S>(w, x, y, ys, o, o_end);
}

}  // namespace q8k
}  // namespace
}  // namespace avx512

void matmul_q8_gguf_q4_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    avx512::q8k::matmul_k<avx512::q8k::SuperK45<false>>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q5_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    avx512::q8k::matmul_k<avx512::q8k::SuperK45<true>>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q6_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    avx512::q8k::matmul_k<avx512::q8k::SuperQ6K>(w, x, y, ys, o_begin, o_end);
}

}  // namespace stormo::simd
