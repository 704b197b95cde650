// FP8_E4M3 out_in matrix kernel on 512-bit registers (block-scaled FP8, as DeepSeek-V3, GLM and
// Qwen3's -FP8 checkpoints store it; the reference in host/sdk/reference_kernels/reference_matmul.cpp).
//
// Every weight is the reference's float, bit for bit, decoded without a table by shifting each
// byte onto float's bits: sign-extended to 32 bits and shifted left by 20, E4M3's exponent and
// mantissa land on float's bits 20-26 and its sign on bit 31, so the float is the E4M3 value
// times 2^-120 exactly (E4M3's subnormals on float's subnormals). One multiply by scale * 2^120 is
// then the reference's one rounding of value * scale (the same real product; scale * 2^120 is
// exact below 2^7 in magnitude, and an infinite or NaN scale gives what the reference gives). A
// larger finite scale takes two multiplies, by 2^120 (exact) and by the scale. The bytes 0x7F
// and 0xFF (E4M3's NaN) are made NaN in tiles whose rows hold any.
//
// Measured (one Zen 5 core, matrix x vector, 256 x 2880 in L2, bench-kernels, checkpoint-like
// codes, the builds alternated): 19-27 GB/s against 17-19 through IEEE half (a byte sign-extended
// to 16 bits, shifted by 7 and widened by vcvtph2ps: one more operation, and vcvtph2ps issues at
// about one a cycle where the shift and the mask issue two). Float subnormals cost this core a
// little, not a trap: in a standalone loop, one byte in 8000 at exponent 0 (checkpoints, see
// host/include/stormo/fp8_codes.hpp) ran 40 GB/s, one in 500 31, one in 16 (uniform random bytes) 22,
// against 25-27 through half at any rate. The NaN-code scan before each tile reads its rows once
// more (two max and two or per 128 bytes); without it the tile ran 10-15% faster.
//
// Same contract as every matrix kernel: each (output, row) pair owns one accumulator that takes,
// column block after column block, 16 inputs at a time (a masked step at a block's end), so its
// value depends only on cols and block_cols, never on the tile, the output range or the thread.

#include "avx512_float_kernels.hpp"
#include "fp8_scales.hpp"
#include "simd.hpp"  // prefetch_l2
#include "simd512.hpp"
#include "tiles512.hpp"  // drive

namespace stormo::simd::avx512 {
namespace {

// The decoder's constants, built once a tile.
struct E4m3Constants {
    __m128i high = _mm_set1_epi8(static_cast<char>(0x80));
    __m128i ones = _mm_set1_epi8(static_cast<char>(0xFF));
    __m512 nan = _mm512_set1_ps(__builtin_nanf(""));
    __m512i sign_exponent_mantissa = _mm512_set1_epi32(static_cast<int>(0x87F00000u));  // bits 31, 20-26
};

// 16 E4M3 bytes as floats, each the E4M3 value times 2^-120: sign-extended to 32 bits and shifted
// left by 20, exponent and mantissa land on float's bits 20-26 and the sign on bits 27-31;
// keeping bits 31 and 20-26 leaves the float of that value.
inline __m512 e4m3_times_2_to_minus_120(__m128i bytes, const E4m3Constants& c) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_slli_epi32(_mm512_cvtepi8_epi32(bytes), 20), c.sign_exponent_mantissa));
}

// Whether any of rows [o, o + n) holds an E4M3 NaN byte (0x7F or 0xFF: all of bits 0-6 set), i.e.
// whether the largest byte | 0x80 is 0xFF (max and or: no mask registers in the loop).
bool rows_hold_nan_codes(const uint8_t* data, size_t cols, size_t o, size_t n) {
    const __m512i high = _mm512_set1_epi8(static_cast<char>(0x80));
    const __m512i all_set = _mm512_set1_epi8(static_cast<char>(0xFF));
    __m512i most = _mm512_setzero_si512();
    const uint8_t* p = data + o * cols;
    const size_t bytes = n * cols;
    size_t i = 0;
    for (; i + 128 <= bytes; i += 128)
        most = _mm512_max_epu8(most, _mm512_max_epu8(_mm512_or_si512(_mm512_loadu_si512(p + i), high),
                                                      _mm512_or_si512(_mm512_loadu_si512(p + i + 64), high)));
    for (; i + 64 <= bytes; i += 64) most = _mm512_max_epu8(most, _mm512_or_si512(_mm512_loadu_si512(p + i), high));
    __mmask64 found = _mm512_cmpeq_epi8_mask(most, all_set);
    if (i < bytes) {
        const __mmask64 tail = (uint64_t{1} << (bytes - i)) - 1;  // bytes - i < 64
        found |= _mm512_mask_cmpeq_epi8_mask(tail, _mm512_or_si512(_mm512_maskz_loadu_epi8(tail, p + i), high), all_set);
    }
    return found != 0;
}

// The 16 weights of `bytes`: (decoded * first) [* second], the bracket only with two multiplies.
template <bool TwoMultiplies, bool NanCodes>
inline __m512 fp8_weights(__m128i bytes, __m512 first, __m512 second, const E4m3Constants& c) {
    __m512 w = _mm512_mul_ps(e4m3_times_2_to_minus_120(bytes, c), first);
    if constexpr (TwoMultiplies) w = _mm512_mul_ps(w, second);
    if constexpr (NanCodes) w = _mm512_mask_mov_ps(w, _mm_cmpeq_epi8_mask(_mm_or_si128(bytes, c.high), c.ones), c.nan);
    return w;
}

template <int O, int R, bool TwoMultiplies, bool NanCodes>
void fp8_tile_as(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t cols = w.cols;
    const size_t bc = w.block_cols;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    const E4m3Constants c;
    __m512 acc[O][R];
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[k][r] = _mm512_setzero_ps();
    for (size_t c0 = 0, g = 0; c0 < cols; c0 += bc, ++g) {
        const size_t c1 = c0 + bc < cols ? c0 + bc : cols;
        __m512 first[O], second[O];
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const float scale = fp8_scale(w, o + k, g);
            first[k] = _mm512_set1_ps(TwoMultiplies ? kFp8Unscale : scale * kFp8Unscale);
            second[k] = _mm512_set1_ps(scale);
        }
        size_t i = c0;
        for (; i + 16 <= c1; i += 16) {
            if ((i - c0) % 64 == 0)
                #pragma GCC unroll 8
                for (int k = 0; k < O; ++k) prefetch_l2(data, (o + O + k) * cols + i);
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k) {
                const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + (o + k) * cols + i));
                const __m512 wv = fp8_weights<TwoMultiplies, NanCodes>(bytes, first[k], second[k], c);
                #pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[k][r] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + r * xs + i), acc[k][r]);
            }
        }
        if (i < c1) {
            // The lanes past the block are +0 in the weights too: 0 * an infinite scale is NaN.
            const __mmask16 valid = first16(c1 - i);
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k) {
                const __m128i bytes = _mm_maskz_loadu_epi8(valid, data + (o + k) * cols + i);
                const __m512 wv =
                    _mm512_maskz_mov_ps(valid, fp8_weights<TwoMultiplies, NanCodes>(bytes, first[k], second[k], c));
                #pragma GCC unroll 8
                for (int r = 0; r < R; ++r)
                    acc[k][r] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(valid, x + r * xs + i), acc[k][r]);
            }
        }
    }
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum16(acc[k][r]);
}

template <int O, int R>
void fp8_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    with_fp8_route(fp8_rows_need_two_multiplies(w, o, O), rows_hold_nan_codes(static_cast<const uint8_t*>(w.data), w.cols, o, O),
                   [&](auto two_multiplies, auto nan_codes) {
                       fp8_tile_as<O, R, decltype(two_multiplies)::value, decltype(nan_codes)::value>(w, o, x, xs, y, ys);
                   });
}

struct Fp8Kernel {
    static constexpr int kRowOutputs = 8;  // tiles512.hpp
    static constexpr int kQuadOutputs = 4;
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        fp8_tile<O, R>(w, o, x, xs, y, ys);
    }
};

}  // namespace

void matmul_fp8_e4m3_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                            size_t y_stride, size_t o_begin, size_t o_end) {
    drive<Fp8Kernel>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd::avx512
