// Attention's many-row kernels (dot_many, axpy_many) on 512-bit registers, bit for bit the avx2
// dot and axpy that the vnni plugin installs beside them.
//
// dot keeps four 8-lane accumulators over each 32 values (acc0 takes values 0-7 of every 32,
// acc1 8-15, acc2 16-23, acc3 24-31) and returns hsum((acc0 + acc1) + (acc2 + acc3)). Two
// 16-lane accumulators hold [acc0 | acc1] and [acc2 | acc3] exactly, with half the multiply-adds
// and loads; a head size that is not a multiple of 32 (dot's 8-value and masked steps) takes the
// avx2 loop. axpy is one fused multiply-add per element, whatever the vector width.

#include "avx512_float_kernels.hpp"
#include "float_kernels.hpp"  // the avx2 dot_many, for head sizes that are not a multiple of 32
#include "simd.hpp"           // hsum, hsum8
#include "simd512.hpp"

namespace stormo::simd::avx512 {
namespace {

// dot's 8-lane vector (acc0 + acc1) + (acc2 + acc3) for n a multiple of 32.
[[gnu::always_inline]] inline __m256 lane_sums(const float* a, const float* b, size_t n) {
    __m512 z01 = _mm512_setzero_ps(), z23 = _mm512_setzero_ps();
    #pragma GCC unroll 4
    for (size_t i = 0; i < n; i += 32) {
        z01 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), z01);
        z23 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), z23);
    }
    // [acc0 | acc2] + [acc1 | acc3], then the two halves.
    const __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm512_castps512_ps256(s),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
}

// N: the head size when it is one of the common ones (the loops unroll fully), else 0.
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
            #pragma GCC unroll 8
            for (size_t k = 0; k < 8; ++k) sums[k] = lane_sums(qa, r + k * row_stride, n);
            _mm256_storeu_ps(scores + a * scores_stride + j, hsum8(sums));
        }
    }
    for (; j < n_rows; ++j)
        for (size_t a = 0; a < n_q; ++a)
            scores[a * scores_stride + j] = hsum(lane_sums(q + a * q_stride, rows + j * row_stride, n));
}

// y[0, 16 * V) += w[j] * row_j over the rows in order, y held in registers.
template <int V>
void axpy_rows_block(const float* w, const float* rows, size_t n_rows, size_t row_stride, float* y) {
    __m512 acc[V];
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[v] = _mm512_loadu_ps(y + 16 * v);
    for (size_t j = 0; j < n_rows; ++j) {
        const __m512 s = _mm512_set1_ps(w[j]);
        const float* row = rows + j * row_stride;
        #pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[v] = _mm512_fmadd_ps(s, _mm512_loadu_ps(row + 16 * v), acc[v]);
    }
    #pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(y + 16 * v, acc[v]);
}

}  // namespace

void dot_many(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
              size_t n, float* scores, size_t scores_stride) {
    if (n == 64) return dot_many_rows<64>(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
    if (n == 128) return dot_many_rows<128>(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
    if (n > 0 && n % 32 == 0)
        return dot_many_rows<0>(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
    stormo::simd::dot_many(q, n_q, q_stride, rows, n_rows, row_stride, n, scores, scores_stride);
}

// Rows in blocks of 16, every output through a block before the next (the block stays in L1).
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
            for (; i + 64 <= n; i += 64) axpy_rows_block<4>(w, block + i, count, row_stride, ya + i);
            for (; i + 16 <= n; i += 16) axpy_rows_block<1>(w, block + i, count, row_stride, ya + i);
            if (i < n) {
                const __mmask16 m = first16(n - i);
                __m512 acc = _mm512_maskz_loadu_ps(m, ya + i);
                for (size_t j = 0; j < count; ++j)
                    acc = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), _mm512_maskz_loadu_ps(m, block + j * row_stride + i), acc);
                _mm512_mask_storeu_ps(ya + i, m, acc);
            }
        }
    }
}

}  // namespace stormo::simd::avx512
