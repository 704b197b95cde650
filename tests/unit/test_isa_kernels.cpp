// The ISA kernel plugins, loaded from the build tree with Boost.DLL and installed over a copy of
// the reference table: every kernel they replace is compared with the reference on random and
// edge inputs. Matrix results must lie within kTolerance * sum_i |W[o,i] * x[i]| of the
// reference (plus a subnormal floor), row decoders must match bit for bit, and every replaced
// matrix kernel must keep the row-independence contract (same bits for any n_x, output range or
// thread count). The integer road (int8 dot, MXFP4 x int8 matmul) must match bit for bit; its
// VNNI loops also run here under SIMDe's emulation of VPDPBUSD, on any CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compute/worker_pool.hpp"
#include "kernel_plugin_loader.hpp"
#include "kernel_test_support.hpp"
#include "stormo/cpu_features.hpp"
#include "stormo/json.hpp"
#include "stormo/kernels.hpp"
#include "stormo/kernels_plugin.hpp"
#include "stormo/bf16_activations.hpp"
#include "stormo/dtype.hpp"
#include "stormo/packed_bf16.hpp"
#include "stormo/toolkit/dense.hpp"

// SIMDe last, with its native aliases: the plugins' kernel templates are written with the x86
// intrinsic names, which then resolve to SIMDe's portable versions in this baseline-compiled file
// (nothing after this point may include <immintrin.h>).
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx2.h>
#include <simde/x86/avx512/dpbusd.h>
#include <simde/x86/avx512/dpwssd.h>

#include "reference_kernels/gguf_blocks.hpp"

namespace stormo::simd {
namespace {
// SIMDe's portable VPDPBUSD behind the same Ops interface the plugin's native loops use. Always
// inlined: an out-of-line function passing 256-bit vectors changes the ABI in this baseline file.
struct SimdeVnni {
    using V = simde__m256i;
    [[gnu::always_inline]] static V zero() { return simde_mm256_setzero_si256(); }
    [[gnu::always_inline]] static V load(const void* p) { return simde_mm256_loadu_si256(p); }
    [[gnu::always_inline]] static V dpbusd(V acc, V a, V b) { return simde_mm256_dpbusd_epi32(acc, a, b); }
    [[gnu::always_inline]] static V add(V x, V y) { return simde_mm256_add_epi32(x, y); }
    static int32_t sum(V v) {
        int32_t lanes[8];
        simde_mm256_storeu_si256(lanes, v);
        uint32_t s = 0;
        for (int32_t l : lanes) s += static_cast<uint32_t>(l);
        return static_cast<int32_t>(s);
    }
    [[gnu::always_inline]] static V dot2(V u_even, V s_even, V u_odd, V s_odd) {
        return dpbusd(dpbusd(zero(), u_even, s_even), u_odd, s_odd);
    }
    [[gnu::always_inline]] static V dot1(V u, V s) { return dpbusd(zero(), u, s); }
    static constexpr bool kAnyUnsigned = true;
    [[gnu::always_inline]] static V scaled(V acc, V u, V s, V w16) {
        return simde_mm256_dpwssd_epi32(acc, simde_mm256_maddubs_epi16(u, s), w16);
    }
};

// What q8_gguf.hpp takes from the ISA files' gguf_decode.hpp (which includes <immintrin.h>, as
// this baseline file cannot): a block's f16 scale, here through the SDK's conversion.
namespace gguf {
[[gnu::always_inline]] inline float f16(const uint8_t* p) { return stormo::gguf::f16_at(reinterpret_cast<const std::byte*>(p)); }
}  // namespace gguf
}  // namespace
}  // namespace stormo::simd

#include "../../plugins/kernels_avx2/isa/q8_gguf.hpp"
#include "../../plugins/kernels_avx2/isa/q8_mxfp4.hpp"
#include "../../plugins/kernels_vnni/dot_u8i8_blocks.hpp"
#include "../../plugins/kernels_vnni/dot_rows_q8_blocks.hpp"

namespace stormo::simd {
namespace {
// The vnni plugin's MXFP4 x int8 kernel with SIMDe's VPDPBUSD, as a MatmulQ8Fn.
void simde_matmul_q8_mxfp4(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                           size_t o_end) {
    q8::matmul_q8_mxfp4<SimdeVnni>(w, x, y, y_stride, o_begin, o_end);
}

// The reference table with the vnni plugin's GGUF integer-road kernels on SIMDe's VPDPBUSD and
// VPDPWSSD, the loops both flavours compile natively.
KernelTable simde_q8_gguf_table(const KernelTable& reference) {
    KernelTable t = reference;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q8_0)] = q8g::matmul_q8_0<SimdeVnni>;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q4_0)] = q8g::matmul_q4_0<SimdeVnni>;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_MXFP4)] = q8g::matmul_mxfp4<SimdeVnni>;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q4_K)] = q8g::matmul_q4_k<SimdeVnni>;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q5_K)] = q8g::matmul_q5_k<SimdeVnni>;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q6_K)] = q8g::matmul_q6_k<SimdeVnni>;
    return t;
}
}  // namespace
}  // namespace stormo::simd

namespace stormo {
namespace {

// Accumulation error allowed, relative to sum |w * x| (docs/kernels.md gives the measured worst).
constexpr double kTolerance = 1e-5;

using testing::load_kernels;
using testing::cpu_has_all;
using testing::kernels_unusable_reason;

MatmulFn entry(const KernelTable& t, WeightFormat f, Layout l) {
    return t.matmul[static_cast<size_t>(f)][static_cast<size_t>(l)];
}

std::string label(WeightFormat f, Layout l) {
    return std::string(weight_format_name(f)) + (l == Layout::out_in ? " out_in" : " in_out");
}

// The worst error seen per kernel, as a fraction of sum |w * x|, over a whole test.
struct Worst {
    std::map<std::string, std::pair<double, std::string>> by_kernel;  // kernel -> (ratio, case)
    void note(const std::string& kernel, double r, const std::string& where) {
        auto& slot = by_kernel[kernel];
        if (r >= slot.first) slot = {r, where};
    }
};

// Compares y_isa with y_ref element by element. Non-finite reference values must be matched by
// the same class (NaN, or the same infinity); finite ones within the tolerance.
void expect_close(const std::vector<float>& y_ref, const std::vector<float>& y_isa,
                  const std::vector<double>& scale, size_t n_terms, const std::string& kernel,
                  const std::string& what, Worst& worst) {
    // Products that land among the subnormals round to absolute steps of 2^-150 in the reference.
    const double subnormal_floor = static_cast<double>(n_terms) * std::ldexp(1.0, -149);
    size_t failures = 0;
    for (size_t k = 0; k < y_ref.size() && failures < 5; ++k) {
        const float r = y_ref[k];
        const float s = y_isa[k];
        if (std::isnan(r) || std::isinf(r)) {
            const bool same_class = std::isnan(r) ? std::isnan(s) : s == r;
            if (!same_class) {
                ADD_FAILURE() << what << " [" << k << "]: reference " << r << ", plugin " << s;
                ++failures;
            }
            continue;
        }
        const double diff = std::fabs(static_cast<double>(s) - r);
        if (!(diff <= kTolerance * scale[k] + subnormal_floor)) {
            ADD_FAILURE() << what << " [" << k << "]: reference " << r << ", plugin " << s << ", sum|wx| " << scale[k];
            ++failures;
        }
        if (scale[k] > 0) worst.note(kernel, diff > subnormal_floor ? diff / scale[k] : 0.0, what);
    }
}

// One (format, layout) kernel against the reference on one matrix and input, plus the
// row-independence contract: single rows and a split output range give the full call's bits.
void check_matmul(MatmulFn isa, MatmulFn ref, const testing::TestMatrix& m, const std::vector<float>& x,
                  size_t n_x, const std::string& what, Worst& worst, std::mt19937& rng) {
    const std::string kernel = label(m.format, m.layout);
    const size_t rows = m.rows;
    const size_t cols = m.cols;
    std::vector<float> y_ref(n_x * rows), y_isa(n_x * rows, -1.0f);
    ref(m.view(), x.data(), n_x, cols, y_ref.data(), rows, 0, rows);
    isa(m.view(), x.data(), n_x, cols, y_isa.data(), rows, 0, rows);
    const std::vector<float> w = testing::dense_weights(m);
    expect_close(y_ref, y_isa, testing::abs_product_sums(w, rows, cols, x.data(), n_x), cols, kernel, what,
                 worst);

    std::uniform_int_distribution<size_t> pick(0, rows);
    const size_t split = pick(rng);
    for (size_t r = 0; r < n_x; ++r) {
        std::vector<float> one(rows, -1.0f);
        isa(m.view(), x.data() + r * cols, 1, cols, one.data(), rows, 0, split);
        isa(m.view(), x.data() + r * cols, 1, cols, one.data(), rows, split, rows);
        for (size_t o = 0; o < rows; ++o)
            if (!testing::same_bits_or_both_nan(one[o], y_isa[r * rows + o])) {
                ADD_FAILURE() << what << ": row " << r << " output " << o << " alone gives " << one[o]
                              << ", in the batch " << y_isa[r * rows + o] << " (split " << split << ")";
                return;
            }
    }
}

// Every replaced matrix kernel on odd shapes and tails, random inputs.
void check_all_matmuls(const KernelTable& table, Worst& worst) {
    std::mt19937 rng(2024);
    const KernelTable& ref = reference_kernels();
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4,
                           WeightFormat::BF16_PACKED, WeightFormat::FP8_E4M3}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            const MatmulFn isa = entry(table, f, l);
            if (isa == nullptr || isa == entry(ref, f, l)) continue;
            const std::vector<size_t> cols_list = f == WeightFormat::MXFP4
                                                      ? std::vector<size_t>{32, 64, 96, 320}
                                                      : std::vector<size_t>{1, 3, 8, 13, 16, 24, 31, 33, 100, 257};
            for (size_t rows : {1, 5, 8, 17, 40, 67})
                for (size_t cols : cols_list)
                    for (size_t n_x : {1, 2, 3, 4, 5, 6, 7, 9, 17}) {
                        const testing::TestMatrix m = testing::random_matrix(f, l, rows, cols, rng);
                        const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                        check_matmul(isa, entry(ref, f, l), m, x, n_x,
                                     label(f, l) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                         " n_x " + std::to_string(n_x),
                                     worst, rng);
                    }
        }
    }
}

// The weights a matrix kernel decodes, read back exactly: against the rows of the identity
// (x = e_i), output o of row i is 1 * W[o, i] plus products of zeros, whatever the order of the
// sum, so every weight the kernel uses must equal the reference's (`bits`, row-major), a zero of
// either sign matching a zero. Rows holding a non-finite weight are skipped: there 0 * inf is NaN.
void check_weights_exact(MatmulFn isa, const testing::TestMatrix& m, const std::vector<uint32_t>& bits) {
    const size_t rows = m.rows, cols = m.cols;
    std::vector<float> eye(cols * cols, 0.0f), y(cols * rows, -1.0f);
    for (size_t i = 0; i < cols; ++i) eye[i * cols + i] = 1.0f;
    isa(m.view(), eye.data(), cols, cols, y.data(), rows, 0, rows);
    size_t checked = 0;
    for (size_t o = 0; o < rows; ++o) {
        bool finite = true;
        for (size_t i = 0; i < cols; ++i) finite = finite && std::isfinite(std::bit_cast<float>(bits[o * cols + i]));
        if (!finite) continue;
        for (size_t i = 0; i < cols; ++i) {
            const float want = std::bit_cast<float>(bits[o * cols + i]);
            ASSERT_EQ(y[i * rows + o], want) << weight_format_name(m.format) << " weight [" << o << ", " << i << "]";
        }
        ++checked;
    }
    EXPECT_GT(checked, 0u) << weight_format_name(m.format) << ": no finite row to check";
}

// GGUF's block formats, with every tile shape around 1, 2, 3 and 5 blocks per row; row decoders
// bit for bit on the same matrices; every weight the matmul decodes exactly the reference's; the
// pooled matmul the same bits over 1, 2 and 3 threads.

void check_gguf(const KernelTable& table, Worst& worst) {
    std::mt19937 rng(2026);
    const KernelTable& ref = reference_kernels();
    WorkerPool p1(1), p2(2), p3(3);
    for (WeightFormat f : testing::kGgufFormats) {
        const MatmulFn isa = entry(table, f, Layout::out_in);
        ASSERT_NE(isa, entry(ref, f, Layout::out_in)) << weight_format_name(f) << ": not replaced";
        const size_t block = gguf_weight_block(f).values;
        for (size_t rows : {1, 5, 8, 17, 40})
            for (size_t blocks : {1, 2, 3, 5})
                for (size_t n_x : {1, 2, 3, 4, 5, 9}) {
                    const size_t cols = blocks * block;
                    const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
                    const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                    check_matmul(isa, entry(ref, f, Layout::out_in), m, x, n_x,
                                 label(f, Layout::out_in) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                     " n_x " + std::to_string(n_x),
                                 worst, rng);
                    if (n_x != 1) continue;
                    std::vector<float> a(cols), b(cols);
                    for (size_t o = 0; o < rows; ++o) {
                        ref.row_to_f32[static_cast<size_t>(f)](m.view(), o, a.data());
                        table.row_to_f32[static_cast<size_t>(f)](m.view(), o, b.data());
                        ASSERT_EQ(std::memcmp(a.data(), b.data(), cols * 4), 0) << weight_format_name(f) << " row " << o;
                    }
                }
        // Row decoders on gguf-py's blocks (zero and subnormal scales, every MXFP4 exponent).
        const testing::GgufRefMatrix gp = testing::gguf_ref_matrix(f, std::string(weight_format_name(f)).substr(5));
        std::vector<float> row(gp.m.cols);
        for (size_t o = 0; o < gp.m.rows; ++o) {
            table.row_to_f32[static_cast<size_t>(f)](gp.m.view(), o, row.data());
            ASSERT_EQ(std::memcmp(row.data(), gp.value_bits.data() + o * gp.m.cols, gp.m.cols * 4), 0)
                << weight_format_name(f) << " gguf-py row " << o;
        }
        check_weights_exact(isa, gp.m, gp.value_bits);
        {
            const testing::TestMatrix r = testing::random_matrix(f, Layout::out_in, 9, 2 * block, rng);
            std::vector<float> w(r.rows * r.cols);
            for (size_t o = 0; o < r.rows; ++o) ref.row_to_f32[static_cast<size_t>(f)](r.view(), o, w.data() + o * r.cols);
            std::vector<uint32_t> bits(w.size());
            std::memcpy(bits.data(), w.data(), w.size() * 4);
            check_weights_exact(isa, r, bits);
        }
        const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, 1031, 2 * block, rng);
        for (size_t n_x : {size_t{1}, size_t{3}}) {
            const std::vector<float> x = testing::random_floats(n_x * m.cols, rng);
            std::vector<float> y1(n_x * m.rows), y2(n_x * m.rows), y3(n_x * m.rows);
            matmul(Compute{&table, &p1}, m.view(), x.data(), n_x, y1.data());
            matmul(Compute{&table, &p2}, m.view(), x.data(), n_x, y2.data());
            matmul(Compute{&table, &p3}, m.view(), x.data(), n_x, y3.data());
            EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << weight_format_name(f);
            EXPECT_EQ(std::memcmp(y1.data(), y3.data(), y1.size() * 4), 0) << weight_format_name(f);
        }
    }
}

// MXFP4 edges: one row per scale byte 0..255 (subnormal, huge, overflowing to infinity, NaN) and
// an all-zero row, every code present in every block, inputs with exact zeros.
void check_mxfp4_edges(const KernelTable& table, Worst& worst) {
    const MatmulFn isa = entry(table, WeightFormat::MXFP4, Layout::out_in);
    if (isa == entry(reference_kernels(), WeightFormat::MXFP4, Layout::out_in)) return;
    std::mt19937 rng(99);
    testing::TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 257;
    m.cols = 64;
    m.data.resize(m.rows * 32);
    m.scales.resize(m.rows * 2);
    for (size_t o = 0; o < 256; ++o) {
        for (size_t j = 0; j < 32; ++j)
            m.data[o * 32 + j] = static_cast<uint8_t>((j % 16) | (((j * 7 + o) % 16) << 4));
        m.scales[o * 2] = m.scales[o * 2 + 1] = static_cast<uint8_t>(o);
    }
    m.scales[512] = m.scales[513] = 127;  // row 256: all-zero nibbles
    for (size_t n_x : {1, 2, 5}) {
        // Small inputs keep every finite weight's products and sums finite, so non-finite
        // results come only from infinite or NaN weights (order cannot change them).
        std::vector<float> x = testing::random_floats(n_x * m.cols, rng, -1.0f / 1024, 1.0f / 1024);
        x[3] = 0.0f;
        x[m.cols - 1] = 0.0f;
        check_matmul(isa, entry(reference_kernels(), WeightFormat::MXFP4, Layout::out_in), m, x, n_x,
                     "MXFP4 edge scales n_x " + std::to_string(n_x), worst, rng);
    }
    // One scale byte for a whole matrix, so that every tile takes the same route: the 512-bit
    // kernel adds to the exponent for scale bytes 2..252 and multiplies otherwise. Both sides of
    // both ends: at 1 the weights are subnormal, at 253 the largest codes overflow to infinity
    // (where an exponent add would make NaN), elsewhere every weight must be the reference's.
    {
        // Positive codes and inputs: a row with a code of 4 or 6 sums to +infinity, not NaN.
        testing::TestMatrix e = testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, 19, 96, rng);
        for (uint8_t& b : e.data) b &= 0x77;
        std::fill(e.scales.begin(), e.scales.end(), uint8_t{253});
        std::vector<float> x = testing::random_floats(e.cols, rng, 1.0f / 1024, 2.0f / 1024);
        check_matmul(isa, entry(reference_kernels(), WeightFormat::MXFP4, Layout::out_in), e, x, 1,
                     "MXFP4 scale byte 253", worst, rng);
    }
    for (const uint8_t scale : {uint8_t{1}, uint8_t{2}, uint8_t{8}, uint8_t{127}, uint8_t{252}}) {
        testing::TestMatrix e = testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, 19, 96, rng);
        std::fill(e.scales.begin(), e.scales.end(), scale);
        std::vector<float> w(e.rows * e.cols);
        for (size_t o = 0; o < e.rows; ++o)
            reference_kernels().row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)](e.view(), o, w.data() + o * e.cols);
        std::vector<uint32_t> bits(w.size());
        std::memcpy(bits.data(), w.data(), w.size() * 4);
        check_weights_exact(isa, e, bits);
    }
}

// FP8 edges, in blocks of 16 x 128 (the last column block partial): every byte in every row (the
// NaN bytes 0x7F and 0xFF included), scales that are subnormal, large, negative, infinite and NaN;
// inputs with exact zeros. Then, without NaN bytes and with finite scales only, every weight the
// kernel decodes must be the reference's float exactly, with scales on both sides of 2^7, where
// the kernels switch to two multiplies (fp8_scales.hpp), and up to 7e35, where 448 x scale is
// still finite.
void check_fp8_edges(const KernelTable& table, Worst& worst) {
    const MatmulFn isa = entry(table, WeightFormat::FP8_E4M3, Layout::out_in);
    const MatmulFn ref = entry(reference_kernels(), WeightFormat::FP8_E4M3, Layout::out_in);
    ASSERT_NE(isa, ref) << "FP8_E4M3: not replaced";
    std::mt19937 rng(88);
    auto fp8_matrix = [](bool nan_bytes, std::vector<float> scales) {
        testing::TestMatrix m;
        m.format = WeightFormat::FP8_E4M3;
        m.rows = 40;
        m.cols = 272;
        m.fp8_block_rows = 16;
        m.fp8_block_cols = 128;
        m.data.resize(m.rows * m.cols);
        for (size_t o = 0; o < m.rows; ++o)
            for (size_t j = 0; j < m.cols; ++j) {
                auto b = static_cast<uint8_t>((j + 13 * o) % 256);
                if (!nan_bytes && (b & 0x7Fu) == 0x7Fu) b = static_cast<uint8_t>(b - 1);
                m.data[o * m.cols + j] = b;
            }
        m.block_scales = std::move(scales);  // 3 x 3
        return m;
    };
    const float subnormal = std::ldexp(1.0f, -140);
    const float inf = std::numeric_limits<float>::infinity();
    const testing::TestMatrix with_nan = fp8_matrix(
        true, {1e-3f, subnormal, 128.0f, 256.0f, -4096.0f, 3.5e4f, inf, std::numeric_limits<float>::quiet_NaN(), -0.75f});
    for (size_t n_x : {1, 2, 5}) {
        // Small inputs keep finite weights' sums finite, so non-finite results come only from
        // infinite or NaN weights (order cannot change them).
        std::vector<float> x = testing::random_floats(n_x * with_nan.cols, rng, -1.0f / 1024, 1.0f / 1024);
        x[5] = 0.0f;
        x[with_nan.cols - 1] = 0.0f;
        check_matmul(isa, ref, with_nan, x, n_x, "FP8 edge bytes and scales n_x " + std::to_string(n_x), worst, rng);
    }
    const testing::TestMatrix finite =
        fp8_matrix(false, {1e-3f, subnormal, 128.0f, 5e35f, -4096.0f, 7e35f, 1e-30f, 448.0f, -127.99f});
    std::vector<float> w(finite.rows * finite.cols);
    for (size_t o = 0; o < finite.rows; ++o)
        reference_kernels().row_to_f32[static_cast<size_t>(WeightFormat::FP8_E4M3)](finite.view(), o,
                                                                                   w.data() + o * finite.cols);
    std::vector<uint32_t> bits(w.size());
    std::memcpy(bits.data(), w.data(), w.size() * 4);
    check_weights_exact(isa, finite, bits);
}

// Edges of the formats whose kernels fuse where the reference rounds twice: Q4_K, Q5_K and Q2_K
// compute (d * sc) * q - dmin * m, Q4_1 and Q5_1 d * q + m, with one fused multiply-subtract (add),
// which is exact only because the product never rounds (at most 22 significant bits). One row per
// (d, dmin or m) pair of f16 extremes (largest, smallest subnormal, largest subnormal, zeros of
// either sign, negative, infinite, NaN), every other row of the K-quants with every scale and min
// at its largest (63, Q2_K's 15), 512 values a row: the finite rows' weights must be the
// reference's, bit for bit, and the others' outputs must be non-finite where the reference's are.
void check_fused_edges(const KernelTable& table, Worst& worst) {
    std::mt19937 rng(45);
    const uint16_t pairs[][2] = {{0x7BFF, 0x7BFF}, {0x0001, 0x0001}, {0x03FF, 0x7BFF}, {0x0000, 0x3C00},
                                 {0x8000, 0x8000}, {0xFBFF, 0x0400}, {0x3C00, 0x8000}, {0x5BFF, 0xD3FF},
                                 {0x7C00, 0x3C00}, {0x7E00, 0x3C00}, {0x3C00, 0x7C00}, {0xFC00, 0x0001}};
    constexpr size_t kRows = sizeof(pairs) / sizeof(pairs[0]);
    struct Fused {
        WeightFormat format;
        size_t d, m;             // byte offsets of the two halves in a block
        size_t scales, n_scales;  // the packed scales and mins set to their largest
    };
    const Fused formats[] = {{WeightFormat::GGUF_Q4_K, 0, 2, 4, 12}, {WeightFormat::GGUF_Q5_K, 0, 2, 4, 12},
                             {WeightFormat::GGUF_Q2_K, 80, 82, 0, 16}, {WeightFormat::GGUF_Q4_1, 0, 2, 0, 0},
                             {WeightFormat::GGUF_Q5_1, 0, 2, 0, 0}};
    for (const Fused& fused : formats) {
        const WeightFormat f = fused.format;
        const MatmulFn isa = entry(table, f, Layout::out_in);
        const MatmulFn ref = entry(reference_kernels(), f, Layout::out_in);
        if (isa == ref) continue;
        testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, kRows, 512, rng);
        const WeightBlock block = gguf_weight_block(f);
        const size_t per_row = m.cols / block.values;
        for (size_t o = 0; o < kRows; ++o)
            for (size_t b = 0; b < per_row; ++b) {
                uint8_t* at = m.data.data() + (per_row * o + b) * block.bytes;
                std::memcpy(at + fused.d, &pairs[o][0], 2);
                std::memcpy(at + fused.m, &pairs[o][1], 2);
                if (o % 2 == 1) std::memset(at + fused.scales, 0xFF, fused.n_scales);
            }
        std::vector<float> w(m.rows * m.cols);
        for (size_t o = 0; o < m.rows; ++o)
            reference_kernels().row_to_f32[static_cast<size_t>(f)](m.view(), o, w.data() + o * m.cols);
        std::vector<uint32_t> bits(w.size());
        std::memcpy(bits.data(), w.data(), w.size() * 4);
        check_weights_exact(isa, m, bits);
        for (size_t n_x : {1, 3}) {
            // Small inputs keep the finite rows' sums finite.
            const std::vector<float> x = testing::random_floats(n_x * m.cols, rng, -1e-12f, 1e-12f);
            check_matmul(isa, ref, m, x, n_x, std::string(weight_format_name(f)) + " edge scales n_x " + std::to_string(n_x),
                         worst, rng);
        }
    }
}

// Dense edges: every finite BF16 exponent from subnormal up to 2^60, every finite F16 value
// (subnormals, 65504), and inputs with zeros.
void check_dense_edges(const KernelTable& table, Worst& worst) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<uint32_t> bits(0, 0xFFFF);
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::F16}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            const MatmulFn isa = entry(table, f, l);
            if (isa == entry(reference_kernels(), f, l)) continue;
            testing::TestMatrix m = testing::random_matrix(f, l, 23, 41, rng);
            for (size_t k = 0; k < m.rows * m.cols; ++k) {
                uint16_t v = static_cast<uint16_t>(bits(rng));
                if (f == WeightFormat::BF16) {
                    const uint16_t exponent = static_cast<uint16_t>((v >> 7) & 0xFF);
                    if (exponent > 127 + 60) v = static_cast<uint16_t>(v & ~(0xFF << 7));  // keep finite, no overflow
                } else if (((v >> 10) & 0x1F) == 0x1F) {
                    v = static_cast<uint16_t>(v & ~(1u << 14));  // no inf / NaN
                }
                std::memcpy(m.data.data() + 2 * k, &v, 2);
            }
            for (size_t n_x : {1, 4, 7}) {
                std::vector<float> x = testing::random_floats(n_x * m.cols, rng);
                x[0] = 0.0f;
                check_matmul(isa, entry(reference_kernels(), f, l), m, x, n_x, label(f, l) + " edge values", worst, rng);
            }
        }
    }
}

// Row decoders: bit for bit (NaN payloads aside) for every BF16 and F16 pattern and every
// MXFP4 code under every scale byte.
void check_rows(const KernelTable& table) {
    const KernelTable& ref = reference_kernels();
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::F16}) {
        const RowToF32Fn isa = table.row_to_f32[static_cast<size_t>(f)];
        if (isa == ref.row_to_f32[static_cast<size_t>(f)]) continue;
        testing::TestMatrix m;
        m.format = f;
        m.rows = 256;
        m.cols = 259;  // odd: a scalar tail in every row; covers all 65536 patterns and more
        m.data.resize(m.rows * m.cols * 2);
        for (size_t k = 0; k < m.rows * m.cols; ++k) {
            const uint16_t v = static_cast<uint16_t>(k);
            std::memcpy(m.data.data() + 2 * k, &v, 2);
        }
        std::vector<float> a(m.cols), b(m.cols);
        for (size_t r = 0; r < m.rows; ++r) {
            ref.row_to_f32[static_cast<size_t>(f)](m.view(), r, a.data());
            isa(m.view(), r, b.data());
            for (size_t i = 0; i < m.cols; ++i)
                ASSERT_TRUE(testing::same_bits_or_both_nan(a[i], b[i]))
                    << weight_format_name(f) << " pattern " << r * m.cols + i << ": " << a[i] << " vs " << b[i];
        }
    }
    const RowToF32Fn isa = table.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)];
    if (isa == ref.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)]) return;
    testing::TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 256;
    m.cols = 96;
    m.data.resize(m.rows * 48);
    m.scales.resize(m.rows * 3);
    for (size_t o = 0; o < 256; ++o) {
        for (size_t j = 0; j < 48; ++j) m.data[o * 48 + j] = static_cast<uint8_t>((j % 16) | ((15 - (j + o) % 16) << 4));
        m.scales[o * 3] = static_cast<uint8_t>(o);
        m.scales[o * 3 + 1] = static_cast<uint8_t>(255 - o);
        m.scales[o * 3 + 2] = 127;
    }
    std::vector<float> a(m.cols), b(m.cols);
    for (size_t r = 0; r < m.rows; ++r) {
        ref.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)](m.view(), r, a.data());
        isa(m.view(), r, b.data());
        for (size_t i = 0; i < m.cols; ++i)
            ASSERT_TRUE(testing::same_bits_or_both_nan(a[i], b[i]))
                << "MXFP4 row " << r << " element " << i << ": " << a[i] << " vs " << b[i];
    }
}

void check_vector_ops(const KernelTable& table, Worst& worst) {
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(17);
    std::vector<size_t> sizes;
    for (size_t n = 0; n <= 40; ++n) sizes.push_back(n);
    for (size_t n : {63, 64, 65, 100, 1000, 2880}) sizes.push_back(n);
    for (size_t n : sizes) {
        const std::vector<float> a = testing::random_floats(n, rng, -3.0f, 3.0f);
        const std::vector<float> b = testing::random_floats(n, rng, -3.0f, 3.0f);
        if (table.dot != ref.dot) {
            double scale = 0;
            for (size_t i = 0; i < n; ++i) scale += std::fabs(static_cast<double>(a[i]) * b[i]);
            expect_close({ref.dot(a.data(), b.data(), n)}, {table.dot(a.data(), b.data(), n)}, {scale}, n, "dot",
                         "dot n " + std::to_string(n), worst);
        }
        if (table.rmsnorm != ref.rmsnorm && n > 0) {
            std::vector<float> r(n), s(n);
            ref.rmsnorm(a.data(), b.data(), n, 1e-5f, r.data());
            table.rmsnorm(a.data(), b.data(), n, 1e-5f, s.data());
            std::vector<double> scale(n);
            for (size_t i = 0; i < n; ++i) scale[i] = std::fabs(static_cast<double>(r[i]));
            expect_close(r, s, scale, 1, "rmsnorm", "rmsnorm n " + std::to_string(n), worst);
        }
        if (table.softmax != ref.softmax && n > 0) {
            // Attention scores: a spread of 30 (the largest gets almost all the mass), and a masked
            // key (-inf) that must get exactly 0.
            std::vector<float> r(n), s(n);
            for (size_t i = 0; i < n; ++i) r[i] = a[i] * 10.0f;
            if (n > 3) r[n / 2] = -std::numeric_limits<float>::infinity();
            s = r;
            ref.softmax(r.data(), n);
            table.softmax(s.data(), n);
            std::vector<double> scale(n);
            for (size_t i = 0; i < n; ++i) scale[i] = std::fabs(static_cast<double>(r[i]));
            expect_close(r, s, scale, 1, "softmax", "softmax n " + std::to_string(n), worst);
            if (n > 3) {
                EXPECT_EQ(s[n / 2], 0.0f) << "masked key, n " << n;
            }
        }
        if (table.axpy != ref.axpy) {
            std::vector<float> r = b, s = b;
            ref.axpy(0.37f, a.data(), r.data(), n);
            table.axpy(0.37f, a.data(), s.data(), n);
            std::vector<double> scale(n);
            for (size_t i = 0; i < n; ++i) scale[i] = std::fabs(0.37 * a[i]) + std::fabs(static_cast<double>(b[i]));
            expect_close(r, s, scale, 1, "axpy", "axpy n " + std::to_string(n), worst);
        }
    }
    // The masked tail must not write past n.
    if (table.axpy != ref.axpy) {
        std::vector<float> x(16, 1.0f), y(16, 5.0f);
        table.axpy(2.0f, x.data(), y.data(), 11);
        EXPECT_EQ(y[10], 7.0f);
        EXPECT_EQ(y[11], 5.0f);
        EXPECT_EQ(y[15], 5.0f);
    }
}

// Attention's many-row forms give, value for value, the bits of the same table's dot and axpy
// called once per row (dot_many: each query against each row; axpy_many: rows in order into each
// output), over head sizes around the vector widths, runs of rows around the 8-key step, strides
// wider than the rows, and they write nothing outside their outputs.
void check_many_forms(const KernelTable& table) {
    ASSERT_NE(table.dot_many, nullptr);
    ASSERT_NE(table.axpy_many, nullptr);
    std::mt19937 rng(23);
    constexpr float kUntouched = -12345.0f;
    for (size_t n : {1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 72, 128, 129})
        for (size_t n_q : {1, 3, 8})
            for (size_t n_rows : {0, 1, 7, 8, 9, 17, 100}) {
                const std::string what = "n " + std::to_string(n) + ", queries " + std::to_string(n_q) +
                                         ", rows " + std::to_string(n_rows);
                const size_t q_stride = n + 3, row_stride = n + 5, scores_stride = n_rows + 2;
                const std::vector<float> q = testing::random_floats(n_q * q_stride, rng, -3.0f, 3.0f);
                const std::vector<float> rows = testing::random_floats(std::max<size_t>(n_rows, 1) * row_stride, rng, -3.0f, 3.0f);
                std::vector<float> scores(n_q * scores_stride, kUntouched);
                table.dot_many(q.data(), n_q, q_stride, rows.data(), n_rows, row_stride, n, scores.data(), scores_stride);
                for (size_t a = 0; a < n_q; ++a)
                    for (size_t j = 0; j < scores_stride; ++j) {
                        const float got = scores[a * scores_stride + j];
                        if (j >= n_rows) {
                            ASSERT_EQ(got, kUntouched) << "dot_many wrote past its rows, " << what;
                            continue;
                        }
                        const float want = table.dot(q.data() + a * q_stride, rows.data() + j * row_stride, n);
                        ASSERT_TRUE(testing::same_bits_or_both_nan(want, got))
                            << "dot_many query " << a << " row " << j << ", " << what << ": " << got << " vs dot " << want;
                    }

                const std::vector<float> weights = testing::random_floats(n_q * scores_stride, rng, 0.0f, 1.0f);
                const size_t y_stride = n + 4;
                std::vector<float> y = testing::random_floats(n_q * y_stride, rng, -1.0f, 1.0f);
                for (size_t a = 0; a < n_q; ++a)
                    for (size_t i = n; i < y_stride; ++i) y[a * y_stride + i] = kUntouched;
                std::vector<float> want = y;
                for (size_t a = 0; a < n_q; ++a)
                    for (size_t j = 0; j < n_rows; ++j)
                        table.axpy(weights[a * scores_stride + j], rows.data() + j * row_stride, want.data() + a * y_stride, n);
                table.axpy_many(weights.data(), n_q, scores_stride, rows.data(), n_rows, row_stride, n, y.data(), y_stride);
                for (size_t i = 0; i < y.size(); ++i)
                    ASSERT_TRUE(testing::same_bits_or_both_nan(want[i], y[i]))
                        << "axpy_many element " << i << ", " << what << ": " << y[i] << " vs axpy " << want[i];
            }
}

TEST(IsaKernelsReference, ManyRowFormsAreTheSingleRowKernels) { check_many_forms(reference_kernels()); }

// The pooled matmul over 1, 2 and 3 threads gives the same bits with the plugin's kernels too.
void check_thread_counts(const KernelTable& table) {
    std::mt19937 rng(8);
    WorkerPool p1(1), p2(2), p3(3);
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4,
                           WeightFormat::BF16_PACKED, WeightFormat::FP8_E4M3}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            if (entry(table, f, l) == nullptr) continue;
            const testing::TestMatrix m = testing::random_matrix(f, l, 1031, 160, rng);
            for (size_t n_x : {size_t{1}, size_t{3}}) {
                const std::vector<float> x = testing::random_floats(n_x * 160, rng);
                std::vector<float> y1(n_x * 1031), y2(n_x * 1031), y3(n_x * 1031);
                matmul(Compute{&table, &p1}, m.view(), x.data(), n_x, y1.data());
                matmul(Compute{&table, &p2}, m.view(), x.data(), n_x, y2.data());
                matmul(Compute{&table, &p3}, m.view(), x.data(), n_x, y3.data());
                EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << label(f, l);
                EXPECT_EQ(std::memcmp(y1.data(), y3.data(), y1.size() * 4), 0) << label(f, l);
            }
        }
    }
}

void report(const Worst& worst, const char* plugin) {
    double overall = 0;
    for (const auto& [kernel, entry] : worst.by_kernel) {
        std::cout << "[ measured ] " << plugin << " " << kernel << ": worst |plugin - reference| / sum|w*x| = "
                  << entry.first << " (" << entry.second << ")\n";
        overall = std::max(overall, entry.first);
    }
    std::cout << "[ measured ] " << plugin << " overall worst " << overall << ", tolerance " << kTolerance << "\n";
    EXPECT_GE(worst.by_kernel.size(), 10u) << "fewer kernels compared than the plugin replaces";
    ::testing::Test::RecordProperty("worst_relative_error", std::to_string(overall));
}

TEST(IsaKernelsAvx2, DescribesItselfAndScoresByCpu) {
    const auto k = load_kernels("avx2");
    ASSERT_NE(k->description, nullptr);
    EXPECT_STREQ(k->description->name, "avx2");
    EXPECT_EQ(k->description->kind, PluginKind::kernels);
    EXPECT_STREQ(k->description->version, "0.2.0");
    EXPECT_STREQ(k->description->cpu_features, "avx2,fma,f16c");
    ScoreQuery q;
    EXPECT_EQ(k->score(&q), 0) << "no features: unusable";
    EXPECT_EQ(k->score(nullptr), 0);
    q.cpu = detect_cpu_features();
    EXPECT_EQ(k->score(&q) > 0, cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}));
}

TEST(IsaKernelsAvx2, EveryReplacedKernelMatchesTheReference) {
    if (!cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}))
        GTEST_SKIP() << "this CPU lacks avx2/fma/f16c: the avx2 kernels cannot run here";
    const auto k = load_kernels("avx2");
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    KernelTable table = reference_kernels();
    k->plugin()->install(table);
    // What the plugin promises to replace.
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4,
                           WeightFormat::FP8_E4M3})
        EXPECT_NE(entry(table, f, Layout::out_in), entry(reference_kernels(), f, Layout::out_in)) << weight_format_name(f);
    EXPECT_EQ(entry(table, WeightFormat::MXFP4, Layout::in_out), nullptr);
    EXPECT_NE(table.dot, reference_kernels().dot);
    EXPECT_NE(table.dot_many, reference_kernels().dot_many);
    EXPECT_NE(table.axpy_many, reference_kernels().axpy_many);
    EXPECT_NE(table.softmax, reference_kernels().softmax);

    Worst worst;
    check_all_matmuls(table, worst);
    check_gguf(table, worst);
    check_mxfp4_edges(table, worst);
    check_fp8_edges(table, worst);
    check_fused_edges(table, worst);
    check_dense_edges(table, worst);
    check_rows(table);
    check_vector_ops(table, worst);
    check_many_forms(table);
    check_thread_counts(table);
    report(worst, "avx2");
}

// The vnni plugin runs where either VNNI flavour is usable (with the avx2 float kernels' needs).
bool avx_vnni_usable() {
    return cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c, CpuFeature::avx_vnni});
}
bool avx512_vnni_usable() {
    return cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c, CpuFeature::avx512f,
                        CpuFeature::avx512bw, CpuFeature::avx512vl, CpuFeature::avx512_vnni});
}

// The reference table with the vnni plugin's kernels installed over it, the plugin kept loaded
// while the table's pointers are used.
struct InstalledVnni {
    std::unique_ptr<testing::LoadedKernels> kernels;
    KernelTable table = reference_kernels();
    bool installed = false;
    std::string why;
};
InstalledVnni install_vnni() {
    InstalledVnni out;
    out.kernels = load_kernels("vnni");
    if (out.kernels->plugin() == nullptr) {
        out.why = out.kernels->create_error.message;
        return out;
    }
    out.kernels->plugin()->install(out.table);
    out.installed = true;
    return out;
}
bool vnni_usable() { return avx_vnni_usable() || avx512_vnni_usable(); }
constexpr const char* kNoVnni = "this CPU has neither avx_vnni nor avx512_vnni+avx512vl+avx512bw: the vnni plugin's "
                                "kernels cannot run here (the SIMDe tests cover its integer loops)";

TEST(IsaKernelsVnni, DescribesItselfAndScoresAboveAvx2WhenUsable) {
    const auto k = load_kernels("vnni");
    const auto avx2 = load_kernels("avx2");
    ASSERT_NE(k->description, nullptr);
    EXPECT_STREQ(k->description->name, "vnni");
    EXPECT_EQ(k->description->kind, PluginKind::kernels);
    EXPECT_STREQ(k->description->version, "0.2.0");
    // The description names the flavour this machine runs, AVX512-VNNI first (AVX-VNNI's needs when
    // it runs neither).
    const std::string features = k->description->cpu_features;
    if (avx512_vnni_usable()) {
        EXPECT_EQ(features, "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512_vnni");
    } else {
        EXPECT_EQ(features, "avx2,fma,f16c,avx_vnni");
    }
    // Either flavour scores above avx2; neither scores 0.
    ScoreQuery q;
    for (CpuFeature f : {CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}) q.cpu.add(f);
    EXPECT_EQ(k->score(&q), 0) << "AVX2 alone: no VNNI flavour";
    ScoreQuery with_avx_vnni = q;
    with_avx_vnni.cpu.add(CpuFeature::avx_vnni);
    EXPECT_GT(k->score(&with_avx_vnni), avx2->score(&with_avx_vnni));
    ScoreQuery with_avx512 = q;
    for (CpuFeature f : {CpuFeature::avx512f, CpuFeature::avx512bw, CpuFeature::avx512vl, CpuFeature::avx512_vnni})
        with_avx512.cpu.add(f);
    EXPECT_GT(k->score(&with_avx512), avx2->score(&with_avx512));
    ScoreQuery no_vl = with_avx512;
    no_vl.cpu.bits &= ~(uint64_t{1} << static_cast<uint32_t>(CpuFeature::avx512vl));
    EXPECT_EQ(k->score(&no_vl), 0) << "AVX512-VNNI without AVX512VL cannot run the 256-bit kernels";
    EXPECT_EQ(k->score(nullptr), 0);

    q.cpu = detect_cpu_features();
    EXPECT_EQ(k->score(&q) > 0, vnni_usable());
    if (vnni_usable()) {
        EXPECT_GT(k->score(&q), avx2->score(&q));
        EXPECT_NE(k->plugin(), nullptr) << k->create_error.message;
    } else {
        // Even forced, it refuses to build kernels this CPU cannot run, and says why.
        EXPECT_EQ(k->object, nullptr);
        EXPECT_EQ(k->create_error.kind, ErrorKind::unsupported);
        EXPECT_NE(k->create_error.message.find("avx_vnni"), std::string::npos) << k->create_error.message;
    }
}

TEST(IsaKernelsVnni, FloatKernelsMatchTheReference) {
    if (!vnni_usable()) GTEST_SKIP() << kNoVnni;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    const KernelTable& table = vnni.table;
    Worst worst;
    check_all_matmuls(table, worst);
    check_gguf(table, worst);
    check_mxfp4_edges(table, worst);
    check_fp8_edges(table, worst);
    check_fused_edges(table, worst);
    check_dense_edges(table, worst);
    check_rows(table);
    check_vector_ops(table, worst);
    check_many_forms(table);
    check_thread_counts(table);
    report(worst, "vnni");
}

bool bf16_pairs_usable() { return avx512_vnni_usable() && cpu_has_all({CpuFeature::avx512_bf16}); }
constexpr const char* kNoBf16 = "this CPU lacks avx512_bf16: the vnni plugin installs no BF16 pair kernels here "
                                "(the integer road keeps BF16 matrices on the float road)";

// The integer road's BF16 activations (matmul_bf16a) against the reference's definition, on odd
// shapes and tails around the 32-value steps and 64-value groups, packed rows with patches among
// them (random_matrix's outliers); with the row-independence contract of every matrix kernel.
TEST(IsaKernelsVnni, Bf16PairsMatchTheReference) {
    if (!bf16_pairs_usable()) GTEST_SKIP() << kNoBf16;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(2027);
    Worst worst;
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::BF16_PACKED}) {
        const size_t i = static_cast<size_t>(f);
        const MatmulFn isa = vnni.table.matmul_bf16a[i];
        ASSERT_NE(isa, nullptr) << weight_format_name(f);
        ASSERT_NE(isa, ref.matmul_bf16a[i]) << weight_format_name(f) << ": the plugin installed no pair kernel";
        for (size_t rows : {1, 5, 8, 17, 40})
            for (size_t cols : {1, 3, 31, 32, 33, 63, 64, 65, 100, 257})
                for (size_t n_x : {1, 2, 3, 4, 5, 9}) {
                    const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
                    const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                    check_matmul(isa, ref.matmul_bf16a[i], m, x, n_x,
                                 std::string("pairs ") + weight_format_name(f) + " " + std::to_string(rows) + "x" +
                                     std::to_string(cols) + " n_x " + std::to_string(n_x),
                                 worst, rng);
                }
    }
    for (const auto& [kernel, w] : worst.by_kernel)
        std::printf("[ measured ] vnni BF16 pairs %s: worst |plugin - reference| / sum|w*x| = %g (%s)\n", kernel.c_str(),
                    w.first, w.second.c_str());
    EXPECT_EQ(worst.by_kernel.size(), 2u);
}

// Each activation as the pair kernels round it, read back exactly: against the identity (W[o][o] =
// 1, zeros elsewhere) output o of a row holding only x[o] is 1 * bf16(x[o]) plus products of zeros
// (so an infinity stays one, and a NaN a NaN).
// The values: random magnitudes, exact ties with even and odd last bits, subnormals, the edge of the
// normals, the largest floats (which round to infinity), infinities and NaNs.
TEST(IsaKernelsVnni, Bf16PairsRoundAsTheReference) {
    if (!bf16_pairs_usable()) GTEST_SKIP() << kNoBf16;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    std::mt19937 rng(9);
    std::vector<uint32_t> values = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x007FFFFFu, 0x00800000u,
                                    0x00808000u, 0x00818000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu,
                                    0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x3F808000u,
                                    0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0xBF818000u};
    std::uniform_int_distribution<uint32_t> bits;
    for (int i = 0; i < 300; ++i) values.push_back(bits(rng));                           // any pattern
    for (int i = 0; i < 100; ++i) values.push_back((bits(rng) & 0xFFFF0000u) | 0x8000u);  // ties
    const size_t n = 64;
    testing::TestMatrix eye;
    eye.format = WeightFormat::BF16;
    eye.rows = eye.cols = n;
    eye.data.assign(n * n * 2, 0);
    for (size_t o = 0; o < n; ++o) eye.data[(o * n + o) * 2 + 1] = 0x3F, eye.data[(o * n + o) * 2] = 0x80;
    testing::TestMatrix packed = eye;
    packed.format = WeightFormat::BF16_PACKED;
    const auto p = packed_bf16::pack(eye.view(), nullptr, 100.0);
    ASSERT_TRUE(p.has_value());
    packed.data.assign(reinterpret_cast<const uint8_t*>(p->storage->data()),
                       reinterpret_cast<const uint8_t*>(p->storage->data()) + p->storage->size());
    std::vector<float> x(values.size() * n, 0.0f), y(values.size() * n);
    for (size_t r = 0; r < values.size(); ++r) x[r * n + r % n] = std::bit_cast<float>(values[r]);
    for (const testing::TestMatrix* m : {&eye, &packed}) {
        vnni.table.matmul_bf16a[static_cast<size_t>(m->format)](m->view(), x.data(), values.size(), n, y.data(), n, 0, n);
        for (size_t r = 0; r < values.size(); ++r) {
            const float want = bf16_to_f32(bf16_activations::round_bits(values[r]));
            const float got = y[r * n + r % n];
            // A zero of either sign matches a zero: the sum from +0 keeps no -0.
            EXPECT_TRUE(std::isnan(want) ? std::isnan(got) : got == want)
                << weight_format_name(m->format) << ": x bits " << std::hex << values[r] << " gave " << got << ", round_bits " << want;
        }
    }
}

// matmul runs the plugin's pairs for BF16 matrices on the integer road only, and a head keeps the
// float road there (the bounded head proves its token against the float kernel's logits).
TEST(IsaKernelsVnni, Bf16PairsRunOnTheIntegerRoadOnlyAndNeverForTheHead) {
    if (!bf16_pairs_usable()) GTEST_SKIP() << kNoBf16;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    WorkerPool pool(2);
    std::mt19937 rng(5);
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::BF16_PACKED}) {
        const size_t i = static_cast<size_t>(f), rows = 300, cols = 200, n_x = 3;
        const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
        std::vector<float> x = testing::random_floats(n_x * cols, rng);
        std::vector<float> pairs(n_x * rows), floats(n_x * rows), road(n_x * rows), off(n_x * rows), head(n_x * rows);
        vnni.table.matmul_bf16a[i](m.view(), x.data(), n_x, cols, pairs.data(), rows, 0, rows);
        vnni.table.matmul[i][static_cast<size_t>(Layout::out_in)](m.view(), x.data(), n_x, cols, floats.data(), rows, 0, rows);
        matmul(Compute{&vnni.table, &pool, true}, m.view(), x.data(), n_x, road.data());
        matmul(Compute{&vnni.table, &pool, false}, m.view(), x.data(), n_x, off.data());
        toolkit::build_head(Compute{&vnni.table, &pool, true}, m.view(), Rows{x.data(), n_x, cols}, Rows{head.data(), n_x, rows});
        EXPECT_EQ(road, pairs) << weight_format_name(f);
        EXPECT_EQ(off, floats) << weight_format_name(f);
        EXPECT_EQ(head, floats) << weight_format_name(f);
        EXPECT_NE(pairs, floats) << weight_format_name(f) << ": the pairs round the activations";
    }
}

// Inputs for the int8 dot: sizes around every block and tail boundary, random bytes, the
// extremes, and a length whose sum wraps.
std::vector<std::pair<std::vector<uint8_t>, std::vector<int8_t>>> int8_cases() {
    std::mt19937 rng(31);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<std::pair<std::vector<uint8_t>, std::vector<int8_t>>> cases;
    for (size_t n : {0, 1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 1000, 4113}) {
        std::vector<uint8_t> a(n);
        std::vector<int8_t> b(n);
        for (size_t i = 0; i < n; ++i) {
            a[i] = static_cast<uint8_t>(byte(rng));
            b[i] = static_cast<int8_t>(byte(rng) - 128);
        }
        cases.emplace_back(a, b);
    }
    cases.emplace_back(std::vector<uint8_t>(777, 255), std::vector<int8_t>(777, -128));
    cases.emplace_back(std::vector<uint8_t>(777, 255), std::vector<int8_t>(777, 127));
    cases.emplace_back(std::vector<uint8_t>(70001, 255), std::vector<int8_t>(70001, -128));  // wraps
    return cases;
}

TEST(IsaKernelsVnni, Int8DotLoopUnderSimdeIsBitExact) {
    const DotI8Fn ref = reference_kernels().dot_u8i8;
    for (const auto& [a, b] : int8_cases())
        EXPECT_EQ(simd::dot_u8i8_blocks<simd::SimdeVnni>(a.data(), b.data(), a.size()), ref(a.data(), b.data(), a.size()))
            << "n " << a.size();
}

TEST(IsaKernelsVnni, Int8DotNativeIsBitExact) {
    if (!vnni_usable()) GTEST_SKIP() << kNoVnni;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    const KernelTable& table = vnni.table;
    ASSERT_NE(table.dot_u8i8, reference_kernels().dot_u8i8);
    for (const auto& [a, b] : int8_cases())
        EXPECT_EQ(table.dot_u8i8(a.data(), b.data(), a.size()), reference_kernels().dot_u8i8(a.data(), b.data(), a.size()))
            << "n " << a.size();
}

// The head's integer pass: every column count's tail, 1 to 11 activation rows (the 8-, 4-, 2-row
// and lone tiles), an output range that starts past row 0, strides past the row lengths, extreme
// bytes; the same int32 as the reference.
struct HeadQ8Case {
    size_t cols, n_x;
    std::vector<int8_t> q;
    std::vector<uint8_t> u;
};
std::vector<HeadQ8Case> head_q8_cases(size_t rows) {
    std::mt19937 rng(41);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<HeadQ8Case> cases;
    for (size_t cols : {size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{64}, size_t{100}, size_t{2880}})
        for (size_t n_x : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{8}, size_t{11}}) {
            HeadQ8Case c{cols, n_x, std::vector<int8_t>(rows * cols), std::vector<uint8_t>(n_x * (cols + 3))};
            for (int8_t& v : c.q) v = static_cast<int8_t>(byte(rng) - 128);
            for (uint8_t& v : c.u) v = static_cast<uint8_t>(byte(rng));
            if (cols == 2880) std::fill(c.u.begin(), c.u.end(), uint8_t{0});  // p = -128 everywhere
            cases.push_back(std::move(c));
        }
    return cases;
}

void expect_head_q8_matches_reference(DotRowsQ8Fn f, const std::string& who) {
    const size_t rows = 13, y_stride = rows + 1;
    const DotRowsQ8Fn ref = reference_kernels().dot_rows_q8;
    for (const HeadQ8Case& c : head_q8_cases(rows)) {
        std::vector<int32_t> want(c.n_x * y_stride, -7), got(c.n_x * y_stride, -7);
        ref(c.q.data(), c.cols, c.u.data(), c.n_x, c.cols + 3, want.data(), y_stride, 2, rows);
        f(c.q.data(), c.cols, c.u.data(), c.n_x, c.cols + 3, got.data(), y_stride, 2, rows);
        EXPECT_EQ(got, want) << who << ", cols " << c.cols << ", " << c.n_x << " rows";
    }
}

TEST(IsaKernelsVnni, HeadIntegerPassUnderSimdeIsBitExact) {
    expect_head_q8_matches_reference(simd::dot_rows_q8_blocks<simd::SimdeVnni>, "SIMDe");
}

TEST(IsaKernelsVnni, HeadIntegerPassNativeIsBitExact) {
    if (!vnni_usable()) GTEST_SKIP() << kNoVnni;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    const KernelTable& table = vnni.table;
    ASSERT_NE(table.dot_rows_q8, reference_kernels().dot_rows_q8);
    expect_head_q8_matches_reference(table.dot_rows_q8, "vnni");
}

TEST(IsaKernelsVnni, HeadIntegerPassReferenceIsTheSum) {
    // The reference against a sum written out here, p = u - 128.
    const size_t rows = 3;
    for (const HeadQ8Case& c : head_q8_cases(rows)) {
        std::vector<int32_t> y(c.n_x * rows);
        reference_kernels().dot_rows_q8(c.q.data(), c.cols, c.u.data(), c.n_x, c.cols + 3, y.data(), rows, 0, rows);
        for (size_t r = 0; r < c.n_x; ++r)
            for (size_t o = 0; o < rows; ++o) {
                int64_t s = 0;
                for (size_t i = 0; i < c.cols; ++i) s += int64_t{c.q[o * c.cols + i]} * (int64_t{c.u[r * (c.cols + 3) + i]} - 128);
                EXPECT_EQ(y[r * rows + o], s) << "cols " << c.cols << ", row " << r << ", output " << o;
            }
    }
}

// ---- What is compiled where (one COMDAT copy of an inline function may be compiled with wider ISA flags) ---------------------------------------

// Every function of a plugin library with the instructions it uses, from objdump's disassembly.
struct DisassembledFunction {
    std::string name;
    bool vex = false;   // any AVX-class instruction (mnemonic starting with 'v')
    bool wide = false;  // AVX-512 only: zmm or mask registers, ymm16-31, EVEX vpdpbusd forms
};

std::vector<DisassembledFunction> disassemble(const std::string& library) {
    std::vector<DisassembledFunction> out;
    FILE* pipe = popen(("objdump -d --no-show-raw-insn -C " + library + " 2>/dev/null").c_str(), "r");
    if (pipe == nullptr) return out;
    char line[4096];
    while (fgets(line, sizeof line, pipe) != nullptr) {
        const std::string l = line;
        const size_t open = l.find(" <");
        if (open != std::string::npos && l.size() > 3 && l.compare(l.size() - 3, 3, ">:\n") == 0) {
            out.push_back({l.substr(open + 2, l.size() - open - 5)});
            continue;
        }
        const size_t tab = l.find('\t');
        if (out.empty() || tab == std::string::npos) continue;
        const std::string insn = l.substr(tab + 1);
        if (!insn.empty() && insn[0] == 'v') out.back().vex = true;
        static const char* const kWide[] = {"%zmm", "%k1", "%k2", "%k3", "%k4", "%k5", "%k6", "%k7", "{%k",
                                            "%ymm16", "%ymm17", "%ymm18", "%ymm19", "%ymm2", "%ymm3", "%xmm16",
                                            "%xmm17", "%xmm18", "%xmm19", "%xmm2", "%xmm3"};
        for (const char* w : kWide) {
            const size_t at = insn.find(w);
            if (at == std::string::npos) continue;
            // %ymm2 / %xmm2 / %ymm3 / %xmm3 alone are VEX registers; only %ymm20-%ymm39 are EVEX.
            const std::string tok(w);
            if ((tok == "%ymm2" || tok == "%ymm3" || tok == "%xmm2" || tok == "%xmm3") &&
                !(at + tok.size() < insn.size() && std::isdigit(static_cast<unsigned char>(insn[at + tok.size()]))))
                continue;
            out.back().wide = true;
        }
    }
    pclose(pipe);
    return out;
}

// Baseline code (entry points, installers, feature checks, anything the linker could share with
// them) has no AVX instruction; AVX-512 code exists only in the vnni plugin's AVX512-VNNI flavour
// and its 512-bit float kernels (namespace stormo::simd::avx512, installed only where the CPU has
// AVX-512), so the avx2 kernels and the AVX-VNNI flavour run on CPUs without AVX-512.
TEST(IsaKernelsBuild, WideInstructionsOnlyWhereTheirFlavourRuns) {
    if (std::system("objdump --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "objdump is not installed here";
    for (const char* isa : {"avx2", "vnni"}) {
        const std::string path = std::string(STORMO_BUILD_PLUGIN_DIR) + "/libstormo-kernels-" + isa + ".so";
        const std::vector<DisassembledFunction> functions = disassemble(path);
        ASSERT_GT(functions.size(), 10u) << "objdump read nothing from " << path;
        size_t vex_functions = 0, wide_functions = 0;
        for (const DisassembledFunction& f : functions) {
            const bool simd = f.name.find("stormo::simd::") != std::string::npos;
            const bool avx512 = f.name.find("Avx512Vnni") != std::string::npos || f.name.find("avx512_vnni") != std::string::npos ||
                                f.name.find("stormo::simd::avx512::") != std::string::npos;
            vex_functions += f.vex;
            wide_functions += f.wide;
            EXPECT_TRUE(!f.vex || simd) << isa << ": AVX code outside stormo::simd: " << f.name;
            EXPECT_TRUE(!f.wide || avx512) << isa << ": AVX-512 code outside the AVX-512 kernels: " << f.name;
        }
        EXPECT_GT(vex_functions, 0u) << isa << ": no AVX code found: is the disassembly parsed?";
        std::cout << "[ checked  ] " << isa << ": " << functions.size() << " functions, " << vex_functions
                  << " with AVX code (all stormo::simd), " << wide_functions << " with AVX-512 code\n";
    }
}

// ---- stormo bench-kernels ----------------------------------------------------------------

// A small, fast run of the benchmark command: one row per (format, kernels, road, n_x, threads)
// with positive rates, the int8 road only for MXFP4, and the RAM probe per thread count.
TEST(IsaKernelsBench, CommandReportsEveryKernelRoadAndThreadCount) {
    const std::string cmd = std::string(STORMO_CLI) +
                            " bench-kernels --rows 256 --cols 512 --set-size 4MiB --n-x 1,3 --threads-list 1,2"
                            " --formats mxfp4,bf16:in_out,q6_k --min-time 0.02 --ram-probe 8MiB --ram-repeats 1 --json";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[4096];
    while (fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
    ASSERT_EQ(pclose(pipe), 0) << out;
    auto json = Json::parse(out, "bench-kernels output");
    ASSERT_TRUE(json.has_value()) << json.error().message << "\n" << out;
    const auto* ram = json->find("ram")->as_array();
    ASSERT_NE(ram, nullptr);
    ASSERT_EQ(ram->size(), 2u);
    for (const Json& r : *ram) EXPECT_GT(*r.find("bytes_per_s")->as_double(), 0.0);
    const auto* results = json->find("results")->as_array();
    ASSERT_NE(results, nullptr);
    std::vector<std::string> kernels{"reference"};
    if (kernels_unusable_reason("avx2").empty()) kernels.push_back("avx2");
    if (kernels_unusable_reason("vnni").empty()) kernels.push_back("vnni");
    // MXFP4 and GGUF Q6_K: f32 and int8 roads; BF16 in_out: f32 only. Each x 2 row counts x 2
    // thread counts.
    EXPECT_EQ(results->size(), kernels.size() * (2 + 1 + 2) * 2 * 2);
    size_t int8_rows = 0;
    for (const Json& r : *results) {
        EXPECT_GT(*r.find("weight_bytes_per_s")->as_double(), 0.0);
        EXPECT_GT(*r.find("ram_fraction")->as_double(), 0.0);
        const std::string road = *r.find("road")->as_string();
        if (road == "int8") {
            ++int8_rows;
            const std::string format = *r.find("format")->as_string();
            EXPECT_TRUE(format == "MXFP4" || format == "GGUF_Q6_K") << format;
        }
        EXPECT_NE(std::find(kernels.begin(), kernels.end(), *r.find("kernels")->as_string()), kernels.end());
    }
    EXPECT_EQ(int8_rows, kernels.size() * 2 * 2 * 2);
}

// ---- The integer road: MXFP4 x int8, bit for bit -----------------------------------------

// Compares a MatmulQ8Fn with the reference on one matrix and input: every value the same bits
// (NaN matching NaN), and each row alone over a split output range the same as in the batch.
void check_q8(MatmulQ8Fn isa, const testing::TestMatrix& m, const testing::TestQ8& x, const std::string& what,
              size_t& compared) {
    const MatmulQ8Fn ref = reference_kernels().matmul_q8[static_cast<size_t>(WeightFormat::MXFP4)];
    const size_t rows = m.rows;
    std::vector<float> y_ref(x.n_x * rows, -1.0f), y_isa(x.n_x * rows, -2.0f);
    ref(m.view(), x.view(), y_ref.data(), rows, 0, rows);
    isa(m.view(), x.view(), y_isa.data(), rows, 0, rows);
    for (size_t k = 0; k < y_ref.size(); ++k)
        if (!testing::same_bits_or_both_nan(y_ref[k], y_isa[k])) {
            ADD_FAILURE() << what << " [row " << k / rows << ", output " << k % rows << "]: reference " << y_ref[k]
                          << ", plugin " << y_isa[k];
            return;
        }
    compared += y_ref.size();
    const size_t split = rows / 3;
    for (size_t r = 0; r < x.n_x; ++r) {
        testing::TestQ8 one;
        one.n_x = 1;
        one.cols = x.cols;
        one.blocks = x.blocks;
        one.q.assign(x.q.begin() + static_cast<std::ptrdiff_t>(r * x.blocks * kQ8Block),
                     x.q.begin() + static_cast<std::ptrdiff_t>((r + 1) * x.blocks * kQ8Block));
        one.scales.assign(x.scales.begin() + static_cast<std::ptrdiff_t>(r * x.blocks),
                          x.scales.begin() + static_cast<std::ptrdiff_t>((r + 1) * x.blocks));
        std::vector<float> y(rows, -3.0f);
        isa(m.view(), one.view(), y.data(), rows, 0, split);
        isa(m.view(), one.view(), y.data(), rows, split, rows);
        for (size_t o = 0; o < rows; ++o)
            if (!testing::same_bits_or_both_nan(y[o], y_isa[r * rows + o])) {
                ADD_FAILURE() << what << ": row " << r << " output " << o << " alone gives " << y[o] << ", in the batch "
                              << y_isa[r * rows + o];
                return;
            }
    }
}

// Random matrices and activations over block counts around every group-of-8 and pair boundary.
void check_q8_random(MatmulQ8Fn isa, const char* name) {
    std::mt19937 rng(77);
    size_t compared = 0;
    for (size_t blocks : {1, 2, 3, 7, 8, 9, 10, 15, 16, 17, 90})
        for (size_t rows : {1, 5, 17, 40})
            for (size_t n_x : {1, 2, 3, 4, 5, 9}) {
                const testing::TestMatrix m =
                    testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, rows, blocks * 32, rng, 100, 150);
                const testing::TestQ8 x = testing::random_q8(n_x, blocks * 32, rng);
                check_q8(isa, m, x,
                         std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(blocks * 32) + " n_x " +
                             std::to_string(n_x),
                         compared);
            }
    std::cout << "[ checked  ] " << name << ": " << compared << " random integer-road outputs, all bit-identical\n";
}

// Every byte (so every pair of codes) in every position, every scale byte (subnormal half-scales,
// 2^126 that overflows, the NaN 255), activations at -128 and 127, zero and extreme x scales.
void check_q8_edges(MatmulQ8Fn isa, const char* name) {
    std::mt19937 rng(78);
    size_t compared = 0;
    testing::TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 64;
    m.cols = 17 * 32;  // 17 blocks: two full groups of 8 and a lone block
    const size_t nb = m.cols / 32;
    m.data.resize(m.rows * nb * 16);
    m.scales.resize(m.rows * nb);
    for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<uint8_t>(i * 7 + i / 256);
    for (size_t i = 0; i < m.scales.size(); ++i) m.scales[i] = static_cast<uint8_t>(i % 256);
    for (size_t j = 0; j < nb * 16; ++j) m.data[j] = 0x77;  // row 0: code 7 (6.0) everywhere
    for (size_t j = 0; j < nb; ++j) m.scales[j] = 127;

    testing::TestQ8 x = testing::random_q8(6, m.cols, rng);
    const size_t row_q = nb * kQ8Block;
    std::fill(x.q.begin(), x.q.begin() + static_cast<std::ptrdiff_t>(row_q), int8_t{-128});  // the most negative int8
    std::fill(x.q.begin() + static_cast<std::ptrdiff_t>(row_q), x.q.begin() + static_cast<std::ptrdiff_t>(2 * row_q),
              int8_t{127});
    for (size_t b = 0; b < nb; ++b) {
        x.scales[b] = 1.0f;
        x.scales[nb + b] = b % 2 == 0 ? 0.0f : 1.0f;                          // zero scales
        x.scales[2 * nb + b] = b % 3 == 0 ? FLT_MAX : std::ldexp(1.0f, 100);  // overflow to infinity
        x.scales[3 * nb + b] = std::ldexp(1.0f, -140) * static_cast<float>(b + 1);  // subnormal
        x.scales[4 * nb + b] = b % 4 == 0 ? std::numeric_limits<float>::quiet_NaN() : 0.5f;
    }
    check_q8(isa, m, x, std::string(name) + " edge codes and scales", compared);
    // Row 0 against row 0 of x: 17 blocks of 32 * (-128) * 12 = -49152, each times 2^-1, exactly.
    std::vector<float> y(m.rows * x.n_x);
    isa(m.view(), x.view(), y.data(), m.rows, 0, 1);
    EXPECT_EQ(y[0], -49152.0f * 0.5f * 17.0f) << name;
    std::cout << "[ checked  ] " << name << ": " << compared << " edge integer-road outputs, all bit-identical\n";
}

// The pooled integer road over 1, 2 and 3 threads gives the same bits, and the reference's.
void check_q8_thread_counts(const KernelTable& table, const char* name) {
    const KernelTable& t = table;
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(79);
    WorkerPool p1(1), p2(2), p3(3);
    const testing::TestMatrix m = testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, 1031, 160, rng);
    for (size_t n_x : {size_t{1}, size_t{3}, size_t{8}}) {
        const std::vector<float> x = testing::random_floats(n_x * 160, rng);
        std::vector<float> y0(n_x * 1031), y1(n_x * 1031), y2(n_x * 1031), y3(n_x * 1031);
        matmul(Compute{&ref, nullptr, true}, m.view(), x.data(), n_x, y0.data());
        matmul(Compute{&t, &p1, true}, m.view(), x.data(), n_x, y1.data());
        matmul(Compute{&t, &p2, true}, m.view(), x.data(), n_x, y2.data());
        matmul(Compute{&t, &p3, true}, m.view(), x.data(), n_x, y3.data());
        EXPECT_EQ(std::memcmp(y0.data(), y1.data(), y0.size() * 4), 0) << name << " n_x " << n_x;
        EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << name << " n_x " << n_x;
        EXPECT_EQ(std::memcmp(y1.data(), y3.data(), y1.size() * 4), 0) << name << " n_x " << n_x;
    }
}

// ---- The integer road: GGUF block formats x int8, bit for bit ---------------------------------

// Random activations (every int8 value, -128 included; scales over 2^-12..2^4; the per-16 sums
// of the 256-blocks computed from q) against every format on block counts around the
// group-of-8 boundary, with single rows over split output ranges; then zero, overflowing and NaN
// activation scales; then the pooled matmul over 1, 2 and 3 threads against the reference.
testing::TestQ8 random_q8_blocks(size_t n_x, size_t cols, size_t block, std::mt19937& rng, std::vector<int16_t>& sums,
                                 bool without_int8_min) {
    testing::TestQ8 t = testing::random_q8(n_x, cols, rng);  // 32-blocks: q and one scale per 32
    if (without_int8_min)
        for (int8_t& v : t.q) v = v == -128 ? int8_t{-127} : v;
    t.blocks = (cols + block - 1) / block;
    t.scales.resize(n_x * t.blocks);
    sums.assign(n_x * t.blocks * block / kQ8SumValues, 0);
    for (size_t g = 0; g < sums.size(); ++g) {
        int s = 0;
        for (size_t k = 0; k < kQ8SumValues; ++k) s += t.q[g * kQ8SumValues + k];
        sums[g] = static_cast<int16_t>(s);
    }
    return t;
}

void check_q8_gguf(const KernelTable& table, const char* name) {
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(80);
    size_t compared = 0;
    WorkerPool p1(1), p2(2), p3(3);
    for (WeightFormat f : testing::kGgufInt8Formats) {
        const size_t fi = static_cast<size_t>(f);
        ASSERT_NE(table.matmul_q8[fi], nullptr) << weight_format_name(f);
        ASSERT_NE(table.matmul_q8[fi], ref.matmul_q8[fi]) << weight_format_name(f) << ": not replaced";
        const size_t wblock = gguf_weight_block(f).values;
        const size_t xblock = q8_block_values(f);
        for (size_t blocks : {1, 2, 7, 8, 9, 17})
            for (size_t rows : {1, 5, 17})
                for (size_t n_x : {1, 2, 3, 5, 6}) {  // 6: the lane tiles' 4 + 2 rows
                    const size_t cols = blocks * wblock;
                    const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
                    std::vector<int16_t> sums;
                    // rows 5: no -128 anywhere, as the quantizer makes them (Q8_0's faster step)
                    testing::TestQ8 x = random_q8_blocks(n_x, cols, xblock, rng, sums, rows == 5);
                    if (blocks == 2 && n_x > 1) {
                        x.scales[0] = 0.0f;
                        x.scales[x.blocks] = std::ldexp(1.0f, 100);  // overflows to infinity with big weights
                        if (n_x > 2) x.scales[2 * x.blocks] = std::numeric_limits<float>::quiet_NaN();
                    }
                    Q8Rows view = x.view();
                    view.block = xblock;
                    view.sums = xblock == kQ8KBlock ? sums.data() : nullptr;
                    std::vector<float> y_ref(n_x * rows, -1.0f), y_isa(n_x * rows, -2.0f), y_split(n_x * rows, -3.0f);
                    ref.matmul_q8[fi](m.view(), view, y_ref.data(), rows, 0, rows);
                    table.matmul_q8[fi](m.view(), view, y_isa.data(), rows, 0, rows);
                    table.matmul_q8[fi](m.view(), view, y_split.data(), rows, 0, rows / 2);
                    table.matmul_q8[fi](m.view(), view, y_split.data(), rows, rows / 2, rows);
                    for (size_t k = 0; k < y_ref.size(); ++k) {
                        ASSERT_TRUE(testing::same_bits_or_both_nan(y_ref[k], y_isa[k]))
                            << name << " " << weight_format_name(f) << " " << rows << "x" << cols << " n_x " << n_x << " [" << k
                            << "]: reference " << y_ref[k] << ", plugin " << y_isa[k];
                        ASSERT_TRUE(testing::same_bits_or_both_nan(y_split[k], y_isa[k])) << weight_format_name(f) << " split";
                    }
                    compared += y_ref.size();
                }
        {  // rows quantized for the other block size (and K-quant rows without sums): NaN, loudly
            const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, 3, kQ8KBlock, rng);
            std::vector<int16_t> sums;
            const testing::TestQ8 x = random_q8_blocks(1, kQ8KBlock, kQ8KBlock + kQ8Block - xblock, rng, sums, false);
            Q8Rows view = x.view();
            view.block = kQ8KBlock + kQ8Block - xblock;
            view.sums = view.block == kQ8KBlock ? sums.data() : nullptr;
            std::vector<float> y(3, 0.0f);
            table.matmul_q8[fi](m.view(), view, y.data(), 3, 0, 3);
            for (float v : y) EXPECT_TRUE(std::isnan(v)) << name << " " << weight_format_name(f) << ": mismatched rows gave " << v;
        }
        // gguf-py's blocks (zero and subnormal scales, every MXFP4 exponent, 255 included).
        const testing::GgufRefMatrix gp = testing::gguf_ref_matrix(f, std::string(weight_format_name(f)).substr(5));
        for (size_t n_x : {size_t{1}, size_t{4}}) {
            std::vector<int16_t> sums;
            const testing::TestQ8 x = random_q8_blocks(n_x, gp.m.cols, xblock, rng, sums, false);
            Q8Rows view = x.view();
            view.block = xblock;
            view.sums = xblock == kQ8KBlock ? sums.data() : nullptr;
            std::vector<float> y_ref(n_x * gp.m.rows), y_isa(n_x * gp.m.rows);
            ref.matmul_q8[fi](gp.m.view(), view, y_ref.data(), gp.m.rows, 0, gp.m.rows);
            table.matmul_q8[fi](gp.m.view(), view, y_isa.data(), gp.m.rows, 0, gp.m.rows);
            for (size_t k = 0; k < y_ref.size(); ++k)
                ASSERT_TRUE(testing::same_bits_or_both_nan(y_ref[k], y_isa[k]))
                    << name << " " << weight_format_name(f) << " gguf-py blocks [" << k << "]: reference " << y_ref[k]
                    << ", plugin " << y_isa[k];
            compared += y_ref.size();
        }
        const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, 1031, 2 * kQ8KBlock, rng);
        for (size_t n_x : {size_t{1}, size_t{3}}) {
            const std::vector<float> x = testing::random_floats(n_x * m.cols, rng);
            std::vector<float> y0(n_x * m.rows), y1(n_x * m.rows), y2(n_x * m.rows), y3(n_x * m.rows);
            matmul(Compute{&ref, nullptr, true}, m.view(), x.data(), n_x, y0.data());
            matmul(Compute{&table, &p1, true}, m.view(), x.data(), n_x, y1.data());
            matmul(Compute{&table, &p2, true}, m.view(), x.data(), n_x, y2.data());
            matmul(Compute{&table, &p3, true}, m.view(), x.data(), n_x, y3.data());
            EXPECT_EQ(std::memcmp(y0.data(), y1.data(), y0.size() * 4), 0) << name << " " << weight_format_name(f);
            EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << name << " " << weight_format_name(f);
            EXPECT_EQ(std::memcmp(y1.data(), y3.data(), y1.size() * 4), 0) << name << " " << weight_format_name(f);
        }
    }
    std::cout << "[ checked  ] " << name << ": " << compared << " GGUF integer-road outputs, all bit-identical\n";
}

// The plugin `isa` installed over the reference table, checked on the GGUF integer road.
void check_q8_gguf_of(const char* isa) {
    const auto k = load_kernels(isa);
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    KernelTable table = reference_kernels();
    k->plugin()->install(table);
    check_q8_gguf(table, isa);
}

TEST(IsaKernelsAvx2, GgufIntegerRoadIsBitExact) {
    if (!cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}))
        GTEST_SKIP() << "this CPU lacks avx2/fma/f16c: the avx2 kernels cannot run here";
    check_q8_gguf_of("avx2");
}

TEST(IsaKernelsVnni, GgufIntegerRoadIsBitExact) {
    if (!vnni_usable()) GTEST_SKIP() << kNoVnni;
    check_q8_gguf_of("vnni");
}

TEST(IsaKernelsVnni, GgufIntegerRoadUnderSimdeIsBitExact) {
    check_q8_gguf(simd::simde_q8_gguf_table(reference_kernels()), "vnni GGUF loops on SIMDe");
}

// STORMO_VNNI_FLAVOUR set for the scope of one test, restored after.
class ScopedFlavour {
public:
    explicit ScopedFlavour(const char* value) {
        if (const char* old = std::getenv("STORMO_VNNI_FLAVOUR")) saved_ = std::string(old);
        setenv("STORMO_VNNI_FLAVOUR", value, 1);
    }
    ~ScopedFlavour() {
        if (saved_) setenv("STORMO_VNNI_FLAVOUR", saved_->c_str(), 1);
        else unsetenv("STORMO_VNNI_FLAVOUR");
    }

private:
    std::optional<std::string> saved_;
};

// Each flavour this CPU can run, named by STORMO_VNNI_FLAVOUR, natively against the reference:
// a CPU with both (this project's machine has AVX512-VNNI and AVX-VNNI) otherwise runs only the
// preferred one. A flavour the CPU lacks, or an unknown name, is refused with the reason.
TEST(IsaKernelsVnni, EachFlavourNamedRunsNativelyBitExact) {
    std::map<std::string, MatmulQ8Fn> q8_0_by_flavour;
    for (const char* flavour : {"avx_vnni", "avx512_vnni"}) {
        const bool usable = std::string(flavour) == "avx_vnni" ? avx_vnni_usable() : avx512_vnni_usable();
        const ScopedFlavour scoped(flavour);
        const auto k = load_kernels("vnni");
        if (!usable) {
            EXPECT_EQ(k->object, nullptr) << flavour;
            EXPECT_NE(k->create_error.message.find("lacks"), std::string::npos) << k->create_error.message;
            continue;
        }
        ASSERT_NE(k->plugin(), nullptr) << flavour << ": " << k->create_error.message;
        KernelTable table = reference_kernels();
        k->plugin()->install(table);
        const std::string name = std::string("vnni (") + flavour + ", named)";
        for (const auto& [a, b] : int8_cases())
            EXPECT_EQ(table.dot_u8i8(a.data(), b.data(), a.size()), reference_kernels().dot_u8i8(a.data(), b.data(), a.size()))
                << name << " n " << a.size();
        const size_t mx = static_cast<size_t>(WeightFormat::MXFP4);
        check_q8_random(table.matmul_q8[mx], name.c_str());
        check_q8_edges(table.matmul_q8[mx], name.c_str());
        check_q8_gguf(table, name.c_str());
        q8_0_by_flavour[flavour] = table.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q8_0)];
    }
    if (q8_0_by_flavour.size() == 2) {
        EXPECT_NE(q8_0_by_flavour["avx_vnni"], q8_0_by_flavour["avx512_vnni"]) << "the variable changed no kernel";
    }
    const ScopedFlavour unknown("avx9000");
    const auto k = load_kernels("vnni");
    EXPECT_EQ(k->object, nullptr);
    if (cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c})) {  // else refused before the name is read
        EXPECT_NE(k->create_error.message.find("not a vnni flavour"), std::string::npos) << k->create_error.message;
    }
}

TEST(IsaKernelsAvx2, IntegerRoadIsBitExact) {
    if (!cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}))
        GTEST_SKIP() << "this CPU lacks avx2/fma/f16c: the avx2 kernels cannot run here";
    const auto k = load_kernels("avx2");
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    KernelTable table = reference_kernels();
    k->plugin()->install(table);
    const size_t mx = static_cast<size_t>(WeightFormat::MXFP4);
    ASSERT_NE(table.matmul_q8[mx], nullptr);
    ASSERT_NE(table.matmul_q8[mx], reference_kernels().matmul_q8[mx]);
    check_q8_random(table.matmul_q8[mx], "avx2");
    check_q8_edges(table.matmul_q8[mx], "avx2");
    check_q8_thread_counts(table, "avx2");
}

TEST(IsaKernelsVnni, IntegerRoadUnderSimdeIsBitExact) {
    check_q8_random(simd::simde_matmul_q8_mxfp4, "vnni loop on SIMDe");
    check_q8_edges(simd::simde_matmul_q8_mxfp4, "vnni loop on SIMDe");
}

TEST(IsaKernelsVnni, IntegerRoadNativeIsBitExact) {
    if (!vnni_usable()) GTEST_SKIP() << kNoVnni;
    const InstalledVnni vnni = install_vnni();
    ASSERT_TRUE(vnni.installed) << vnni.why;
    const KernelTable& table = vnni.table;
    const size_t mx = static_cast<size_t>(WeightFormat::MXFP4);
    ASSERT_NE(table.matmul_q8[mx], reference_kernels().matmul_q8[mx]);
    const char* flavour = avx512_vnni_usable() ? "vnni (avx512_vnni)" : "vnni (avx_vnni)";
    check_q8_random(table.matmul_q8[mx], flavour);
    check_q8_edges(table.matmul_q8[mx], flavour);
    check_q8_thread_counts(table, flavour);
}

// The quantizer against the reference on rows of every shape (partial blocks, a stride past the
// row) and every kind of block: random, NaN, infinities, all zero, subnormal (d underflows),
// huge finite, ties at scale 1, and -0. q (padding included), scales and sums must be the same
// bits; both outputs start from different garbage, so each implementation must write them all.
void check_quantizer(QuantizeQ8Fn isa, const char* name) {
    ASSERT_NE(isa, nullptr) << name;
    ASSERT_NE(isa, reference_kernels().quantize_q8) << name << ": not replaced";
    std::mt19937 rng(21);
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, std::ldexp(1.0f, -149),
                              -std::ldexp(1.0f, 127) * 1.5f, -0.0f};
    for (const size_t block : {kQ8Block, kQ8KBlock}) {
        for (const size_t cols : {size_t{1}, size_t{7}, size_t{8}, size_t{31}, size_t{32}, size_t{33}, size_t{40}, size_t{100},
                                  size_t{255}, size_t{256}, size_t{257}, size_t{600}, size_t{2880}}) {
            const size_t n_x = 3, stride = cols + 5;
            const size_t blocks = (cols + block - 1) / block;
            std::vector<float> x = testing::random_floats(n_x * stride, rng, -4.0f, 4.0f);
            // Row 1: one special per block, at a block-dependent place; row 2: ties at scale 1.
            for (size_t b = 0; b < blocks; ++b) {
                const size_t at = b * block + (b * 7) % std::min(block, cols - b * block);
                const float v = specials[b % std::size(specials)];
                if (v == 0.0f || std::fabs(v) < 1e-30f || std::fabs(v) > 1e30f) {
                    for (size_t i = b * block; i < std::min(cols, (b + 1) * block); ++i) x[stride + i] = v;
                } else {
                    x[stride + at] = v;
                }
            }
            for (size_t i = 0; i < cols; ++i) x[2 * stride + i] = i % 9 == 0 ? 127.0f : static_cast<float>(i % 255) * 0.5f - 63.5f;
            const bool with_sums = block == kQ8KBlock;
            std::vector<int8_t> q_ref(n_x * blocks * block, 77), q_isa(n_x * blocks * block, -77);
            std::vector<float> d_ref(n_x * blocks, -1.0f), d_isa(n_x * blocks, -2.0f);
            std::vector<int16_t> s_ref(n_x * blocks * block / kQ8SumValues, 1), s_isa(s_ref.size(), 2);
            reference_kernels().quantize_q8(x.data(), n_x, stride, cols, block, q_ref.data(), d_ref.data(),
                                            with_sums ? s_ref.data() : nullptr);
            isa(x.data(), n_x, stride, cols, block, q_isa.data(), d_isa.data(), with_sums ? s_isa.data() : nullptr);
            const std::string where = std::string(name) + ", block " + std::to_string(block) + ", cols " + std::to_string(cols);
            for (size_t i = 0; i < q_ref.size(); ++i) ASSERT_EQ(q_isa[i], q_ref[i]) << where << ", q[" << i << "]";
            for (size_t i = 0; i < d_ref.size(); ++i)
                ASSERT_EQ(std::bit_cast<uint32_t>(d_isa[i]), std::bit_cast<uint32_t>(d_ref[i])) << where << ", scale " << i;
            if (with_sums) {
                EXPECT_EQ(s_isa, s_ref) << where;
            }
        }
    }
}

TEST(IsaKernels, QuantizerIsTheReferencesBits) {
    size_t checked = 0;
    for (const char* isa : {"avx2", "vnni"}) {
        if (!testing::kernels_unusable_reason(isa).empty()) continue;  // the CPU cannot run them
        const auto k = load_kernels(isa);
        ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
        KernelTable table = reference_kernels();
        k->plugin()->install(table);
        check_quantizer(table.quantize_q8, isa);
        ++checked;
    }
    if (checked == 0) GTEST_SKIP() << "this CPU runs neither kernels plugin";
}

}  // namespace
}  // namespace stormo
