// out_in matrix kernels: W[o, i] at element o * cols + i. Work is cut into tiles of O outputs x R
// input rows (O * R <= 4) sharing weight and input loads; every (output, row) pair owns two
// 8-lane accumulators and sees the same operations in the same order in every tile shape, so its
// value does not depend on n_x, on the output range, or on which tile computed it.
#include "float_kernels.hpp"
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
    for (; i + 16 <= cols; i += 16) {
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

// MXFP4 (cols a multiple of 32): per block, elements 0-7 and 16-23 go to a, 8-15 and 24-31 to b.
template <int O, int R>
void mxfp4_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t n_blocks = w.cols / 32;
    const uint8_t* blocks = static_cast<const uint8_t*>(w.data);
    __m256 a[O][R];
    __m256 b[O][R];
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm256_setzero_ps();
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        const size_t i = blk * 32;
        for (int k = 0; k < O; ++k) {
            const size_t index = (o + k) * n_blocks + blk;
            __m256 v[4];
            mxfp4_block(blocks + index * 16, half_scale(w.scales[index]), v);
            for (int r = 0; r < R; ++r) {
                const float* xr = x + r * xs + i;
                a[k][r] = _mm256_fmadd_ps(v[0], _mm256_loadu_ps(xr), a[k][r]);
                b[k][r] = _mm256_fmadd_ps(v[1], _mm256_loadu_ps(xr + 8), b[k][r]);
                a[k][r] = _mm256_fmadd_ps(v[2], _mm256_loadu_ps(xr + 16), a[k][r]);
                b[k][r] = _mm256_fmadd_ps(v[3], _mm256_loadu_ps(xr + 24), b[k][r]);
            }
        }
    }
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum(_mm256_add_ps(a[k][r], b[k][r]));
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

// 1 to 3 rows: more outputs per tile when fewer rows share each weight load.
template <class K>
void few_rows(const WeightView& w, const float* x, size_t xs, float* y, size_t ys, size_t rows,
              size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    if (rows == 3) {
        for (; o < o_end; ++o) K::template tile<1, 3>(w, o, x, xs, y, ys);
    } else if (rows == 2) {
        for (; o + 2 <= o_end; o += 2) K::template tile<2, 2>(w, o, x, xs, y, ys);
        for (; o < o_end; ++o) K::template tile<1, 2>(w, o, x, xs, y, ys);
    } else {
        for (; o + 4 <= o_end; o += 4) K::template tile<4, 1>(w, o, x, xs, y, ys);
        for (; o < o_end; ++o) K::template tile<1, 1>(w, o, x, xs, y, ys);
    }
}

// Row blocks outermost; inside a block each weight row is read once and applied to every group
// of 4 rows while it sits in L1; the last 1-3 rows of a block use the wider output tiles.
template <class K>
void drive(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys,
           size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    const size_t block = input_row_block(w.cols, n_x);
    for (size_t r0 = 0; r0 < n_x; r0 += block) {
        const size_t r_end = r0 + block < n_x ? r0 + block : n_x;
        const size_t full_end = r0 + (r_end - r0) / 4 * 4;
        for (size_t o = o_begin; o < o_end; ++o)
            for (size_t r = r0; r < full_end; r += 4)
                K::template tile<1, 4>(w, o, x + r * xs, xs, y + r * ys, ys);
        if (full_end < r_end)
            few_rows<K>(w, x + full_end * xs, xs, y + full_end * ys, ys, r_end - full_end, o_begin,
                        o_end);
    }
}

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
    drive<Mxfp4Kernel>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd
