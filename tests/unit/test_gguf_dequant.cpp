// stormo's GGUF dequantization against gguf-py's gguf.quants (llama.cpp's reference dequantizer):
// tests/data/gguf/quants/<TYPE>.ref holds blocks and the float32 values gguf-py decoded them to
// (scripts/make-gguf-quant-refs.py); every value must match bit for bit, NaN payloads included.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stormo/gguf_types.hpp"

namespace stormo {
namespace {

using ::testing::HasSubstr;

std::string read_ref(const std::string& name) {
    const std::string path = std::string(STORMO_TEST_DATA_DIR) + "/gguf/quants/" + name + ".ref";
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f) << "cannot open " << path;
    return {std::istreambuf_iterator<char>(f), {}};
}

class GgufDequant : public ::testing::TestWithParam<GgufType> {};

TEST_P(GgufDequant, MatchesGgufPyBitForBit) {
    const auto info = gguf_type_info(static_cast<uint32_t>(GetParam()));
    ASSERT_TRUE(info);
    ASSERT_TRUE(info->dequantizable);
    const std::string ref = read_ref(std::string(info->name));
    const size_t per_block = info->block_bytes + 4 * info->block_values;
    ASSERT_GT(ref.size(), 0u);
    ASSERT_EQ(ref.size() % per_block, 0u) << info->name << ".ref is not whole blocks and values";
    const size_t n_blocks = ref.size() / per_block;
    const size_t n_values = n_blocks * info->block_values;
    const auto* blocks = reinterpret_cast<const std::byte*>(ref.data());
    std::vector<uint32_t> expected(n_values);
    std::memcpy(expected.data(), ref.data() + n_blocks * info->block_bytes, n_values * 4);

    std::vector<float> out(n_values);
    auto r = dequantize_gguf(GetParam(), blocks, n_values, out.data());
    ASSERT_TRUE(r) << r.error().message;
    size_t mismatches = 0;
    for (size_t i = 0; i < n_values; ++i) {
        const uint32_t got = std::bit_cast<uint32_t>(out[i]);
        if (got != expected[i] && ++mismatches <= 5)
            ADD_FAILURE() << info->name << " value " << i << " (block " << i / info->block_values << "): stormo "
                          << out[i] << " (0x" << std::hex << got << "), gguf-py " << std::bit_cast<float>(expected[i])
                          << " (0x" << expected[i] << std::dec << ")";
    }
    EXPECT_EQ(mismatches, 0u) << "of " << n_values << " values";
}

INSTANTIATE_TEST_SUITE_P(Types, GgufDequant,
                         ::testing::Values(GgufType::F32, GgufType::F16, GgufType::BF16, GgufType::Q8_0, GgufType::Q4_0,
                                           GgufType::Q4_1, GgufType::Q5_0, GgufType::Q5_1, GgufType::Q2_K, GgufType::Q3_K,
                                           GgufType::Q4_K, GgufType::Q5_K, GgufType::Q6_K, GgufType::IQ4_NL,
                                           GgufType::IQ4_XS, GgufType::IQ1_S, GgufType::IQ1_M, GgufType::IQ2_XXS,
                                           GgufType::IQ2_XS, GgufType::IQ2_S, GgufType::IQ3_XXS, GgufType::IQ3_S,
                                           GgufType::MXFP4),
                         [](const auto& p) { return std::string(gguf_type_name(p.param)); });

TEST(GgufDequantErrors, RefusesPartialBlocksAndTypesWithoutADequantizer) {
    std::vector<std::byte> blocks(1024);
    std::vector<float> out(1024);
    auto partial = dequantize_gguf(GgufType::Q4_K, blocks.data(), 100, out.data());
    ASSERT_FALSE(partial);
    EXPECT_THAT(partial.error().message, HasSubstr("100 values are not a whole number of Q4_K blocks of 256"));
    auto ternary = dequantize_gguf(GgufType::TQ1_0, blocks.data(), 256, out.data());
    ASSERT_FALSE(ternary);
    EXPECT_EQ(ternary.error().kind, ErrorKind::unsupported);
    EXPECT_THAT(ternary.error().message, HasSubstr("TQ1_0 has no reference dequantizer"));
}

// Found by the fuzz harness: an F32 tensor with a zero dimension reached memcpy with null
// pointers (undefined even for zero bytes). No values is a success that touches nothing.
TEST(GgufDequantErrors, NoValuesTouchesNothing) {
    for (GgufType t : {GgufType::F32, GgufType::F16, GgufType::Q8_0, GgufType::Q6_K})
        EXPECT_TRUE(dequantize_gguf(t, nullptr, 0, nullptr)) << gguf_type_name(t);
}

TEST(GgufTypes, LayoutsAreGgmls) {
    // A few sizes from ggml-common.h, so a typo in the table cannot pass unnoticed.
    EXPECT_EQ(gguf_type_info(12)->block_bytes, 144u);  // Q4_K
    EXPECT_EQ(gguf_type_info(13)->block_bytes, 176u);  // Q5_K
    EXPECT_EQ(gguf_type_info(14)->block_bytes, 210u);  // Q6_K
    EXPECT_EQ(gguf_type_info(8)->block_bytes, 34u);    // Q8_0
    EXPECT_EQ(gguf_type_info(39)->block_bytes, 17u);   // MXFP4
    EXPECT_EQ(gguf_type_info(39)->name, "MXFP4");
    EXPECT_FALSE(gguf_type_info(4));   // removed from ggml
    EXPECT_FALSE(gguf_type_info(1000));
}

}  // namespace
}  // namespace stormo
