// in_out matrix kernels: W[o, i] at element i * rows + o (GPT-OSS BF16 experts, [in, out]).
// Vectors run across outputs: each output is one fused multiply-add chain over ascending i,
// starting from +0. A lane of a wide tile, of a narrow tile and the scalar tail all execute that
// same chain (fma is exactly rounded whatever unit runs it), so no output depends on the tiling.
//
// Inputs are walked in blocks of kInputBlock rows of W. Inside a block, every output tile and
// every group of input rows runs in registers; between blocks the partial sums are parked in y
// (a float stored and reloaded is the same float). So W is read once per call, as a few
// sequential streams along its rows, whatever n_x is. Those streams are short (a thread's share
// of one row), so each tile prefetches the same outputs of the next block's rows into L2: that
// took matrix x vector from 16 to 21-22 GB/s of BF16 weights on one Zen 4 core.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

constexpr size_t kInputBlock = 16;

// The inputs [i0, i1) of one block, and whether it is the first (partial sums start at +0).
struct Span {
    size_t i0;
    size_t i1;
    bool first;
};

// 8 * V consecutive outputs from o, for R rows.
template <Dense F, int V, int R>
void vector_tile(const WeightView& w, Span s, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    __m256 acc[V][R];
    for (int v = 0; v < V; ++v)
        for (int r = 0; r < R; ++r)
            acc[v][r] = s.first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ys + o + 8 * static_cast<size_t>(v));
    for (size_t i = s.i0; i < s.i1; ++i) {
        const size_t base = i * w.rows + o;
        // The same outputs of the next input block's row, one cache line per 64 bytes of the tile.
        for (size_t line = 0; line < 8 * V * dense_bytes<F>(); line += 64)
            prefetch_l2(w.data, (base + kInputBlock * w.rows) * dense_bytes<F>() + line);
        __m256 xb[R];
        for (int r = 0; r < R; ++r) xb[r] = _mm256_broadcast_ss(x + r * xs + i);
        for (int v = 0; v < V; ++v) {
            const __m256 wv = load8<F>(w.data, base + 8 * static_cast<size_t>(v));
            for (int r = 0; r < R; ++r) acc[v][r] = _mm256_fmadd_ps(wv, xb[r], acc[v][r]);
        }
    }
    for (int v = 0; v < V; ++v)
        for (int r = 0; r < R; ++r) _mm256_storeu_ps(y + r * ys + o + 8 * static_cast<size_t>(v), acc[v][r]);
}

// One output for R rows: the scalar form of a vector lane.
template <Dense F, int R>
void scalar_output(const WeightView& w, Span s, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = s.first ? 0.0f : y[r * ys + o];
    for (size_t i = s.i0; i < s.i1; ++i) {
        const float wv = load1<F>(w.data, i * w.rows + o);
        for (int r = 0; r < R; ++r) acc[r] = __builtin_fmaf(wv, x[r * xs + i], acc[r]);
    }
    for (int r = 0; r < R; ++r) y[r * ys + o] = acc[r];
}

// Outputs [o, o_end) for one group of R rows: wide tiles (8 accumulators), then 8-wide, then one.
template <Dense F, int R>
void group_outputs(const WeightView& w, Span s, size_t o, size_t o_end, const float* x, size_t xs,
                   float* y, size_t ys) {
    constexpr int V = R == 1 ? 8 : (R == 2 ? 4 : 2);
    for (; o + 8 * V <= o_end; o += 8 * V) vector_tile<F, V, R>(w, s, o, x, xs, y, ys);
    for (; o + 8 <= o_end; o += 8) vector_tile<F, 1, R>(w, s, o, x, xs, y, ys);
    for (; o < o_end; ++o) scalar_output<F, R>(w, s, o, x, xs, y, ys);
}

// One input block over every row: for 4-row groups the output tiles are outermost, so the
// block's slice of W stays in L1 while every group reads it.
template <Dense F>
void input_block(const WeightView& w, Span s, const float* x, size_t n_x, size_t xs, float* y,
                 size_t ys, size_t o_begin, size_t o_end) {
    constexpr size_t kTile = 16;  // outputs of vector_tile<F, 2, 4>
    const size_t full_end = n_x / 4 * 4;
    size_t o = o_begin;
    if (full_end > 0) {
        for (; o + kTile <= o_end; o += kTile)
            for (size_t r = 0; r < full_end; r += 4) vector_tile<F, 2, 4>(w, s, o, x + r * xs, xs, y + r * ys, ys);
        for (size_t r = 0; r < full_end; r += 4) group_outputs<F, 4>(w, s, o, o_end, x + r * xs, xs, y + r * ys, ys);
    }
    const float* xt = x + full_end * xs;
    float* yt = y + full_end * ys;
    switch (n_x - full_end) {
        case 3: group_outputs<F, 3>(w, s, o_begin, o_end, xt, xs, yt, ys); break;
        case 2: group_outputs<F, 2>(w, s, o_begin, o_end, xt, xs, yt, ys); break;
        case 1: group_outputs<F, 1>(w, s, o_begin, o_end, xt, xs, yt, ys); break;
        default: break;
    }
}

template <Dense F>
void matmul(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys,
            size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    if (w.cols == 0) {  // an empty sum is +0
        for (size_t r = 0; r < n_x; ++r)
            for (size_t o = o_begin; o < o_end; ++o) y[r * ys + o] = 0.0f;
        return;
    }
    for (size_t i0 = 0; i0 < w.cols; i0 += kInputBlock) {
        const Span s{i0, i0 + kInputBlock < w.cols ? i0 + kInputBlock : w.cols, i0 == 0};
        input_block<F>(w, s, x, n_x, xs, y, ys, o_begin, o_end);
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
