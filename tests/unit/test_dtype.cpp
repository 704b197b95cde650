// Element types: names, sizes, and exact widening of BF16, F16 and F8 (E4M3FN, E5M2) values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "stormo/dtype.hpp"
#include "stormo/tensor.hpp"

namespace stormo {
namespace {

TEST(DtypeNames, RoundTripAndSizes) {
    const std::vector<std::pair<DType, size_t>> all = {
        {DType::F64, 8}, {DType::F32, 4}, {DType::F16, 2}, {DType::BF16, 2}, {DType::I64, 8}, {DType::I32, 4},
        {DType::I16, 2}, {DType::I8, 1},  {DType::U8, 1},  {DType::BOOL, 1}, {DType::F8_E4M3, 1}, {DType::F8_E5M2, 1},
    };
    for (const auto& [type, size] : all) {
        EXPECT_EQ(dtype_size(type), size) << dtype_name(type);
        EXPECT_EQ(dtype_from_name(dtype_name(type)), type) << dtype_name(type);
    }
    EXPECT_EQ(dtype_name(DType::F8_E4M3), "F8_E4M3");
    EXPECT_EQ(dtype_name(DType::F8_E5M2), "F8_E5M2");
    EXPECT_EQ(dtype_name(DType::BF16), "BF16");
    EXPECT_FALSE(dtype_from_name("bf16"));
    EXPECT_FALSE(dtype_from_name("F4"));
    EXPECT_FALSE(dtype_from_name(""));
}

// ggml's block types as GGUF files hold them: sized per block, never a safetensors dtype.
TEST(DtypeNames, BlockTypesAreSizedPerBlockAndNotSafetensors) {
    const std::vector<std::tuple<DType, const char*, size_t, size_t>> blocks = {
        {DType::GGUF_Q8_0, "Q8_0", 32, 34},   {DType::GGUF_Q4_0, "Q4_0", 32, 18},  {DType::GGUF_Q4_K, "Q4_K", 256, 144},
        {DType::GGUF_Q5_K, "Q5_K", 256, 176}, {DType::GGUF_Q6_K, "Q6_K", 256, 210}, {DType::GGUF_MXFP4, "MXFP4", 32, 17},
        {DType::GGUF_Q4_1, "Q4_1", 32, 20},   {DType::GGUF_Q5_0, "Q5_0", 32, 22},  {DType::GGUF_Q5_1, "Q5_1", 32, 24},
        {DType::GGUF_Q2_K, "Q2_K", 256, 84},  {DType::GGUF_Q3_K, "Q3_K", 256, 110}, {DType::GGUF_IQ4_NL, "IQ4_NL", 32, 18},
        {DType::GGUF_IQ4_XS, "IQ4_XS", 256, 136}, {DType::GGUF_IQ2_XXS, "IQ2_XXS", 256, 66},
        {DType::GGUF_IQ2_XS, "IQ2_XS", 256, 74},  {DType::GGUF_IQ2_S, "IQ2_S", 256, 82},  {DType::GGUF_IQ3_XXS, "IQ3_XXS", 256, 98},
        {DType::GGUF_IQ3_S, "IQ3_S", 256, 110},  {DType::GGUF_IQ1_S, "IQ1_S", 256, 50},  {DType::GGUF_IQ1_M, "IQ1_M", 256, 56},
    };
    for (const auto& [type, name, values, bytes] : blocks) {
        EXPECT_EQ(dtype_name(type), name);
        EXPECT_FALSE(dtype_from_name(name)) << name << " is no safetensors dtype";
        EXPECT_TRUE(is_block_dtype(type)) << name;
        EXPECT_EQ(dtype_size(type), 0u) << name;
        EXPECT_EQ(dtype_block(type).values, values) << name;
        EXPECT_EQ(dtype_block(type).bytes, bytes) << name;
        EXPECT_EQ(dtype_bytes(type, {3, static_cast<int64_t>(2 * values)}), 3 * 2 * bytes) << name;
        EXPECT_FALSE(dtype_bytes(type, {3, static_cast<int64_t>(values + 1)})) << name << ": a row of part of a block";
    }
    EXPECT_FALSE(is_block_dtype(DType::BF16));
    EXPECT_EQ(dtype_bytes(DType::BF16, {3, 5}), 30u);
    EXPECT_FALSE(dtype_bytes(DType::F32, {int64_t{1} << 62, 8})) << "the product overflows";
}

// A block type widens as the GGUF reference dequantizer decodes it: Q8_0 is d * q.
TEST(DtypeWidening, BlockTypesDecodeWholeBlocks) {
    std::vector<std::byte> block(34);
    const uint16_t half_two = 0x4000;  // 2.0 in IEEE half
    std::memcpy(block.data(), &half_two, 2);
    for (int i = 0; i < 32; ++i) block[static_cast<size_t>(2 + i)] = static_cast<std::byte>(static_cast<int8_t>(i - 16));
    const std::vector<float> v = to_f32(DType::GGUF_Q8_0, block.data(), 32);
    ASSERT_EQ(v.size(), 32u);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], 2.0f * static_cast<float>(i - 16)) << i;
    const std::vector<float> first = to_f32(DType::GGUF_Q8_0, block.data(), 5);
    EXPECT_EQ(first, std::vector<float>(v.begin(), v.begin() + 5));
}

TEST(DtypeConvert, Bf16) {
    EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_f32(0xC020), -2.5f);
    EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));  // smallest subnormal
    EXPECT_EQ(bf16_to_f32(0x7F7F), std::ldexp(255.0f, 120));  // largest finite: 1.9921875 * 2^127
    EXPECT_TRUE(std::isinf(bf16_to_f32(0xFF80)) && bf16_to_f32(0xFF80) < 0);
    EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
}

TEST(DtypeConvert, F16) {
    EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
    EXPECT_EQ(f16_to_f32(0xC100), -2.5f);
    EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
    EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
    EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
    EXPECT_EQ(f16_to_f32(0xFBFF), -65504.0f);
    EXPECT_EQ(f16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
    EXPECT_TRUE(std::isnan(f16_to_f32(0x7C01)));
    EXPECT_EQ(f16_to_f32(0x0000), 0.0f);
    EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
    EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
}

TEST(DtypeConvert, F16MatchesTheHardwareDefinitionForEveryValue) {
    // Every finite half is (-1)^s * 2^(e-15) * (1 + m/1024), or 2^-14 * m/1024 when e == 0.
    for (uint32_t v = 0; v < 0x10000; ++v) {
        const uint32_t e = (v >> 10) & 0x1F, m = v & 0x3FF;
        if (e == 0x1F) continue;
        const double magnitude = e == 0 ? std::ldexp(m / 1024.0, -14) : std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
        const double expected = (v & 0x8000) ? -magnitude : magnitude;
        ASSERT_EQ(static_cast<double>(f16_to_f32(static_cast<uint16_t>(v))), expected) << std::hex << v;
    }
}

TEST(DtypeConvert, F8E4M3) {
    EXPECT_EQ(f8_e4m3_to_f32(0x38), 1.0f);
    EXPECT_EQ(f8_e4m3_to_f32(0xC2), -2.5f);
    EXPECT_EQ(f8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
    EXPECT_EQ(f8_e4m3_to_f32(0x07), std::ldexp(7.0f, -9));  // largest subnormal
    EXPECT_EQ(f8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
    EXPECT_EQ(f8_e4m3_to_f32(0x7E), 448.0f);                 // largest finite
    EXPECT_EQ(f8_e4m3_to_f32(0xFE), -448.0f);
    EXPECT_EQ(f8_e4m3_to_f32(0x78), 256.0f);  // exponent 15 is finite in E4M3FN
    EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0x7F)));
    EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0xFF)));
    EXPECT_EQ(f8_e4m3_to_f32(0x00), 0.0f);
    EXPECT_TRUE(std::signbit(f8_e4m3_to_f32(0x80)));
    int nans = 0;
    for (unsigned v = 0; v < 256; ++v) {
        const float f = f8_e4m3_to_f32(static_cast<uint8_t>(v));
        EXPECT_FALSE(std::isinf(f)) << v;
        nans += std::isnan(f) ? 1 : 0;
    }
    EXPECT_EQ(nans, 2);
}

TEST(DtypeConvert, ToF32WidensEveryFloatFormat) {
    const uint16_t bf16[] = {0x3F80, 0xC020};
    EXPECT_EQ(to_f32(DType::BF16, reinterpret_cast<const std::byte*>(bf16), 2), (std::vector<float>{1.0f, -2.5f}));
    const uint16_t f16[] = {0x3C00, 0xC100, 0x0001};
    EXPECT_EQ(to_f32(DType::F16, reinterpret_cast<const std::byte*>(f16), 3),
              (std::vector<float>{1.0f, -2.5f, std::ldexp(1.0f, -24)}));
    const uint8_t f8[] = {0x38, 0xC2, 0x7E};
    EXPECT_EQ(to_f32(DType::F8_E4M3, reinterpret_cast<const std::byte*>(f8), 3), (std::vector<float>{1.0f, -2.5f, 448.0f}));
    const uint8_t e5m2[] = {0x3C, 0xC1};
    EXPECT_EQ(to_f32(DType::F8_E5M2, reinterpret_cast<const std::byte*>(e5m2), 2), (std::vector<float>{1.0f, -2.5f}));
    const float f32[] = {3.25f, -0.0f};
    EXPECT_EQ(to_f32(DType::F32, reinterpret_cast<const std::byte*>(f32), 2), (std::vector<float>{3.25f, -0.0f}));
    const int32_t i32[] = {-7, 12};
    EXPECT_EQ(to_f32(DType::I32, reinterpret_cast<const std::byte*>(i32), 2), (std::vector<float>{-7.0f, 12.0f}));
    EXPECT_TRUE(to_f32(DType::F32, nullptr, 0).empty());
}

TEST(DtypeTensor, ShapesBuffersAndWidening) {
    EXPECT_EQ(element_count({8, 64, 2, 16}), 16384);
    EXPECT_EQ(element_count({}), 1);
    EXPECT_EQ(element_count({3, 0}), 0);
    EXPECT_EQ(shape_string({8, 64, 2, 16}), "[8, 64, 2, 16]");
    EXPECT_EQ(shape_string({}), "[]");

    AlignedBuffer buffer(100);
    EXPECT_EQ(buffer.size(), 100u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u);
    AlignedBuffer page(10, 4096);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(page.data()) % 4096, 0u);
    AlignedBuffer empty(0);
    EXPECT_NE(empty.data(), nullptr);
    EXPECT_EQ(empty.size(), 0u);
    std::byte* p = buffer.data();
    AlignedBuffer moved(std::move(buffer));
    EXPECT_EQ(moved.data(), p);
    EXPECT_EQ(moved.size(), 100u);
    EXPECT_EQ(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), 0u);
    page = std::move(moved);
    EXPECT_EQ(page.data(), p);

    Tensor t;
    t.dtype = DType::BF16;
    t.shape = {2};
    t.buffer = std::make_shared<AlignedBuffer>(4);
    const uint16_t values[] = {0x3F80, 0xC020};
    std::memcpy(t.buffer->data(), values, 4);
    EXPECT_EQ(to_f32(t), (std::vector<float>{1.0f, -2.5f}));
    EXPECT_EQ(t.nbytes(), 4u);
}

}  // namespace
}  // namespace stormo
