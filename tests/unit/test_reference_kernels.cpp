// The scalar reference kernels against values worked out by hand, and MXFP4 against a naive
// decode of the GPT-OSS fixture's expert blocks.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "reference_kernels/mxfp4.hpp"
#include "stormo/dtype.hpp"
#include "stormo/kernels.hpp"

namespace stormo {
namespace {

using testing::TestMatrix;

const KernelTable& ref() { return reference_kernels(); }

MatmulFn ref_matmul(WeightFormat f, Layout l) {
    return ref().matmul[static_cast<size_t>(f)][static_cast<size_t>(l)];
}

// W = [[1, 2, -0.5], [0.25, -3, 4]] (2 outputs x 3 inputs), exact in every dense format.
// Hand-written encodings, so the converters under test do not produce their own inputs.
const float kW[2][3] = {{1.0f, 2.0f, -0.5f}, {0.25f, -3.0f, 4.0f}};
const uint16_t kWBf16[2][3] = {{0x3F80, 0x4000, 0xBF00}, {0x3E80, 0xC040, 0x4080}};
const uint16_t kWF16[2][3] = {{0x3C00, 0x4000, 0xB800}, {0x3400, 0xC200, 0x4400}};
// x rows [1, 0.5, 2] and [-1, 4, 0.25]:
//   row 0: 1 + 1 - 1 = 1;          0.25 - 1.5 + 8 = 6.75
//   row 1: -1 + 8 - 0.125 = 6.875; -0.25 - 12 + 1 = -11.25
const float kX[2][3] = {{1.0f, 0.5f, 2.0f}, {-1.0f, 4.0f, 0.25f}};
const float kY[2][2] = {{1.0f, 6.75f}, {6.875f, -11.25f}};

TestMatrix hand_matrix(WeightFormat f, Layout l) {
    TestMatrix m;
    m.format = f;
    m.layout = l;
    m.rows = 2;
    m.cols = 3;
    const size_t esize = f == WeightFormat::F32 ? 4 : 2;
    m.data.resize(6 * esize);
    for (size_t o = 0; o < 2; ++o)
        for (size_t i = 0; i < 3; ++i) {
            const size_t k = l == Layout::out_in ? o * 3 + i : i * 2 + o;
            if (f == WeightFormat::F32) std::memcpy(m.data.data() + 4 * k, &kW[o][i], 4);
            if (f == WeightFormat::BF16) std::memcpy(m.data.data() + 2 * k, &kWBf16[o][i], 2);
            if (f == WeightFormat::F16) std::memcpy(m.data.data() + 2 * k, &kWF16[o][i], 2);
        }
    return m;
}

TEST(RefKernelsMatmul, HandComputedEveryDenseFormatBothLayouts) {
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            SCOPED_TRACE(std::string(weight_format_name(f)) + (l == Layout::out_in ? " out_in" : " in_out"));
            const TestMatrix m = hand_matrix(f, l);
            // Strided input and output: x rows of 5 floats, y rows of 4; untouched cells stay -7.
            std::vector<float> x(10, 99.0f);
            for (size_t r = 0; r < 2; ++r)
                for (size_t i = 0; i < 3; ++i) x[r * 5 + i] = kX[r][i];
            std::vector<float> y(8, -7.0f);
            ref_matmul(f, l)(m.view(), x.data(), 2, 5, y.data(), 4, 0, 2);
            EXPECT_EQ(y[0], kY[0][0]);
            EXPECT_EQ(y[1], kY[0][1]);
            EXPECT_EQ(y[4], kY[1][0]);
            EXPECT_EQ(y[5], kY[1][1]);
            EXPECT_EQ(y[2], -7.0f);
            EXPECT_EQ(y[7], -7.0f);
            // Only output 1, only row 0 of x.
            std::vector<float> y1(2, -7.0f);
            ref_matmul(f, l)(m.view(), x.data(), 1, 5, y1.data(), 2, 1, 2);
            EXPECT_EQ(y1[0], -7.0f);
            EXPECT_EQ(y1[1], kY[0][1]);
        }
    }
}

// Each product rounds before its add: 1 + 2^-24 + 2^-24 in that order is 1 in float (each add
// of 2^-24 ties to even), while a sum done in wider precision or another order gives 1 + 2^-23.
TEST(RefKernelsMatmul, AccumulatesInFloatInAscendingOrder) {
    const float w[3] = {1.0f, 1.0f, 1.0f};
    const float x_up[3] = {1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -24)};
    const float x_down[3] = {std::ldexp(1.0f, -24), std::ldexp(1.0f, -24), 1.0f};
    WeightView v;
    v.format = WeightFormat::F32;
    v.data = w;
    v.rows = 1;
    v.cols = 3;
    float y = 0;
    ref_matmul(WeightFormat::F32, Layout::out_in)(v, x_up, 1, 3, &y, 1, 0, 1);
    EXPECT_EQ(y, 1.0f);
    ref_matmul(WeightFormat::F32, Layout::out_in)(v, x_down, 1, 3, &y, 1, 0, 1);
    EXPECT_EQ(y, 1.0f + std::ldexp(1.0f, -23));
    v.layout = Layout::in_out;
    v.rows = 1;
    ref_matmul(WeightFormat::F32, Layout::in_out)(v, x_up, 1, 3, &y, 1, 0, 1);
    EXPECT_EQ(y, 1.0f);
    EXPECT_EQ(ref().dot(w, x_up, 3), 1.0f);
}

// One MXFP4 row per case, 32 inputs. Row 0 holds codes 0..15 then 0..15 at scale 127 (x1);
// row 1 holds code 7 (6.0) everywhere at scale 128 (x2).
// x = 1 for i < 8, 2 for 8 <= i < 16, 0 after:
//   row 0: (0 + .5 + 1 + 1.5 + 2 + 3 + 4 + 6) * 1 + (-18) * 2 = 18 - 36 = -18
//   row 1: 12 * 8 + 12 * 2 * 8 = 96 + 192 = 288
TEST(RefKernelsMatmul, HandComputedMxfp4) {
    TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 2;
    m.cols = 32;
    m.data.resize(32);
    for (size_t j = 0; j < 16; ++j)
        m.data[j] = static_cast<uint8_t>(((2 * j) % 16) | (((2 * j + 1) % 16) << 4));
    for (size_t j = 16; j < 32; ++j) m.data[j] = 0x77;
    m.scales = {127, 128};
    std::vector<float> x(32, 0.0f);
    for (size_t i = 0; i < 8; ++i) x[i] = 1.0f;
    for (size_t i = 8; i < 16; ++i) x[i] = 2.0f;
    float y[2] = {0, 0};
    ref_matmul(WeightFormat::MXFP4, Layout::out_in)(m.view(), x.data(), 1, 32, y, 2, 0, 2);
    EXPECT_EQ(y[0], -18.0f);
    EXPECT_EQ(y[1], 288.0f);
}

TEST(RefKernelsRows, DenseFormatsDecodeHandEncodings) {
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16}) {
        const TestMatrix m = hand_matrix(f, Layout::out_in);
        float out[3];
        ref().row_to_f32[static_cast<size_t>(f)](m.view(), 1, out);
        EXPECT_EQ(out[0], 0.25f) << weight_format_name(f);
        EXPECT_EQ(out[1], -3.0f) << weight_format_name(f);
        EXPECT_EQ(out[2], 4.0f) << weight_format_name(f);
    }
}

// Every code under every finite scale byte, against the E2M1 table written out here and 2^(s-127)
// computed in double (exact), rounded once to float.
TEST(RefKernelsMxfp4, DecodesEveryCodeUnderEveryKindOfScale) {
    const double kTable[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    for (int s = 0; s < 255; ++s) {
        for (uint8_t code = 0; code < 16; ++code) {
            const float expected = static_cast<float>(kTable[code] * std::ldexp(1.0, s - 127));
            const float got = mxfp4::decode(code, static_cast<uint8_t>(s));
            EXPECT_TRUE(testing::same_bits_or_both_nan(got, expected))
                << "code " << int(code) << " scale " << s << ": " << got << " vs " << expected;
        }
    }
    // Spot values worked by hand.
    EXPECT_EQ(mxfp4::decode(7, 127), 6.0f);
    EXPECT_EQ(mxfp4::decode(9, 128), -1.0f);
    EXPECT_EQ(mxfp4::decode(1, 0), std::ldexp(1.0f, -128));  // subnormal, exact
    EXPECT_EQ(mxfp4::decode(5, 254), std::ldexp(3.0f, 127));  // largest finite value
    EXPECT_TRUE(std::isinf(mxfp4::decode(4, 254)));           // 2 * 2^127 overflows
    EXPECT_TRUE(std::signbit(mxfp4::decode(8, 127)));          // code 8 is -0
    for (uint8_t code = 0; code < 16; ++code) EXPECT_TRUE(std::isnan(mxfp4::decode(code, 255)));
}

// The row decoder walks the nibble layout: byte j holds element 2j (low) and 2j+1 (high).
TEST(RefKernelsMxfp4, RowDecoderFollowsTheNibbleLayout) {
    TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 1;
    m.cols = 64;
    m.data.resize(32);
    for (size_t j = 0; j < 32; ++j) m.data[j] = static_cast<uint8_t>((j % 16) | ((15 - j % 16) << 4));
    m.scales = {127, 130};
    std::vector<float> out(64);
    ref().row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)](m.view(), 0, out.data());
    for (size_t k = 0; k < 64; ++k) {
        const size_t j = k / 2;
        const uint8_t code = static_cast<uint8_t>(k % 2 == 0 ? j % 16 : 15 - j % 16);
        const float scale = k < 32 ? 1.0f : 8.0f;
        EXPECT_EQ(out[k], mxfp4::kE2M1[code] * scale) << "element " << k;
    }
}

TEST(RefKernelsVector, RmsNormFollowsTransformersOrder) {
    const float x[4] = {1, 2, 3, 4};
    const float w[4] = {1, 0.5f, 2, 1};
    float out[4];
    ref().rmsnorm(x, w, 4, 1e-5f, out);
    // variance = 30 / 4 = 7.5; inv = 1 / sqrt(7.5 + 1e-5)
    const float inv = 1.0f / std::sqrt(7.5f + 1e-5f);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(out[i], w[i] * (x[i] * inv));
        EXPECT_NEAR(out[i], w[i] * x[i] / std::sqrt(7.50001), 1e-6);
    }
    ref().rmsnorm(x, w, 0, 1e-5f, out);  // empty: nothing written, no division by zero
}

TEST(RefKernelsVector, SoftmaxHandValuesAndLargeInputs) {
    float a[3] = {1, 2, 3};
    ref().softmax(a, 3);
    const double z = std::exp(-2.0) + std::exp(-1.0) + 1.0;
    EXPECT_NEAR(a[0], std::exp(-2.0) / z, 1e-7);
    EXPECT_NEAR(a[1], std::exp(-1.0) / z, 1e-7);
    EXPECT_NEAR(a[2], 1.0 / z, 1e-7);
    // Shifted by 1000: exp(1000) overflows, the max subtraction must make it irrelevant.
    float b[3] = {1001, 1002, 1003};
    ref().softmax(b, 3);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a[i], b[i]);
    float c[3] = {-1e30f, 0.0f, -std::numeric_limits<float>::infinity()};
    ref().softmax(c, 3);
    EXPECT_EQ(c[0], 0.0f);
    EXPECT_EQ(c[1], 1.0f);
    EXPECT_EQ(c[2], 0.0f);
    float d[1] = {42};
    ref().softmax(d, 1);
    EXPECT_EQ(d[0], 1.0f);
}

TEST(RefKernelsVector, SiluDotAxpy) {
    float s[5] = {0, 1, -1, 100, -100};
    ref().silu(s, 5);
    EXPECT_EQ(s[0], 0.0f);
    EXPECT_NEAR(s[1], 0.7310585786, 1e-7);
    EXPECT_NEAR(s[2], -0.2689414214, 1e-7);
    EXPECT_EQ(s[3], 100.0f);
    EXPECT_NEAR(s[4], 0.0, 1e-40);
    EXPECT_LE(s[4], 0.0f);

    const float a[4] = {1, -2, 0.5f, 4};
    const float b[4] = {3, 0.25f, -8, 0.5f};
    EXPECT_EQ(ref().dot(a, b, 4), 3.0f - 0.5f - 4.0f + 2.0f);
    EXPECT_EQ(ref().dot(a, b, 0), 0.0f);
    float y[4] = {1, 1, 1, 1};
    ref().axpy(2.0f, a, y, 4);
    EXPECT_EQ(y[0], 3.0f);
    EXPECT_EQ(y[1], -3.0f);
    EXPECT_EQ(y[2], 2.0f);
    EXPECT_EQ(y[3], 9.0f);
}

TEST(RefKernelsVector, Int8DotIsExactAndWraps) {
    const uint8_t a[4] = {255, 0, 3, 128};
    const int8_t b[4] = {-128, 127, -2, 1};
    EXPECT_EQ(ref().dot_u8i8(a, b, 4), -32640 + 0 - 6 + 128);
    // 70000 * 255 * -128 = -2284800000, which wraps to 2010167296 modulo 2^32.
    const std::vector<uint8_t> big_a(70000, 255);
    const std::vector<int8_t> big_b(70000, -128);
    EXPECT_EQ(ref().dot_u8i8(big_a.data(), big_b.data(), big_a.size()), 2010167296);
}

// The block formats (MXFP4, FP8, GGUF's) exist out_in only: checkpoints store them as nn.Linear rows;
// BF16_PACKED is packed from out_in BF16 matrices only.
TEST(RefKernelsTable, EveryEntryFilledExceptBlockFormatsInOut) {
    for (size_t f = 0; f < kWeightFormatCount; ++f) {
        EXPECT_NE(ref().row_to_f32[f], nullptr);
        for (size_t l = 0; l < kLayoutCount; ++l) {
            const bool block = f == static_cast<size_t>(WeightFormat::MXFP4) || f == static_cast<size_t>(WeightFormat::FP8_E4M3) ||
                               f == static_cast<size_t>(WeightFormat::BF16_PACKED) ||
                               gguf_weight_block(static_cast<WeightFormat>(f)).values != 0;
            const bool exists = !(block && l == static_cast<size_t>(Layout::in_out));
            EXPECT_EQ(ref().matmul[f][l] != nullptr, exists) << f << "," << l;
        }
    }
    EXPECT_NE(ref().rmsnorm, nullptr);
    EXPECT_NE(ref().softmax, nullptr);
    EXPECT_NE(ref().dot, nullptr);
    EXPECT_NE(ref().axpy, nullptr);
    EXPECT_NE(ref().silu, nullptr);
    EXPECT_NE(ref().dot_u8i8, nullptr);
    EXPECT_EQ(&reference_kernels(), &ref());
    // The integer road: MXFP4 and six of GGUF's block formats only (the other formats, Q4_1, Q5_0,
    // Q5_1, Q2_K, Q3_K and IQ4_NL among them, stay on floats), and off unless asked.
    std::vector<bool> int8(kWeightFormatCount, false);
    int8[static_cast<size_t>(WeightFormat::MXFP4)] = true;
    for (WeightFormat f : testing::kGgufInt8Formats) int8[static_cast<size_t>(f)] = true;
    for (size_t f = 0; f < kWeightFormatCount; ++f)
        EXPECT_EQ(ref().matmul_q8[f] != nullptr, int8[f]) << weight_format_name(static_cast<WeightFormat>(f));
}

// ---- The integer road ---------------------------------------------------------------------

// amax 127 makes the scale exactly 1, so q is x rounded: ties go to even, the range is clamped.
TEST(RefKernelsQ8, QuantizerRoundsHalfToEvenPerBlock) {
    // Two rows of 40 values (a full block and a partial one), read with a stride of 48.
    std::vector<float> x(2 * 48, 1000.0f);
    const float first[10] = {127.0f, -127.0f, 2.5f, 3.5f, -2.5f, -0.5f, 0.49f, 126.5f, -1.5f, 0.0f};
    for (size_t r = 0; r < 2; ++r) {
        for (size_t i = 0; i < 32; ++i) x[r * 48 + i] = i < 10 ? first[i] : 0.25f;
        for (size_t i = 32; i < 40; ++i) x[r * 48 + i] = r == 0 ? static_cast<float>(i - 32) * 0.5f : 0.0f;
    }
    std::vector<int8_t> q(2 * 64, 99);
    std::vector<float> d(4, -1.0f);
    quantize_q8(x.data(), 2, 48, 40, kQ8Block, q.data(), d.data(), nullptr);
    const int8_t want[10] = {127, -127, 2, 4, -2, 0, 0, 126, -2, 0};
    for (size_t r = 0; r < 2; ++r) {
        EXPECT_EQ(d[r * 2], 1.0f);
        for (size_t i = 0; i < 10; ++i) EXPECT_EQ(q[r * 64 + i], want[i]) << "row " << r << " value " << first[i];
        EXPECT_EQ(q[r * 64 + 20], 0) << "0.25 rounds to 0";
        for (size_t i = 40; i < 64; ++i) EXPECT_EQ(q[r * 64 + i], 0) << "padding of the partial block";
    }
    // Row 0's partial block: values 0, 0.5, ..., 3.5, so d = 3.5 / 127 and 3.5 maps to 127.
    EXPECT_EQ(d[1], 3.5f / 127.0f);
    EXPECT_EQ(q[32 + 7], 127);
    EXPECT_EQ(q[32 + 0], 0);
    // Row 1's partial block is all zero: scale 0, q 0.
    EXPECT_EQ(d[3], 0.0f);
    for (size_t i = 32; i < 40; ++i) EXPECT_EQ(q[64 + i], 0);
}

TEST(RefKernelsQ8, QuantizerNonFiniteAndTinyBlocks) {
    std::vector<float> x(4 * 32, 1.0f);
    x[5] = std::numeric_limits<float>::quiet_NaN();   // block 0
    x[32 + 7] = -std::numeric_limits<float>::infinity();  // block 1
    for (size_t i = 64; i < 96; ++i) x[i] = std::ldexp(1.0f, -149);  // block 2: d underflows to 0
    for (size_t i = 96; i < 128; ++i) x[i] = -std::ldexp(1.0f, 127) * 1.5f;  // block 3: huge, finite
    std::vector<int8_t> q(128, 55);
    std::vector<float> d(4);
    quantize_q8(x.data(), 1, 128, 128, kQ8Block, q.data(), d.data(), nullptr);
    EXPECT_TRUE(std::isnan(d[0]));
    EXPECT_TRUE(std::isnan(d[1]));
    EXPECT_EQ(d[2], 0.0f);
    EXPECT_EQ(d[3], std::ldexp(1.0f, 127) * 1.5f / 127.0f);
    for (size_t i = 0; i < 96; ++i) EXPECT_EQ(q[i], 0) << i;
    for (size_t i = 96; i < 128; ++i) EXPECT_EQ(q[i], -127) << i;
}

// One block: W = 1.0 everywhere (code 2, doubled 2, scale 127 so half-scale 0.5), q = 1..32,
// d = 0.25: 2 * 528 * (0.25 * 0.5) = 132 = sum_k k * 0.25.
TEST(RefKernelsQ8, MatmulHandComputed) {
    TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 1;
    m.cols = 32;
    m.data.assign(16, 0x22);
    m.scales = {127};
    testing::TestQ8 x;
    x.n_x = 1;
    x.cols = 32;
    x.blocks = 1;
    for (int k = 1; k <= 32; ++k) x.q.push_back(static_cast<int8_t>(k));
    x.scales = {0.25f};
    float y = 0;
    ref().matmul_q8[static_cast<size_t>(WeightFormat::MXFP4)](m.view(), x.view(), &y, 1, 0, 1);
    EXPECT_EQ(y, 132.0f);
}

// Block b's term goes to lane b % 8 and the lanes are reduced as ((0+4)+(2+6))+((1+5)+(3+7)):
// terms 1 (block 0), 2^24 (block 1) and 1 (block 8) give 2^24 + 2 that way, while an ascending
// sum would lose both ones (2^24 + 1 rounds to 2^24).
TEST(RefKernelsQ8, LanesFollowTheDefinedOrder) {
    TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 1;
    m.cols = 9 * 32;
    m.data.assign(9 * 16, 0x22);  // 1.0 everywhere: doubled 2
    m.scales.assign(9, 127);      // half-scale 0.5
    testing::TestQ8 x;
    x.n_x = 1;
    x.cols = m.cols;
    x.blocks = 9;
    x.q.assign(9 * 32, 0);
    x.scales.assign(9, 1.0f);
    x.q[0] = 1;                                                // block 0: 2 * 1 * 0.5 = 1
    for (size_t k = 0; k < 8; ++k) x.q[32 + k] = 127;          // block 1: q sums to 1024
    x.q[32 + 8] = 8;
    x.scales[1] = std::ldexp(1.0f, 14);                        // 2 * 1024 * 2^14 * 0.5 = 2^24
    x.q[8 * 32] = 1;                                           // block 8: 1
    float y = 0;
    ref().matmul_q8[static_cast<size_t>(WeightFormat::MXFP4)](m.view(), x.view(), &y, 1, 0, 1);
    EXPECT_EQ(y, std::ldexp(1.0f, 24) + 2.0f);
}

// The integer road approximates the float road: |y_q8 - y_f32| <= sum_i |W[o,i]| * d_b / 2 (each
// activation moves by at most half a step) plus float rounding.
TEST(RefKernelsQ8, CloseToTheFloatRoadWithinTheQuantizationBound) {
    std::mt19937 rng(12);
    const size_t rows = 37, cols = 320, n_x = 3;
    const TestMatrix m = testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, rows, cols, rng);
    const std::vector<float> x = testing::random_floats(n_x * cols, rng, -4.0f, 4.0f);
    const KernelTable& int8 = reference_kernels();  // with Compute::int8_activations below
    std::vector<float> y_f32(n_x * rows), y_q8(n_x * rows);
    matmul(Compute{&ref(), nullptr}, m.view(), x.data(), n_x, y_f32.data());
    matmul(Compute{&int8, nullptr, true}, m.view(), x.data(), n_x, y_q8.data());
    const std::vector<float> w = testing::dense_weights(m);
    const std::vector<double> abs_wx = testing::abs_product_sums(w, rows, cols, x.data(), n_x);
    std::vector<int8_t> q(n_x * cols);
    std::vector<float> d(n_x * cols / 32);
    quantize_q8(x.data(), n_x, cols, cols, kQ8Block, q.data(), d.data(), nullptr);
    double worst = 0;
    for (size_t r = 0; r < n_x; ++r)
        for (size_t o = 0; o < rows; ++o) {
            double bound = 0;
            for (size_t i = 0; i < cols; ++i) bound += std::fabs(static_cast<double>(w[o * cols + i])) * d[r * cols / 32 + i / 32] / 2;
            const double diff = std::fabs(static_cast<double>(y_q8[r * rows + o]) - y_f32[r * rows + o]);
            EXPECT_LE(diff, bound + 1e-5 * abs_wx[r * rows + o]) << "row " << r << " output " << o;
            worst = std::max(worst, diff / abs_wx[r * rows + o]);
        }
    std::printf("[ measured ] integer road vs float road: worst |diff| / sum|w*x| = %.3g\n", worst);
    EXPECT_GT(worst, 0.0) << "the integer road ran (it cannot be exact on random inputs)";
}

// stormo::matmul takes the integer road only when the table runs it, only for formats with a
// matmul_q8 entry, and then equals quantize_q8 followed by the kernel.
TEST(RefKernelsQ8, MatmulTakesTheIntegerRoadOnlyWhenAsked) {
    std::mt19937 rng(13);
    const TestMatrix mx = testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, 21, 96, rng);
    const TestMatrix bf = testing::random_matrix(WeightFormat::BF16, Layout::out_in, 21, 96, rng);
    const std::vector<float> x = testing::random_floats(2 * 96, rng);
    const KernelTable& int8 = reference_kernels();  // with Compute::int8_activations below
    std::vector<float> a(42), b(42), c(42);
    matmul(Compute{&int8, nullptr, true}, mx.view(), x.data(), 2, a.data());
    std::vector<int8_t> q(2 * 96);
    std::vector<float> d(6);
    quantize_q8(x.data(), 2, 96, 96, kQ8Block, q.data(), d.data(), nullptr);
    ref().matmul_q8[static_cast<size_t>(WeightFormat::MXFP4)](mx.view(), Q8Rows{q.data(), d.data(), 2, 96, 3}, b.data(),
                                                             21, 0, 21);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
    matmul(Compute{&ref(), nullptr}, mx.view(), x.data(), 2, c.data());
    EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * 4), 0) << "the float road gives other bits";
    // BF16 has no integer kernel: the same bits on both roads.
    matmul(Compute{&int8, nullptr, true}, bf.view(), x.data(), 2, a.data());
    matmul(Compute{&ref(), nullptr}, bf.view(), x.data(), 2, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

// A row's value depends only on its own inputs: computing one row, or a sub-range of outputs,
// gives the bits of the full call.
TEST(RefKernelsMatmul, RowIndependentOfBatchAndOutputRange) {
    std::mt19937 rng(7);
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            const MatmulFn fn = ref_matmul(f, l);
            if (fn == nullptr) continue;
            const size_t rows = 37;
            const size_t cols = 96;
            const TestMatrix m = testing::random_matrix(f, l, rows, cols, rng);
            const size_t n_x = 5;
            const std::vector<float> x = testing::random_floats(n_x * cols, rng);
            std::vector<float> full(n_x * rows);
            fn(m.view(), x.data(), n_x, cols, full.data(), rows, 0, rows);
            for (size_t r = 0; r < n_x; ++r) {
                std::vector<float> one(rows);
                fn(m.view(), x.data() + r * cols, 1, cols, one.data(), rows, 0, 13);
                fn(m.view(), x.data() + r * cols, 1, cols, one.data(), rows, 13, rows);
                EXPECT_EQ(std::memcmp(one.data(), full.data() + r * rows, rows * 4), 0)
                    << weight_format_name(f) << " row " << r;
            }
        }
    }
}

// The GPT-OSS fixture's MXFP4 experts, read straight from the safetensors file (header parsed
// here with simdjson, independently of stormo's model reader).
struct RawTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
};

std::map<std::string, RawTensor> read_safetensors(const std::string& path, std::vector<uint8_t>& bytes) {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::map<std::string, RawTensor> out;
    if (bytes.size() < 8) return out;
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes.data(), 8);  // little-endian, as is this machine
    if (8 + header_len > bytes.size()) return out;
    const uint8_t* data_start = bytes.data() + 8 + header_len;
    simdjson::dom::parser parser;
    const simdjson::padded_string header(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
    const simdjson::dom::object root = parser.parse(header).get_object();
    for (const auto field : root) {
        if (field.key == "__metadata__") continue;
        RawTensor t;
        t.dtype = std::string(std::string_view(field.value["dtype"]));
        for (const auto d : field.value["shape"].get_array()) t.shape.push_back(int64_t(d));
        const simdjson::dom::array offsets = field.value["data_offsets"].get_array();
        const uint64_t begin = uint64_t(offsets.at(0));
        const uint64_t end = uint64_t(offsets.at(1));
        t.data = data_start + begin;
        t.nbytes = end - begin;
        out.emplace(std::string(field.key), t);
    }
    return out;
}

TEST(RefKernelsMxfp4, FixtureExpertsMatchNaiveDecodeThenMultiply) {
    const std::string path = std::string(STORMO_TEST_DATA_DIR) + "/fixtures/gpt_oss_mxfp4/model.safetensors";
    std::vector<uint8_t> bytes;
    const auto tensors = read_safetensors(path, bytes);
    const auto blocks_it = tensors.find("model.layers.0.mlp.experts.down_proj_blocks");
    const auto scales_it = tensors.find("model.layers.0.mlp.experts.down_proj_scales");
    ASSERT_NE(blocks_it, tensors.end()) << path;
    ASSERT_NE(scales_it, tensors.end()) << path;
    const RawTensor& blocks = blocks_it->second;
    const RawTensor& scales = scales_it->second;
    ASSERT_EQ(blocks.dtype, "U8");
    ASSERT_EQ(scales.dtype, "U8");
    ASSERT_EQ(blocks.shape, (std::vector<int64_t>{8, 64, 2, 16}));
    ASSERT_EQ(scales.shape, (std::vector<int64_t>{8, 64, 2}));
    ASSERT_EQ(blocks.nbytes, size_t{8 * 64 * 2 * 16});
    ASSERT_EQ(scales.nbytes, size_t{8 * 64 * 2});

    const size_t rows = 64;  // outputs
    const size_t cols = 64;  // inputs: 2 blocks of 32
    const double kTable[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    std::mt19937 rng(11);
    const size_t n_x = 3;
    const std::vector<float> x = testing::random_floats(n_x * cols, rng);
    for (size_t expert : {size_t{0}, size_t{7}}) {
        SCOPED_TRACE("expert " + std::to_string(expert));
        WeightView v;
        v.format = WeightFormat::MXFP4;
        v.data = blocks.data + expert * rows * 2 * 16;
        v.scales = scales.data + expert * rows * 2;
        v.rows = rows;
        v.cols = cols;
        // Naive: decode every element with the table and ldexp, then an ascending float sum.
        std::vector<float> w(rows * cols);
        size_t nonzero = 0;
        for (size_t o = 0; o < rows; ++o)
            for (size_t i = 0; i < cols; ++i) {
                const uint8_t* block = static_cast<const uint8_t*>(v.data) + (o * 2 + i / 32) * 16;
                const uint8_t byte = block[(i % 32) / 2];
                const uint8_t code = static_cast<uint8_t>(i % 2 == 0 ? byte & 0x0F : byte >> 4);
                const int s = v.scales[o * 2 + i / 32];
                ASSERT_LT(s, 255) << "the fixture holds no NaN scales";
                w[o * cols + i] = static_cast<float>(std::ldexp(kTable[code], s - 127));
                nonzero += w[o * cols + i] != 0.0f;
            }
        EXPECT_GT(nonzero, rows * cols / 2);
        std::vector<float> naive(n_x * rows);
        for (size_t r = 0; r < n_x; ++r)
            for (size_t o = 0; o < rows; ++o) {
                float acc = 0.0f;
                for (size_t i = 0; i < cols; ++i) acc += w[o * cols + i] * x[r * cols + i];
                naive[r * rows + o] = acc;
            }
        std::vector<float> y(n_x * rows);
        ref_matmul(WeightFormat::MXFP4, Layout::out_in)(v, x.data(), n_x, cols, y.data(), rows, 0, rows);
        EXPECT_EQ(std::memcmp(y.data(), naive.data(), y.size() * 4), 0);
    }
}

// ---- Block-scaled FP8 -------------------------------------------------------------------
// Every E4M3 code against the format's definition (sign, 4 exponent bits with bias 7, 3 mantissa
// bits; exponent 0 is subnormal; S.1111.111 is NaN; the largest finite value is 448).
TEST(RefKernelsFp8, DecodesEveryCode) {
    for (unsigned v = 0; v < 256; ++v) {
        const float got = f8_e4m3_to_f32(static_cast<uint8_t>(v));
        const unsigned e = (v >> 3) & 15u, m = v & 7u;
        if (e == 15 && m == 7) {
            EXPECT_TRUE(std::isnan(got)) << v;
            continue;
        }
        const double magnitude = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1.0 + m / 8.0) * std::ldexp(1.0, static_cast<int>(e) - 7);
        EXPECT_EQ(static_cast<double>(got), (v & 0x80u) ? -magnitude : magnitude) << v;
    }
    EXPECT_EQ(f8_e4m3_to_f32(0x7E), 448.0f);
}

// W = e4m3 value * its block's scale, rounded once to float: the FP8 kernel gives the bits of the
// F32 kernel over the dequantized matrix, with partial edge blocks in both directions.
TEST(RefKernelsFp8, MatmulIsTheF32MatmulOfTheDequantizedMatrix) {
    std::mt19937 rng(31);
    for (size_t rows : {1, 16, 37}) {
        for (size_t cols : {5, 24, 53}) {
            const TestMatrix m = testing::random_matrix(WeightFormat::FP8_E4M3, Layout::out_in, rows, cols, rng);
            const size_t grid_cols = (cols + TestMatrix::kFp8BlockCols - 1) / TestMatrix::kFp8BlockCols;
            TestMatrix dense;
            dense.format = WeightFormat::F32;
            dense.rows = rows;
            dense.cols = cols;
            dense.data.resize(rows * cols * 4);
            for (size_t o = 0; o < rows; ++o)
                for (size_t i = 0; i < cols; ++i) {
                    const float scale = m.block_scales[(o / TestMatrix::kFp8BlockRows) * grid_cols + i / TestMatrix::kFp8BlockCols];
                    const float w = f8_e4m3_to_f32(m.data[o * cols + i]) * scale;
                    std::memcpy(dense.data.data() + (o * cols + i) * 4, &w, 4);
                }
            for (size_t n_x : {1, 3}) {
                const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                std::vector<float> a(n_x * rows), b(n_x * rows);
                matmul(Compute{&ref(), nullptr}, m.view(), x.data(), n_x, a.data());
                matmul(Compute{&ref(), nullptr}, dense.view(), x.data(), n_x, b.data());
                EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << rows << "x" << cols << " n_x " << n_x;
            }
            std::vector<float> row(cols), want(cols);
            ref().row_to_f32[static_cast<size_t>(WeightFormat::FP8_E4M3)](m.view(), rows - 1, row.data());
            std::memcpy(want.data(), dense.data.data() + (rows - 1) * cols * 4, cols * 4);
            EXPECT_EQ(row, want) << "the row decoder of the last (partial) block row";
        }
    }
}

}  // namespace
}  // namespace stormo
