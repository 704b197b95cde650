#pragma once
// Helpers shared by the ISA files (compiled with the plugin's SIMD flags only). Everything here
// sits in an unnamed namespace, so each ISA file gets its own private copy and no AVX2-compiled
// function can be picked by the linker for code built for the baseline (inline functions are COMDAT: one copy wins).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace stormo::simd {
namespace {

enum class Dense { f32, bf16, f16 };

// Input rows per block for matrix kernels: about 256 KiB of x, so a block stays in L2 while every
// output of the range reads it; a multiple of `group` (the kernel's row-group size) unless n_x is
// smaller.
inline size_t input_row_block(size_t cols, size_t n_x, size_t group = 4) {
    const size_t rows = (size_t{256} << 10) / (cols * sizeof(float) + 1);
    const size_t rounded = rows < group ? group : rows - rows % group;
    return rounded < n_x ? rounded : n_x;
}

template <Dense F>
constexpr size_t dense_bytes() {
    return F == Dense::f32 ? 4 : 2;
}

// Asks for the cache line at base + byte_offset in L2, ahead of its use. Matrix kernels fetch
// the rows of their next tile while they compute the current one: each tile starts new
// streams, which the hardware prefetcher would only pick up after a few misses, and a decode
// step is bound by how many misses a core keeps in flight. A prefetch never faults, so an
// address past the matrix's end (the last tile's "next") is harmless.
inline void prefetch_l2(const void* base, size_t byte_offset) {
    _mm_prefetch(static_cast<const char*>(base) + byte_offset, _MM_HINT_T1);
}

// Sum of the 8 lanes in one fixed order: halves, then pairs, then the last two.
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// hsum of eight vectors at once, lane k of the result hsum(v[k]) bit for bit: the same additions
// (halves, then lanes 0 + 2 and 1 + 3, then the last two) on transposed registers.
inline __m256 hsum8(const __m256 (&v)[8]) {
    __m256 halves[4];
    for (int k = 0; k < 4; ++k)
        halves[k] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x20),
                                  _mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x31));
    // halves[k] = [h(v[2k]) | h(v[2k+1])], h(x)_i = x_i + x_{i+4}; then h_0 + h_2 and h_1 + h_3:
    const __m256 p01 = _mm256_add_ps(_mm256_unpacklo_ps(halves[0], halves[1]), _mm256_unpackhi_ps(halves[0], halves[1]));
    const __m256 p23 = _mm256_add_ps(_mm256_unpacklo_ps(halves[2], halves[3]), _mm256_unpackhi_ps(halves[2], halves[3]));
    // p01 = [s0(v0), s0(v2), s1(v0), s1(v2) | s0(v1), s0(v3), s1(v1), s1(v3)], likewise p23 for v4..v7.
    const __m256 sums = _mm256_add_ps(_mm256_shuffle_ps(p01, p23, _MM_SHUFFLE(1, 0, 1, 0)),
                                      _mm256_shuffle_ps(p01, p23, _MM_SHUFFLE(3, 2, 3, 2)));
    // sums = [t0, t2, t4, t6 | t1, t3, t5, t7]
    return _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// All-ones in the first n lanes (n < 8), for masked loads and stores.
inline __m256i first_lanes(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline __m256 bf16x8(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

inline __m256 f16x8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 consecutive weights of a dense format, widened exactly to float.
template <Dense F>
inline __m256 load8(const void* base, size_t k) {
    if constexpr (F == Dense::f32) return _mm256_loadu_ps(static_cast<const float*>(base) + k);
    else if constexpr (F == Dense::bf16) return bf16x8(static_cast<const uint16_t*>(base) + k);
    else return f16x8(static_cast<const uint16_t*>(base) + k);
}

// The first n (< 8) weights from k, zeros after; never reads past element k + n.
template <Dense F>
inline __m256 load_partial(const void* base, size_t k, size_t n) {
    if constexpr (F == Dense::f32) {
        return _mm256_maskload_ps(static_cast<const float*>(base) + k, first_lanes(n));
    } else {
        uint16_t tmp[8] = {};
        __builtin_memcpy(tmp, static_cast<const uint16_t*>(base) + k, n * sizeof(uint16_t));
        return F == Dense::bf16 ? bf16x8(tmp) : f16x8(tmp);
    }
}

// One weight, for scalar tails that must match a vector lane bit for bit.
template <Dense F>
inline float load1(const void* base, size_t k) {
    if constexpr (F == Dense::f32) {
        return static_cast<const float*>(base)[k];
    } else if constexpr (F == Dense::bf16) {
        const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[k]) << 16;
        return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(bits))));
    } else {
        return _cvtsh_ss(static_cast<const uint16_t*>(base)[k]);
    }
}

// MXFP4. The nibble table holds twice each E2M1 value, so every entry is an integer (int8) and
// the block scale becomes 2^(s-128); integer * power of two is the exact decoded value, rounded
// once exactly like the reference's value * 2^(s-127).
inline __m128i e2m1_doubled_lut() {
    return _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}

// 2^(s-128) as float bits: normal for s >= 2, the subnormals 2^-127 and 2^-128 below, NaN for
// the E8M0 NaN encoding 255.
inline __m256 half_scale(uint8_t s) {
    uint32_t bits = 0;
    if (s == 255) bits = 0x7FC00000u;
    else if (s >= 2) bits = static_cast<uint32_t>(s - 1) << 23;
    else bits = 0x00200000u << s;
    return _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(bits)));
}

// 2^(s-128) for every scale byte, as half_scale builds it, for a broadcast from memory.
struct HalfScaleTable {
    float value[256];
};
constexpr HalfScaleTable make_half_scales() {
    HalfScaleTable t{};
    for (unsigned s = 0; s < 256; ++s) {
        uint32_t bits = 0;
        if (s == 255) bits = 0x7FC00000u;
        else if (s >= 2) bits = (s - 1) << 23;
        else bits = 0x00200000u << s;
        t.value[s] = __builtin_bit_cast(float, bits);
    }
    return t;
}
constexpr HalfScaleTable kHalfScales = make_half_scales();
// From this scale byte on, a doubled E2M1 integer times 2^(s-128) can reach 2^128 (infinity).
constexpr uint8_t kFirstOverflowScale = 253;

// The 32 nibble codes of one block in element order (low nibble first), as two 16-byte halves.
inline void mxfp4_nibbles(const uint8_t* block, __m128i& first16, __m128i& last16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m128i even = _mm_and_si128(bytes, low4);
    const __m128i odd = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
    first16 = _mm_unpacklo_epi8(even, odd);
    last16 = _mm_unpackhi_epi8(even, odd);
}

// Sixteen codes to their doubled E2M1 integers.
inline __m128i e2m1_doubled(__m128i codes) { return _mm_shuffle_epi8(e2m1_doubled_lut(), codes); }

inline __m256 int8x8_to_ps(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }

// Decodes one block into w[0..3] (elements 0-7, 8-15, 16-23, 24-31). Code 8 (-0) decodes to +0
// here: harmless in a matmul (a zero product adds nothing either way), fixed where rows are
// decoded for output.
inline void mxfp4_block(const uint8_t* block, __m256 scale, __m256 w[4]) {
    __m128i first;
    __m128i last;
    mxfp4_nibbles(block, first, last);
    const __m128i a = e2m1_doubled(first);
    const __m128i b = e2m1_doubled(last);
    w[0] = _mm256_mul_ps(int8x8_to_ps(a), scale);
    w[1] = _mm256_mul_ps(int8x8_to_ps(_mm_srli_si128(a, 8)), scale);
    w[2] = _mm256_mul_ps(int8x8_to_ps(b), scale);
    w[3] = _mm256_mul_ps(int8x8_to_ps(_mm_srli_si128(b, 8)), scale);
}

}  // namespace
}  // namespace stormo::simd
