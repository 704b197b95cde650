#pragma once
// GGUF block formats decoded in registers, 32 values (a "unit": a Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL or MXFP4 block, a Q4_K, Q5_K, IQ4_XS or lower i-quant sub-block, two Q2_K, Q3_K or Q6_K scale groups) at a time,
// into four 8-float vectors in element order.
// A block's scales are decoded once into its Header (F::header), then each unit reads them
// (F::unit), so a tile of several rows pays for the scale unpacking once per block and output.
// Each value is the reference's (host/sdk/reference_kernels/gguf_dequant.cpp) bit for bit: the same float
// operations in the same order, a multiply and a subtract never fused (the including files are
// compiled with -ffp-contract=off). Internal linkage, as every helper of the ISA files.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "gguf_iq_units.hpp"  // the i-quants' grid values, signs and scales
#include "gguf_scales.hpp"  // gguf::e8m0_half, gguf::scales_mins_k4

namespace stormo::simd {
namespace {
namespace gguf {

[[gnu::always_inline]] inline float f16(const uint8_t* p) {
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
    return _cvtsh_ss(v);
}

// scales_mins_k4 in a vector register, from the block's first 16 bytes (d, dmin, the 12 packed
// bytes q0..q11 at 4..15): bytes 0-7 the scales, 8-15 the mins. Scales and mins 0-3 are the low six
// bits of q0-3 and q4-7; scales 4-7 the low nibbles of q8-11 and mins 4-7 their high nibbles, each
// with the top two bits of q0-3 (q4-7) as bits 4-5. Ten instructions where the scalar unpacking
// took about thirty with its moves between register files.
[[gnu::always_inline]] inline __m128i scales_mins_k4_vec(const uint8_t* b) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    const char z = static_cast<char>(0x80);  // pshufb: a zero byte
    // [q0-3 | q8-11 | q4-7 | q8-11] and the top bits' sources [0 | q0-3 | 0 | q4-7]
    const __m128i low = _mm_shuffle_epi8(v, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m128i top = _mm_shuffle_epi8(v, _mm_setr_epi8(z, z, z, z, 4, 5, 6, 7, z, z, z, z, 8, 9, 10, 11));
    const __m128i low_bits = _mm_setr_epi8(0x3F, 0x3F, 0x3F, 0x3F, 0x0F, 0x0F, 0x0F, 0x0F, 0x3F, 0x3F, 0x3F, 0x3F, 0, 0, 0, 0);
    const __m128i high_nibbles = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0F, 0x0F, 0x0F, 0x0F);
    // 16-bit shifts: the bits a byte takes from its neighbour are masked off.
    const __m128i parts = _mm_or_si128(_mm_and_si128(low, low_bits), _mm_and_si128(_mm_srli_epi16(low, 4), high_nibbles));
    return _mm_or_si128(parts, _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30)));
}

// 32 unsigned (Unsigned) or signed bytes to four 8-float vectors, exactly.
template <bool Unsigned>
[[gnu::always_inline]] inline void bytes_to_ps(__m256i v, __m256 out[4]) {
    const __m128i lo = _mm256_castsi256_si128(v);
    const __m128i hi = _mm256_extracti128_si256(v, 1);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int k = 0; k < 4; ++k)
        out[k] = _mm256_cvtepi32_ps(Unsigned ? _mm256_cvtepu8_epi32(parts[k]) : _mm256_cvtepi8_epi32(parts[k]));
}

// 16 bytes of nibbles as 32 bytes in element order: low nibbles (elements 0-15), then high.
[[gnu::always_inline]] inline __m256i nibbles_32(const uint8_t* qs) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

[[gnu::always_inline]] inline void scale_all(__m256 w[4], float d) {
    const __m256 s = _mm256_set1_ps(d);
    for (int k = 0; k < 4; ++k) w[k] = _mm256_mul_ps(w[k], s);
}

// Q8_0, Q4_0 and MXFP4 carry one scale per 32-value block.
struct OneScale {
    float d;
};

// Q8_0: x = q * d.
struct Q8_0 {
    static constexpr size_t kValues = 32, kBytes = 34;
    using Header = OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {f16(b)}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        bytes_to_ps<false>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)), w);
        scale_all(w, h.d);
    }
};

// Q4_0: x = d * (q - 8).
struct Q4_0 {
    static constexpr size_t kValues = 32, kBytes = 18;
    using Header = OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {f16(b)}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        bytes_to_ps<false>(_mm256_sub_epi8(nibbles_32(b + 2), _mm256_set1_epi8(8)), w);
        scale_all(w, h.d);
    }
};

// GGUF's MXFP4: x = 2^(e - 128) * doubled E2M1.
struct Mxfp4 {
    static constexpr size_t kValues = 32, kBytes = 17;
    using Header = OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {e8m0_half(b[0])}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        const __m256i lut = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                             0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
        bytes_to_ps<false>(_mm256_shuffle_epi8(lut, nibbles_32(b + 1)), w);
        scale_all(w, h.d);
    }
};

// Q4_K (FifthBit false) and Q5_K: sub-block s, x = (d * sc) * q - dmin * m.
template <bool FifthBit>
struct K45 {
    static constexpr size_t kValues = 256, kBytes = FifthBit ? 176 : 144;
    struct Header {
        float ds[8];
        float dm[8];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        uint8_t sc[8], m[8];
        scales_mins_k4(b, sc, m);
        const float d = f16(b), dmin = f16(b + 2);
        Header h;
        for (int s = 0; s < 8; ++s) {
            h.ds[s] = d * static_cast<float>(sc[s]);
            h.dm[s] = dmin * static_cast<float>(m[s]);
        }
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t s, __m256 w[4]) {
        const uint8_t* qs = b + (FifthBit ? 48 : 16) + 32 * (s / 2);
        __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
        q = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(static_cast<int>(4 * (s % 2)))), _mm256_set1_epi8(0x0F));
        if constexpr (FifthBit) {
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
            const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(static_cast<int>(s))), _mm256_set1_epi8(1));
            q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
        }
        bytes_to_ps<true>(q, w);
        const __m256 ds = _mm256_set1_ps(h.ds[s]);
        const __m256 dm = _mm256_set1_ps(h.dm[s]);
        // One rounding where the reference has two: its product d * sc * q is exact (an f16 d has
        // 11 significant bits, sc < 64, q < 32: at most 22 bits), so only the subtraction rounds
        // (one core, 256 x 2048 in L2: Q4_K 5.95 -> 6.77 GB/s, Q5_K 6.1 -> 7.0).
        for (int k = 0; k < 4; ++k) w[k] = _mm256_fmsub_ps(ds, w[k], dm);
    }
};
using Q4_K = K45<false>;
using Q5_K = K45<true>;

// Q6_K: unit u = 32 values of half c = u / 4, group g = u % 4; x = (d * scale[i / 16]) * (q - 32).
struct Q6_K {
    static constexpr size_t kValues = 256, kBytes = 210;
    struct Header {
        float ds[16];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const float d = f16(b + 208);
        const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
        Header h;
        for (int g = 0; g < 16; ++g) h.ds[g] = d * static_cast<float>(scales[g]);
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m256 w[4]) {
        const size_t c = u / 4, g = u % 4;
        const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c + 32 * (g % 2)));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c));
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(static_cast<int>(4 * (g / 2)))),
                                             _mm256_set1_epi8(0x0F));
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(static_cast<int>(2 * g))),
                                              _mm256_set1_epi8(0x03));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
        bytes_to_ps<false>(q, w);
        const __m256 d0 = _mm256_set1_ps(h.ds[2 * u]);
        const __m256 d1 = _mm256_set1_ps(h.ds[2 * u + 1]);
        w[0] = _mm256_mul_ps(d0, w[0]);
        w[1] = _mm256_mul_ps(d0, w[1]);
        w[2] = _mm256_mul_ps(d1, w[2]);
        w[3] = _mm256_mul_ps(d1, w[3]);
    }
};

// The 32 bits of the little-endian u32 at p as 32 bytes in element order, 0x10 where a bit is set
// (Q5_0's and Q5_1's fifth bits, in place): byte j tests bit j % 8 of byte j / 8.
[[gnu::always_inline]] inline __m256i fifth_bits_32(const uint8_t* p) {
    uint32_t bits;
    __builtin_memcpy(&bits, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                               _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                                2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// ggml's kvalues_iq4nl in both 128-bit lanes, for pshufb.
[[gnu::always_inline]] inline __m256i iq4nl_lut() {
    return _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
                            -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

// IQ4_NL: x = d * kvalues_iq4nl[q], the levels looked up as MXFP4's.
struct Iq4Nl {
    static constexpr size_t kValues = 32, kBytes = 18;
    using Header = OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {f16(b)}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        bytes_to_ps<false>(_mm256_shuffle_epi8(iq4nl_lut(), nibbles_32(b + 2)), w);
        scale_all(w, h.d);
    }
};

// IQ4_XS: f16 d, u16 of high scale bits, 4 bytes of low scale nibbles, then 8 sub-blocks of 32 as
// IQ4_NL's nibbles; unit u is sub-block u, x = (d * (sc - 32)) * kvalues_iq4nl[q].
struct Iq4Xs {
    static constexpr size_t kValues = 256, kBytes = 136;
    struct Header {
        float dl[8];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const float d = f16(b);
        Header h;
        for (int j = 0; j < 8; ++j) h.dl[j] = d * static_cast<float>(iq4_xs_scale(b, j));
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m256 w[4]) {
        bytes_to_ps<false>(_mm256_shuffle_epi8(iq4nl_lut(), nibbles_32(b + 8 + 16 * u)), w);
        scale_all(w, h.dl[u]);
    }
};

// Q4_1 and Q5_1 carry a scale and an offset per 32-value block.
struct ScaleOffset {
    float d;
    float m;
};

// x = d * q + m. One rounding where the reference has two: d * q is exact (an f16 d has 11
// significant bits, q < 32), so only the addition rounds.
[[gnu::always_inline]] inline void scale_offset_all(__m256 w[4], const ScaleOffset& h) {
    const __m256 d = _mm256_set1_ps(h.d), m = _mm256_set1_ps(h.m);
    for (int k = 0; k < 4; ++k) w[k] = _mm256_fmadd_ps(d, w[k], m);
}

// Q4_1: f16 d, f16 m, nibbles as Q4_0's; x = d * q + m.
struct Q4_1 {
    static constexpr size_t kValues = 32, kBytes = 20;
    using Header = ScaleOffset;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {f16(b), f16(b + 2)}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        bytes_to_ps<true>(nibbles_32(b + 4), w);
        scale_offset_all(w, h);
    }
};

// Q5_0: f16 d, 4 bytes of fifth bits, nibbles; x = d * (q - 16).
struct Q5_0 {
    static constexpr size_t kValues = 32, kBytes = 22;
    using Header = OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {f16(b)}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        const __m256i q = _mm256_or_si256(nibbles_32(b + 6), fifth_bits_32(b + 2));
        bytes_to_ps<false>(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), w);
        scale_all(w, h.d);
    }
};

// Q5_1: f16 d, f16 m, 4 bytes of fifth bits, nibbles; x = d * q + m.
struct Q5_1 {
    static constexpr size_t kValues = 32, kBytes = 24;
    using Header = ScaleOffset;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {f16(b), f16(b + 2)}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t, __m256 w[4]) {
        bytes_to_ps<true>(_mm256_or_si256(nibbles_32(b + 8), fifth_bits_32(b + 4)), w);
        scale_offset_all(w, h);
    }
};

// Two bits of each byte of the 32 at p, shifted down by `shift`: a 32-value group of Q2_K's or
// Q3_K's codes.
[[gnu::always_inline]] inline __m256i two_bits_32(const uint8_t* p, size_t shift) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(static_cast<int>(shift))), _mm256_set1_epi8(0x03));
}

// Unit u = 32 values of half c = u / 4, group s = u % 4, scales 2u and 2u + 1 (16 values each).
// Q2_K: 16 bytes of scale | min << 4, 64 bytes of codes, f16 d, f16 dmin; x = (d * sc) * q - dmin * m,
// one rounding where the reference has two, as Q4_K's: (d * sc) * q is exact (at most 17 bits).
struct Q2_K {
    static constexpr size_t kValues = 256, kBytes = 84;
    struct Header {
        float dl[16];
        float ml[16];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const float d = f16(b + 80), dmin = f16(b + 82);
        Header h;
        for (int k = 0; k < 16; ++k) {
            h.dl[k] = d * static_cast<float>(b[k] & 0x0F);
            h.ml[k] = dmin * static_cast<float>(b[k] >> 4);
        }
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m256 w[4]) {
        bytes_to_ps<true>(two_bits_32(b + 16 + 32 * (u / 4), 2 * (u % 4)), w);
        for (int k = 0; k < 4; ++k)
            w[k] = _mm256_fmsub_ps(_mm256_set1_ps(h.dl[2 * u + k / 2]), w[k], _mm256_set1_ps(h.ml[2 * u + k / 2]));
    }
};

// Q3_K: 32 bytes of high-bit masks, 64 of codes, 12 of scales, f16 d. Unit u as Q2_K's; its values
// lose 4 where bit u of their hmask byte is 0; x = (d * (sc - 32)) * q, q in [-4, 3].
struct Q3_K {
    static constexpr size_t kValues = 256, kBytes = 110;
    struct Header {
        float dl[16];
    };
    [[gnu::always_inline]] static Header header(const uint8_t* b) {
        const float d = f16(b + 108);
        const uint8_t* s = b + 96;
        Header h;
        for (int k = 0; k < 16; ++k) {
            const int low = (s[k % 8] >> (4 * (k / 8))) & 0x0F;
            const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 0x03;
            h.dl[k] = d * static_cast<float>((low | high << 4) - 32);
        }
        return h;
    }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m256 w[4]) {
        const __m256i low = two_bits_32(b + 32 + 32 * (u / 4), 2 * (u % 4));
        const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(mask, _mm_cvtsi32_si128(static_cast<int>(u))), _mm256_set1_epi8(1));
        bytes_to_ps<false>(_mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 2)), _mm256_set1_epi8(4)), w);
        for (int k = 0; k < 4; ++k) w[k] = _mm256_mul_ps(_mm256_set1_ps(h.dl[2 * u + k / 2]), w[k]);
    }
};

// +1.0 or -1.0 in each of 8 lanes, -1.0 where bit j of `bits` is set.
[[gnu::always_inline]] inline __m256 signs_8(uint32_t bits) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), bit), bit);
    return _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(-1.0f), _mm256_castsi256_ps(set));
}

// +-1/8 as float bits, the sign bit 0 of `negative` (no branch: the signs are random).
[[gnu::always_inline]] inline uint32_t iq1_delta_bits(uint32_t negative) {
    return __builtin_bit_cast(uint32_t, kIq1Delta) | (negative & 1u) << 31;
}

// Grid entries e and e + 1 (4 bytes each, IQ3) in the low 8 bytes of a register.
[[gnu::always_inline]] inline __m128i iq_entry_pair(const IqUnit& q, size_t e) {
    uint32_t a, b;
    __builtin_memcpy(&a, q.entry[e], 4);
    __builtin_memcpy(&b, q.entry[e + 1], 4);
    return _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(a)), static_cast<int>(b), 1);
}

// The 8 grid values k of a unit (8 to 15, ...) in the low 8 bytes of a register: an 8-byte entry
// loaded from its table, or two 4-byte ones.
template <typename Block>
[[gnu::always_inline]] inline __m128i iq_values_8(const IqUnit& q, size_t k) {
    if constexpr (Block::kEntryBytes == 8) return _mm_loadl_epi64(static_cast<const __m128i*>(q.entry[k]));
    else return iq_entry_pair(q, 2 * k);
}

// The i-quants below 4 bits, Block one of gguf_iq_units.hpp's: each 8 values' grid bytes loaded
// from the table and widened, then x = (dl * grid) * (+-1) (IQ2, IQ3) or x = dl * (grid + delta)
// (IQ1), dl one scale per 16 values.
template <typename Block, bool Iq1>
struct IqGrid {
    static constexpr size_t kValues = 256, kBytes = Block::kBytes;
    using Header = OneScale;
    [[gnu::always_inline]] static Header header(const uint8_t* b) { return {_cvtsh_ss(Block::d_bits(b))}; }
    [[gnu::always_inline]] static void unit(const uint8_t* b, const Header& h, size_t u, __m256 w[4]) {
        const IqUnit q = Block::unit(b, u, h.d);
        for (int k = 0; k < 4; ++k) {
            const __m128i bytes = iq_values_8<Block>(q, static_cast<size_t>(k));
            const __m256 grid = _mm256_cvtepi32_ps(Iq1 ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes));
            const __m256 dl = _mm256_set1_ps(q.dl[k / 2]);
            if constexpr (Iq1) {
                const __m256 delta = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(iq1_delta_bits(q.signs >> k))));
                w[k] = _mm256_mul_ps(dl, _mm256_add_ps(grid, delta));
            } else {
                w[k] = _mm256_mul_ps(_mm256_mul_ps(dl, grid), signs_8(q.signs >> (8 * k)));
            }
        }
    }
};
using Iq2Xxs = IqGrid<Iq2XxsBlock, false>;
using Iq2Xs = IqGrid<Iq2XsBlock, false>;
using Iq2S = IqGrid<Iq2SBlock, false>;
using Iq3Xxs = IqGrid<Iq3XxsBlock, false>;
using Iq3S = IqGrid<Iq3SBlock, false>;
using Iq1S = IqGrid<Iq1SBlock, true>;
using Iq1M = IqGrid<Iq1MBlock, true>;

}  // namespace gguf
}  // namespace
}  // namespace stormo::simd
