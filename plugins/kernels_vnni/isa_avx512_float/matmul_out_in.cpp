// out_in matrix kernels on 512-bit registers (AVX512F/BW/VL: Skylake-X, Ice Lake, Zen 4 and
// later), for the float road. The avx2 kernels decode MXFP4 with byte shuffles into int8, widen
// and convert to float: about 17 instructions per 32 weights, which kept a Zen 4 core at 9 GB/s
// of MXFP4, a quarter of what RAM delivers. Here a block's 16 bytes are widened once to 16 dword
// lanes and each nibble picks its value straight out of a 16-float table with vpermps (which reads
// only an index's low four bits, so the low nibble needs no mask and the high one a shift); the
// table is twice the E2M1 values times the block's 2^(s-128) (the same exact product as value *
// 2^(s-127)), so every weight is exactly the reference's decoded value; a tile whose scale bytes
// all lie in 2..252 builds it with an integer add to the exponent instead of the multiply
// (ExponentSteps below), the others keep the multiply, which covers overflow and NaN.
//
// The contract of docs/kernels.md holds: every (output, row) pair owns its accumulators and sees
// the same operations in the same order in every tile shape, so its value depends neither on n_x,
// nor on the output range, nor on the thread that computed it. Tiles are 4 outputs x 2 rows (MXFP4:
// 4 x 4 for row quads; 1 output or 1 row at the edges) sharing weight decodes and input loads (see
// drive).

#include "avx512_float_kernels.hpp"
#include "scratch.hpp"
#include "simd.hpp"  // Dense, dense_bytes, input_row_block, prefetch_l2, kHalfScales
#include "dense_tile512.hpp"  // dense_tile
#include "simd512.hpp"
#include "tiles512.hpp"  // drive

namespace stormo::simd::avx512 {
namespace {

// MXFP4 (cols a multiple of 32). The activations arrive rearranged per block as [16 even | 16 odd]
// elements (prepare_mxfp4_rows), the order the low and high nibbles come in. Per (output, row) one
// accumulator takes, block after block, the even elements' products and then the odd ones', lane
// by lane; the value is its fixed-order lane sum. One accumulator a pair leaves registers for a
// prefill tile of 4 outputs x 4 rows with the rows' activations loaded once a block: each decoded
// block then feeds 8 multiply-adds where a 4 x 2 tile fed 4, and the decode's permutes no longer
// bound prefill.
// The table of a block: the doubled values times 2^(s-128). For 2 <= s <= 252 every nonzero
// product is a normal float, so adding (s - 128) << 23 to the values' bits (the zeros, entries 0
// and 8, masked off) gives it exactly, with an integer add, which this core issues on any of four
// pipes, where the multiply shares two with the FMAs: prefill tiles 9-12% faster (one core, 256 x
// 2880 in L2, 4 to 32 rows), a lone row unchanged (its permutes bound it). A tile whose rows hold
// another scale byte multiplies, as the reference's values require (subnormal or infinite
// products, NaN for 255).
struct ExponentSteps {
    int32_t value[256];
};
constexpr ExponentSteps make_exponent_steps() {
    ExponentSteps t{};
    for (int s = 0; s < 256; ++s) t.value[s] = static_cast<int32_t>(static_cast<uint32_t>(s - 128) << 23);
    return t;
}
constexpr ExponentSteps kExponentSteps = make_exponent_steps();
constexpr __mmask16 kNonzeroEntries = 0xFEFE;  // of e2m1_doubled_values(): all but codes 0 and 8

// Whether every scale byte of rows [o, o + n) lies in 2..252.
inline bool scales_in_exponent_range(const uint8_t* scales, size_t n_blocks, size_t o, size_t n) {
    const uint8_t* p = scales + o * n_blocks;
    const size_t bytes = n * n_blocks;
    __m512i lo = _mm512_set1_epi8(static_cast<char>(0xFF)), hi = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 64 <= bytes; i += 64) {
        const __m512i v = _mm512_loadu_si512(p + i);
        lo = _mm512_min_epu8(lo, v);
        hi = _mm512_max_epu8(hi, v);
    }
    if (i < bytes) {
        const __mmask64 tail = (uint64_t{1} << (bytes - i)) - 1;  // bytes - i < 64
        const __m512i v = _mm512_maskz_loadu_epi8(tail, p + i);
        lo = _mm512_mask_min_epu8(lo, tail, lo, v);
        hi = _mm512_max_epu8(hi, v);
    }
    return _mm512_cmplt_epu8_mask(lo, _mm512_set1_epi8(2)) == 0 &&
           _mm512_cmpgt_epu8_mask(hi, _mm512_set1_epi8(static_cast<char>(252))) == 0;
}

template <int O, int R, bool ExponentAdd>
void mxfp4_tile_as(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    const size_t n_blocks = w.cols / 32;
    const uint8_t* blocks = static_cast<const uint8_t*>(w.data);
    const __m512 values = e2m1_doubled_values();
    __m512 acc[O][R];
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[k][r] = _mm512_setzero_ps();
    for (size_t blk = 0; blk < n_blocks; ++blk) {
        const size_t i = blk * 32;
        if (blk % 4 == 0)
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k) prefetch_l2(blocks, ((o + O + k) * n_blocks + blk) * 16);
        if (blk % 64 == 0)
            #pragma GCC unroll 8
            for (int k = 0; k < O; ++k) prefetch_l2(w.scales, (o + O + k) * n_blocks + blk);
        __m512 x_even[R], x_odd[R];
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            x_even[r] = _mm512_loadu_ps(x + r * xs + i);
            x_odd[r] = _mm512_loadu_ps(x + r * xs + i + 16);
        }
        #pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const size_t index = (o + k) * n_blocks + blk;
            const __m512i codes =
                _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + index * 16)));
            __m512 table;
            if constexpr (ExponentAdd)
                table = _mm512_castsi512_ps(_mm512_mask_add_epi32(_mm512_castps_si512(values), kNonzeroEntries, _mm512_castps_si512(values),
                                                                  _mm512_set1_epi32(kExponentSteps.value[w.scales[index]])));
            else
                table = _mm512_mul_ps(values, _mm512_set1_ps(kHalfScales.value[w.scales[index]]));
            const __m512 even = _mm512_permutexvar_ps(codes, table);
            const __m512 odd = _mm512_permutexvar_ps(_mm512_srli_epi32(codes, 4), table);
            #pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[k][r] = _mm512_fmadd_ps(even, x_even[r], acc[k][r]);
                acc[k][r] = _mm512_fmadd_ps(odd, x_odd[r], acc[k][r]);
            }
        }
    }
    #pragma GCC unroll 8
    for (int k = 0; k < O; ++k)
        #pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ys + o + k] = hsum16(acc[k][r]);
}

template <int O, int R>
void mxfp4_tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
    if (scales_in_exponent_range(w.scales, w.cols / 32, o, O)) mxfp4_tile_as<O, R, true>(w, o, x, xs, y, ys);
    else mxfp4_tile_as<O, R, false>(w, o, x, xs, y, ys);
}

// Rows of x rearranged per 32-value block as [even elements | odd elements] (see mxfp4_tile).
void prepare_mxfp4_rows(const float* x, size_t n_x, size_t xs, size_t cols, Scratch<float>& out) {
    out.resize(n_x * cols);
    rearrange_rows32(x, n_x, xs, cols, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
                     _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), out.data());
}

template <Dense F>
struct DenseKernel {
    static constexpr int kRowOutputs = 1;  // tiles512.hpp
    template <int O, int R>
    static void tile(const WeightView& w, size_t o, const float* x, size_t xs, float* y, size_t ys) {
        dense_tile<F, O, R>(w, o, x, xs, y, ys);
    }
};

struct Mxfp4Kernel {
    static constexpr int kRowOutputs = 8;  // tiles512.hpp
    static constexpr int kQuadOutputs = 4;
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

}  // namespace stormo::simd::avx512
