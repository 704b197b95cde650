// GGUF block formats on the float road, 512-bit out_in matmuls (AVX512F/BW/VL). The avx2 kernels
// (kernels_avx2/isa/matmul_gguf.cpp) decode 8 weights a vector with a widening, a conversion and
// a multiply (a multiply-subtract for Q4_K/Q5_K) per 8; here the formats whose weights take at most 16
// (32 for Q5_K) values per scale build those values once as a 16-float table and let each code
// pick its weight with vpermps (vpermt2ps for Q5_K's 5-bit codes), as the 512-bit MXFP4 kernel of
// matmul_out_in.cpp does:
//   MXFP4  table = doubled E2M1 (ggml's, code 8 is +0) * 2^(e-128)  per block,
//   Q4_0   table = d * (k - 8)                                       per block,
//   Q4_1   table = d * k + m                                         per block,
//   IQ4_NL table = d * kvalues_iq4nl[k]                              per block,
//   IQ4_XS table = (d * (sc - 32)) * kvalues_iq4nl[k]                per sub-block of 32,
//   (the i-quants below 4 bits have no table: their values are grid bytes, IqGrid below)
//   Q5_0   two tables: d * (k - 16), k = 0..31                       per block,
//   Q5_1   two tables: d * k + m, k = 0..31                          per block,
//   Q4_K   table = (d * sc) * k - dmin * m                           per sub-block of 32,
//   Q5_K   the same over k = 0..31, two tables                       per sub-block of 32;
// each entry is computed by the reference's own operations (host/sdk/reference_kernels/gguf_dequant.cpp)
// on the same operands, or for Q4_K/Q5_K by one fused multiply-subtract that rounds once where
// the reference rounds only once too (sub_table says why), so every weight picked is the
// reference's value bit for bit. Q8_0 (256 values a scale), Q6_K (64), and Q2_K and Q3_K (four or
// eight levels a group of 16) convert: float(q) * d, (d * sc) * float(q - 32), (d * sc) * float(q) -
// dmin * m and (d * sc) * float(q).
//
// The blocks' own element order is kept but for Q4_K: elements 0-15 of every 32 are one vector
// and 16-31 the next (Q4_0's and MXFP4's low and high nibbles), so x needs no rearranging. Q4_K
// takes its codes with variable shifts instead of widening shuffles, in an order x is rearranged
// to once per call (1.2x a core; see Q4_K). Per (output, row) accumulator a takes the first
// vector of every 32 values and b the second, with FMAs, ascending; the value is the fixed-order
// sum of a + b, the same in every tile shape, so the contract of docs/kernels.md holds. GGUF's
// MXFP4 and Q8_0 keep one accumulator a pair instead (tile_one), in all their tiles alike. Tiles
// and row blocks are matmul_out_in.cpp's (tiles512.hpp).
// Compiled with -ffp-contract=off: the compiler must not fuse a multiply and an add the reference
// rounds apart (Q4_0's, Q5_0's, IQ4_NL's, IQ4_XS's and MXFP4's tables are products only, Q4_1's and Q5_1's a
// product and a sum as the reference's; Q4_K's and Q5_K's fusion, exact, is written out in
// sub_table; Q2_K's, likewise, in Q2_K).
#include "avx512_float_kernels.hpp"
#include "dense_tile512.hpp"  // dense_tile, for the prefill panels
#include "gguf_decode.hpp"  // gguf::f16, scales_mins_k4_vec; gguf_scales.hpp's kE8m0Half
#include "scratch.hpp"
#include "simd.hpp"         // prefetch_l2
#include "simd512.hpp"
#include "tiles512.hpp"     // drive

namespace stormo::simd::avx512 {
namespace {
namespace gguf512 {

[[gnu::always_inline]] inline __m512 iota16() {
    return _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f,
                          14.0f, 15.0f);
}

// 16 consecutive bytes widened to dword lanes (zero- or sign-extended).
[[gnu::always_inline]] inline __m512i u8x16(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
[[gnu::always_inline]] inline __m512i i8x16(const uint8_t* p) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// A format F gives kValues and kBytes per block, kUnit values per unit (32 or 64, a multiple of
// 32), a Header decoded once per block and output, and unit(block, header, u, v) writing the
// unit's kUnit / 16 vectors of weights in element order.

struct OneTable {
    __m512 table;
};

// GGUF's MXFP4: E8M0 byte, then 16 bytes (elements 0-15 low nibbles, 16-31 high).
struct Mxfp4 {
    static constexpr size_t kValues = 32, kBytes = 17, kUnit = 32;
    using Header = OneTable;
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        // ggml's kvalues_mxfp4 (code 8 is +0, where transformers' MXFP4 has -0), times 2^(e-128)
        // as the reference multiplies them (e = 255 is 2^127, not NaN).
        const __m512 doubled = _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f, 0.0f, -1.0f, -2.0f,
                                              -3.0f, -4.0f, -6.0f, -8.0f, -12.0f);
        return {_mm512_mul_ps(_mm512_set1_ps(gguf::kE8m0Half.value[b[0]]), doubled)};
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        // vpermps reads an index's low four bits: the low nibble needs no mask.
        const __m512i codes = u8x16(b + 1);
        v[0] = _mm512_permutexvar_ps(codes, h.table);
        v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), h.table);
    }
};

// Q4_0: f16 d, then 16 bytes of nibbles; x = d * (q - 8).
struct Q4_0 {
    static constexpr size_t kValues = 32, kBytes = 18, kUnit = 32;
    using Header = OneTable;
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        return {_mm512_mul_ps(_mm512_set1_ps(gguf::f16(b)), _mm512_sub_ps(iota16(), _mm512_set1_ps(8.0f)))};
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        const __m512i codes = u8x16(b + 2);
        v[0] = _mm512_permutexvar_ps(codes, h.table);
        v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), h.table);
    }
};

// Q4_1: f16 d, f16 m, then nibbles as Q4_0's; x = d * q + m, each entry the reference's product
// (exact) and sum.
struct Q4_1 {
    static constexpr size_t kValues = 32, kBytes = 20, kUnit = 32;
    using Header = OneTable;
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        return {_mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(gguf::f16(b)), iota16()), _mm512_set1_ps(gguf::f16(b + 2)))};
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        const __m512i codes = u8x16(b + 4);
        v[0] = _mm512_permutexvar_ps(codes, h.table);
        v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), h.table);
    }
};

// ggml's kvalues_iq4nl as floats.
[[gnu::always_inline]] inline __m512 iq4nl_levels() {
    return _mm512_setr_ps(-127.0f, -104.0f, -83.0f, -65.0f, -49.0f, -35.0f, -22.0f, -10.0f, 1.0f, 13.0f, 25.0f, 38.0f,
                          53.0f, 69.0f, 89.0f, 113.0f);
}

// IQ4_NL: f16 d, then nibbles as Q4_0's, each an index into ggml's kvalues_iq4nl; x = d * kvalues[q].
struct Iq4Nl {
    static constexpr size_t kValues = 32, kBytes = 18, kUnit = 32;
    using Header = OneTable;
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        return {_mm512_mul_ps(_mm512_set1_ps(gguf::f16(b)), iq4nl_levels())};
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        const __m512i codes = u8x16(b + 2);
        v[0] = _mm512_permutexvar_ps(codes, h.table);
        v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), h.table);
    }
};

// IQ4_XS: f16 d, u16 of high scale bits, 4 bytes of low scale nibbles, then 8 sub-blocks of 32 as
// IQ4_NL's nibbles; unit u is sub-block u, its table (d * (sc - 32)) * kvalues_iq4nl.
struct Iq4Xs {
    static constexpr size_t kValues = 256, kBytes = 136, kUnit = 32;
    struct Header {
        float dl[8];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const float d = gguf::f16(b);
        Header h;
        for (int j = 0; j < 8; ++j) h.dl[j] = d * static_cast<float>(gguf::iq4_xs_scale(b, j));
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m512 v[2]) {
        const __m512 table = _mm512_mul_ps(_mm512_set1_ps(h.dl[u]), iq4nl_levels());
        const __m512i codes = u8x16(b + 8 + 16 * u);
        v[0] = _mm512_permutexvar_ps(codes, table);
        v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), table);
    }
};

// Q5_0 and Q5_1: a table of the 32 five-bit codes' weights in two halves (codes 0-15, 16-31), and
// each lane's fifth bit (bit j of the u32 after the scales: element j) moved to bit 4 of its index
// by variable shifts of the u32 broadcast from memory, for vpermt2ps, which reads five bits. The
// nibble and the fifth bit are merged by one bitwise select (vpternlogd: bits 0-3 from the nibble,
// the rest from the shifted word; vpermt2ps ignores bits 5 and up). Masks moved from a general
// register (kmovw, port 5 as the permutes) and masked ors did the same at Q5_0's 0.52-0.53 ms a call
// and 4-5% slower at Q5_1's (5760 x 2880 from RAM, two threads, alternated; docs/kernels.md): the
// port was not what binds, and Q5_0 stays at 1.8x Q4_0's time.
struct TwoTables {
    __m512 low;
    __m512 high;
};
template <size_t kBits>
[[gnu::always_inline]] inline void five_bit_unit(const uint8_t* b, const TwoTables& h, __m512 v[2]) {
    const __m512i codes = u8x16(b + kBits + 4);
    const __m512i fifth = _mm512_broadcastd_epi32(_mm_loadu_si32(b + kBits));
    // Element j < 16: bit j, shifted up by 4 then down by j; element 16 + j: bit 16 + j, down by 12 + j.
    const __m512i t0 = _mm512_srlv_epi32(_mm512_slli_epi32(fifth, 4), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m512i t1 = _mm512_srlv_epi32(fifth, _mm512_setr_epi32(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27));
    const __m512i low4 = _mm512_set1_epi32(0x0F);
    // 0xCA: bitwise "a ? b : c" with a the nibble mask.
    const __m512i i0 = _mm512_ternarylogic_epi32(low4, codes, t0, 0xCA);
    const __m512i i1 = _mm512_ternarylogic_epi32(low4, _mm512_srli_epi32(codes, 4), t1, 0xCA);
    v[0] = _mm512_permutex2var_ps(h.low, i0, h.high);
    v[1] = _mm512_permutex2var_ps(h.low, i1, h.high);
}

// Q5_0: f16 d, fifth bits, nibbles; x = d * (q - 16).
struct Q5_0 {
    static constexpr size_t kValues = 32, kBytes = 22, kUnit = 32;
    using Header = TwoTables;
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const __m512 d = _mm512_set1_ps(gguf::f16(b));
        return {_mm512_mul_ps(d, _mm512_sub_ps(iota16(), _mm512_set1_ps(16.0f))), _mm512_mul_ps(d, iota16())};
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        five_bit_unit<2>(b, h, v);
    }
};

// Q5_1: f16 d, f16 m, fifth bits, nibbles; x = d * q + m.
struct Q5_1 {
    static constexpr size_t kValues = 32, kBytes = 24, kUnit = 32;
    using Header = TwoTables;
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const __m512 d = _mm512_set1_ps(gguf::f16(b)), m = _mm512_set1_ps(gguf::f16(b + 2));
        return {_mm512_add_ps(_mm512_mul_ps(d, iota16()), m),
                _mm512_add_ps(_mm512_mul_ps(d, _mm512_add_ps(iota16(), _mm512_set1_ps(16.0f))), m)};
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        five_bit_unit<4>(b, h, v);
    }
};

// Q8_0: f16 d, then 32 int8; x = q * d.
struct Q8_0 {
    static constexpr size_t kValues = 32, kBytes = 34, kUnit = 32;
    struct Header {
        __m512 d;
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {_mm512_set1_ps(gguf::f16(b))}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m512 v[2]) {
        v[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(i8x16(b + 2)), h.d);
        v[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(i8x16(b + 18)), h.d);
    }
};

// The sub-block scales of Q4_K and Q5_K: d * sc of sub-blocks 0-7, then dmin * m, from one
// widening, one conversion and one multiply by [d x 8 | dmin x 8], the reference's products of
// the same operands.
struct alignas(64) SubScales {
    float v[16];
};
[[gnu::always_inline]] inline SubScales sub_scales(const uint8_t* b) {
    const __m512 k = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(gguf::scales_mins_k4_vec(b)));
    const __m512 pair = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_loadu_si32(b)));  // [d, dmin, ...]
    const __m512 scale = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), pair);
    SubScales h;
    _mm512_store_ps(h.v, _mm512_mul_ps(scale, k));
    return h;
}
// Sub-block s's weights for codes offset + k (k < 16): (d * sc) * code - dmin * m. The reference
// rounds twice, but its product is exact: d is an f16 (11 significant bits) and sc < 64, so
// d * sc has at most 17 significant bits, and times a code below 32 at most 22, never near
// float's range ends. One fused multiply-subtract therefore rounds once what the reference
// rounds once (an infinite or NaN d gives the same infinity or NaN), in one operation instead of
// two (one core, 256 x 2048 in L2, the builds alternated: Q4_K 16.1 -> 16.8 GB/s, Q5_K 12.1 -> 13.9).
[[gnu::always_inline]] inline __m512 sub_table(const SubScales& h, size_t s, float offset) {
    const __m512 k = offset == 0.0f ? iota16() : _mm512_add_ps(iota16(), _mm512_set1_ps(offset));
    return _mm512_fmsub_ps(_mm512_set1_ps(h.v[s]), k, _mm512_set1_ps(h.v[8 + s]));
}

// Q5_K: unit c = sub-blocks 2c and 2c + 1, whose 4-bit parts are the low and high nibbles of the
// same 32 bytes and whose fifth bits are bits 2c and 2c + 1 of qh's bytes.
struct Q5_K {
    static constexpr size_t kValues = 256, kBytes = 176, kUnit = 64;
    using Header = SubScales;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return sub_scales(b); }
    // Bit s of each dword lane moved to bit 4, every other bit cleared.
    [[gnu::always_inline]] static __m512i bit_to_4(__m512i v, size_t s) {
        const __m512i moved = s <= 4 ? _mm512_sll_epi32(v, _mm_cvtsi32_si128(static_cast<int>(4 - s)))
                                     : _mm512_srl_epi32(v, _mm_cvtsi32_si128(static_cast<int>(s - 4)));
        return _mm512_and_si512(moved, _mm512_set1_epi32(0x10));
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t c, __m512 v[4]) {
        const uint8_t* qs = b + 48 + 32 * c;
        const __m512i q0 = u8x16(qs), q1 = u8x16(qs + 16);  // elements 0-15, 16-31 of both sub-blocks
        // 5-bit codes: the nibble, and bit s of qh's byte l as bit 4; vpermt2ps reads five bits.
        const __m512i h0 = u8x16(b + 16), h1 = u8x16(b + 32);
        const __m512i low4 = _mm512_set1_epi32(0x0F);
        const size_t s1 = 2 * c + 1;
        const __m512i i0 = _mm512_or_si512(_mm512_and_si512(q0, low4), bit_to_4(h0, 2 * c));
        const __m512i i1 = _mm512_or_si512(_mm512_and_si512(q1, low4), bit_to_4(h1, 2 * c));
        const __m512i j0 = _mm512_or_si512(_mm512_srli_epi32(q0, 4), bit_to_4(h0, s1));
        const __m512i j1 = _mm512_or_si512(_mm512_srli_epi32(q1, 4), bit_to_4(h1, s1));
        const __m512 a0 = sub_table(h, 2 * c, 0.0f), a1 = sub_table(h, 2 * c, 16.0f);
        const __m512 b0 = sub_table(h, s1, 0.0f), b1 = sub_table(h, s1, 16.0f);
        v[0] = _mm512_permutex2var_ps(a0, i0, a1);
        v[1] = _mm512_permutex2var_ps(a0, i1, a1);
        v[2] = _mm512_permutex2var_ps(b0, j0, b1);
        v[3] = _mm512_permutex2var_ps(b0, j1, b1);
    }
};

// Q4_K with the activations rearranged (prepare_q4_k_rows): a unit's 32 bytes of codes are
// broadcast to both 256-bit halves and each vector's indices come from one variable shift of
// that register, with no widening shuffle: vpermps reads only an index's low four bits, so dword
// lane j of [shift a x 8 | shift b x 8] picks the nibble at bit a (b) of bytes 4j .. 4j + 3.
//   v0 [0 | 8]   sub-block 2c elements 4j, then 4j + 1     v1 [16 | 24]  elements 4j + 2, 4j + 3
//   v2 [4 | 12]  sub-block 2c + 1 the same                 v3 [20 | 28]
struct Q4_K {
    static constexpr size_t kValues = 256, kBytes = 144, kUnit = 64;
    using Header = SubScales;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return sub_scales(b); }
    [[gnu::always_inline]] static __m512i shifts(int a, int b) {
        return _mm512_inserti64x4(_mm512_set1_epi32(a), _mm256_set1_epi32(b), 1);
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t c, __m512 v[4]) {
        const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * c)));
        const __m512 t0 = sub_table(h, 2 * c, 0.0f), t1 = sub_table(h, 2 * c + 1, 0.0f);
        v[0] = _mm512_permutexvar_ps(_mm512_srlv_epi32(q, shifts(0, 8)), t0);
        v[1] = _mm512_permutexvar_ps(_mm512_srlv_epi32(q, shifts(16, 24)), t0);
        v[2] = _mm512_permutexvar_ps(_mm512_srlv_epi32(q, shifts(4, 12)), t1);
        v[3] = _mm512_permutexvar_ps(_mm512_srlv_epi32(q, shifts(20, 28)), t1);
    }
};

// Rows of x rearranged per 32 values as Q4_K's units read them: [4j | 4j + 1], then [4j + 2 | 4j + 3].
void prepare_q4_k_rows(const float* x, size_t n_x, size_t xs, size_t cols, Scratch<float>& out) {
    out.resize(n_x * cols);
    rearrange_rows32(x, n_x, xs, cols, _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29),
                     _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31), out.data());
}

// Q2_K and Q3_K: unit u = 32 values of half c = u / 4 from bits 2s (s = u % 4) of the half's 32
// code bytes, as groups 2u and 2u + 1 of 16 values with a scale each, widened and converted (four
// levels a group: a table would cost as much).
[[gnu::always_inline]] inline void two_bit_codes(const uint8_t* codes, size_t u, __m512i q[2]) {
    const uint8_t* half = codes + 32 * (u / 4);
    const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(2 * (u % 4)));
    const __m512i three = _mm512_set1_epi32(3);
    q[0] = _mm512_and_si512(_mm512_srl_epi32(u8x16(half), shift), three);
    q[1] = _mm512_and_si512(_mm512_srl_epi32(u8x16(half + 16), shift), three);
}

// Q2_K: 16 bytes of scale | min << 4, 64 of codes, f16 d, f16 dmin; x = (d * sc) * q - dmin * m
// per group of 16. The product is exact (an f16 d times sc < 16 times q < 4: at most 17 bits), so
// one fused multiply-subtract rounds once where the reference rounds only its subtraction.
struct Q2_K {
    static constexpr size_t kValues = 256, kBytes = 84, kUnit = 32;
    struct alignas(64) Header {
        float dl[16];  // d * sc per group of 16
        float ml[16];  // dmin * m
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const __m512i scale_min = u8x16(b);
        Header h;
        _mm512_store_ps(h.dl, _mm512_mul_ps(_mm512_set1_ps(gguf::f16(b + 80)),
                                            _mm512_cvtepi32_ps(_mm512_and_si512(scale_min, _mm512_set1_epi32(0x0F)))));
        _mm512_store_ps(h.ml, _mm512_mul_ps(_mm512_set1_ps(gguf::f16(b + 82)), _mm512_cvtepi32_ps(_mm512_srli_epi32(scale_min, 4))));
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m512 v[2]) {
        __m512i q[2];
        two_bit_codes(b + 16, u, q);
        for (int k = 0; k < 2; ++k)
            v[k] = _mm512_fmsub_ps(_mm512_set1_ps(h.dl[2 * u + k]), _mm512_cvtepi32_ps(q[k]), _mm512_set1_ps(h.ml[2 * u + k]));
    }
};

// Q3_K: 32 bytes of high-bit masks, 64 of codes, 12 of scales, f16 d; a value loses 4 where bit u
// of its hmask byte is 0; x = (d * (sc - 32)) * q, q in [-4, 3]. Scale k is the low (k < 8) or high
// nibble of byte k % 8 with bits 2(k / 4) of byte 8 + k % 4 as bits 4-5, unpacked in dword lanes.
struct Q3_K {
    static constexpr size_t kValues = 256, kBytes = 110, kUnit = 32;
    struct alignas(64) Header {
        float dl[16];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        uint32_t last;
        __builtin_memcpy(&last, b + 104, 4);  // bytes 8-11 of the scales: a 16-byte load would leave the block
        const __m128i s = _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 96)), static_cast<int>(last), 2);
        const __m512i low = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(s, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)));
        const __m512i high = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(s, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11)));
        const __m512i nibble = _mm512_and_si512(_mm512_srlv_epi32(low, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4)),
                                                _mm512_set1_epi32(0x0F));
        const __m512i top = _mm512_and_si512(_mm512_srlv_epi32(high, _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6)),
                                             _mm512_set1_epi32(0x03));
        const __m512i sc = _mm512_sub_epi32(_mm512_or_si512(nibble, _mm512_slli_epi32(top, 4)), _mm512_set1_epi32(32));
        Header h;
        _mm512_store_ps(h.dl, _mm512_mul_ps(_mm512_set1_ps(gguf::f16(b + 108)), _mm512_cvtepi32_ps(sc)));
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m512 v[2]) {
        __m512i q[2];
        two_bit_codes(b + 32, u, q);
        const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(u));
        for (int k = 0; k < 2; ++k) {
            const __m512i high = _mm512_and_si512(_mm512_srl_epi32(u8x16(b + 16 * k), shift), _mm512_set1_epi32(1));
            const __m512i code = _mm512_sub_epi32(_mm512_or_si512(q[k], _mm512_slli_epi32(high, 2)), _mm512_set1_epi32(4));
            v[k] = _mm512_mul_ps(_mm512_set1_ps(h.dl[2 * u + k]), _mm512_cvtepi32_ps(code));
        }
    }
};

// Q6_K: ql[128], qh[64], 16 int8 scales, f16 d. Unit u (64 consecutive values) = half c = u / 2,
// groups 2h and 2h + 1 (h = u % 2): the low (h = 0) or high nibbles of the half's 64 ql bytes, and
// bits 4h, 4h + 1 (group 2h) or 4h + 2, 4h + 3 (group 2h + 1) of its 32 qh bytes. The 6-bit codes
// are put together in bytes, 64 at a time (shifting dword lanes instead cost twice the
// instructions), then widened 16 at a time; x = (d * sc) * (q - 32) per group of 16.
struct Q6_K {
    static constexpr size_t kValues = 256, kBytes = 210, kUnit = 64;
    struct alignas(64) HighShifts {
        int16_t v[2][32];
    };
    static constexpr HighShifts kHighShifts = {{{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
                                                 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
                                                {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}};
    struct alignas(64) Header {
        float ds[16];  // d * sc per group of 16
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192))));
        Header h;
        _mm512_store_ps(h.ds, _mm512_mul_ps(_mm512_set1_ps(gguf::f16(b + 208)), sc));
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m512 v[4]) {
        const size_t c = u / 2;
        const int hh = static_cast<int>(u % 2);
        __m512i ql = _mm512_loadu_si512(b + 64 * c);
        if (hh != 0) ql = _mm512_srli_epi16(ql, 4);
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c)));
        // The two bits of each qh byte this unit wants, moved to bits 4-5 by one int16 shift:
        // bits 0-1 | 2-3 left by [4 x 16 | 2 x 16] (h = 0), bits 4-5 | 6-7 right by [0 | 2] (h = 1).
        // A byte's bits cross into its neighbour within the word; the mask 0x30 drops them.
        const __m512i moved = hh == 0 ? _mm512_sllv_epi16(qh, _mm512_load_si512(kHighShifts.v[0]))
                                      : _mm512_srlv_epi16(qh, _mm512_load_si512(kHighShifts.v[1]));
        const __m512i high = _mm512_and_si512(moved, _mm512_set1_epi8(0x30));
        // (ql & 0x0F) | high, then - 32.
        const __m512i q = _mm512_sub_epi8(_mm512_ternarylogic_epi32(ql, _mm512_set1_epi8(0x0F), high, 0xEA), _mm512_set1_epi8(32));
        // Through memory: four widening loads cost less than three lane extracts and four widenings.
        alignas(64) int8_t codes[64];
        _mm512_store_si512(codes, q);
        const size_t group = 8 * c + 4 * static_cast<size_t>(hh);  // of the unit's first 16 values
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            v[k] = _mm512_mul_ps(_mm512_set1_ps(h.ds[group + k]),
                                 _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(codes + 16 * k)))));
    }
};

// The i-quants below 4 bits, Block one of gguf_iq_units.hpp's: each unit's grid values loaded
// from the tables and widened 16 at a time, then x = (dl * grid) * (+-1) (IQ2, IQ3; the -1 by a
// masked multiply, as the reference multiplies) or x = dl * (grid + delta) (IQ1), dl one scale per
// 16 values.
// The 16 grid values of half h of a unit, loaded from the table: two 8-byte entries (vmovq,
// vmovhps) or four 4-byte ones.
template <typename Block>
[[gnu::always_inline]] inline __m128i iq_values_16(const gguf::IqUnit& q, size_t h) {
    if constexpr (Block::kEntryBytes == 8) {
        const __m128i lo = _mm_loadl_epi64(static_cast<const __m128i*>(q.entry[2 * h]));
        return _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(lo), static_cast<const double*>(q.entry[2 * h + 1])));
    } else {
        return _mm_unpacklo_epi64(gguf::iq_entry_pair(q, 4 * h), gguf::iq_entry_pair(q, 4 * h + 2));
    }
}

template <typename Block, bool Iq1>
struct IqGrid {
    static constexpr size_t kValues = 256, kBytes = Block::kBytes, kUnit = 32;
    using Header = gguf::OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {_cvtsh_ss(Block::d_bits(b))}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m512 v[2]) {
        const gguf::IqUnit q = Block::unit(b, u, h.d);
        #pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
            const __m128i bytes = iq_values_16<Block>(q, static_cast<size_t>(half));
            const __m512 grid = _mm512_cvtepi32_ps(Iq1 ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes));
            const __m512 dl = _mm512_set1_ps(q.dl[half]);
            if constexpr (Iq1) {
                // entries 2 half and 2 half + 1: lanes 0-7 and 8-15
                const unsigned neg = (q.signs >> (2 * half)) & 3u;
                const __mmask16 lanes = static_cast<__mmask16>((neg & 1u) * 0x00FFu | (neg >> 1) * 0xFF00u);
                const __m512 delta = _mm512_mask_blend_ps(lanes, _mm512_set1_ps(gguf::kIq1Delta),
                                                          _mm512_set1_ps(-gguf::kIq1Delta));
                v[half] = _mm512_mul_ps(dl, _mm512_add_ps(grid, delta));
            } else {
                const __m512 scaled = _mm512_mul_ps(dl, grid);
                v[half] = _mm512_mask_mul_ps(scaled, static_cast<__mmask16>(q.signs >> (16 * half)), scaled,
                                             _mm512_set1_ps(-1.0f));
            }
        }
    }
};
using Iq2Xxs = IqGrid<gguf::Iq2XxsBlock, false>;
using Iq2Xs = IqGrid<gguf::Iq2XsBlock, false>;
using Iq2S = IqGrid<gguf::Iq2SBlock, false>;
using Iq3Xxs = IqGrid<gguf::Iq3XxsBlock, false>;
using Iq3S = IqGrid<gguf::Iq3SBlock, false>;
using Iq1S = IqGrid<gguf::Iq1SBlock, true>;
using Iq1M = IqGrid<gguf::Iq1MBlock, true>;

template <class F, int O, int R>
void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t n_blocks = w.cols / F::kValues;
    const size_t row_bytes = n_blocks * F::kBytes;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    constexpr size_t kUnits = F::kValues / F::kUnit;
    constexpr size_t kVecs = F::kUnit / 16;
    __m512 a[O][R];
    __m512 b[O][R];
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm512_setzero_ps();
    size_t next_prefetch = 0;  // bytes of the next tile's rows asked for so far
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        for (; next_prefetch < (blk + 1) * F::kBytes && next_prefetch < row_bytes; next_prefetch += 64)
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k) prefetch_l2(data, (o + O + k) * row_bytes + next_prefetch);
        typename F::Header header[O];
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) header[k] = F::header(data + (o + k) * row_bytes + blk * F::kBytes);
        for (size_t u = 0; u < kUnits; ++u) {
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k) {
                __m512 v[kVecs];
                F::unit(data + (o + k) * row_bytes + blk * F::kBytes, header[k], u, v);
                #pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const float* xr = x + r * xs + blk * F::kValues;
                    #pragma GCC unroll 4
                    for (size_t j = 0; j < kVecs; j += 2) {
                        a[k][r] = _mm512_fmadd_ps(v[j], _mm512_loadu_ps(xr + F::kUnit * u + 16 * j), a[k][r]);
                        b[k][r] = _mm512_fmadd_ps(v[j + 1], _mm512_loadu_ps(xr + F::kUnit * u + 16 * (j + 1)), b[k][r]);
                    }
                }
            }
        }
    }
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum16(_mm512_add_ps(a[k][r], b[k][r]));
}

template <class F>
struct Kernel {
    // 8 outputs a lone row's tile for the 32-value blocks; the K-quants' 4-vector units keep 4
    // (tiles512.hpp has the figures).
    static constexpr int kRowOutputs = F::kValues == 32 ? 8 : 4;
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        gguf512::tile<F, O, R>(w, o, x, xs, y, ys);
    }
};

// GGUF's MXFP4 and Q8_0: one accumulator a (output, row) pair, taking a block's first 16 values
// and then its last 16, block after block, as the transformers MXFP4 tile does (matmul_out_in.cpp).
// With one accumulator a pair, a tile of 4 outputs x 4 rows fits the registers with each row's
// values loaded once a block, so prefill decodes each block once for 16 multiply-add pairs, where
// the two-accumulator tiles ran 4 x 2 below 8 rows and F32 panels from 8. One core, 256 x 2048 in
// L2, GB/s at 1 / 4 / 8 / 32 rows, three rounds alternated: MXFP4 24 / 9.0 / 3.8 / 1.08 ->
// 24 / 11.6 / 5.8 / 1.45 (16 outputs a lone row's tile: 8 lost 12%), Q8_0 39 / 17.4 / 7.3 / 2.15 ->
// 38 / 23.9 / 12.0 / 3.0. Q4_0 stays on two accumulators: one lost it 11-16% at 1 row. Not a
// flag on tile above: this loop loads a row's values once a block and decodes each header where
// its unit is used; tile with one accumulator (x read by every output's FMAs, all headers held
// first) ran a lone row at 15-20 GB/s against 24 here.
template <class F, int O, int R>
void tile_one(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    static_assert(F::kValues == 32 && F::kUnit == 32);
    const size_t n_blocks = w.cols / 32;
    const size_t row_bytes = n_blocks * F::kBytes;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    __m512 acc[O][R];
    #pragma GCC unroll 16
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[k][r] = _mm512_setzero_ps();
    size_t next_prefetch = 0;  // bytes of the next tile's rows asked for so far
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        for (; next_prefetch < (blk + 1) * F::kBytes && next_prefetch < row_bytes; next_prefetch += 64)
            #pragma GCC unroll 16
            for (int k = 0; k < O; ++k) prefetch_l2(data, (o + O + k) * row_bytes + next_prefetch);
        __m512 first[R], last[R];
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            first[r] = _mm512_loadu_ps(x + r * xs + blk * 32);
            last[r] = _mm512_loadu_ps(x + r * xs + blk * 32 + 16);
        }
        #pragma GCC unroll 16
        for (int k = 0; k < O; ++k) {
            const uint8_t* b = data + (o + k) * row_bytes + blk * F::kBytes;
            __m512 v[2];
            F::unit(b, F::header(b), 0, v);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[k][r] = _mm512_fmadd_ps(v[0], first[r], acc[k][r]);
                acc[k][r] = _mm512_fmadd_ps(v[1], last[r], acc[k][r]);
            }
        }
    }
    #pragma GCC unroll 16
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum16(acc[k][r]);
}

template <class F, int RowOutputs>
struct KernelOne {
    static constexpr int kRowOutputs = RowOutputs;  // tiles512.hpp
    static constexpr int kQuadOutputs = 4;
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        tile_one<F, O, R>(w, o, x, xs, y, ys);
    }
};

// Prefill: a panel of kPanelOutputs outputs is decoded once into F32 rows, in the order the
// tiles above read the weights (the unit vectors v[0], v[1], ... of every block, one after the
// other), and dense_tile runs every activation row against it. dense_tile adds the first 16
// values of every 32 into accumulator a and the next 16 into b, ascending, and sums a + b as
// the tiles above do, so each (output, row) value has the same bits on either path, whatever
// n_x is; the decode's cost is paid once per call instead of once per row pair. The panel lives
// on the stack (kPanelFloats, 128 KiB, so rows of up to 8192 values): a heap block of that size came from fresh pages,
// zeroed by the kernel, on every call.
constexpr size_t kPanelOutputs = 4;
constexpr size_t kPanelFloats = 32768;
// Rows from which the panel pays (one core, 768 x 2048 from L3, GB/s, tiles -> panels: Q4_K 4 rows
// 5.21 -> 4.14, 8 rows 2.61 -> 2.62, 32 rows 0.67 -> 0.84; Q6_K 6.37 -> 5.63, 3.18 -> 3.68,
// 0.80 -> 1.15). A panel of 4 outputs (32 KiB at 2048 columns) stays in L1, where 16 outputs
// (128 KiB, in L2) made the dense tile wait for L2 and ran slower than the tiles at every count.
constexpr size_t kPanelRows = 8;

template <class F>
void decode_panel(const WeightView& w, size_t o0, size_t n, float* panel) {
    const size_t n_blocks = w.cols / F::kValues;
    const size_t row_bytes = n_blocks * F::kBytes;
    constexpr size_t kUnits = F::kValues / F::kUnit;
    constexpr size_t kVecs = F::kUnit / 16;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    for (size_t k = 0; k < n; ++k) {
        float* out = panel + k * w.cols;
        for (size_t blk = 0; blk < n_blocks; ++blk) {
            const uint8_t* b = data + (o0 + k) * row_bytes + blk * F::kBytes;
            const typename F::Header h = F::header(b);
            #pragma GCC unroll 4
            for (size_t u = 0; u < kUnits; ++u) {
                __m512 v[kVecs];
                F::unit(b, h, u, v);
                #pragma GCC unroll 4
                for (size_t j = 0; j < kVecs; ++j) _mm512_store_ps(out + blk * F::kValues + u * F::kUnit + 16 * j, v[j]);
            }
        }
    }
}

struct PanelKernel {
    static constexpr int kRowOutputs = 4;  // tiles512.hpp
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        dense_tile<Dense::f32, O, R, false>(w, o, x, xs, y, ys);
    }
};

// The tiles for a few rows (or rows too long for a panel), panels for more.
template <class F>
void run(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (n_x < kPanelRows || kPanelOutputs * w.cols > kPanelFloats) {
        drive<Kernel<F>>(w, x, n_x, xs, y, ys, o_begin, o_end);
        return;
    }
    alignas(64) float panel[kPanelFloats];
    for (size_t c0 = o_begin; c0 < o_end; c0 += kPanelOutputs) {
        const size_t n = o_end - c0 < kPanelOutputs ? o_end - c0 : kPanelOutputs;
        decode_panel<F>(w, c0, n, panel);
        WeightView pw;
        pw.format = WeightFormat::F32;
        pw.data = panel;
        pw.rows = n;
        pw.cols = w.cols;
        drive<PanelKernel>(pw, x, n_x, xs, y + c0, ys, 0, n);
    }
}

}  // namespace gguf512
}  // namespace

void matmul_gguf_q8_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    drive<gguf512::KernelOne<gguf512::Q8_0, 8>>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q4_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q4_0>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q4_1_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q4_1>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q5_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q5_0>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q5_1_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q5_1>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq4_nl_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq4Nl>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q2_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q2_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q3_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q3_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq4_xs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq4Xs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq2_xxs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq2Xxs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq2_xs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq2Xs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq2_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq2S>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq3_xxs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq3Xxs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq3_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq3S>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq1_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq1S>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq1_m_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Iq1M>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q4_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    Scratch<float> prepared;  // not std::vector: see scratch.hpp
    gguf512::prepare_q4_k_rows(x, n_x, x_stride, w.cols, prepared);
    gguf512::run<gguf512::Q4_K>(w, prepared.data(), n_x, w.cols, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q5_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q5_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q6_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    gguf512::run<gguf512::Q6_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end) {
    drive<gguf512::KernelOne<gguf512::Mxfp4, 16>>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd::avx512
