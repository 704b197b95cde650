#pragma once
// GGUF block formats decoded in registers, 32 values (a "unit": a Q8_0/Q4_0/MXFP4 block, a Q4_K or
// Q5_K sub-block, two Q6_K scale groups) at a time, into four 8-float vectors in element order.
// Each value is the reference's (host/sdk/kernels/gguf_dequant.cpp) bit for bit: the same float
// operations in the same order, a multiply and a subtract never fused (the including files are
// compiled with -ffp-contract=off). Internal linkage, as every helper of the ISA files.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace stormo::simd {
namespace {
namespace gguf {

inline float f16(const uint8_t* p) {
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
    return _cvtsh_ss(v);
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

// Q8_0: x = q * d.
struct Q8_0 {
    static constexpr size_t kValues = 32, kBytes = 34;
    [[gnu::always_inline]] static void unit(const uint8_t* b, size_t, __m256 w[4]) {
        bytes_to_ps<false>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)), w);
        scale_all(w, f16(b));
    }
};

// Q4_0: x = d * (q - 8).
struct Q4_0 {
    static constexpr size_t kValues = 32, kBytes = 18;
    [[gnu::always_inline]] static void unit(const uint8_t* b, size_t, __m256 w[4]) {
        bytes_to_ps<false>(_mm256_sub_epi8(nibbles_32(b + 2), _mm256_set1_epi8(8)), w);
        scale_all(w, f16(b));
    }
};

// GGUF's MXFP4: x = 2^(e - 128) * doubled E2M1 (ggml_e8m0_to_fp32_half: e = 255 is 2^127).
struct Mxfp4 {
    static constexpr size_t kValues = 32, kBytes = 17;
    [[gnu::always_inline]] static void unit(const uint8_t* b, size_t, __m256 w[4]) {
        const __m256i lut = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                             0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
        bytes_to_ps<false>(_mm256_shuffle_epi8(lut, nibbles_32(b + 1)), w);
        const uint32_t e = b[0];
        const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : (e - 1u) << 23;
        scale_all(w, __builtin_bit_cast(float, bits));
    }
};

// Q4_K / Q5_K sub-block s's 6-bit scale and min (ggml's get_scale_min_k4 on the 12 bytes at b + 4).
[[gnu::always_inline]] inline void scale_min_k4(const uint8_t* b, size_t s, uint8_t& sc, uint8_t& m) {
    const uint8_t* p = b + 4;
    if (s < 4) {
        sc = p[s] & 0x3F;
        m = p[s + 4] & 0x3F;
    } else {
        sc = static_cast<uint8_t>((p[s + 4] & 0x0F) | ((p[s - 4] >> 6) << 4));
        m = static_cast<uint8_t>((p[s + 4] >> 4) | ((p[s] >> 6) << 4));
    }
}

// Q4_K (FifthBit false) and Q5_K: sub-block s, x = (d * sc) * q - dmin * m.
template <bool FifthBit>
struct K45 {
    static constexpr size_t kValues = 256, kBytes = FifthBit ? 176 : 144;
    [[gnu::always_inline]] static void unit(const uint8_t* b, size_t s, __m256 w[4]) {
        const uint8_t* qs = b + (FifthBit ? 48 : 16) + 32 * (s / 2);
        __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
        q = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(static_cast<int>(4 * (s % 2)))), _mm256_set1_epi8(0x0F));
        if constexpr (FifthBit) {
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
            const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(static_cast<int>(s))), _mm256_set1_epi8(1));
            q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
        }
        bytes_to_ps<true>(q, w);
        uint8_t sc, m;
        scale_min_k4(b, s, sc, m);
        const __m256 ds = _mm256_set1_ps(f16(b) * static_cast<float>(sc));
        const __m256 dm = _mm256_set1_ps(f16(b + 2) * static_cast<float>(m));
        for (int k = 0; k < 4; ++k) w[k] = _mm256_sub_ps(_mm256_mul_ps(ds, w[k]), dm);
    }
};
using Q4_K = K45<false>;
using Q5_K = K45<true>;

// Q6_K: unit u = 32 values of half c = u / 4, group g = u % 4; x = (d * scale[i / 16]) * (q - 32).
struct Q6_K {
    static constexpr size_t kValues = 256, kBytes = 210;
    [[gnu::always_inline]] static void unit(const uint8_t* b, size_t u, __m256 w[4]) {
        const size_t c = u / 4, g = u % 4;
        const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c + 32 * (g % 2)));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c));
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(static_cast<int>(4 * (g / 2)))),
                                             _mm256_set1_epi8(0x0F));
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(static_cast<int>(2 * g))),
                                              _mm256_set1_epi8(0x03));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
        bytes_to_ps<false>(q, w);
        const float d = f16(b + 208);
        const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192) + 8 * c + 2 * g;
        const __m256 d0 = _mm256_set1_ps(d * static_cast<float>(scales[0]));
        const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(scales[1]));
        w[0] = _mm256_mul_ps(d0, w[0]);
        w[1] = _mm256_mul_ps(d0, w[1]);
        w[2] = _mm256_mul_ps(d1, w[2]);
        w[3] = _mm256_mul_ps(d1, w[3]);
    }
};

}  // namespace gguf
}  // namespace
}  // namespace stormo::simd
