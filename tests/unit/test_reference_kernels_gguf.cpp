// The reference kernels of GGUF's block formats (GGUF_Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4): on the
// float road a GGUF matrix is exactly the F32 matrix of its dequantized values (dequantize_gguf,
// itself bit-exact against gguf-py); on the integer road the block products are exact integers,
// checked by hand on one super-block and against the float road within the quantization bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_support.hpp"
#include "stormo/gguf_types.hpp"
#include "stormo/kernels.hpp"

namespace stormo {
namespace {

using testing::TestMatrix;

const KernelTable& ref() { return reference_kernels(); }


GgufType gguf_type(WeightFormat f) {
    for (uint32_t id = 0; id < 64; ++id) {
        const auto info = gguf_type_info(id);
        if (info && gguf_weight_format(info->type) == f) return info->type;
    }
    ADD_FAILURE() << "no GGUF type for " << weight_format_name(f);
    return GgufType::F32;
}

// The whole matrix through dequantize_gguf, as an F32 matrix.
TestMatrix dequantized(const TestMatrix& m) {
    TestMatrix dense;
    dense.format = WeightFormat::F32;
    dense.rows = m.rows;
    dense.cols = m.cols;
    dense.data.resize(m.rows * m.cols * 4);
    auto done = dequantize_gguf(gguf_type(m.format), reinterpret_cast<const std::byte*>(m.data.data()), m.rows * m.cols,
                                reinterpret_cast<float*>(dense.data.data()));
    EXPECT_TRUE(done.has_value()) << done.error().message;
    return dense;
}

TEST(RefKernelsGguf, FormatsMapToTheirGgufTypesAndBlocks) {
    const std::pair<GgufType, WeightFormat> pairs[] = {
        {GgufType::Q8_0, WeightFormat::GGUF_Q8_0}, {GgufType::Q4_0, WeightFormat::GGUF_Q4_0},
        {GgufType::Q4_K, WeightFormat::GGUF_Q4_K}, {GgufType::Q5_K, WeightFormat::GGUF_Q5_K},
        {GgufType::Q6_K, WeightFormat::GGUF_Q6_K}, {GgufType::MXFP4, WeightFormat::GGUF_MXFP4},
        {GgufType::Q4_1, WeightFormat::GGUF_Q4_1}, {GgufType::Q5_0, WeightFormat::GGUF_Q5_0},
        {GgufType::Q5_1, WeightFormat::GGUF_Q5_1}, {GgufType::Q2_K, WeightFormat::GGUF_Q2_K},
        {GgufType::Q3_K, WeightFormat::GGUF_Q3_K}, {GgufType::IQ4_NL, WeightFormat::GGUF_IQ4_NL},
        {GgufType::IQ4_XS, WeightFormat::GGUF_IQ4_XS}, {GgufType::IQ2_XXS, WeightFormat::GGUF_IQ2_XXS},
        {GgufType::IQ2_XS, WeightFormat::GGUF_IQ2_XS}, {GgufType::IQ2_S, WeightFormat::GGUF_IQ2_S},
        {GgufType::IQ3_XXS, WeightFormat::GGUF_IQ3_XXS}, {GgufType::IQ3_S, WeightFormat::GGUF_IQ3_S},
        {GgufType::IQ1_S, WeightFormat::GGUF_IQ1_S}, {GgufType::IQ1_M, WeightFormat::GGUF_IQ1_M}};
    for (const auto& [type, format] : pairs) {
        EXPECT_EQ(gguf_weight_format(type), format) << gguf_type_name(type);
        const auto info = gguf_type_info(static_cast<uint32_t>(type));
        ASSERT_TRUE(info.has_value());
        EXPECT_EQ(gguf_weight_block(format).values, info->block_values) << weight_format_name(format);
        EXPECT_EQ(gguf_weight_block(format).bytes, info->block_bytes) << weight_format_name(format);
        EXPECT_EQ(std::string(weight_format_name(format)), "GGUF_" + std::string(gguf_type_name(type)));
    }
    EXPECT_EQ(gguf_weight_format(GgufType::F16), WeightFormat::F16);
    EXPECT_FALSE(gguf_weight_format(GgufType::TQ1_0).has_value());
    EXPECT_FALSE(gguf_weight_format(GgufType::Q8_1).has_value()) << "llama.cpp's activation type, never a weight";
    EXPECT_EQ(gguf_weight_block(WeightFormat::MXFP4).values, 0u) << "transformers' MXFP4 is not a GGUF block format";
    EXPECT_EQ(q8_block_values(WeightFormat::GGUF_Q4_K), kQ8KBlock);
    EXPECT_EQ(q8_block_values(WeightFormat::GGUF_Q6_K), kQ8KBlock);
    EXPECT_EQ(q8_block_values(WeightFormat::GGUF_Q8_0), kQ8Block);
    EXPECT_EQ(q8_block_values(WeightFormat::GGUF_MXFP4), kQ8Block);
}

// The row decoder and the float-road matmul are dequantize_gguf followed by the F32 kernels, bit
// for bit, on 1, 2 and 3 blocks per row.
TEST(RefKernelsGguf, MatmulIsTheF32MatmulOfTheDequantizedMatrix) {
    std::mt19937 rng(41);
    for (WeightFormat f : testing::kGgufFormats) {
        const size_t block = gguf_weight_block(f).values;
        for (size_t rows : {1, 7, 19})
            for (size_t blocks : {1, 2, 3}) {
                const size_t cols = blocks * block;
                const TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
                const TestMatrix dense = dequantized(m);
                std::vector<float> row(cols);
                for (size_t o = 0; o < rows; ++o) {
                    ref().row_to_f32[static_cast<size_t>(f)](m.view(), o, row.data());
                    ASSERT_EQ(std::memcmp(row.data(), dense.data.data() + o * cols * 4, cols * 4), 0)
                        << weight_format_name(f) << " row " << o;
                }
                for (size_t n_x : {1, 3}) {
                    const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                    std::vector<float> a(n_x * rows), b(n_x * rows);
                    matmul(Compute{&ref(), nullptr}, m.view(), x.data(), n_x, a.data());
                    matmul(Compute{&ref(), nullptr}, dense.view(), x.data(), n_x, b.data());
                    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0)
                        << weight_format_name(f) << " " << rows << "x" << cols << " n_x " << n_x;
                }
            }
    }
}

// gguf-py's own blocks (tests/data/gguf/quants: quantized data, zero and subnormal scales, every
// MXFP4 exponent byte): the row decoder gives the values gguf-py decoded, bit for bit.
TEST(RefKernelsGguf, RowDecoderGivesGgufPysValuesOnItsBlocks) {
    const std::pair<WeightFormat, const char*> cases[] = {
        {WeightFormat::GGUF_Q8_0, "Q8_0"}, {WeightFormat::GGUF_Q4_0, "Q4_0"}, {WeightFormat::GGUF_Q4_K, "Q4_K"},
        {WeightFormat::GGUF_Q5_K, "Q5_K"}, {WeightFormat::GGUF_Q6_K, "Q6_K"}, {WeightFormat::GGUF_MXFP4, "MXFP4"},
        {WeightFormat::GGUF_Q4_1, "Q4_1"}, {WeightFormat::GGUF_Q5_0, "Q5_0"}, {WeightFormat::GGUF_Q5_1, "Q5_1"},
        {WeightFormat::GGUF_Q2_K, "Q2_K"}, {WeightFormat::GGUF_Q3_K, "Q3_K"}, {WeightFormat::GGUF_IQ4_NL, "IQ4_NL"},
        {WeightFormat::GGUF_IQ4_XS, "IQ4_XS"}, {WeightFormat::GGUF_IQ2_XXS, "IQ2_XXS"},
        {WeightFormat::GGUF_IQ2_XS, "IQ2_XS"}, {WeightFormat::GGUF_IQ2_S, "IQ2_S"}, {WeightFormat::GGUF_IQ3_XXS, "IQ3_XXS"},
        {WeightFormat::GGUF_IQ3_S, "IQ3_S"}, {WeightFormat::GGUF_IQ1_S, "IQ1_S"}, {WeightFormat::GGUF_IQ1_M, "IQ1_M"}};
    for (const auto& [f, name] : cases) {
        const testing::GgufRefMatrix r = testing::gguf_ref_matrix(f, name);
        ASSERT_GT(r.m.rows, 0u) << name;
        std::vector<float> row(r.m.cols);
        for (size_t o = 0; o < r.m.rows; ++o) {
            ref().row_to_f32[static_cast<size_t>(f)](r.m.view(), o, row.data());
            ASSERT_EQ(std::memcmp(row.data(), r.value_bits.data() + o * r.m.cols, r.m.cols * 4), 0) << name << " row " << o;
        }
    }
}

// Q8_K-style activation blocks: 256 values, d = amax / 127, and the sums of every 16 values.
TEST(RefKernelsGgufQ8, QuantizerMakes256BlocksWithSumsOf16) {
    std::mt19937 rng(42);
    const size_t cols = 512, n_x = 2;
    std::vector<float> x = testing::random_floats(n_x * cols, rng, -3.0f, 3.0f);
    x[300] = 5.0f;  // the amax of row 0's second block
    std::vector<int8_t> q(n_x * cols);
    std::vector<float> d(n_x * 2);
    std::vector<int16_t> sums(n_x * cols / 16);
    quantize_q8(x.data(), n_x, cols, cols, kQ8KBlock, q.data(), d.data(), sums.data());
    EXPECT_EQ(d[1], 5.0f / 127.0f);
    EXPECT_EQ(q[300], 127);
    for (size_t g = 0; g < sums.size(); ++g) {
        int s = 0;
        for (size_t k = 0; k < 16; ++k) s += q[g * 16 + k];
        EXPECT_EQ(sums[g], s) << g;
    }
    // The same values quantized in 32-blocks keep their own scales: block 256 is not block 32.
    std::vector<int8_t> q32(n_x * cols);
    std::vector<float> d32(n_x * cols / 32);
    quantize_q8(x.data(), n_x, cols, cols, kQ8Block, q32.data(), d32.data(), nullptr);
    EXPECT_NE(std::memcmp(q.data(), q32.data(), q.size()), 0);
}

// One Q4_K super-block by hand: every nibble 1, every scale 2 and min 1, d = dmin = 1, so every
// weight is 2 * 1 - 1 = 1; x = 127 everywhere quantizes to q = 127 with d = 1. Integer road:
// isum = 8 * 2 * 32 * 127 = 65024, imin = 8 * 1 * 32 * 127 = 32512, y = 65024 - 32512 = 32512,
// which the float road (256 * 127) gives too.
TEST(RefKernelsGgufQ8, Q4KSuperBlockByHand) {
    TestMatrix m;
    m.format = WeightFormat::GGUF_Q4_K;
    m.rows = 1;
    m.cols = 256;
    m.data.assign(144, 0);
    const uint16_t one = 0x3C00;
    std::memcpy(m.data.data(), &one, 2);
    std::memcpy(m.data.data() + 2, &one, 2);
    for (size_t j = 0; j < 4; ++j) {
        m.data[4 + j] = 2;         // sc[j]
        m.data[8 + j] = 1;         // m[j]
        m.data[12 + j] = 0x12;     // sc[j + 4] = 2, m[j + 4] = 1
    }
    for (size_t j = 16; j < 144; ++j) m.data[j] = 0x11;
    const std::vector<float> x(256, 127.0f);
    float y_q8 = 0, y_f32 = 0;
    matmul(Compute{&ref(), nullptr, true}, m.view(), x.data(), 1, &y_q8);
    matmul(Compute{&ref(), nullptr}, m.view(), x.data(), 1, &y_f32);
    EXPECT_EQ(y_q8, 32512.0f);
    EXPECT_EQ(y_f32, 32512.0f);
}

// The integer road against the float road: |y_q8 - y_f32| <= sum_i |W[o,i]| * d_b / 2 (each
// activation moves by at most half its block's step) plus float rounding, on every format; a NaN
// activation makes its outputs NaN; and the result does not depend on the thread count.
TEST(RefKernelsGgufQ8, CloseToTheFloatRoadWithinTheQuantizationBound) {
    std::mt19937 rng(43);
    for (WeightFormat f : testing::kGgufInt8Formats) {
        const size_t qblock = q8_block_values(f);
        const size_t rows = 23, cols = 2 * kQ8KBlock, n_x = 3;
        const TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
        std::vector<float> x = testing::random_floats(n_x * cols, rng, -4.0f, 4.0f);
        std::vector<float> y_f32(n_x * rows), y_q8(n_x * rows);
        matmul(Compute{&ref(), nullptr}, m.view(), x.data(), n_x, y_f32.data());
        matmul(Compute{&ref(), nullptr, true}, m.view(), x.data(), n_x, y_q8.data());
        const std::vector<float> w = testing::dense_weights(m);
        const std::vector<double> abs_wx = testing::abs_product_sums(w, rows, cols, x.data(), n_x);
        std::vector<int8_t> q(n_x * cols);
        std::vector<float> d(n_x * cols / qblock);
        quantize_q8(x.data(), n_x, cols, cols, qblock, q.data(), d.data(), nullptr);
        double worst = 0;
        for (size_t r = 0; r < n_x; ++r)
            for (size_t o = 0; o < rows; ++o) {
                double bound = 0, wmax = 0, xsum = 0;
                for (size_t i = 0; i < cols; ++i) {
                    const double wi = std::fabs(static_cast<double>(w[o * cols + i]));
                    bound += wi * d[(r * cols + i) / qblock] / 2;
                    wmax = std::max(wmax, wi);
                    xsum += std::fabs(static_cast<double>(x[r * cols + i]));
                }
                // Float rounding: of the sums (1e-5 * sum|w*x|, as the ISA tests allow) and of
                // the K-quants' weights d*sc*q - dmin*m, which the integer road never rounds.
                const double slack = 1e-5 * abs_wx[r * rows + o] + 1e-6 * wmax * xsum;
                const double diff = std::fabs(static_cast<double>(y_q8[r * rows + o]) - y_f32[r * rows + o]);
                EXPECT_LE(diff, bound + slack) << weight_format_name(f) << " row " << r << " output " << o;
                worst = std::max(worst, diff / abs_wx[r * rows + o]);
            }
        std::printf("[ measured ] %s integer road vs float road: worst |diff| / sum|w*x| = %.3g\n",
                    weight_format_name(f), worst);
        EXPECT_GT(worst, 0.0) << weight_format_name(f) << ": the integer road ran";

        // Rows quantized in the other block size: the kernel cannot use them and says so with NaN.
        {
            const size_t other = qblock == kQ8KBlock ? kQ8Block : kQ8KBlock;
            std::vector<int8_t> oq(n_x * cols);
            std::vector<float> od(n_x * cols / other);
            std::vector<int16_t> os(n_x * cols / kQ8SumValues);
            quantize_q8(x.data(), n_x, cols, cols, other, oq.data(), od.data(), os.data());
            const Q8Rows wrong{oq.data(), od.data(), n_x, cols, cols / other, other, os.data()};
            EXPECT_FALSE(q8_rows_fit(f, wrong));
            std::vector<float> y(n_x * rows, 0.0f);
            ref().matmul_q8[static_cast<size_t>(f)](m.view(), wrong, y.data(), rows, 0, rows);
            for (float v : y) EXPECT_TRUE(std::isnan(v)) << weight_format_name(f);
        }

        x[cols + 5] = std::numeric_limits<float>::quiet_NaN();  // row 1
        matmul(Compute{&ref(), nullptr, true}, m.view(), x.data(), n_x, y_q8.data());
        for (size_t o = 0; o < rows; ++o) {
            EXPECT_TRUE(std::isnan(y_q8[rows + o])) << weight_format_name(f) << " output " << o;
            EXPECT_FALSE(std::isnan(y_q8[o])) << weight_format_name(f) << " output " << o;
        }
    }
}

}  // namespace
}  // namespace stormo
