// in_out matrix kernels: W[o, i] at element i * rows + o (GPT-OSS BF16 experts, [in, out]).
// Vectors run across outputs: each output is one fused multiply-add chain over ascending i,
// starting from +0. A lane of a wide tile, of a narrow tile and the scalar tail all execute that
// same chain (fma is exactly rounded whatever unit runs it), so no output depends on the tiling.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

// 8 * V consecutive outputs from o, for R rows.
template <Dense F, int V, int R>
void vector_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    __m256 acc[V][R];
    for (int v = 0; v < V; ++v)
        for (int r = 0; r < R; ++r) acc[v][r] = _mm256_setzero_ps();
    for (size_t i = 0; i < w.cols; ++i) {
        const size_t base = i * w.rows + o;
        __m256 xb[R];
        for (int r = 0; r < R; ++r) xb[r] = _mm256_broadcast_ss(x + r * xs + i);
        for (int v = 0; v < V; ++v) {
            const __m256 wv = load8<F>(w.data, base + 8 * static_cast<size_t>(v));
            for (int r = 0; r < R; ++r) acc[v][r] = _mm256_fmadd_ps(wv, xb[r], acc[v][r]);
        }
    }
    for (int v = 0; v < V; ++v)
        for (int r = 0; r < R; ++r)
            _mm256_storeu_ps(y + r * ys + o + 8 * static_cast<size_t>(v), acc[v][r]);
}

// One output for R rows: the scalar form of a vector lane.
template <Dense F, int R>
void scalar_output(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    float acc[R] = {};
    for (size_t i = 0; i < w.cols; ++i) {
        const float wv = load1<F>(w.data, i * w.rows + o);
        for (int r = 0; r < R; ++r) acc[r] = __builtin_fmaf(wv, x[r * xs + i], acc[r]);
    }
    for (int r = 0; r < R; ++r) y[r * ys + o] = acc[r];
}

// Outputs [o, o_end) for one group of R rows: wide tiles (8 accumulators), then 8-wide, then one.
template <Dense F, int R>
void group_outputs(const WeightView& w, size_t o, size_t o_end, const float* x, size_t xs, float* y,
                   size_t ys) {
    constexpr int V = R == 1 ? 8 : (R == 2 ? 4 : 2);
    for (; o + 8 * V <= o_end; o += 8 * V) vector_tile<F, V, R>(w, o, x, xs, y, ys);
    for (; o + 8 <= o_end; o += 8) vector_tile<F, 1, R>(w, o, x, xs, y, ys);
    for (; o < o_end; ++o) scalar_output<F, R>(w, o, x, xs, y, ys);
}

template <Dense F>
void matmul(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys,
            size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    constexpr size_t kTile = 16;  // outputs of vector_tile<F, 2, 4>
    const size_t block = input_row_block(w.cols, n_x);
    for (size_t r0 = 0; r0 < n_x; r0 += block) {
        const size_t r_end = r0 + block < n_x ? r0 + block : n_x;
        const size_t full_end = r0 + (r_end - r0) / 4 * 4;
        // Output tiles outermost: a tile's weight columns stay in cache across the row groups.
        size_t o = o_begin;
        for (; o + kTile <= o_end; o += kTile)
            for (size_t r = r0; r < full_end; r += 4)
                vector_tile<F, 2, 4>(w, o, x + r * xs, xs, y + r * ys, ys);
        for (size_t r = r0; r < full_end; r += 4)
            group_outputs<F, 4>(w, o, o_end, x + r * xs, xs, y + r * ys, ys);
        const float* xt = x + full_end * xs;
        float* yt = y + full_end * ys;
        switch (r_end - full_end) {
            case 3: group_outputs<F, 3>(w, o_begin, o_end, xt, xs, yt, ys); break;
            case 2: group_outputs<F, 2>(w, o_begin, o_end, xt, xs, yt, ys); break;
            case 1: group_outputs<F, 1>(w, o_begin, o_end, xt, xs, yt, ys); break;
            default: break;
        }
    }
}

}  // namespace

void matmul_f32_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    matmul<Dense::f32>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_bf16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end) {
    matmul<Dense::bf16>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_f16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    matmul<Dense::f16>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd
