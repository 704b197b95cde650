// Softmax with a vector exp. Attention calls it once per head and query over every visible key,
// so at long contexts a scalar exp dominates a decode step's attention time.
//
// exp(x) = 2^n * exp(r) with n = round(x * log2(e)) and r = x - n * ln 2 (ln 2 split in two so the
// reduction is exact), exp(r) by a degree-7 polynomial (Cephes' expf): about 1 ulp from libm's expf
// over the range softmax uses (x <= 0 after the max is subtracted). Inputs below -87.3 give 0,
// as expf does; -inf (a masked score) gives 0; NaN gives NaN.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

__m256 exp8(__m256 x) {
    const __m256 lowest = _mm256_set1_ps(-87.33654f);  // below: expf underflows to (almost) 0
    const __m256 underflow = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
    // MINPS and MAXPS return their second operand when either is NaN: with x second, a NaN score
    // stays NaN through the clamp, the polynomial and the sum, as expf and the reference keep it.
    x = _mm256_max_ps(lowest, _mm256_min_ps(_mm256_set1_ps(88.3762626647949f), x));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i bias = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(bias, 23));
    return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, scale));
}

}  // namespace

// The reference's steps (max; exp(x - max) with the ascending sum; division by the sum), with the
// max and the sum taken over 8 lanes and reduced in a fixed order.
void softmax(float* x, size_t n) {
    if (n == 0) return;
    const size_t full = n / 8 * 8;
    const size_t tail = n - full;
    const __m256i mask = first_lanes(tail);
    const __m256 minus_inf = _mm256_set1_ps(-__builtin_inff());
    __m256 vmax = minus_inf;
    for (size_t i = 0; i < full; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    if (tail) vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(x + full, mask), _mm256_castsi256_ps(mask)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const __m256 max = _mm256_set1_ps(_mm_cvtss_f32(m));

    __m256 sum = _mm256_setzero_ps();
    for (size_t i = 0; i < full; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), max));
        _mm256_storeu_ps(x + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (tail) {
        const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_maskload_ps(x + full, mask), max)), _mm256_castsi256_ps(mask));
        _mm256_maskstore_ps(x + full, mask, e);
        sum = _mm256_add_ps(sum, e);
    }
    const __m256 total = _mm256_set1_ps(hsum(sum));
    for (size_t i = 0; i < full; i += 8) _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), total));
    if (tail) _mm256_maskstore_ps(x + full, mask, _mm256_div_ps(_mm256_maskload_ps(x + full, mask), total));
}

}  // namespace stormo::simd
