// Row decoders (embedding lookups): exact widening, bit-identical to the reference, -0 included.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

template <Dense F>
void widen_row(const WeightView& w, size_t row, float* out) {
    const size_t base = row * w.cols;
    size_t i = 0;
    for (; i + 8 <= w.cols; i += 8) _mm256_storeu_ps(out + i, load8<F>(w.data, base + i));
    for (; i < w.cols; ++i) out[i] = load1<F>(w.data, base + i);
}

// Eight decoded values with the sign taken from nibble bit 3, so code 8 gives -0 as in the
// reference (the doubled-integer table cannot hold a negative zero).
__m256 signed_values(__m128i doubled, __m128i codes, __m256 scale) {
    const __m256 magnitude = _mm256_mul_ps(int8x8_to_ps(doubled), scale);
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(_mm256_cvtepu8_epi32(codes), 28),
                                          _mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm256_or_ps(magnitude, _mm256_castsi256_ps(sign));
}

}  // namespace

void row_bf16(const WeightView& w, size_t row, float* out) { widen_row<Dense::bf16>(w, row, out); }

void row_f16(const WeightView& w, size_t row, float* out) { widen_row<Dense::f16>(w, row, out); }

void row_mxfp4(const WeightView& w, size_t row, float* out) {
    const size_t n_blocks = w.cols / 32;
    const uint8_t* blocks = static_cast<const uint8_t*>(w.data) + row * n_blocks * 16;
    const uint8_t* scales = w.scales + row * n_blocks;
    for (size_t b = 0; b < n_blocks; ++b) {
        __m128i first;
        __m128i last;
        mxfp4_nibbles(blocks + b * 16, first, last);
        const __m128i first_values = e2m1_doubled(first);
        const __m128i last_values = e2m1_doubled(last);
        const __m256 scale = half_scale(scales[b]);
        float* dst = out + b * 32;
        _mm256_storeu_ps(dst, signed_values(first_values, first, scale));
        _mm256_storeu_ps(dst + 8, signed_values(_mm_srli_si128(first_values, 8), _mm_srli_si128(first, 8), scale));
        _mm256_storeu_ps(dst + 16, signed_values(last_values, last, scale));
        _mm256_storeu_ps(dst + 24, signed_values(_mm_srli_si128(last_values, 8), _mm_srli_si128(last, 8), scale));
    }
}

}  // namespace stormo::simd
