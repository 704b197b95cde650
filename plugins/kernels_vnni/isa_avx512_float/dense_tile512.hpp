#pragma once
// The 512-bit float tile over dense rows (F32, BF16, F16), shared by the dense matmuls
// (matmul_out_in.cpp) and by the GGUF kernels' prefill panels (matmul_gguf_512.cpp), which decode
// a few outputs' blocks once into F32 rows and run this tile over every activation row. Unnamed
// namespace, as every ISA helper (simd512.hpp says why).
#include <cstddef>

#include "simd.hpp"  // Dense, dense_bytes, prefetch_l2
#include "simd512.hpp"
#include "stormo/kernels.hpp"

namespace stormo::simd::avx512 {
namespace {

template <Dense F>
inline __m512 load16(const void* base, size_t k) {
    if constexpr (F == Dense::f32) return _mm512_loadu_ps(static_cast<const float*>(base) + k);
    else if constexpr (F == Dense::bf16) return bf16x16(static_cast<const uint16_t*>(base) + k);
    else return f16x16(static_cast<const uint16_t*>(base) + k);
}

template <Dense F>
inline __m512 load_partial(const void* base, size_t k, __mmask16 m) {
    if constexpr (F == Dense::f32) return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + k);
    else if constexpr (F == Dense::bf16) return bf16x16(static_cast<const uint16_t*>(base) + k, m);
    else return f16x16(static_cast<const uint16_t*>(base) + k, m);
}

// Dense formats (any cols): 32 inputs per step into accumulators a and b, then one 16-input step
// into a, then a masked partial step into b; the pair's value is the fixed-order sum of a + b.
// Prefetch: ask for the next tile's rows in L2 (off for rows already in L1, a prefill panel's).
template <Dense F, int O, int R, bool Prefetch = true>
void dense_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t cols = w.cols;
    constexpr size_t kBytes = dense_bytes<F>();
    __m512 a[O][R];
    __m512 b[O][R];
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        if constexpr (Prefetch)
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k)
                for (size_t line = 0; line < 32 * kBytes; line += 64)
                    prefetch_l2(w.data, ((o + O + k) * cols + i) * kBytes + line);
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const size_t base = (o + k) * cols + i;
            const __m512 w0 = load16<F>(w.data, base);
            const __m512 w1 = load16<F>(w.data, base + 16);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                a[k][r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + r * xs + i), a[k][r]);
                b[k][r] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + r * xs + i + 16), b[k][r]);
            }
        }
    }
    if (i + 16 <= cols) {
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const __m512 w0 = load16<F>(w.data, (o + k) * cols + i);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r) a[k][r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + r * xs + i), a[k][r]);
        }
        i += 16;
    }
    if (i < cols) {
        const __mmask16 m = first16(cols - i);
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const __m512 w1 = load_partial<F>(w.data, (o + k) * cols + i, m);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                b[k][r] = _mm512_fmadd_ps(w1, _mm512_maskz_loadu_ps(m, x + r * xs + i), b[k][r]);
        }
    }
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum16(_mm512_add_ps(a[k][r], b[k][r]));
}

}  // namespace
}  // namespace stormo::simd::avx512
