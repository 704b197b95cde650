// The integer road's BF16 activations (KernelTable::matmul_bf16a, docs/kernels.md): the rounding
// of an activation, and the reference's definition against the float reference on rounded rows.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_support.hpp"
#include "stormo/bf16_activations.hpp"
#include "stormo/dtype.hpp"
#include "stormo/kernels.hpp"

namespace stormo {
namespace {

uint16_t round_float(float v) { return bf16_activations::round_bits(std::bit_cast<uint32_t>(v)); }

TEST(Bf16Activations, RoundToNearestTiesToEven) {
    EXPECT_EQ(round_float(1.0f), 0x3F80);
    EXPECT_EQ(round_float(-2.5f), 0xC020);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1.
    EXPECT_EQ(round_float(1.0f + 0x1p-8f), 0x3F80);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
    EXPECT_EQ(round_float(1.0f + 3 * 0x1p-8f), 0x3F82);
    // Just past halfway rounds up, just below rounds down.
    EXPECT_EQ(round_float(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
    EXPECT_EQ(round_float(1.0f + 0x1p-8f - 0x1p-20f), 0x3F80);
    // Past BF16's largest finite value: infinity, as rounding gives it.
    EXPECT_EQ(round_float(std::numeric_limits<float>::max()), 0x7F80);
    EXPECT_EQ(round_float(-std::numeric_limits<float>::max()), 0xFF80);
}

TEST(Bf16Activations, KeepsInfinitiesAndQuietsNaNs) {
    EXPECT_EQ(round_float(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(round_float(-std::numeric_limits<float>::infinity()), 0xFF80);
    EXPECT_EQ(bf16_activations::round_bits(0x7FC00000u), 0x7FC0);
    EXPECT_EQ(bf16_activations::round_bits(0x7F800001u), 0x7FC0) << "a signalling NaN whose payload rounding would lose";
    EXPECT_EQ(bf16_activations::round_bits(0xFFFFFFFFu), 0xFFFF) << "a NaN never rounds into the next exponent";
    EXPECT_EQ(bf16_activations::round_bits(0x7FBFFFFFu), 0x7FFF);
}

TEST(Bf16Activations, ZerosAndSubnormalsBecomeSignedZeros) {
    EXPECT_EQ(round_float(0.0f), 0x0000);
    EXPECT_EQ(round_float(-0.0f), 0x8000);
    EXPECT_EQ(round_float(1e-40f), 0x0000);
    EXPECT_EQ(round_float(-1e-40f), 0x8000);
    // The largest subnormal would round up to the smallest normal: it is read as zero first.
    EXPECT_EQ(bf16_activations::round_bits(0x007FFFFFu), 0x0000);
    EXPECT_EQ(round_float(0x1p-126f), 0x0080);
    EXPECT_EQ(bf16_activations::weight_bits(0x0001), 0x0000);
    EXPECT_EQ(bf16_activations::weight_bits(0x807F), 0x8000);
    EXPECT_EQ(bf16_activations::weight_bits(0x0080), 0x0080);
    EXPECT_EQ(bf16_activations::weight_bits(0x7FC0), 0x7FC0);
}

MatmulFn pairs_reference(WeightFormat f) { return reference_kernels().matmul_bf16a[static_cast<size_t>(f)]; }
MatmulFn float_reference(WeightFormat f) {
    return reference_kernels().matmul[static_cast<size_t>(f)][static_cast<size_t>(Layout::out_in)];
}

// With no subnormal weight, the definition is the float reference on the rounded rows, bit for bit:
// a product of two BF16 values is exact in float, so the same ascending sum follows.
TEST(Bf16Activations, ReferenceIsTheFloatReferenceOnRoundedRows) {
    std::mt19937 rng(7);
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::BF16_PACKED}) {
        ASSERT_NE(pairs_reference(f), nullptr) << weight_format_name(f);
        for (size_t cols : {1, 31, 64, 65, 300}) {
            const size_t rows = 9, n_x = 3;
            const testing::TestMatrix m = testing::random_matrix(f, Layout::out_in, rows, cols, rng);
            const std::vector<float> x = testing::random_floats(n_x * cols, rng, -3.0f, 3.0f);
            std::vector<float> rounded(x.size());
            size_t changed = 0;
            for (size_t i = 0; i < x.size(); ++i) {
                rounded[i] = bf16_to_f32(round_float(x[i]));
                changed += rounded[i] != x[i];
            }
            EXPECT_GT(changed, x.size() / 2) << "random floats are mostly not BF16 values";
            std::vector<float> pairs(n_x * rows), floats(n_x * rows), unrounded(n_x * rows);
            pairs_reference(f)(m.view(), x.data(), n_x, cols, pairs.data(), rows, 0, rows);
            float_reference(f)(m.view(), rounded.data(), n_x, cols, floats.data(), rows, 0, rows);
            float_reference(f)(m.view(), x.data(), n_x, cols, unrounded.data(), rows, 0, rows);
            EXPECT_EQ(std::memcmp(pairs.data(), floats.data(), pairs.size() * sizeof(float)), 0)
                << weight_format_name(f) << " cols " << cols;
            EXPECT_NE(pairs, unrounded) << "the road must round: " << weight_format_name(f) << " cols " << cols;
        }
    }
}

TEST(Bf16Activations, ReferenceReadsSubnormalWeightsAsZeros) {
    testing::TestMatrix m;
    m.format = WeightFormat::BF16;
    m.layout = Layout::out_in;
    m.rows = 1;
    m.cols = 2;
    const uint16_t w[2] = {0x0001, 0x3F80};  // the smallest subnormal, and 1
    m.data.assign(reinterpret_cast<const uint8_t*>(w), reinterpret_cast<const uint8_t*>(w) + sizeof w);
    const float x[2] = {0x1p100f, 0.0f};
    float y = -1.0f, y_float = -1.0f;
    pairs_reference(WeightFormat::BF16)(m.view(), x, 1, 2, &y, 1, 0, 1);
    float_reference(WeightFormat::BF16)(m.view(), x, 1, 2, &y_float, 1, 0, 1);
    EXPECT_EQ(y, 0.0f);
    EXPECT_EQ(y_float, 0x1p-33f) << "the float road reads the subnormal (2^-133 * 2^100)";
}

// The reference's entries are the definition, never what matmul runs: with the reference table the
// integer road keeps BF16 matrices on the float road.
TEST(Bf16Activations, MatmulNeverRunsTheReferenceDefinition) {
    std::mt19937 rng(11);
    const testing::TestMatrix m = testing::random_matrix(WeightFormat::BF16, Layout::out_in, 20, 70, rng);
    const std::vector<float> x = testing::random_floats(2 * 70, rng);
    std::vector<float> road(2 * 20), floats(2 * 20);
    matmul(Compute{&reference_kernels(), nullptr, true}, m.view(), x.data(), 2, road.data());
    float_reference(WeightFormat::BF16)(m.view(), x.data(), 2, 70, floats.data(), 20, 0, 20);
    EXPECT_EQ(road, floats);
}

}  // namespace
}  // namespace stormo
