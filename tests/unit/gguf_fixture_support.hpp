#pragma once
// What the tests of GGUF fixture files share, whatever the family (test_gguf_gpt_oss.cpp,
// test_gguf_qwen3_moe.cpp, test_gguf_glm_dsa.cpp): a file converted by llama.cpp's converter from an
// oracle fixture (tests/data/gguf/README.md) against that fixture's tensors, against a safetensors
// checkpoint of the same dequantized weights (logits bits), and against the transformers reference.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "checkpoint_rewrite.hpp"
#include "model/gguf_source.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "reference_kernels/mxfp4.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {

inline std::string gguf_path(const std::string& file) { return std::string(STORMO_TEST_DATA_DIR) + "/gguf/" + file; }

// A GGUF model opened as the engine opens it: mapped by the family plugin of this build (found
// where the engine finds them) that claims its architecture.
inline Expected<std::unique_ptr<ModelSource>> open_gguf_source(const std::string& path) {
    STORMO_TRY_ASSIGN(const PluginRegistry plugins, PluginRegistry::discover(PluginSearch{}));
    return stormo::open_gguf_source(path, plugins.families());
}

// A GGUF fixture, the oracle fixture it was converted from, and how far its weights may lie from
// the fixture's (the converter's rounding of BF16 weights; none when it wrote them as BF16).
struct GgufCase {
    std::string file;
    std::string fixture;
    enum class Rounding { f16, q8_0, bf16 } rounding;
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

// A tensor's values as float32, whatever its dtype (the GGUF block types decoded as the reference
// dequantizer decodes them).
inline std::vector<float> read_floats(const ModelSource& source, const TensorInfo& t) {
    std::string bytes(t.nbytes, '\0');
    auto r = source.read(t, 0, t.nbytes, bytes.data());
    EXPECT_TRUE(r) << r.error().message;
    return to_f32(t.dtype, reinterpret_cast<const std::byte*>(bytes.data()), static_cast<size_t>(element_count(t.shape)));
}

// The dtype a case's expert matrices keep in the mapped model: the file's own.
inline DType expert_dtype(const GgufCase& c) {
    if (c.fixture.ends_with("mxfp4")) return DType::GGUF_MXFP4;
    switch (c.rounding) {
        case GgufCase::Rounding::f16: return DType::F16;
        case GgufCase::Rounding::bf16: return DType::BF16;
        case GgufCase::Rounding::q8_0: break;
    }
    return DType::GGUF_Q8_0;
}

// `name` is handed to the family as a byte range of the GGUF file in `dtype`, the range the
// streaming store would read (file and offset), not as values made in memory.
inline void expect_in_file(const ModelSource& source, const std::string& name, DType dtype) {
    const TensorInfo* t = source.find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_FALSE(source.in_memory(*t)) << name;
    EXPECT_EQ(t->dtype, dtype) << name << " is " << dtype_name(t->dtype);
    ASSERT_TRUE(t->file.ends_with(".gguf")) << t->file;
    std::string via_source(t->nbytes, '\0'), via_file(t->nbytes, '\0');
    ASSERT_TRUE(source.read(*t, 0, t->nbytes, via_source.data()));
    std::FILE* f = std::fopen(t->file.c_str(), "rb");
    ASSERT_NE(f, nullptr) << t->file;
    ASSERT_EQ(std::fseek(f, static_cast<long>(t->offset), SEEK_SET), 0);
    EXPECT_EQ(std::fread(via_file.data(), 1, via_file.size(), f), via_file.size());
    std::fclose(f);
    EXPECT_TRUE(via_source == via_file) << name << ": read() and the file's bytes at its offset differ";
}

// A fixture tensor as the mapped model holds it: its name, shape and values, and how they may
// differ (exactly for decoded MXFP4; vectors stay F32 in the file).
struct ExpectedTensor {
    std::string name;
    Shape shape;
    std::vector<float> values;
    bool exact = false;
};

// Rows r0, r0 + step, ... of each of the `n` [rows, cols] matrices in `v`.
inline std::vector<float> every_other_row(const std::vector<float>& v, int64_t n, int64_t rows, int64_t cols, int64_t first) {
    std::vector<float> out;
    for (int64_t e = 0; e < n; ++e)
        for (int64_t r = first; r < rows; r += 2)
            out.insert(out.end(), v.begin() + (e * rows + r) * cols, v.begin() + (e * rows + r + 1) * cols);
    return out;
}

// Each of the `n` [rows, cols] matrices in `v` transposed.
inline std::vector<float> transposed(const std::vector<float>& v, int64_t n, int64_t rows, int64_t cols) {
    std::vector<float> out(v.size());
    for (int64_t e = 0; e < n; ++e)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>((e * cols + c) * rows + r)] = v[static_cast<size_t>((e * rows + r) * cols + c)];
    return out;
}

// What a fixture tensor is in the mapped model. GPT-OSS's experts change form: transformers'
// gate_up_proj [E, in, 2 * inter] (or MXFP4 blocks [E, 2 * inter, in / 32, 16], gate and up
// interleaved) and down_proj [E, inter, hidden] are llama.cpp's stacked nn.Linear matrices
// gate_proj/up_proj/down_proj.weight [E, out, in] with .bias beside them.
inline std::vector<ExpectedTensor> expected_in_mapping(const ModelSource& fixture, const TensorInfo& want) {
    std::string name = want.name;
    std::string raw(want.nbytes, '\0');
    EXPECT_TRUE(fixture.read(want, 0, want.nbytes, raw.data()));
    const auto split_gate_up = [](const std::string& base, const std::vector<float>& v, int64_t E, int64_t rows, int64_t cols, bool exact) {
        const std::string module = base.substr(0, base.size() - std::string("gate_up_proj").size());
        return std::vector<ExpectedTensor>{{module + "gate_proj" + (cols == 1 ? ".bias" : ".weight"), cols == 1 ? Shape{E, rows / 2} : Shape{E, rows / 2, cols}, every_other_row(v, E, rows, cols, 0), exact},
                                           {module + "up_proj" + (cols == 1 ? ".bias" : ".weight"), cols == 1 ? Shape{E, rows / 2} : Shape{E, rows / 2, cols}, every_other_row(v, E, rows, cols, 1), exact}};
    };
    if (name.ends_with("_blocks")) {
        // blocks [E, out, in/32, 16] and scales [E, out, in/32], decoded to [E, out, in].
        const std::string base = name.substr(0, name.size() - 7);
        const TensorInfo* scales_info = fixture.find(base + "_scales");
        EXPECT_NE(scales_info, nullptr);
        if (scales_info == nullptr) return {};
        std::string scales(scales_info->nbytes, '\0');
        EXPECT_TRUE(fixture.read(*scales_info, 0, scales_info->nbytes, scales.data()));
        const int64_t E = want.shape[0], out = want.shape[1], in = want.shape[2] * 32;
        std::vector<float> v(static_cast<size_t>(E * out * in));
        for (int64_t e = 0; e < E; ++e)
            for (int64_t o = 0; o < out; ++o)
                for (int64_t i = 0; i < in; ++i) {
                    const auto byte = static_cast<uint8_t>(raw[static_cast<size_t>(((e * out + o) * in + i) / 2)]);
                    const uint8_t code = i % 2 == 0 ? byte & 0x0F : byte >> 4;
                    const auto scale = static_cast<uint8_t>(scales[static_cast<size_t>((e * out + o) * (in / 32) + i / 32)]);
                    v[static_cast<size_t>((e * out + o) * in + i)] = mxfp4::decode(code, scale);
                }
        if (base.ends_with("gate_up_proj")) return split_gate_up(base, v, E, out, in, true);
        return {{base + ".weight", {E, out, in}, std::move(v), true}};
    }
    const size_t count = static_cast<size_t>(element_count(want.shape));
    std::vector<float> v = to_f32(want.dtype, reinterpret_cast<const std::byte*>(raw.data()), count);
    if (name.ends_with("mlp.experts.gate_up_proj")) {  // [E, in, 2 * inter]
        const int64_t E = want.shape[0], in = want.shape[1], out = want.shape[2];
        return split_gate_up(name, transposed(v, E, in, out), E, out, in, false);
    }
    if (name.ends_with("mlp.experts.gate_up_proj_bias"))
        return split_gate_up(name.substr(0, name.size() - 5), v, want.shape[0], want.shape[1], 1, false);
    if (name.ends_with("mlp.experts.down_proj")) {  // [E, inter, hidden]
        const int64_t E = want.shape[0], in = want.shape[1], out = want.shape[2];
        return {{name + ".weight", {E, out, in}, transposed(v, E, in, out), false}};
    }
    if (name.ends_with("mlp.experts.down_proj_bias")) return {{name.substr(0, name.size() - 5) + ".bias", want.shape, std::move(v), false}};
    return {{name, want.shape, std::move(v), false}};
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
// to f16 (so at most max|w| / 127 * (0.5 + 127 * 2^-11)); BF16 is the fixture's own bits, exact.
// Vectors (norms, biases, sinks) stay F32, exact. MXFP4 experts are compared decoded, exactly. A
// layout error (a transpose, gate and up swapped, heads split in the wrong place) moves values by
// about max|w|, far outside these bounds.
inline void expect_tensors_are_the_fixtures(const ModelSource& source, const GgufCase& c, size_t at_least) {
    auto fixture = open_model_directory(fixture_dir(c.fixture));
    ASSERT_TRUE(fixture) << fixture.error().message;
    size_t compared = 0;
    for (const TensorInfo& want : (*fixture)->tensors()) {
        if (want.name.ends_with("_scales")) continue;  // compared with their blocks
        for (const ExpectedTensor& expected : expected_in_mapping(**fixture, want)) {
            const std::string& name = expected.name;
            const TensorInfo* got = source.find(name);
            ASSERT_NE(got, nullptr) << name << " is missing from the mapped GGUF";
            ASSERT_EQ(got->shape, expected.shape) << name;
            const std::vector<float> values = read_floats(source, *got);
            ASSERT_EQ(values.size(), expected.values.size()) << name;
            float scale = 0;
            for (float v : expected.values) scale = std::max(scale, std::fabs(v));
            const bool vector = expected.shape.size() == 1 || name.ends_with("bias");
            size_t outside = 0;
            for (size_t i = 0; i < values.size(); ++i) {
                // Equal as values when exact: the E2M1 code 8 is -0 in transformers' table and +0 in ggml's.
                const float err = std::fabs(values[i] - expected.values[i]);
                float bound = 0;  // vectors (norms, biases, sinks) and the router stay F32 in the file
                if (!vector && !expected.exact && c.rounding != GgufCase::Rounding::bf16) {
                    if (c.rounding == GgufCase::Rounding::f16)
                        bound = std::max(std::fabs(expected.values[i]) * 0x1p-11f, 0x1p-25f);
                    else  // half a step of amax / 127, plus the step's own rounding to f16 (127 * 2^-11)
                        bound = scale / 127.0f * (0.5f + 127.0f * 0x1p-11f) * 1.0001f;
                }
                if (!(err <= bound) && ++outside <= 3)
                    ADD_FAILURE() << name << "[" << i << "]: " << values[i] << " vs the fixture's " << expected.values[i];
            }
            EXPECT_EQ(outside, 0u) << name;
            ++compared;
        }
    }
    EXPECT_GE(compared, at_least);
}

// The GGUF road and a safetensors checkpoint holding the same dequantized weights (written from
// the mapped tensors, with the mapped config) give the same logits bits over `ids`: the GGUF source
// adds nothing between the file and the family's float road, and the reference kernels on the
// file's blocks give the bits of the float32 matrix of their values. (A file with no oracle
// fixture behind it names its own ids.)
inline void expect_logits_bits_of_a_safetensors_checkpoint(const ModelSource& source, const std::string& file,
                                                           const std::vector<int32_t>& ids) {
    test::TempDir dir;
    std::vector<test::SyntheticTensor> tensors;
    for (const TensorInfo& t : source.tensors()) {
        const std::vector<float> values = read_floats(source, t);
        std::string bytes(values.size() * sizeof(float), '\0');
        std::memcpy(bytes.data(), values.data(), bytes.size());
        tensors.push_back({t.name, "F32", t.shape, std::move(bytes)});
    }
    test::write_safetensors(dir.file("model.safetensors"), tensors);
    test::write_bytes(dir.file("config.json"), json_text(source.config().root()));

    const std::vector<float> from_gguf = all_logits(gguf_path(file), ids);
    const std::vector<float> from_safetensors = all_logits(dir.path(), ids);
    ASSERT_FALSE(from_gguf.empty());
    EXPECT_TRUE(same_bits(from_gguf, from_safetensors)) << "the GGUF and safetensors roads differ in bits";
}

// The same over the fixture's sequence.
inline void expect_logits_bits_of_a_safetensors_checkpoint(const ModelSource& source, const GgufCase& c) {
    expect_logits_bits_of_a_safetensors_checkpoint(source, c.file, fixture_sequence(c.fixture));
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
