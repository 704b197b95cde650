#pragma once
// The integer road's 32-value block kernels on 512-bit vpdpbusd (AVX512-VNNI with BW and VL),
// written once over a weight layout `W`: transformers' MXFP4 (q8_mxfp4_512.cpp: nibbles and
// scales in separate arrays) and GGUF's Q8_0, Q4_0 and MXFP4 (q8_gguf_512.cpp: blocks with their
// scale inside). A register holds four blocks' 16-byte halves, one block per 128-bit lane, which
// is where pshufb looks up; the eight block sums of two registers come out in order through two
// unpacks, two adds and one permute.
//
// Bit-exact against the reference: the block sums are exact integers whatever the order, and the
// float work after them is q8_mxfp4.hpp's (add_terms, reduce_lanes: eight block sums a vector,
// lane b % 8, padded lanes adding an exact +0), the reference's steps for every one of these
// formats. Weights are unsigned bytes u = w + kOffset; sum(u * x) - kOffset * sum(x) is
// sum(w * x) exactly, kOffset * sum(x) computed once per call.
//
// W provides:
//   static constexpr int32_t kOffset;
//   static void split(const int8_t* q, __m128i& low, __m128i& high): a block's 32 activations as
//     the 16 that meet the weights' first vector (`low`) and the 16 that meet the second;
//   void quad(size_t o, size_t b0, size_t count, __m512i& low, __m512i& high) const: the unsigned
//     weights of output o's blocks b0 .. b0 + count - 1 (count 1-4), one per 128-bit lane, in
//     split's order; lanes past count read nothing (their activations are zero);
//   bool plain(size_t o, size_t outputs) const, and
//   template <bool Plain> __m256 scales(size_t o, size_t b0, size_t n) const: the weight scales of
//     blocks b0 .. b0 + n - 1 (n 1-8), finite in the lanes past n; Plain when plain() said so for
//     this tile (a faster path the layout may offer);
//   void prefetch(size_t o, size_t b0) const: asks for output o's next 8 blocks from b0 in L2.
// Everything has internal linkage, in namespace avx512 (the build test finds AVX-512 code by it).
#include "avx512_intrinsics.hpp"

#include "q8_mxfp4.hpp"  // q8::store32, add_terms, reduce_lanes, rows_per_pass

namespace stormo::simd {
namespace avx512 {
namespace {
namespace q8w {

// Rows of activations rearranged per group of four blocks (a quad) as the 16 low values of each
// block, then the 16 high ones (W::split): [lA lB lC lD | hA hB hC hD], 128 bytes, zeros past
// the last block. Per row and block, kOffset * sum(q) and the scale, padded with zeros to a
// multiple of 8 blocks.
struct Prepared {
    Scratch<int8_t> bytes;
    Scratch<int32_t> bias;
    Scratch<float> scales;
    size_t quads = 0;
    size_t padded_blocks = 0;

    const int8_t* row(size_t r) const { return bytes.data() + r * quads * 128; }
};

[[gnu::always_inline]] inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

// The 16 per-lane dword sums of two quads' dot results to the 8 block sums in order:
// p0 holds blocks 0-3 (lane k: 4 partial sums of block k), p1 blocks 4-7.
[[gnu::always_inline]] inline __m256i quad_sums(__m512i p0, __m512i p1) {
    // Lane k: [p0k0 + p0k2, p1k0 + p1k2, p0k1 + p0k3, p1k1 + p1k3].
    const __m512i m = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
    // Lane k: [block k, block 4 + k, block k, block 4 + k].
    const __m512i n = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, n));
}

// Dot steps of one quad: per lane, the sums of u * s over its low and high bytes.
[[gnu::always_inline]] inline __m512i quad_dot(__m512i u_low, __m512i u_high, const int8_t* x) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u_low, load64(x)), u_high,
                               load64(x + 64));
}

template <class W>
void prepare(const Q8Rows& x, size_t r_begin, size_t r_end, Prepared& p) {
    const size_t nb = x.blocks;
    p.quads = (nb + 3) / 4;
    p.padded_blocks = (nb + 7) / 8 * 8;
    const size_t rows = r_end - r_begin;
    p.bytes.assign(rows * p.quads * 128, 0);
    p.bias.assign(rows * p.padded_blocks, 0);
    p.scales.assign(rows * p.padded_blocks, 0.0f);
    const __m512i ones = _mm512_set1_epi8(1);
    for (size_t r = r_begin; r < r_end; ++r) {
        const int8_t* q = x.q + r * nb * kQ8Block;
        int8_t* out = p.bytes.data() + (r - r_begin) * p.quads * 128;
        for (size_t b = 0; b < nb; ++b) {
            __m128i low, high;
            W::split(q + b * kQ8Block, low, high);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (b / 4) * 128 + (b % 4) * 16), low);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (b / 4) * 128 + 64 + (b % 4) * 16), high);
        }
        // kOffset * sum(q) per block, through the same dot steps with u = 1 (padding quads are zeros).
        int32_t* bias = p.bias.data() + (r - r_begin) * p.padded_blocks;
        for (size_t b0 = 0; b0 < nb; b0 += 8) {
            const size_t quad = b0 / 4;
            const __m512i p0 = quad_dot(ones, ones, out + quad * 128);
            const __m512i p1 = quad + 1 < p.quads ? quad_dot(ones, ones, out + (quad + 1) * 128) : _mm512_setzero_si512();
            q8::store32(bias + b0, _mm256_mullo_epi32(quad_sums(p0, p1), _mm256_set1_epi32(W::kOffset)));
        }
        __builtin_memcpy(p.scales.data() + (r - r_begin) * p.padded_blocks, x.scales + r * nb, nb * sizeof(float));
    }
}

// Outputs o..o+O-1 for R prepared rows from `row0`, into y[r * ys + k]. Several outputs a tile
// give a lone row independent work to overlap; each (output, row) pair still sees exactly the
// operations of any other tile shape. While it runs it asks for the next tile's weights in L2.
template <class W, int O, int R, bool Plain>
void output_tile(const W& w, size_t nb, size_t o, const Prepared& p, size_t row0, float* y, size_t ys) {
    const int8_t* xv[R];
    const int32_t* xb[R];
    const float* xs[R];
    __m256 acc[O][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const size_t row = row0 + static_cast<size_t>(r);
        xv[r] = p.row(row);
        xb[r] = p.bias.data() + row * p.padded_blocks;
        xs[r] = p.scales.data() + row * p.padded_blocks;
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) acc[k][r] = _mm256_setzero_ps();
    }
    // One group of 8 blocks from b0 (n of them, 1-8); Full: n is 8, so the loads need no masks.
    auto group = [&]<bool Full>(size_t b0, size_t n) [[gnu::always_inline]] {
        const bool second = Full || n > 4;
        // One output's weights at a time, used by every row before the next output's are
        // decoded: with all O outputs' decoded weights live at once (16 registers for O = 4)
        // the compiler spilled to the stack inside this loop.
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) {
            const size_t ok = o + static_cast<size_t>(k);
            w.prefetch(ok + O, b0);
            __m512i l0, h0, l1, h1;
            w.quad(ok, b0, Full ? 4 : (n < 4 ? n : 4), l0, h0);
            if (second) w.quad(ok, b0 + 4, Full ? 4 : n - 4, l1, h1);
            const __m256 ws = w.template scales<Plain>(ok, b0, Full ? 8 : n);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const int8_t* v = xv[r] + (b0 / 4) * 128;
                const __m512i p0 = quad_dot(l0, h0, v);
                const __m512i p1 = second ? quad_dot(l1, h1, v + 128) : _mm512_setzero_si512();
                acc[k][r] = q8::add_terms(acc[k][r], quad_sums(p0, p1), xb[r] + b0, xs[r] + b0, ws);
            }
        }
    };
    size_t b0 = 0;
    for (; b0 + 8 <= nb; b0 += 8) group.template operator()<true>(b0, 8);
    if (b0 < nb) group.template operator()<false>(b0, nb - b0);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int k = 0; k < O; ++k) y[static_cast<size_t>(r) * ys + static_cast<size_t>(k)] = q8::reduce_lanes(acc[k][r]);
}

template <class W, int O, int R>
void output_tile(const W& w, size_t nb, size_t o, const Prepared& p, size_t row0, float* y, size_t ys) {
    if (w.plain(o, O)) output_tile<W, O, R, true>(w, nb, o, p, row0, y, ys);
    else output_tile<W, O, R, false>(w, nb, o, p, row0, y, ys);
}

// Outputs [o_begin, o_end) for R prepared rows from `row0`: O outputs a tile, then single ones.
template <class W, int O, int R>
void outputs(const W& w, size_t nb, const Prepared& p, size_t row0, float* y, size_t ys, size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    if constexpr (O > 1)
        for (; o + O <= o_end; o += O) output_tile<W, O, R>(w, nb, o, p, row0, y + o, ys);
    for (; o < o_end; ++o) output_tile<W, 1, R>(w, nb, o, p, row0, y + o, ys);
}

// Outputs [o_begin, o_end) of every row of x, nb blocks a row: rows in passes that keep their
// prepared activations in L2, groups of 4 rows sharing each weight decode, the last 1-3 rows
// with more outputs a tile.
template <class W>
void run(const W& w, size_t nb, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    if (x.n_x == 0 || o_begin >= o_end) return;
    Prepared p;
    const size_t pass = q8::rows_per_pass(x.blocks, x.n_x);
    for (size_t r0 = 0; r0 < x.n_x; r0 += pass) {
        const size_t r1 = r0 + pass < x.n_x ? r0 + pass : x.n_x;
        prepare<W>(x, r0, r1, p);
        size_t r = r0;
        for (; r + 4 <= r1; r += 4) outputs<W, 1, 4>(w, nb, p, r - r0, y + r * ys, ys, o_begin, o_end);
        switch (r1 - r) {
            case 3: outputs<W, 1, 3>(w, nb, p, r - r0, y + r * ys, ys, o_begin, o_end); break;
            case 2: outputs<W, 2, 2>(w, nb, p, r - r0, y + r * ys, ys, o_begin, o_end); break;
            case 1: outputs<W, 4, 1>(w, nb, p, r - r0, y + r * ys, ys, o_begin, o_end); break;
            default: break;
        }
    }
}

}  // namespace q8w
}  // namespace
}  // namespace avx512
}  // namespace stormo::simd
