// The integer road's MXFP4 x int8 matrix kernel on 512-bit vpdpbusd (AVX512-VNNI with BW and VL).
// The 256-bit loops of q8_mxfp4.hpp spend about 45 instructions per 8 blocks of a row in matrix x
// vector (two blocks per register: nibble split, lookups, dot steps, horizontal adds), which kept a
// core below the RAM stream. Here (quads512.hpp) a register holds four blocks, one per 128-bit
// lane, which is where pshufb looks up and where a block's 16 weight bytes sit in memory: the
// weights need no shuffling at all. From three rows on, block_lanes512.hpp's tiles transpose four
// outputs' quads once and so drop the per-row horizontal sums.
//
// Bit-exact against reference::matmul_q8_mxfp4_out_in: quads512.hpp's block sums and q8_mxfp4.hpp's
// float steps; weights biased by 12 as there, half_scales for 2^(s-128) (docs/kernels.md).
#include "avx512_intrinsics.hpp"

#include "int8_kernels.hpp"
#include "block_lanes512.hpp"

namespace stormo::simd {
// Named for the ISA: the build test (IsaKernelsBuild) finds AVX-512 code by namespace.
namespace avx512 {
namespace {
namespace q8w {

// transformers' MXFP4: nibbles [rows, blocks, 16] (byte j: element 2j low, 2j + 1 high), scale
// bytes [rows, blocks].
struct Mxfp4Weights {
    const uint8_t* blocks;
    const uint8_t* scale_bytes;
    size_t nb;

    static constexpr int32_t kOffset = q8::kBias;
    // The low nibbles meet the even elements.
    [[gnu::always_inline]] static void split(const int8_t* q, __m128i& low, __m128i& high) {
        q8::split_block(q, low, high);
    }
    [[gnu::always_inline]] void quad(size_t o, size_t b0, size_t count, __m512i& low, __m512i& high) const {
        const uint8_t* p = blocks + (o * nb + b0) * 16;
        const __m512i v = count == 4 ? load64(p) : _mm512_maskz_loadu_epi8((__mmask64{1} << (16 * count)) - 1, p);
        // q8_mxfp4.hpp's table (twice each E2M1 value plus 12) in every 128-bit lane.
        const __m512i lut = _mm512_broadcast_i32x4(_mm256_castsi256_si128(q8::biased_lut()));
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        low = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, low4));
        high = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
    }
    [[gnu::always_inline]] bool plain(size_t o, size_t outputs) const {
        return q8::plain_scales(scale_bytes + o * nb, outputs * nb);
    }
    template <bool Plain>
    [[gnu::always_inline]] __m256 scales(size_t o, size_t b0, size_t n) const {
        if (n == 8) return q8::half_scales<Plain>(scale_bytes + o * nb + b0);
        // Padding lanes: scale byte 127 (plain), x scale 0, sum and bias 0 give an exact +0 term.
        // A masked load, not a copy into a stack array: the 8-byte load of bytes just stored
        // one at a time waits for them (the 2-block tail of a 2880-column row cost as much as
        // 5 full groups).
        const __mmask16 lanes = static_cast<__mmask16>((1u << n) - 1);
        return q8::half_scales<Plain>(_mm_mask_loadu_epi8(_mm_set1_epi8(127), lanes, scale_bytes + o * nb + b0));
    }
    [[gnu::always_inline]] void prefetch(size_t o, size_t b0) const {
        const char* p = reinterpret_cast<const char*>(blocks + (o * nb + b0) * 16);
        _mm_prefetch(p, _MM_HINT_T1);
        _mm_prefetch(p + 64, _MM_HINT_T1);
        if (b0 % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(scale_bytes + o * nb + b0), _MM_HINT_T1);
    }
};

}  // namespace q8w
}  // namespace
}  // namespace avx512

void matmul_q8_mxfp4_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                 size_t o_end) {
    const size_t nb = w.cols / 32;
    const avx512::q8w::Mxfp4Weights weights{static_cast<const uint8_t*>(w.data), w.scales, nb};
    avx512::q8w::run_by_rows(weights, nb, x, y, ys, o_begin, o_end);
}

}  // namespace stormo::simd
