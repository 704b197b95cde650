// Vector kernels: dot, axpy (and their many-row forms for attention) and rmsnorm. Sums use four
// 8-lane accumulators (32 values a step), then one 8-value step and one masked step, reduced in a
// fixed order; axpy is one fused multiply-add per element.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

// The eight lane sums of a[i] * b[i] in the order above, before the final horizontal sum.
__m256 lane_sums(const float* a, const float* b, size_t n) {
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
    return _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
}

// sum_i a[i] * b[i] in the lane order above; sum of squares when a == b.
float lane_dot(const float* a, const float* b, size_t n) { return hsum(lane_sums(a, b, n)); }

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

namespace {

// lane_sums of a against two rows at once: each row keeps its own four accumulators and the same
// operations (so the same bits), and the loads of a serve both. Two rows in lockstep fill the
// sixteen registers AVX2 has; one row at a time left each row's chain of dependent additions
// exposed (about 17 cycles a score for 64 values).
[[gnu::always_inline]] inline void lane_sums2(const float* a, const float* b0, const float* b1, size_t n,
                                              __m256& out0, __m256& out1) {
    __m256 x0 = _mm256_setzero_ps(), x1 = _mm256_setzero_ps(), x2 = _mm256_setzero_ps(), x3 = _mm256_setzero_ps();
    __m256 y0 = _mm256_setzero_ps(), y1 = _mm256_setzero_ps(), y2 = _mm256_setzero_ps(), y3 = _mm256_setzero_ps();
    size_t i = 0;
    #pragma GCC unroll 4
    for (; i + 32 <= n; i += 32) {
        const __m256 a0 = _mm256_loadu_ps(a + i), a1 = _mm256_loadu_ps(a + i + 8);
        const __m256 a2 = _mm256_loadu_ps(a + i + 16), a3 = _mm256_loadu_ps(a + i + 24);
        x0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b0 + i), x0);
        y0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b1 + i), y0);
        x1 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b0 + i + 8), x1);
        y1 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b1 + i + 8), y1);
        x2 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b0 + i + 16), x2);
        y2 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b1 + i + 16), y2);
        x3 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b0 + i + 24), x3);
        y3 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b1 + i + 24), y3);
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 a0 = _mm256_loadu_ps(a + i);
        x0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b0 + i), x0);
        y0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b1 + i), y0);
    }
    if (i < n) {
        const __m256i mask = first_lanes(n - i);
        const __m256 am = _mm256_maskload_ps(a + i, mask);
        x1 = _mm256_fmadd_ps(am, _mm256_maskload_ps(b0 + i, mask), x1);
        y1 = _mm256_fmadd_ps(am, _mm256_maskload_ps(b1 + i, mask), y1);
    }
    out0 = _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3));
    out1 = _mm256_add_ps(_mm256_add_ps(y0, y1), _mm256_add_ps(y2, y3));
}

}  // namespace

// Each score is lane_dot's, so the bits are dot's: eight rows at a time, two in lockstep
// (lane_sums2), their final horizontal sums done together (hsum8), every query of the group
// against those rows while they sit in L1.
namespace {

// N: the head size when the caller's is one of the common ones (the loops then unroll fully), else 0.
template <size_t N>
void dot_many_rows(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
                   size_t n, float* scores, size_t scores_stride) {
    if constexpr (N > 0) n = N;
    size_t j = 0;
    for (; j + 8 <= n_rows; j += 8) {
        const float* r = rows + j * row_stride;
        for (size_t a = 0; a < n_q; ++a) {
            const float* qa = q + a * q_stride;
            __m256 sums[8];
            #pragma GCC unroll 4
            for (size_t k = 0; k < 8; k += 2)
                lane_sums2(qa, r + k * row_stride, r + (k + 1) * row_stride, n, sums[k], sums[k + 1]);
            _mm256_storeu_ps(scores + a * scores_stride + j, hsum8(sums));
        }
    }
    for (; j < n_rows; ++j)
        for (size_t a = 0; a < n_q; ++a)
            scores[a * scores_stride + j] = lane_dot(q + a * q_stride, rows + j * row_stride, n);
}

}  // namespace

void dot_many(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
              size_t n, float* scores, size_t scores_stride) {
    if (n == 64) return dot_many_rows<64>(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
    if (n == 128) return dot_many_rows<128>(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
    dot_many_rows<0>(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
}

namespace {

// y[0, 8 * V) += w[j] * row_j for the rows in order, y held in registers: per element the fused
// multiply-adds axpy makes, in the same order.
template <int V>
void axpy_rows_block(const float* w, const float* rows, size_t n_rows, size_t row_stride, float* y) {
    __m256 acc[V];
    #pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[v] = _mm256_loadu_ps(y + 8 * v);
    for (size_t j = 0; j < n_rows; ++j) {
        const __m256 s = _mm256_set1_ps(w[j]);
        const float* row = rows + j * row_stride;
        #pragma GCC unroll 8
        for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_ps(s, _mm256_loadu_ps(row + 8 * v), acc[v]);
    }
    #pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(y + 8 * v, acc[v]);
}

}  // namespace

// Rows in blocks of 16, every output through a block before the next, so a block (4 KiB at 64
// values) stays in L1 while the group's outputs read it: a long run of values read once per
// output came from L2 and took about two and a half times as long.
void axpy_many(const float* weights, size_t n_y, size_t weights_stride, const float* rows, size_t n_rows,
               size_t row_stride, size_t n, float* y, size_t y_stride) {
    constexpr size_t kRowBlock = 16;
    for (size_t j0 = 0; j0 < n_rows; j0 += kRowBlock) {
        const size_t count = n_rows - j0 < kRowBlock ? n_rows - j0 : kRowBlock;
        const float* block = rows + j0 * row_stride;
        for (size_t a = 0; a < n_y; ++a) {
            const float* w = weights + a * weights_stride + j0;
            float* ya = y + a * y_stride;
            size_t i = 0;
            for (; i + 64 <= n; i += 64) axpy_rows_block<8>(w, block + i, count, row_stride, ya + i);
            for (; i + 8 <= n; i += 8) axpy_rows_block<1>(w, block + i, count, row_stride, ya + i);
            if (i < n) {
                const __m256i mask = first_lanes(n - i);
                __m256 acc = _mm256_maskload_ps(ya + i, mask);
                for (size_t j = 0; j < count; ++j)
                    acc = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), _mm256_maskload_ps(block + j * row_stride + i, mask), acc);
                _mm256_maskstore_ps(ya + i, mask, acc);
            }
        }
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
