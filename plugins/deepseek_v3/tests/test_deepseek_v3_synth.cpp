// DeepSeek-V3's synth presets: the full plans of deepseek-ai/DeepSeek-V3 and Kimi-K2-Instruct
// against the tensor and parameter counts of the hub's own files (without writing 689 GB or
// 1 TB), config.json in the hub's dialect, cuts by --layers and --experts, the toys' bytes held to
// a recorded digest, and the toys loading in the family and generating, with the MTP layer
// written, counted by inspect and left unloaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "../deepseek_v3_config.hpp"
#include "cli_runner.hpp"
#include "model/model_source.hpp"
#include "oracle_support.hpp"
#include "runtime/generation.hpp"
#include "stormo/dtype.hpp"
#include "tools/synth.hpp"
#include "util/sha256.hpp"

namespace stormo::deepseek_v3 {
namespace {

using test::TempDir;

Expected<synth::SynthPlan> try_plan(const std::string& preset, std::optional<int> layers = {},
                                    std::optional<int> experts = {}, uint64_t seed = 0) {
    synth::SynthOptions o;
    o.preset = preset;
    o.layers = layers;
    o.experts = experts;
    o.seed = seed;
    return synth::plan_synth(o);
}

synth::SynthPlan plan_of(const std::string& preset, std::optional<int> layers = {}, std::optional<int> experts = {},
                         uint64_t seed = 0) {
    auto plan = try_plan(preset, layers, experts, seed);
    EXPECT_TRUE(plan.has_value()) << (plan ? "" : plan.error().message);
    return plan ? *plan : synth::SynthPlan{};
}

const synth::PlannedTensor* find(const synth::SynthPlan& plan, const std::string& name) {
    for (const auto& t : plan.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

void expect_tensor(const synth::SynthPlan& plan, const std::string& name, DType dtype, const Shape& shape) {
    const synth::PlannedTensor* t = find(plan, name);
    ASSERT_NE(t, nullptr) << name << " is missing";
    EXPECT_EQ(t->dtype, dtype) << name;
    EXPECT_EQ(t->shape, shape) << name;
}

struct Counts {
    uint64_t tensors = 0, bytes = 0, elements = 0, scale_elements = 0, mtp_weights = 0;
};

// A DeepseekV3ForCausalLM checkpoint's counts from its dimensions, independently of the plugin:
// every projection E4M3 with an F32 scale per 128 x 128 block, norms, router and embeddings BF16,
// the correction bias F32, and each MTP layer's embedding, two norms, eh_proj, decoder layer, norm
// and head.
Counts hub_counts(int64_t h, int64_t inter, int64_t moe, int64_t layers, int64_t dense, int64_t heads, int64_t q_lora,
                  int64_t kv_lora, int64_t nope, int64_t rope, int64_t v, int64_t experts, int64_t mtp, int64_t vocab) {
    Counts c;
    auto blocks = [](int64_t n) { return static_cast<uint64_t>((n + 127) / 128); };
    auto fp8 = [&](int64_t rows, int64_t cols) {
        const uint64_t n = static_cast<uint64_t>(rows * cols), s = blocks(rows) * blocks(cols);
        c.tensors += 2, c.bytes += n + 4 * s, c.elements += n + s, c.scale_elements += s;
    };
    auto plain = [&](uint64_t n, uint64_t size) { c.tensors += 1, c.bytes += size * n, c.elements += n; };
    auto bf16 = [&](int64_t n) { plain(static_cast<uint64_t>(n), 2); };
    auto layer = [&](int64_t l) {
        bf16(h), bf16(h), bf16(q_lora), bf16(kv_lora);
        fp8(q_lora, h), fp8(heads * (nope + rope), q_lora), fp8(kv_lora + rope, h), fp8(heads * (nope + v), kv_lora);
        fp8(h, heads * v);
        if (l < dense) {
            fp8(inter, h), fp8(inter, h), fp8(h, inter);
            return;
        }
        bf16(experts * h), plain(static_cast<uint64_t>(experts), 4);
        for (int64_t e = 0; e <= experts; ++e) fp8(moe, h), fp8(moe, h), fp8(h, moe);  // the shared expert too
    };
    bf16(vocab * h);
    for (int64_t l = 0; l < layers; ++l) layer(l);
    bf16(h), bf16(vocab * h);
    const uint64_t before_mtp = c.elements - c.scale_elements;
    for (int64_t m = 0; m < mtp; ++m) {
        bf16(vocab * h), bf16(h), bf16(h), bf16(2 * h * h);
        layer(layers + m);
        bf16(h), bf16(vocab * h);
    }
    c.mtp_weights = c.elements - c.scale_elements - before_mtp;
    return c;
}

uint64_t elements_of(const synth::SynthPlan& plan) {
    uint64_t n = 0;
    for (const auto& t : plan.tensors) n += static_cast<uint64_t>(element_count(t.shape));
    return n;
}

// deepseek-ai/DeepSeek-V3's files (R1's are the same shapes): 163 shards of 91,991 tensors holding
// 684,531,386,000 elements (641.29 GiB), the scale_inv blocks and model.layers.61 included. Without
// the scales and the MTP layer: 671,026,419,200 weights, the published 671B.
TEST(DeepseekV3Synth, TheDeepSeekV3PlanHasTheHubsCounts) {
    const auto plan = plan_of("deepseek-v3");
    EXPECT_EQ(plan.family, "deepseek_v3");
    EXPECT_EQ(plan.layers, 61);
    const Counts want = hub_counts(7168, 18432, 2048, 61, 3, 128, 1536, 512, 128, 64, 128, 256, 1, 129280);
    EXPECT_EQ(plan.tensors.size(), 91991u);
    EXPECT_EQ(want.tensors, 91991u);
    EXPECT_EQ(elements_of(plan), 684'531'386'000u);
    EXPECT_EQ(want.elements, 684'531'386'000u);
    EXPECT_EQ(plan.total_bytes(), want.bytes);
    EXPECT_EQ(plan.total_bytes(), 688'574'839'360u);
    EXPECT_EQ(want.elements - want.scale_elements - want.mtp_weights, 671'026'419'200u);
    for (const auto& s : plan.shards) EXPECT_LE(s.data_bytes, uint64_t{4} << 30) << s.file_name;

    size_t codes = 0, scales = 0;
    for (const auto& t : plan.tensors) {
        codes += t.dtype == DType::F8_E4M3;
        if (t.name.ends_with("_scale_inv")) {
            ++scales;
            EXPECT_EQ(t.dtype, DType::F32) << t.name;
        }
    }
    EXPECT_EQ(codes, scales);
    EXPECT_EQ(codes, 62u * 5u + 3u * 3u + 59u * 257u * 3u);
    // The shapes of the hub's index, the MTP layer's included.
    expect_tensor(plan, "model.layers.0.self_attn.q_b_proj.weight", DType::F8_E4M3, {24576, 1536});
    expect_tensor(plan, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv", DType::F32, {5, 56});
    expect_tensor(plan, "model.layers.0.self_attn.kv_b_proj.weight", DType::F8_E4M3, {32768, 512});
    expect_tensor(plan, "model.layers.2.mlp.down_proj.weight_scale_inv", DType::F32, {56, 144});
    expect_tensor(plan, "model.layers.3.mlp.gate.weight", DType::BF16, {256, 7168});
    expect_tensor(plan, "model.layers.3.mlp.gate.e_score_correction_bias", DType::F32, {256});
    expect_tensor(plan, "model.layers.60.mlp.experts.255.up_proj.weight_scale_inv", DType::F32, {16, 56});
    expect_tensor(plan, "model.layers.60.self_attn.o_proj.weight", DType::F8_E4M3, {7168, 16384});
    expect_tensor(plan, "model.layers.61.embed_tokens.weight", DType::BF16, {129280, 7168});
    expect_tensor(plan, "model.layers.61.enorm.weight", DType::BF16, {7168});
    expect_tensor(plan, "model.layers.61.hnorm.weight", DType::BF16, {7168});
    expect_tensor(plan, "model.layers.61.eh_proj.weight", DType::BF16, {7168, 14336});
    expect_tensor(plan, "model.layers.61.mlp.experts.255.down_proj.weight", DType::F8_E4M3, {7168, 2048});
    expect_tensor(plan, "model.layers.61.shared_head.norm.weight", DType::BF16, {7168});
    expect_tensor(plan, "model.layers.61.shared_head.head.weight", DType::BF16, {129280, 7168});
    EXPECT_EQ(find(plan, "model.layers.62.input_layernorm.weight"), nullptr);
}

// moonshotai/Kimi-K2-Instruct's files: 139,644 tensors of 1,026,470,731,056 elements, of which 61
// are rotary inv_freq buffers of 56 BF16 (a module's buffer saved by the converter, not a weight:
// the plan leaves them out), so 139,583 tensors and 3,416 elements fewer.
TEST(DeepseekV3Synth, TheKimiK2PlanHasTheHubsCounts) {
    const auto plan = plan_of("kimi-k2");
    const Counts want = hub_counts(7168, 18432, 2048, 61, 1, 64, 1536, 512, 128, 64, 128, 384, 0, 163840);
    EXPECT_EQ(plan.tensors.size(), 139'644u - 61u);
    EXPECT_EQ(want.tensors, 139'644u - 61u);
    EXPECT_EQ(elements_of(plan), 1'026'470'731'056u - 61u * 56u);
    EXPECT_EQ(plan.total_bytes(), want.bytes);
    EXPECT_EQ(plan.total_bytes(), 1'029'173'249'888u);
    EXPECT_EQ(want.elements - want.scale_elements, 1'026'408'232'448u);  // the weights: "1T"
    expect_tensor(plan, "model.layers.0.mlp.gate_proj.weight_scale_inv", DType::F32, {144, 56});
    expect_tensor(plan, "model.layers.1.mlp.gate.weight", DType::BF16, {384, 7168});
    expect_tensor(plan, "model.layers.60.self_attn.q_b_proj.weight", DType::F8_E4M3, {12288, 1536});
    expect_tensor(plan, "model.layers.60.self_attn.kv_b_proj.weight_scale_inv", DType::F32, {128, 4});
    expect_tensor(plan, "model.layers.60.self_attn.o_proj.weight", DType::F8_E4M3, {7168, 8192});
    expect_tensor(plan, "lm_head.weight", DType::BF16, {163840, 7168});
    EXPECT_EQ(find(plan, "model.layers.61.eh_proj.weight"), nullptr);  // no MTP layer
}

// config.json in the hub's dialect, read by the family's own parser.
TEST(DeepseekV3Synth, ConfigIsTheHubsDialect) {
    const auto ds = plan_of("deepseek-v3");
    EXPECT_NE(ds.config_json.find("\"rope_scaling\": {\n    \"beta_fast\": 32,\n    \"beta_slow\": 1,\n    \"factor\": 40,"),
              std::string::npos)
        << ds.config_json;
    EXPECT_NE(ds.config_json.find("\"type\": \"yarn\"\n  },\n  \"rope_theta\": 10000,\n"), std::string::npos);
    EXPECT_NE(ds.config_json.find("\"weight_block_size\": [\n      128,\n      128\n    ]"), std::string::npos);
    EXPECT_EQ(ds.config_json.find("rope_parameters"), std::string::npos);
    auto c = parse_deepseek_v3_config(*ModelConfig::parse(ds.config_json, "config.json"));
    ASSERT_TRUE(c.has_value()) << c.error().message;
    EXPECT_EQ(c->hidden_size, 7168);
    EXPECT_EQ(c->n_layers, 61);
    EXPECT_EQ(c->n_heads, 128);
    EXPECT_EQ(c->q_lora_rank, 1536);
    EXPECT_EQ(c->kv_lora_rank, 512);
    EXPECT_EQ(c->qk_head_dim(), 192);
    EXPECT_EQ(c->v_head_dim, 128);
    EXPECT_EQ(c->vocab_size, 129280);
    EXPECT_EQ(c->n_experts, 256);
    EXPECT_EQ(c->top_k, 8);
    EXPECT_EQ(c->n_group, 8);
    EXPECT_EQ(c->topk_group, 4);
    EXPECT_EQ(c->n_shared_experts, 1);
    EXPECT_EQ(c->first_k_dense_replace, 3);
    EXPECT_EQ(c->routed_scaling_factor, 2.5);
    EXPECT_EQ(c->mtp_layers, 1);
    EXPECT_EQ(c->max_position_embeddings, 163840);
    EXPECT_EQ(c->rope.type, toolkit::RopeType::yarn);
    EXPECT_EQ(c->rope.theta, 10000.0);
    EXPECT_EQ(c->rope.factor, 40.0);
    EXPECT_EQ(c->rope.original_max_position_embeddings, 4096);
    EXPECT_EQ(c->rope.mscale_all_dim, 1.0);

    const auto kimi = plan_of("kimi-k2");
    EXPECT_NE(kimi.config_json.find("\"model_type\": \"kimi_k2\""), std::string::npos);
    EXPECT_NE(kimi.config_json.find("\"rope_theta\": 50000.0,\n  \"routed_scaling_factor\": 2.827,\n  \"rope_scaling\": {"),
              std::string::npos)
        << kimi.config_json;
    EXPECT_EQ(kimi.config_json.find("ep_size"), std::string::npos);
    auto k = parse_deepseek_v3_config(*ModelConfig::parse(kimi.config_json, "config.json"));
    ASSERT_TRUE(k.has_value()) << k.error().message;
    EXPECT_EQ(k->n_heads, 64);
    EXPECT_EQ(k->n_experts, 384);
    EXPECT_EQ(k->n_group, 1);
    EXPECT_EQ(k->topk_group, 1);
    EXPECT_EQ(k->first_k_dense_replace, 1);
    EXPECT_EQ(k->routed_scaling_factor, 2.827);
    EXPECT_EQ(k->mtp_layers, 0);
    EXPECT_EQ(k->vocab_size, 163840);
    EXPECT_EQ(k->max_position_embeddings, 131072);
    EXPECT_EQ(k->rope.theta, 50000.0);
    EXPECT_EQ(k->rope.factor, 32.0);
    EXPECT_EQ(k->rope.beta_fast, 1.0);
}

// --layers and --experts cut the model and keep each tensor's real shape; the MTP layer follows
// the last layer, and a cut shallower than the dense layers leaves it MoE as the config says.
TEST(DeepseekV3Synth, CutsKeepTheRealShapes) {
    const auto cut = plan_of("deepseek-v3", 5, 32);
    const Counts want = hub_counts(7168, 18432, 2048, 5, 3, 128, 1536, 512, 128, 64, 128, 32, 1, 129280);
    EXPECT_EQ(cut.tensors.size(), want.tensors);
    EXPECT_EQ(cut.total_bytes(), want.bytes);
    EXPECT_NE(cut.config_json.find("\"n_routed_experts\": 32,"), std::string::npos);
    EXPECT_NE(cut.config_json.find("\"num_hidden_layers\": 5,"), std::string::npos);
    EXPECT_NE(cut.config_json.find("\"n_group\": 8,"), std::string::npos);
    expect_tensor(cut, "model.layers.4.mlp.experts.31.down_proj.weight", DType::F8_E4M3, {7168, 2048});
    expect_tensor(cut, "model.layers.4.mlp.gate.weight", DType::BF16, {32, 7168});
    expect_tensor(cut, "model.layers.5.eh_proj.weight", DType::BF16, {7168, 14336});
    expect_tensor(cut, "model.layers.5.mlp.experts.31.gate_proj.weight", DType::F8_E4M3, {2048, 7168});
    EXPECT_EQ(find(cut, "model.layers.4.mlp.experts.32.down_proj.weight"), nullptr);
    EXPECT_EQ(find(cut, "model.layers.61.eh_proj.weight"), nullptr);

    const auto shallow = plan_of("deepseek-v3", 2, 16);
    EXPECT_NE(shallow.config_json.find("\"first_k_dense_replace\": 2,"), std::string::npos);
    EXPECT_NE(find(shallow, "model.layers.1.mlp.gate_proj.weight"), nullptr);
    EXPECT_NE(find(shallow, "model.layers.2.mlp.gate.weight"), nullptr);  // the MTP layer

    // n_group stays 8: a cut must give every group at least two experts.
    for (int experts : {8, 20, 100}) {
        auto refused = try_plan("deepseek-v3", 4, experts);
        ASSERT_FALSE(refused.has_value()) << experts;
        EXPECT_NE(refused.error().message.find("--experts " + std::to_string(experts) + " of deepseek-v3"), std::string::npos)
            << refused.error().message;
        EXPECT_NE(refused.error().message.find("n_group"), std::string::npos) << refused.error().message;
        EXPECT_NE(refused.error().message.find("take a multiple of 8 from 16"), std::string::npos) << refused.error().message;
    }
    EXPECT_TRUE(try_plan("deepseek-v3", 4, 16).has_value());
    EXPECT_TRUE(try_plan("kimi-k2", 2, 8).has_value());  // one group: any count from the experts per token
    EXPECT_FALSE(try_plan("kimi-k2", 2, 7).has_value());
}

// The toys' bytes, header included, as this build writes them: a change of a name, a shape, a
// dtype, a fill or the value stream shows here.
TEST(DeepseekV3Synth, TheToysBytesAreStable) {
    TempDir tmp;
    const std::pair<std::string, std::string> recorded[] = {
        {"deepseek-v3-tiny", "fd06d67e7d3fc442cc4a2c6a5914bdcc45bdfeff78fef30c3f275c2ee44b4ba9"},
        {"kimi-k2-tiny", "4fb71d294d3347c3cca22cb425fb81dfd08dc8b5229a67b4f85e12d59bd76bed"},
    };
    for (const auto& [preset, digest] : recorded) {
        const auto plan = plan_of(preset, {}, {}, 1);
        const std::string dir = tmp.file(preset);
        auto w = synth::write_synth(plan, dir, synth::WriteOptions{});
        ASSERT_TRUE(w.has_value()) << w.error().message;
        ASSERT_EQ(plan.shards.size(), 1u);
        auto sha = sha256_file(dir + "/model.safetensors");
        ASSERT_TRUE(sha.has_value());
        EXPECT_EQ(*sha, digest) << preset;
    }
}

// The toys load in the family (the hub's config dialect, FP8 with F32 scales, the MTP layer
// on disk) and generate with unit-order, finite logits; inspect counts the MTP layer's tensors
// among the checkpoint's and prints num_nextn_predict_layers.
class DeepseekV3SynthToy : public ::testing::TestWithParam<std::string> {};

TEST_P(DeepseekV3SynthToy, LoadsAndGenerates) {
    TempDir tmp;
    const auto plan = plan_of(GetParam(), {}, {}, 2);
    const std::string dir = tmp.file("toy");
    auto w = synth::write_synth(plan, dir, synth::WriteOptions{});
    ASSERT_TRUE(w.has_value()) << w.error().message;
    EngineOptions o;
    o.setup.model_dir = dir;
    o.threads = 2;
    o.dense_bf16 = DenseBf16::plain;  // held as in the checkpoint, so the bytes below add up exactly
    auto opened = Engine::open(o);
    ASSERT_TRUE(opened.has_value()) << opened.error().message;
    const auto& engine = *opened;
    EXPECT_EQ(engine->family_name(), "deepseek_v3");
    EXPECT_EQ(engine->model().n_layers(), 4);
    // The engine holds the dense tensors of layers 0-3 and the ends, none of the MTP layer's.
    uint64_t dense = 0, mtp_dense = 0;
    for (const auto& t : plan.tensors) {
        if (t.name.find(".mlp.experts.") != std::string::npos) continue;  // routed: the store's
        (t.name.starts_with("model.layers.4.") ? mtp_dense : dense) += t.nbytes;
    }
    EXPECT_EQ(engine->dense_bytes(), dense) << "the MTP layer's dense tensors hold " << mtp_dense;
    auto session = engine->new_session(64);
    ASSERT_TRUE(session.has_value());
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 24; ++i) ids.push_back((i * 97 + 5) % 1024);
    testing::expect_finite_unit_order_logits(*engine, **session, ids, 1024);
    if (::testing::Test::HasFatalFailure()) return;
    (*session)->rewind(0);
    GenerationRequest request;
    request.prompt = ids;
    request.max_tokens = 6;
    auto result = generate(engine->pipeline(), **session, request);
    ASSERT_TRUE(result.has_value()) << result.error().message;
    EXPECT_EQ(result->tokens.size(), 6u);

    const test::CommandResult inspect = test::run_cli("inspect --json --model " + dir);
    ASSERT_EQ(inspect.status, 0) << inspect.err;
    EXPECT_NE(inspect.out.find("\"count\": " + std::to_string(plan.tensors.size())), std::string::npos) << inspect.out;
    const bool mtp = find(plan, "model.layers.4.eh_proj.weight") != nullptr;
    EXPECT_EQ(mtp, GetParam() == "deepseek-v3-tiny");
    EXPECT_EQ(inspect.out.find("\"num_nextn_predict_layers\": 1") != std::string::npos, mtp) << inspect.out;
}

INSTANTIATE_TEST_SUITE_P(Presets, DeepseekV3SynthToy, ::testing::Values("deepseek-v3-tiny", "kimi-k2-tiny"),
                         [](const auto& i) {
                             std::string name = i.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

}  // namespace
}  // namespace stormo::deepseek_v3
