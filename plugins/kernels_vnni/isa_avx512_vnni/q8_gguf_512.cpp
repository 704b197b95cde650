// GGUF's 32-value block formats (Q8_0, Q4_0, MXFP4) x int8 on 512-bit vpdpbusd: quads512.hpp's
// kernel, four blocks a register, one per 128-bit lane. A GGUF block keeps its scale inside
// (17, 18 or 34 bytes), so a quad is four 16-byte loads put into lanes rather than one load, and
// the eight weight scales of a group are gathered from their blocks. The 256-bit kernels of
// q8_gguf.hpp handle two blocks a register and spend most of their time on horizontal sums and
// scalar scale conversions, which this shape amortises over four blocks. From three rows on, the
// lane tiles of block_lanes512.hpp.
//
// In a GGUF block, elements 0-15 sit in the low nibbles (Q4_0, MXFP4) or first 16 bytes (Q8_0)
// and elements 16-31 in the high nibbles or last 16 bytes, so activations split into halves.
// Unsigned weights: the nibble (Q4_0, offset 8), doubled E2M1 + 12 (MXFP4, offset 12), the int8
// + 128 (Q8_0, offset 128; vpdpbusd has no int16 stage to saturate). Bit-exact against
// host/sdk/reference_kernels/reference_q8_gguf.cpp: the reference's float steps, lane for lane.
#include "avx512_intrinsics.hpp"

#include "int8_kernels.hpp"
#include "block_lanes512.hpp"

namespace stormo::simd {
namespace avx512 {
namespace {
namespace q8w {

// The first and second 16 activations of a block.
[[gnu::always_inline]] inline void halves(const int8_t* q, __m128i& low, __m128i& high) {
    low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
}

// Four 16-byte pieces at p, p + stride, ... into the lanes of a register; pieces past count are
// zero and never read (the last block of a matrix may end the buffer).
[[gnu::always_inline]] inline __m512i lanes4(const uint8_t* p, size_t stride, size_t count) {
    __m128i l[4];
#pragma GCC unroll 4
    for (size_t k = 0; k < 4; ++k)
        l[k] = k < count ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k * stride)) : _mm_setzero_si128();
    const __m512i lo = _mm512_castsi256_si512(_mm256_set_m128i(l[1], l[0]));
    return _mm512_inserti64x4(lo, _mm256_set_m128i(l[3], l[2]), 1);
}

// f16 scales of n (1-8) blocks at stride bytes (1.0 in the lanes past n): exact conversions. Built
// in two 64-bit registers rather than stored to memory and reloaded, which would stall on store
// forwarding once per group.
[[gnu::always_inline]] inline __m256 f16_scales(const uint8_t* p, size_t stride, size_t n) {
    uint64_t half[2] = {0x3C003C003C003C00ull, 0x3C003C003C003C00ull};
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
        if (k >= n) break;
        uint16_t v;
        __builtin_memcpy(&v, p + k * stride, 2);
        const unsigned shift = 16 * (k % 4);
        half[k / 4] = (half[k / 4] & ~(uint64_t{0xFFFF} << shift)) | (uint64_t{v} << shift);
    }
    return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(half[1]), static_cast<long long>(half[0])));
}

// A full group's 8 scales without a scalar loop: 16-bit words of the 128 bytes at p picked by
// vpermw, word w[k] into word position k (2k when spread, the low word of dword lane k); the
// other positions take word 0. The indices are constants once inlined.
[[gnu::always_inline]] inline __m512i pick_words(const uint8_t* p, const int16_t (&w)[8], bool spread) {
    alignas(64) int16_t idx[32] = {};
    for (int k = 0; k < 8; ++k) idx[spread ? 2 * k : k] = w[k];
    return _mm512_permutex2var_epi16(_mm512_loadu_si512(p), _mm512_load_si512(idx), _mm512_loadu_si512(p + 64));
}

// A GGUF format's blocks as quads512.hpp's weight layout. B gives kBytes, kOffset, scales8 and
// quad (the unsigned weights of up to 4 blocks from p).
template <class B>
struct GgufWeights {
    const uint8_t* data;
    size_t row_bytes;

    static constexpr int32_t kOffset = B::kOffset;
    [[gnu::always_inline]] static void split(const int8_t* q, __m128i& low, __m128i& high) { halves(q, low, high); }
    [[gnu::always_inline]] const uint8_t* block(size_t o, size_t b) const { return data + o * row_bytes + b * B::kBytes; }
    [[gnu::always_inline]] void quad(size_t o, size_t b0, size_t count, __m512i& low, __m512i& high) const {
        B::quad(block(o, b0), count, low, high);
    }
    [[gnu::always_inline]] bool plain(size_t, size_t) const { return false; }
    template <bool>
    [[gnu::always_inline]] __m256 scales(size_t o, size_t b0, size_t n) const {
        return B::scales8(block(o, b0), n);
    }
    [[gnu::always_inline]] void prefetch(size_t o, size_t b0) const {
        const char* p = reinterpret_cast<const char*>(block(o, b0));
        for (size_t off = 0; off < 8 * B::kBytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
    }
};

// Q4_0 and MXFP4: the 16 nibble bytes at kQs, low nibbles elements 0-15.
template <size_t Bytes, size_t Qs, int32_t Offset, bool Lut>
struct Nibbles {
    static constexpr size_t kBytes = Bytes;
    static constexpr int32_t kOffset = Offset;
    [[gnu::always_inline]] static void quad(const uint8_t* p, size_t count, __m512i& low, __m512i& high) {
        const __m512i v = lanes4(p + Qs, Bytes, count);
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        low = _mm512_and_si512(v, low4);
        high = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        if constexpr (Lut) {
            // Doubled E2M1 + 12 (ggml's table: code 8 is +0), per 128-bit lane.
            const __m512i lut = _mm512_broadcast_i32x4(
                _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
            low = _mm512_shuffle_epi8(lut, low);
            high = _mm512_shuffle_epi8(lut, high);
        }
    }
};

struct Q4_0 : Nibbles<18, 2, 8, false> {
    [[gnu::always_inline]] static __m256 scales8(const uint8_t* p, size_t n) {
        if (n < 8) return f16_scales(p, kBytes, n);
        // The f16 d of block k is word 9k of the group (144 bytes; the 8th at bytes 126-127).
        return _mm256_cvtph_ps(_mm512_castsi512_si128(pick_words(p, {0, 9, 18, 27, 36, 45, 54, 63}, false)));
    }
};

struct Mxfp4 : Nibbles<17, 1, 12, true> {
    // 2^(e - 128) as gguf::e8m0_half builds it, 8 at a time (e = 255 is 2^127).
    [[gnu::always_inline]] static __m256 half_scales(__m256i e) {
        const __m256i one = _mm256_set1_epi32(1);
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, one), 23);
        const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        return _mm256_castsi256_ps(_mm256_mask_blend_epi32(_mm256_cmpgt_epi32_mask(e, one), tiny, normal));
    }
    [[gnu::always_inline]] static __m256 scales8(const uint8_t* p, size_t n) {
        if (n == 8) {
            // Block k's E8M0 byte is byte 17k of the group: the low (even k) or high byte of word
            // 17k / 2, which lands in the low word of dword lane k.
            const __m256i words = _mm512_castsi512_si256(pick_words(p, {0, 8, 17, 25, 34, 42, 51, 59}, true));
            const __m256i e = _mm256_and_si256(_mm256_srlv_epi32(words, _mm256_setr_epi32(0, 8, 0, 8, 0, 8, 0, 8)),
                                               _mm256_set1_epi32(0xFF));
            return half_scales(e);
        }
        uint64_t bytes = 0x7F7F7F7F7F7F7F7Full;  // 127 past n: a finite scale for the padding lanes
        for (size_t k = 0; k < n; ++k)
            bytes = (bytes & ~(uint64_t{0xFF} << (8 * k))) | (uint64_t{p[k * kBytes]} << (8 * k));
        return half_scales(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes))));
    }
};

// Q8_0: f16 d, then 32 int8; u = w + 128 (the bytes with their top bit flipped).
struct Q8_0 {
    static constexpr size_t kBytes = 34;
    static constexpr int32_t kOffset = 128;
    [[gnu::always_inline]] static void quad(const uint8_t* p, size_t count, __m512i& low, __m512i& high) {
        const __m512i flip = _mm512_set1_epi8(-128);
        low = _mm512_xor_si512(lanes4(p + 2, kBytes, count), flip);
        high = _mm512_xor_si512(lanes4(p + 18, kBytes, count), flip);
    }
    [[gnu::always_inline]] static __m256 scales8(const uint8_t* p, size_t n) {
        if (n < 8) return f16_scales(p, kBytes, n);
        // The f16 d of block k is word 17k from the group's start: blocks 0-3 from its first 128
        // bytes, blocks 4-7 from block 4's.
        const __m512i first = pick_words(p, {0, 17, 34, 51, 0, 0, 0, 0}, false);
        const __m512i second = pick_words(p + 4 * kBytes, {0, 0, 0, 0, 0, 17, 34, 51}, false);
        return _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_mask_blend_epi16(0xF0, first, second)));
    }
};

// Activations quantized for another block size (the reference's q8_rows_fit): NaN, loudly.
bool fits(const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.block == kQ8Block) return true;
    for (size_t o = o_begin; o < o_end; ++o)
        for (size_t r = 0; r < x.n_x; ++r) y[r * ys + o] = __builtin_nanf("");
    return false;
}

template <class B>
void run_gguf(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (!fits(x, y, ys, o_begin, o_end)) return;
    const size_t nb = w.cols / 32;
    const GgufWeights<B> weights{static_cast<const uint8_t*>(w.data), nb * B::kBytes};
    run_by_rows(weights, nb, x, y, ys, o_begin, o_end);
}

}  // namespace q8w
}  // namespace
}  // namespace avx512

void matmul_q8_gguf_q8_0_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    avx512::q8w::run_gguf<avx512::q8w::Q8_0>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q4_0_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    avx512::q8w::run_gguf<avx512::q8w::Q4_0>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_mxfp4_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                      size_t o_end) {
    avx512::q8w::run_gguf<avx512::q8w::Mxfp4>(w, x, y, ys, o_begin, o_end);
}

}  // namespace stormo::simd
