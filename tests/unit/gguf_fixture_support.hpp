#pragma once
// What the tests of GGUF fixture files share, whatever the family (test_gguf_gpt_oss.cpp,
// test_gguf_qwen3_moe.cpp, test_gguf_glm_dsa.cpp): a file converted by llama.cpp's converter from an
// oracle fixture (tests/data/gguf/README.md) against that fixture's tensors, against a safetensors
// checkpoint of the same dequantized weights (logits bits), and against the transformers reference.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "checkpoint_rewrite.hpp"
#include "kernels/mxfp4.hpp"
#include "model/gguf_source.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {

inline std::string gguf_path(const std::string& file) { return std::string(STORMO_TEST_DATA_DIR) + "/gguf/" + file; }

// A GGUF fixture, the oracle fixture it was converted from, and how far its weights may lie from
// the fixture's (the converter's rounding of BF16 weights).
struct GgufCase {
    std::string file;
    std::string fixture;
    enum class Rounding { f16, q8_0 } rounding;
    size_t greedy_agreement;   // leading greedy tokens equal to the reference's (of 32)
    double logits_tolerance;   // max|error| / max|reference| against the reference logits
};

inline void PrintTo(const GgufCase& c, std::ostream* os) { *os << c.file; }

inline std::string gguf_case_name(const ::testing::TestParamInfo<GgufCase>& info) {
    std::string n = info.param.file.substr(0, info.param.file.size() - 5);
    for (char& c : n)
        if (c == '-' || c == '.') c = '_';
    return n;
}

// JSON text of a parsed value, numbers written so they read back as the same double.
inline std::string json_text(const Json& j) {
    switch (j.type()) {
        case Json::Type::null: return "null";
        case Json::Type::boolean: return *j.as_bool() ? "true" : "false";
        case Json::Type::integer: return std::to_string(*j.as_int());
        case Json::Type::number: {
            char buf[64];
            auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *j.as_double());
            return std::string(buf, end);
        }
        case Json::Type::string: {  // the mapped config's strings need no escapes
            std::string s = "\"";
            s += *j.as_string();
            s += '"';
            return s;
        }
        case Json::Type::array: {
            std::string s = "[";
            for (const Json& v : *j.as_array()) {
                if (s.size() > 1) s += ',';
                s += json_text(v);
            }
            return s + "]";
        }
        case Json::Type::object: {
            // Appended piece by piece: GCC 12 warns falsely (-Wrestrict, its bug 105651) on "..." + string.
            std::string s = "{";
            for (const auto& [k, v] : *j.as_object()) {
                if (s.size() > 1) s += ',';
                s += '"';
                s += k;
                s += "\":";
                s += json_text(v);
            }
            return s + "}";
        }
    }
    return "null";
}

inline std::vector<float> read_floats(const ModelSource& source, const TensorInfo& t) {
    std::vector<float> v(t.nbytes / sizeof(float));
    auto r = source.read(t, 0, t.nbytes, v.data());
    EXPECT_TRUE(r) << r.error().message;
    return v;
}

// One GGUF fixture file opened as a model source, per test.
class GgufFixtureFile : public ::testing::TestWithParam<GgufCase> {
protected:
    void SetUp() override {
        auto opened = open_gguf_source(gguf_path(GetParam().file));
        ASSERT_TRUE(opened) << opened.error().message;
        source_ = std::move(*opened);
    }
    std::unique_ptr<ModelSource> source_;
};

// Every tensor of the fixture is there under its name with the fixture's values, up to the
// converter's rounding: F16 rounds each BF16 value to nearest (relative 2^-11, or 2^-25 among
// F16's subnormals); Q8_0 is within half a step of its block, the step amax / 127 itself rounded
// to f16 (so at most max|w| / 127 * (0.5 + 127 * 2^-11)). Vectors (norms, biases, sinks) stay F32,
// exact. MXFP4 experts are compared decoded, exactly. A layout error (a transpose, gate and up
// swapped, heads split in the wrong place) moves values by about max|w|, far outside these bounds.
inline void expect_tensors_are_the_fixtures(const ModelSource& source, const GgufCase& c, size_t at_least) {
    auto fixture = open_model_directory(fixture_dir(c.fixture));
    ASSERT_TRUE(fixture) << fixture.error().message;
    size_t compared = 0;
    for (const TensorInfo& want : (*fixture)->tensors()) {
        std::string name = want.name;
        const bool mxfp4 = name.ends_with("_blocks");
        if (name.ends_with("_scales")) continue;  // compared with their blocks
        if (mxfp4) name = name.substr(0, name.size() - 7);
        const TensorInfo* got = source.find(name);
        ASSERT_NE(got, nullptr) << name << " is missing from the mapped GGUF";
        const std::vector<float> values = read_floats(source, *got);
        std::vector<float> expected;
        if (mxfp4) {
            // blocks [E, out, in/32, 16] and scales [E, out, in/32] of the [E, in, out] matrix.
            const TensorInfo* scales_info = (*fixture)->find(want.name.substr(0, want.name.size() - 7) + "_scales");
            ASSERT_NE(scales_info, nullptr);
            std::string blocks(want.nbytes, '\0'), scales(scales_info->nbytes, '\0');
            ASSERT_TRUE((*fixture)->read(want, 0, want.nbytes, blocks.data()));
            ASSERT_TRUE((*fixture)->read(*scales_info, 0, scales_info->nbytes, scales.data()));
            const int64_t E = want.shape[0], out = want.shape[1], in = want.shape[2] * 32;
            ASSERT_EQ(got->shape, (Shape{E, in, out})) << name;
            expected.resize(static_cast<size_t>(E * in * out));
            for (int64_t e = 0; e < E; ++e)
                for (int64_t o = 0; o < out; ++o)
                    for (int64_t i = 0; i < in; ++i) {
                        const auto byte = static_cast<uint8_t>(blocks[static_cast<size_t>(((e * out + o) * in + i) / 2)]);
                        const uint8_t code = i % 2 == 0 ? byte & 0x0F : byte >> 4;
                        const auto scale = static_cast<uint8_t>(scales[static_cast<size_t>((e * out + o) * (in / 32) + i / 32)]);
                        expected[static_cast<size_t>((e * in + i) * out + o)] = mxfp4::decode(code, scale);
                    }
            // Equal as values: the E2M1 code 8 is -0 in transformers' table and +0 in ggml's.
            size_t differ = 0;
            for (size_t i = 0; i < values.size(); ++i)
                if (values[i] != expected[i] && ++differ <= 3)
                    ADD_FAILURE() << name << "[" << i << "]: " << values[i] << " vs the fixture's " << expected[i];
            EXPECT_EQ(differ, 0u) << name;
            ++compared;
            continue;
        }
        ASSERT_EQ(got->shape, want.shape) << name;
        std::string raw(want.nbytes, '\0');
        ASSERT_TRUE((*fixture)->read(want, 0, want.nbytes, raw.data()));
        expected = to_f32(want.dtype, reinterpret_cast<const std::byte*>(raw.data()), values.size());
        float scale = 0;
        for (float v : expected) scale = std::max(scale, std::fabs(v));
        const bool vector = want.shape.size() == 1 || name.ends_with("_bias");
        size_t outside = 0;
        for (size_t i = 0; i < values.size(); ++i) {
            const float err = std::fabs(values[i] - expected[i]);
            float bound = 0;  // vectors (norms, biases, sinks) and the router stay F32 in the file
            if (!vector) {
                if (c.rounding == GgufCase::Rounding::f16)
                    bound = std::max(std::fabs(expected[i]) * 0x1p-11f, 0x1p-25f);
                else  // half a step of amax / 127, plus the step's own rounding to f16 (127 * 2^-11)
                    bound = scale / 127.0f * (0.5f + 127.0f * 0x1p-11f) * 1.0001f;
            }
            if (err > bound && ++outside <= 3)
                ADD_FAILURE() << name << "[" << i << "]: " << values[i] << " vs the fixture's " << expected[i];
        }
        EXPECT_EQ(outside, 0u) << name;
        ++compared;
    }
    EXPECT_GE(compared, at_least);
}

// The GGUF road and a safetensors checkpoint holding the same dequantized weights (written from
// the mapped tensors, with the mapped config) give the same logits bits: the GGUF source adds
// nothing between the file and the family's float road.
inline void expect_logits_bits_of_a_safetensors_checkpoint(const ModelSource& source, const GgufCase& c) {
    test::TempDir dir;
    std::vector<test::SyntheticTensor> tensors;
    for (const TensorInfo& t : source.tensors()) {
        std::string bytes(t.nbytes, '\0');
        ASSERT_TRUE(source.read(t, 0, t.nbytes, bytes.data()));
        tensors.push_back({t.name, "F32", t.shape, std::move(bytes)});
    }
    test::write_safetensors(dir.file("model.safetensors"), tensors);
    test::write_bytes(dir.file("config.json"), json_text(source.config().root()));

    const std::vector<int32_t> ids = fixture_sequence(c.fixture);
    const std::vector<float> from_gguf = all_logits(gguf_path(c.file), ids);
    const std::vector<float> from_safetensors = all_logits(dir.path(), ids);
    ASSERT_FALSE(from_gguf.empty());
    EXPECT_TRUE(same_bits(from_gguf, from_safetensors)) << "the GGUF and safetensors roads differ in bits";
}

// stormo's greedy continuation (the "reference" engine configuration, 2 threads) of `prompt` by
// `count` tokens, from a GGUF file; empty (with a failure recorded) when it cannot run.
inline std::vector<int32_t> greedy_tokens(const std::string& file, const std::vector<int32_t>& prompt, size_t count) {
    auto engine = open_engine(gguf_path(file), "reference", 2);
    EXPECT_NE(engine, nullptr);
    if (engine == nullptr) return {};
    auto session = engine->new_session(prompt.size() + count);
    EXPECT_TRUE(session.has_value());
    if (!session) return {};
    GenerationRequest request;
    request.prompt = prompt;
    request.max_tokens = count;
    auto result = generate(engine->pipeline(), **session, request);
    EXPECT_TRUE(result.has_value()) << result.error().message;
    return result ? result->tokens : std::vector<int32_t>{};
}

// How many leading tokens of `a` and `b` are equal.
inline size_t leading_equal(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t same = 0;
    while (same < a.size() && same < b.size() && a[same] == b[same]) ++same;
    return same;
}

// Logits over the fixture's sequence and greedy tokens against transformers on the fixture's BF16
// weights, within the case's measured bounds; prints the figures docs/gguf.md's table holds.
inline void expect_reference_agreement(const GgufCase& c) {
    const std::string dir = fixture_dir(c.fixture);
    const std::vector<int32_t> ids = fixture_sequence(c.fixture);
    const std::vector<float> logits = all_logits(gguf_path(c.file), ids);
    const NpyArray ref = read_reference(dir + "/reference/logits.npy");
    const ErrorStats e = compare(logits, ref.floats());
    std::printf("[ %s ] logits max abs error %.3g, scale %.3g, relative %.3g\n", c.file.c_str(), e.max_abs, e.scale,
                e.relative());
    ::testing::Test::RecordProperty("logits_relative_error", std::to_string(e.relative()));

    const std::vector<int32_t> prompt = int_list(*read_json_file(dir + "/reference/input_ids.json").find("input_ids"));
    const std::vector<int32_t> generated = int_list(*read_json_file(dir + "/reference/greedy.json").find("generated"));
    const size_t same = leading_equal(greedy_tokens(c.file, prompt, generated.size()), generated);
    std::printf("[ %s ] greedy: the first %zu of %zu tokens equal the reference\n", c.file.c_str(), same, generated.size());
    EXPECT_GE(same, c.greedy_agreement);
    EXPECT_LE(e.relative(), c.logits_tolerance);
}

}  // namespace stormo::testing
