// out_in matrix kernels: W[o, i] at element o * cols + i. Work is cut into tiles of O outputs x R
// input rows (O * R <= 4) sharing weight and input loads; every (output, row) pair owns its
// accumulators and sees the same operations in the same order in every tile shape, so its value
// does not depend on n_x, on the output range, or on which tile computed it. While a tile runs,
// the rows of the next tile are prefetched into L2 (simd.hpp, prefetch_l2): that took matrix x
// vector from 12 to 18-20 GB/s of BF16 weights on one Zen 4 core.

#include "float_kernels.hpp"
#include "out_in_tiles.hpp"
#include "scratch.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

// Dense formats (any cols): 16 inputs per step into accumulators a and b, then one 8-input step
// into a, then a masked partial step into b.
template <Dense F, int O, int R>
void dense_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t cols = w.cols;
    __m256 a[O][R];
    __m256 b[O][R];
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm256_setzero_ps();
    size_t i = 0;
    constexpr size_t kLine = 64 / dense_bytes<F>();  // elements per cache line
    for (; i + 16 <= cols; i += 16) {
        if (i % kLine == 0)
            for (int k = 0; k < O; ++k) prefetch_l2(w.data, ((o + O + k) * cols + i) * dense_bytes<F>());
        for (int k = 0; k < O; ++k) {
            const size_t base = (o + k) * cols + i;
            const __m256 w0 = load8<F>(w.data, base);
            const __m256 w1 = load8<F>(w.data, base + 8);
            for (int r = 0; r < R; ++r) {
                a[k][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * xs + i), a[k][r]);
                b[k][r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * xs + i + 8), b[k][r]);
            }
        }
    }
    if (i + 8 <= cols) {
        for (int k = 0; k < O; ++k) {
            const __m256 w0 = load8<F>(w.data, (o + k) * cols + i);
            for (int r = 0; r < R; ++r)
                a[k][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * xs + i), a[k][r]);
        }
        i += 8;
    }
    if (i < cols) {
        const size_t n = cols - i;
        const __m256i mask = first_lanes(n);
        for (int k = 0; k < O; ++k) {
            const __m256 w1 = load_partial<F>(w.data, (o + k) * cols + i, n);
            for (int r = 0; r < R; ++r)
                b[k][r] = _mm256_fmadd_ps(w1, _mm256_maskload_ps(x + r * xs + i, mask), b[k][r]);
        }
    }
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum(_mm256_add_ps(a[k][r], b[k][r]));
}

// MXFP4 (cols a multiple of 32). The activations arrive rearranged per block as [16 even | 16 odd]
// elements (prepare_mxfp4_rows), the order a block's low and high nibbles come in, so the weights
// need no interleaving. Per (output, row) and block: the 32 doubled-E2M1 integers times x summed
// in a block accumulator (a multiply, then fused multiply-adds for elements 8-15, 16-23, 24-31),
// then one fused multiply-add by the block's 2^(s-128) into the row's accumulator. Scaling the
// block's sum once instead of every weight saves three multiplies per block; blocks whose scale
// byte is 253 or more (some decoded values overflow to infinity there, as in the reference) scale
// every weight first and add its products one by one, so infinities come out as the reference's.
template <int O, int R>
void mxfp4_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t n_blocks = w.cols / 32;
    const uint8_t* blocks = static_cast<const uint8_t*>(w.data);
    const __m128i lut = e2m1_doubled_lut();
    const __m128i low4 = _mm_set1_epi8(0x0F);
    __m256 acc[O][R];
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) acc[k][r] = _mm256_setzero_ps();
    for (int k = 0; k < O; ++k) prefetch_l2(w.scales, (o + O + k) * n_blocks);
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        const size_t i = blk * 32;
        if (blk % 4 == 0)
            for (int k = 0; k < O; ++k) prefetch_l2(blocks, ((o + O + k) * n_blocks + blk) * 16);
        for (int k = 0; k < O; ++k) {
            const size_t index = (o + k) * n_blocks + blk;
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + index * 16));
            const __m128i even = _mm_shuffle_epi8(lut, _mm_and_si128(bytes, low4));
            const __m128i odd = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
            __m256 v[4] = {int8x8_to_ps(even), int8x8_to_ps(_mm_unpackhi_epi64(even, even)), int8x8_to_ps(odd),
                           int8x8_to_ps(_mm_unpackhi_epi64(odd, odd))};
            const uint8_t s = w.scales[index];
            if (s < kFirstOverflowScale) {
                const __m256 scale = _mm256_broadcast_ss(&kHalfScales.value[s]);
                for (int r = 0; r < R; ++r) {
                    const float* xr = x + r * xs + i;
                    __m256 sum = _mm256_mul_ps(v[0], _mm256_loadu_ps(xr));
                    sum = _mm256_fmadd_ps(v[1], _mm256_loadu_ps(xr + 8), sum);
                    sum = _mm256_fmadd_ps(v[2], _mm256_loadu_ps(xr + 16), sum);
                    sum = _mm256_fmadd_ps(v[3], _mm256_loadu_ps(xr + 24), sum);
                    acc[k][r] = _mm256_fmadd_ps(sum, scale, acc[k][r]);
                }
            } else {
                const __m256 scale = _mm256_set1_ps(kHalfScales.value[s]);
                for (__m256& e : v) e = _mm256_mul_ps(e, scale);
                for (int r = 0; r < R; ++r) {
                    const float* xr = x + r * xs + i;
                    for (int q = 0; q < 4; ++q) acc[k][r] = _mm256_fmadd_ps(v[q], _mm256_loadu_ps(xr + 8 * q), acc[k][r]);
                }
            }
        }
    }
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum(acc[k][r]);
}

// Rows of x rearranged per 32-value block as [even elements | odd elements] (see mxfp4_tile).
void prepare_mxfp4_rows(const float* x, size_t n_x, size_t xs, size_t cols, Scratch<float>& out) {
    out.assign(n_x * cols, 0.0f);
    for (size_t r = 0; r < n_x; ++r) {
        const float* src = x + r * xs;
        float* dst = out.data() + r * cols;
        for (size_t i = 0; i < cols; i += 16) {
            const __m256 a = _mm256_loadu_ps(src + i);
            const __m256 b = _mm256_loadu_ps(src + i + 8);
            // Within 128-bit lanes: [a0 a2 b0 b2 | a4 a6 b4 b6]; then 64-bit pairs into order.
            const __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
            const __m256 odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
            const size_t block = i / 32 * 32;
            const size_t half = (i % 32) / 2;  // 0 for elements 0-15 of the block, 8 for 16-31
            _mm256_storeu_ps(dst + block + half,
                             _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8)));
            _mm256_storeu_ps(dst + block + 16 + half,
                             _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xD8)));
        }
    }
}

template <Dense F>
struct DenseKernel {
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        dense_tile<F, O, R>(w, o, x, xs, y, ys);
    }
};

struct Mxfp4Kernel {
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        mxfp4_tile<O, R>(w, o, x, xs, y, ys);
    }
};

}  // namespace

void matmul_f32_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    drive<DenseKernel<Dense::f32>>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_bf16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end) {
    drive<DenseKernel<Dense::bf16>>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_f16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    drive<DenseKernel<Dense::f16>>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                         size_t y_stride, size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    Scratch<float> prepared;  // not std::vector: see scratch.hpp
    prepare_mxfp4_rows(x, n_x, x_stride, w.cols, prepared);
    drive<Mxfp4Kernel>(w, prepared.data(), n_x, w.cols, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd
