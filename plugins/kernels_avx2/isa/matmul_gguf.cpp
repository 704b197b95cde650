// out_in matrix kernels of GGUF's block formats on the float road: each 32-value unit of a block
// is decoded in registers to the reference's exact float weights (gguf_decode.hpp), then
// multiplied into the row's two 8-lane accumulators with fused multiply-adds (elements 0-7 and
// 16-23 into a, 8-15 and 24-31 into b), reduced a + b in the fixed lane order of hsum. The
// tiles (out_in_tiles.hpp) share each decoded unit among up to 4 (output, row) pairs, and the
// next tile's rows are prefetched into L2 while a tile runs. The order per (output, row) is the
// same for every tile shape, n_x, output range and thread count. Compiled with -ffp-contract=off
// (CMakeLists.txt): the compiler must not fuse what the reference rounds apart; the fusions
// (Q4_K/Q5_K/Q2_K's multiply-subtract and Q4_1/Q5_1's multiply-add, exact because the product is) and the dot's FMAs are explicit.
#include "float_kernels.hpp"
#include "gguf_decode.hpp"
#include "out_in_tiles.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

template <class F, int O, int R>
void gguf_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t n_blocks = w.cols / F::kValues;
    const size_t row_bytes = n_blocks * F::kBytes;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    constexpr size_t kUnits = F::kValues / 32;
    __m256 a[O][R];
    __m256 b[O][R];
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) a[k][r] = b[k][r] = _mm256_setzero_ps();
    size_t next_prefetch = 0;  // bytes of the next tile's rows asked for so far
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        for (; next_prefetch < (blk + 1) * F::kBytes && next_prefetch < row_bytes; next_prefetch += 64)
            for (int k = 0; k < O; ++k) prefetch_l2(data, (o + O + k) * row_bytes + next_prefetch);
        typename F::Header header[O];
        for (int k = 0; k < O; ++k) header[k] = F::header(data + (o + k) * row_bytes + blk * F::kBytes);
        for (size_t u = 0; u < kUnits; ++u) {
            const size_t i = blk * F::kValues + 32 * u;
            for (int k = 0; k < O; ++k) {
                __m256 v[4];
                F::unit(data + (o + k) * row_bytes + blk * F::kBytes, header[k], u, v);
                for (int r = 0; r < R; ++r) {
                    const float* xr = x + r * xs + i;
                    a[k][r] = _mm256_fmadd_ps(v[0], _mm256_loadu_ps(xr), a[k][r]);
                    b[k][r] = _mm256_fmadd_ps(v[1], _mm256_loadu_ps(xr + 8), b[k][r]);
                    a[k][r] = _mm256_fmadd_ps(v[2], _mm256_loadu_ps(xr + 16), a[k][r]);
                    b[k][r] = _mm256_fmadd_ps(v[3], _mm256_loadu_ps(xr + 24), b[k][r]);
                }
            }
        }
    }
    for (int k = 0; k < O; ++k)
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum(_mm256_add_ps(a[k][r], b[k][r]));
}

template <class F>
struct GgufKernel {
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        gguf_tile<F, O, R>(w, o, x, xs, y, ys);
    }
};

template <class F>
void run(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y, size_t y_stride, size_t o_begin,
         size_t o_end) {
    drive<GgufKernel<F>>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

// Row decoders: the same units stored, bit-identical to the reference.
template <class F>
void decode_row(const WeightView& w, size_t row_index, float* out) {
    const size_t n_blocks = w.cols / F::kValues;
    const uint8_t* blocks = static_cast<const uint8_t*>(w.data) + row_index * n_blocks * F::kBytes;
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        const typename F::Header header = F::header(blocks + blk * F::kBytes);
        for (size_t u = 0; u < F::kValues / 32; ++u) {
            __m256 v[4];
            F::unit(blocks + blk * F::kBytes, header, u, v);
            for (int k = 0; k < 4; ++k) _mm256_storeu_ps(out + blk * F::kValues + 32 * u + 8 * k, v[k]);
        }
    }
}

}  // namespace

void matmul_gguf_q8_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q8_0>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q4_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q4_0>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q4_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q4_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q5_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q5_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q6_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q6_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Mxfp4>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q4_1_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q4_1>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q5_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q5_0>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q5_1_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q5_1>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q2_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q2_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_q3_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Q3_K>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq4_nl_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq4Nl>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq4_xs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq4Xs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq2_xxs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq2Xxs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq2_xs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq2Xs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq2_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq2S>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq3_xxs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq3Xxs>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq3_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq3S>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq1_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq1S>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}
void matmul_gguf_iq1_m_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    run<gguf::Iq1M>(w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void row_gguf_q8_0(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q8_0>(w, r, out); }
void row_gguf_q4_0(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q4_0>(w, r, out); }
void row_gguf_q4_k(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q4_K>(w, r, out); }
void row_gguf_q5_k(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q5_K>(w, r, out); }
void row_gguf_q6_k(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q6_K>(w, r, out); }
void row_gguf_mxfp4(const WeightView& w, size_t r, float* out) { decode_row<gguf::Mxfp4>(w, r, out); }
void row_gguf_q4_1(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q4_1>(w, r, out); }
void row_gguf_q5_0(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q5_0>(w, r, out); }
void row_gguf_q5_1(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q5_1>(w, r, out); }
void row_gguf_q2_k(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q2_K>(w, r, out); }
void row_gguf_q3_k(const WeightView& w, size_t r, float* out) { decode_row<gguf::Q3_K>(w, r, out); }
void row_gguf_iq4_nl(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq4Nl>(w, r, out); }
void row_gguf_iq4_xs(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq4Xs>(w, r, out); }
void row_gguf_iq2_xxs(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq2Xxs>(w, r, out); }
void row_gguf_iq2_xs(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq2Xs>(w, r, out); }
void row_gguf_iq2_s(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq2S>(w, r, out); }
void row_gguf_iq3_xxs(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq3Xxs>(w, r, out); }
void row_gguf_iq3_s(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq3S>(w, r, out); }
void row_gguf_iq1_s(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq1S>(w, r, out); }
void row_gguf_iq1_m(const WeightView& w, size_t r, float* out) { decode_row<gguf::Iq1M>(w, r, out); }

}  // namespace stormo::simd
