// Vector kernels: dot, axpy and rmsnorm. Sums use four 8-lane accumulators (32 values a step),
// then one 8-value step and one masked step, reduced in a fixed order; axpy is one fused
// multiply-add per element.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

// sum_i a[i] * b[i] in the lane order above; sum of squares when a == b.
float lane_dot(const float* a, const float* b, size_t n) {
    __m256 acc0 = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps();
    __m256 acc3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    if (i < n) {
        const __m256i mask = first_lanes(n - i);
        acc1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, mask), _mm256_maskload_ps(b + i, mask), acc1);
    }
    return hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
}

}  // namespace

float dot(const float* a, const float* b, size_t n) { return lane_dot(a, b, n); }

void axpy(float a, const float* x, float* y, size_t n) {
    const __m256 av = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) {
        const __m256i mask = first_lanes(n - i);
        const __m256 r = _mm256_fmadd_ps(av, _mm256_maskload_ps(x + i, mask), _mm256_maskload_ps(y + i, mask));
        _mm256_maskstore_ps(y + i, mask, r);
    }
}

// The reference's order after the sum: variance = sum / n, inv = 1 / sqrt(variance + eps),
// out = weight * (x * inv); only the sum of squares is ordered differently.
void rmsnorm(const float* x, const float* weight, size_t n, float eps, float* out) {
    if (n == 0) return;
    const float variance = lane_dot(x, x, n) / static_cast<float>(n);
    const float root = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(variance + eps)));
    const float inv = 1.0f / root;
    const __m256 iv = _mm256_set1_ps(inv);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 h = _mm256_mul_ps(_mm256_loadu_ps(x + i), iv);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(weight + i), h));
    }
    if (i < n) {
        const __m256i mask = first_lanes(n - i);
        const __m256 h = _mm256_mul_ps(_mm256_maskload_ps(x + i, mask), iv);
        _mm256_maskstore_ps(out + i, mask, _mm256_mul_ps(_mm256_maskload_ps(weight + i, mask), h));
    }
}

}  // namespace stormo::simd
