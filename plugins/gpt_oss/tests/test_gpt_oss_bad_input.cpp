// Bad GPT-OSS input is refused with an error naming what is wrong, before anything runs: a missing
// mandatory tensor (sinks, biases, the router bias, a shard), a wrong shape or dtype, token ids
// outside the vocabulary, a request beyond the context. A failed request leaves the session as it was.
#include <cstring>
#include <filesystem>
#include <functional>

#include "oracle_support.hpp"
#include "runtime/generation.hpp"
#include "safetensors_writer.hpp"

namespace stormo::testing {
namespace {

namespace fs = std::filesystem;
using stormo::test::SyntheticTensor;
using stormo::test::TempDir;

// The fixture's tensors as SyntheticTensors, so a test can drop or alter one and write a copy.
std::vector<SyntheticTensor> fixture_tensors(const std::string& dir) {
    auto source = open_model_directory(dir);
    EXPECT_TRUE(source.has_value());
    std::vector<SyntheticTensor> out;
    for (const TensorInfo& t : (*source)->tensors()) {
        SyntheticTensor s{t.name, std::string(dtype_name(t.dtype)), t.shape, std::string(t.nbytes, '\0')};
        EXPECT_TRUE((*source)->read(t, 0, t.nbytes, s.data.data()).has_value());
        out.push_back(std::move(s));
    }
    return out;
}

std::string write_copy(const TempDir& tmp, const std::string& fixture,
                       const std::function<void(std::vector<SyntheticTensor>&)>& alter) {
    const std::string src = fixture_dir(fixture);
    auto tensors = fixture_tensors(src);
    alter(tensors);
    fs::copy_file(src + "/config.json", tmp.file("config.json"));
    stormo::test::write_safetensors(tmp.file("model.safetensors"), tensors);
    return tmp.path();
}

Error open_error(const std::string& dir) {
    EngineOptions o;
    o.setup.model_dir = dir;
    auto e = Engine::open(o);
    EXPECT_FALSE(e.has_value()) << "a bad checkpoint loaded";
    return e ? Error{} : e.error();
}

void drop(std::vector<SyntheticTensor>& ts, const std::string& name) {
    const auto before = ts.size();
    std::erase_if(ts, [&](const SyntheticTensor& t) { return t.name == name; });
    ASSERT_EQ(ts.size() + 1, before) << name << " is not in the fixture";
}

class GptOssMissingTensor : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(GptOssMissingTensor, IsRefusedAtLoadNamingIt) {
    const auto& [fixture, name] = GetParam();
    TempDir tmp;
    const std::string dir = write_copy(tmp, fixture, [&](auto& ts) { drop(ts, name); });
    const Error e = open_error(dir);
    EXPECT_NE(e.message.find("\"" + name + "\""), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("missing"), std::string::npos) << e.message;
}

INSTANTIATE_TEST_SUITE_P(
    Mandatory, GptOssMissingTensor,
    ::testing::Values(std::pair{"gpt_oss", "model.layers.0.self_attn.sinks"},
                      std::pair{"gpt_oss", "model.layers.1.self_attn.q_proj.bias"},
                      std::pair{"gpt_oss", "model.layers.2.self_attn.o_proj.bias"},
                      std::pair{"gpt_oss", "model.layers.3.mlp.router.bias"},
                      std::pair{"gpt_oss", "model.layers.0.mlp.experts.gate_up_proj_bias"},
                      std::pair{"gpt_oss", "model.layers.1.mlp.experts.down_proj"},
                      std::pair{"gpt_oss", "model.norm.weight"},
                      std::pair{"gpt_oss", "lm_head.weight"},
                      std::pair{"gpt_oss_mxfp4", "model.layers.0.mlp.experts.down_proj_scales"},
                      std::pair{"gpt_oss_mxfp4", "model.layers.2.mlp.experts.gate_up_proj_blocks"}));

TEST(GptOssBadCheckpoint, WrongShapeIsRefusedNamingTheTensorAndShapes) {
    TempDir tmp;
    const std::string name = "model.layers.1.self_attn.sinks";
    const std::string dir = write_copy(tmp, "gpt_oss", [&](auto& ts) {
        for (auto& t : ts)
            if (t.name == name) {
                t.shape = {2, 2};  // same bytes (4 BF16 values), wrong shape
            }
    });
    const Error e = open_error(dir);
    EXPECT_NE(e.message.find(name), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("[2, 2]"), std::string::npos) << e.message;
}

TEST(GptOssBadCheckpoint, WrongDtypeIsRefusedNamingTheTensor) {
    TempDir tmp;
    const std::string name = "model.layers.0.mlp.router.weight";
    const std::string dir = write_copy(tmp, "gpt_oss", [&](auto& ts) {
        for (auto& t : ts)
            if (t.name == name) {
                t.dtype = "I16";  // same size as BF16, so only the dtype check can catch it
            }
    });
    const Error e = open_error(dir);
    EXPECT_NE(e.message.find(name), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("I16"), std::string::npos) << e.message;
}

TEST(GptOssBadCheckpoint, MissingShardIsRefusedNamingIt) {
    TempDir tmp;
    const std::string src = fixture_dir("gpt_oss");
    auto tensors = fixture_tensors(src);
    std::vector<SyntheticTensor> first(tensors.begin(), tensors.begin() + static_cast<std::ptrdiff_t>(tensors.size() / 2));
    std::string index = "{\"metadata\":{},\"weight_map\":{";
    for (size_t i = 0; i < tensors.size(); ++i) {
        const bool in_first = i < first.size();
        index += (i ? "," : "") + std::string("\"") + tensors[i].name + "\":\"" +
                 (in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors") + "\"";
    }
    index += "}}";
    fs::copy_file(src + "/config.json", tmp.file("config.json"));
    stormo::test::write_safetensors(tmp.file("model-00001-of-00002.safetensors"), first);
    stormo::test::write_bytes(tmp.file("model.safetensors.index.json"), index);
    const Error e = open_error(tmp.path());
    EXPECT_NE(e.message.find("model-00002-of-00002.safetensors"), std::string::npos) << e.message;
}

class GptOssRequests : public ::testing::Test {
protected:
    void SetUp() override {
        engine_ = open_engine(fixture_dir("gpt_oss"));
        ASSERT_NE(engine_, nullptr);
    }
    std::unique_ptr<Engine> engine_;
};

TEST_F(GptOssRequests, TokenOutsideTheVocabularyIsRefusedBeforeAnythingRuns) {
    auto session = engine_->new_session(16);
    ASSERT_TRUE(session.has_value());
    const std::vector<int32_t> good{5, 6, 7};
    ASSERT_TRUE(engine_->pipeline().forward(**session, good, {}).has_value());
    const std::vector<int32_t> bad{8, 1024, 9};
    auto r = engine_->pipeline().forward(**session, bad, {});
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("1024"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("position 1"), std::string::npos) << r.error().message;
    EXPECT_EQ((*session)->position(), 3u) << "a refused request changed the session";
    const std::vector<int32_t> negative{-1};
    EXPECT_FALSE(engine_->pipeline().forward(**session, negative, {}).has_value());
    EXPECT_EQ((*session)->position(), 3u);
}

TEST_F(GptOssRequests, RequestBeyondTheContextIsAnErrorNotATruncation) {
    auto session = engine_->new_session(10);
    ASSERT_TRUE(session.has_value());
    GenerationRequest request;
    request.prompt = {1, 2, 3, 4, 5, 6};
    request.max_tokens = 5;
    auto r = generate(engine_->pipeline(), **session, request);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("context"), std::string::npos) << r.error().message;
    EXPECT_EQ((*session)->position(), 0u);
    EXPECT_FALSE(engine_->new_session(1u << 30).has_value()) << "a context past max_position_embeddings was accepted";
}

TEST_F(GptOssRequests, AttentionPastTheKvCapacityIsAnErrorNotAWrite) {
    const Model& model = engine_->model();
    const size_t hidden = model.hidden_size();
    auto session = engine_->new_session(2);
    ASSERT_TRUE(session.has_value());
    std::vector<float> normed(hidden, 0.5f), out(hidden, 0.0f);
    const std::vector<int64_t> positions{5};
    const StepContext ctx{positions, nullptr};
    const SequenceKv seq{0, 1, (*session)->kv(0)};
    auto r = model.attention(0, ctx, Rows{normed.data(), 1, hidden}, BlockKv(&seq, 1), Rows{out.data(), 1, hidden});
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("position 5"), std::string::npos) << r.error().message;
    // GPT-OSS has no dense FFN: asking for one is an error, never silent NaNs.
    auto d = model.dense_ffn(0, Rows{normed.data(), 1, hidden}, Rows{out.data(), 1, hidden});
    ASSERT_FALSE(d.has_value());
    EXPECT_NE(d.error().message.find("dense FFN"), std::string::npos) << d.error().message;
}

TEST_F(GptOssRequests, SessionWorksAfterAFailedRequest) {
    const std::vector<int32_t> prompt{229, 700, 413, 740, 272, 308};
    auto fresh = engine_->new_session(32);
    auto reused = engine_->new_session(32);
    ASSERT_TRUE(fresh && reused);
    GenerationRequest request;
    request.prompt = prompt;
    request.max_tokens = 8;
    auto want = generate(engine_->pipeline(), **fresh, request);
    ASSERT_TRUE(want.has_value());

    GenerationRequest bad = request;
    bad.prompt.push_back(5000);
    ASSERT_FALSE(generate(engine_->pipeline(), **reused, bad).has_value());
    auto got = generate(engine_->pipeline(), **reused, request);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    EXPECT_EQ(got->tokens, want->tokens);
}

}  // namespace
}  // namespace stormo::testing
