// FP8_E4M3 out_in matrix kernel on 256-bit registers (block-scaled FP8, as DeepSeek-V3, GLM and
// Qwen3's -FP8 checkpoints store it; the reference in host/sdk/reference_kernels/reference_matmul.cpp).
//
// Every weight is the reference's float, bit for bit, decoded without a table by shifting each
// byte onto float's bits, as the 512-bit kernel does (kernels_vnni/isa_avx512_float/
// matmul_fp8_512.cpp says why that route): the float is the E4M3 value times 2^-120, and one
// multiply by scale * 2^120 is the reference's one rounding of value * scale (exact below 2^7 in
// magnitude; two multiplies above). The bytes 0x7F and 0xFF (E4M3's NaN) are made NaN in tiles
// whose rows hold any. Through IEEE half instead (sign-extend to 16 bits, shift by 7, clear bit
// 14, vcvtph2ps) this kernel ran 10.5-11.6 GB/s a core in L2 on this Zen 5, shifted 15.6. On a
// CPU that traps float subnormal inputs to microcode, a checkpoint's rare exponent-0 bytes (one
// in several thousand) would cost more there: not measurable here.
//
// Same contract as every matrix kernel: within each column block a pair's accumulators a and b
// take 8 inputs each in turn (a the first 8 of every 16, b the next), a last 8 into a and a
// partial step into b; the value is the fixed-order sum of a + b. It depends only on cols and
// block_cols, never on the tile, the output range or the thread.

#include "float_kernels.hpp"
#include "fp8_scales.hpp"
#include "out_in_tiles.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

// 8 E4M3 bytes as floats, each the E4M3 value times 2^-120: sign-extended to 32 bits and shifted
// left by 20, exponent and mantissa land on float's bits 20-26 and the sign on bits 27-31;
// keeping bits 31 and 20-26 leaves the float of that value (E4M3's subnormals on float's).
inline __m128i e4m3_bytes(const uint8_t* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }
inline __m128i e4m3_bytes(const uint8_t* p, size_t n) {  // the first n (< 8), zeros after
    uint8_t tmp[8] = {};
    __builtin_memcpy(tmp, p, n);
    return e4m3_bytes(tmp);
}
inline __m256 e4m3_times_2_to_minus_120(__m128i bytes) {
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(_mm256_cvtepi8_epi32(bytes), 20),
                                                 _mm256_set1_epi32(static_cast<int>(0x87F00000u))));
}

// The weights: decoded * first (* second with two multiplies), NaN where the byte is 0x7F or 0xFF.
template <bool TwoMultiplies, bool NanCodes>
inline __m256 fp8_weights(__m128i bytes, __m256 first, __m256 second) {
    __m256 v = _mm256_mul_ps(e4m3_times_2_to_minus_120(bytes), first);
    if constexpr (TwoMultiplies) v = _mm256_mul_ps(v, second);
    if constexpr (NanCodes) {
        const __m128i all_low_bits = _mm_cmpeq_epi8(_mm_or_si128(bytes, _mm_set1_epi8(static_cast<char>(0x80))),
                                                    _mm_set1_epi8(static_cast<char>(0xFF)));
        v = _mm256_blendv_ps(v, _mm256_set1_ps(__builtin_nanf("")), _mm256_castsi256_ps(_mm256_cvtepi8_epi32(all_low_bits)));
    }
    return v;
}

// Whether any of rows [o, o + n) holds an E4M3 NaN byte.
bool rows_hold_nan_codes(const uint8_t* data, size_t cols, size_t o, size_t n) {
    const __m256i high = _mm256_set1_epi8(static_cast<char>(0x80));
    const __m256i ones = _mm256_set1_epi8(static_cast<char>(0xFF));
    const uint8_t* p = data + o * cols;
    const size_t bytes = n * cols;
    int found = 0;
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
        found |= _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_or_si256(v, high), ones));
    }
    for (; i < bytes; ++i) found |= (p[i] & 0x7F) == 0x7F;
    return found != 0;
}

template <int O, int R, bool TwoMultiplies, bool NanCodes>
void fp8_tile_as(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t cols = w.cols;
    const size_t bc = w.block_cols;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    __m256 a[O][R];
    __m256 b[O][R];
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm256_setzero_ps();
    for (size_t c0 = 0, g = 0; c0 < cols; c0 += bc, ++g) {
        const size_t c1 = c0 + bc < cols ? c0 + bc : cols;
        __m256 first[O], second[O];
        for (int k = 0; k < O; ++k) {
            const float scale = fp8_scale(w, o + k, g);
            first[k] = _mm256_set1_ps(TwoMultiplies ? kFp8Unscale : scale * kFp8Unscale);
            second[k] = _mm256_set1_ps(scale);
        }
        size_t i = c0;
        for (; i + 16 <= c1; i += 16) {
            if ((i - c0) % 64 == 0)
                for (int k = 0; k < O; ++k) prefetch_l2(data, (o + O + k) * cols + i);
            for (int k = 0; k < O; ++k) {
                const uint8_t* p = data + (o + k) * cols + i;
                const __m256 w0 = fp8_weights<TwoMultiplies, NanCodes>(e4m3_bytes(p), first[k], second[k]);
                const __m256 w1 = fp8_weights<TwoMultiplies, NanCodes>(e4m3_bytes(p + 8), first[k], second[k]);
                for (int r = 0; r < R; ++r) {
                    a[k][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * xs + i), a[k][r]);
                    b[k][r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * xs + i + 8), b[k][r]);
                }
            }
        }
        if (i + 8 <= c1) {
            for (int k = 0; k < O; ++k) {
                const __m256 w0 = fp8_weights<TwoMultiplies, NanCodes>(e4m3_bytes(data + (o + k) * cols + i), first[k], second[k]);
                for (int r = 0; r < R; ++r) a[k][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * xs + i), a[k][r]);
            }
            i += 8;
        }
        if (i < c1) {
            const size_t n = c1 - i;
            const __m256i mask = first_lanes(n);
            for (int k = 0; k < O; ++k) {
                // Lanes past the block are +0, whatever the scale (0 * an infinite scale is NaN).
                const __m256 w1 = _mm256_and_ps(fp8_weights<TwoMultiplies, NanCodes>(e4m3_bytes(data + (o + k) * cols + i, n), first[k], second[k]),
                                                _mm256_castsi256_ps(mask));
                for (int r = 0; r < R; ++r)
                    b[k][r] = _mm256_fmadd_ps(w1, _mm256_maskload_ps(x + r * xs + i, mask), b[k][r]);
            }
        }
    }
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum(_mm256_add_ps(a[k][r], b[k][r]));
}

template <int O, int R>
void fp8_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    with_fp8_route(fp8_rows_need_two_multiplies(w, o, O), rows_hold_nan_codes(static_cast<const uint8_t*>(w.data), w.cols, o, O),
                   [&](auto two_multiplies, auto nan_codes) {
                       fp8_tile_as<O, R, decltype(two_multiplies)::value, decltype(nan_codes)::value>(w, o, x, xs, y, ys);
                   });
}

struct Fp8Kernel {
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

}  // namespace stormo::simd
