// GGUF files of the deepseek_v3 fixtures, written by llama.cpp's own converter as architecture
// "deepseek2" (tests/data/gguf/README.md), through the deepseek_v3 family: the mapped config and
// tensors against the fixture's (kv_b_proj joined again from the converter's attn_k_b /
// attn_v_b), the logits bits against a safetensors checkpoint of the same dequantized weights,
// and the greedy tokens and logits against the transformers reference. The BF16 file holds the
// fixture's own bits, so its logits are the fixture's to the bit. A file in K-quant blocks, made
// from a synth preset (the fixtures are too narrow for them), likewise without the reference.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "../deepseek_v3_config.hpp"
#include "cli_runner.hpp"
#include "gguf_fixture_support.hpp"
#include "gguf_writer.hpp"
#include "model/gguf.hpp"
#include "tools/synth.hpp"

namespace stormo::testing {
namespace {

using ::testing::HasSubstr;

const GgufCase kCases[] = {
    {"deepseek_v3-bf16.gguf", "deepseek_v3", GgufCase::Rounding::bf16, 32, 2e-5},
    {"deepseek_v3-f16.gguf", "deepseek_v3", GgufCase::Rounding::f16, 32, 2e-5},
    {"deepseek_v3-q8_0.gguf", "deepseek_v3", GgufCase::Rounding::q8_0, 4, 0.8},
    {"deepseek_v3_noqlora-f16.gguf", "deepseek_v3_noqlora", GgufCase::Rounding::f16, 32, 2e-5},
};

using GgufDeepseekV3 = GgufFixtureFile;

// Every field the family reads, as the fixture's config.json says it (rms_norm_eps as the float
// the family uses: GGUF stores it as f32), the RoPE's YaRN fields (DeepSeek's mscale and
// mscale_all_dim from llama.cpp's yarn_log_multiplier) among them.
TEST_P(GgufDeepseekV3, ConfigMatchesTheFixtures) {
    const ModelConfig& got = source_->config();
    const ModelConfig want = parse_config_text(fixture_config_text(GetParam().fixture));
    EXPECT_EQ(*got.string("model_type"), "deepseek_v3");
    for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size",
                            "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
                            "num_experts_per_tok", "moe_intermediate_size", "intermediate_size", "n_shared_experts",
                            "first_k_dense_replace", "n_group", "topk_group", "max_position_embeddings"})
        EXPECT_EQ(*got.integer(key), *want.integer(key)) << key;
    if (want.integer("q_lora_rank"))
        EXPECT_EQ(*got.integer("q_lora_rank"), *want.integer("q_lora_rank"));
    else
        EXPECT_FALSE(got.integer("q_lora_rank").has_value()) << "q_lora_rank null in the fixture";
    for (const char* key : {"norm_topk_prob", "rope_interleave", "attention_bias", "tie_word_embeddings"})
        EXPECT_EQ(*got.boolean(key), *want.boolean(key)) << key;
    EXPECT_EQ(*got.number("routed_scaling_factor"), *want.number("routed_scaling_factor"));
    EXPECT_EQ(static_cast<float>(*got.number("rms_norm_eps")), static_cast<float>(*want.number("rms_norm_eps")));
    EXPECT_FALSE(got.has("num_nextn_predict_layers"));
    const ModelConfig got_rope = *got.object("rope_parameters"), want_rope = *want.object("rope_parameters");
    EXPECT_EQ(*got_rope.string("rope_type"), *want_rope.string("rope_type"));
    EXPECT_EQ(*got_rope.number("rope_theta"), *want_rope.number("rope_theta"));
    if (*want_rope.string("rope_type") == "yarn") {
        for (const char* key : {"factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"})
            EXPECT_EQ(*got_rope.number(key), *want_rope.number(key)) << key;
        EXPECT_EQ(*got_rope.integer("original_max_position_embeddings"), *want_rope.integer("original_max_position_embeddings"));
    }
    for (const char* part : {"gate_proj", "up_proj", "down_proj"})
        expect_in_file(*source_, std::string("model.layers.1.mlp.experts.3.") + part + ".weight", expert_dtype(GetParam()));
    // llama.cpp's converter split MLA's kv_b_proj; the mapping joins it back, in memory.
    const TensorInfo* kv_b = source_->find("model.layers.0.self_attn.kv_b_proj.weight");
    ASSERT_NE(kv_b, nullptr);
    EXPECT_TRUE(source_->in_memory(*kv_b));
}

// The two fixtures' tensors: 3 layers of 2 norms, 4 attention tensors (kv_a_proj_with_mqa,
// kv_a_layernorm, kv_b_proj, o_proj) and q's (3 through q_lora, 1 q_proj); deepseek_v3's dense
// layer 0 has 3 MLP matrices and its 2 MoE layers a router, its bias, 3 x 8 experts and 3 shared;
// deepseek_v3_noqlora's 3 layers are all MoE; embedding, head, final norm.
TEST_P(GgufDeepseekV3, TensorsAreTheFixturesUpToTheConvertersRounding) {
    const bool q_lora = GetParam().fixture == "deepseek_v3";
    const size_t tensors = q_lora ? 3 * (6 + 3) + 3 + 2 * (2 + 24 + 3) + 3 : 3 * (6 + 1) + 3 * (2 + 24 + 3) + 3;
    expect_tensors_are_the_fixtures(*source_, GetParam(), tensors);
}

TEST_P(GgufDeepseekV3, LogitsEqualASafetensorsCheckpointOfTheDequantizedWeights) {
    expect_logits_bits_of_a_safetensors_checkpoint(*source_, GetParam());
}

// Against transformers on the fixture's BF16 weights (docs/gguf.md). Measured on 2026-12-03,
// logits max|error| / max|reference| over the whole sequence (max|reference| 19.46 for
// deepseek_v3): deepseek_v3-bf16 1.88e-6 (max abs 3.66e-5, the safetensors fixture's own figure,
// the logits being its bits) and deepseek_v3-f16 1.86e-6 (3.61e-5), deepseek_v3_noqlora-f16
// 1.2e-6 (2.48e-5), all inside the oracle suite's 2e-5 with all 32 greedy tokens equal;
// deepseek_v3-q8_0 0.76 (max abs 14.8), its greedy tokens leaving the reference's after 4. Q8_0's
// rounding of every matrix can change the discrete choices of this random tiny model (its
// routers' top-k) after which the logits move by whole units, as in the other families' Q8_0
// files (where this one's first flips was not measured); the two tests above show the Q8_0 file
// is read right. The bounds keep the measured
// agreement from worsening.
TEST_P(GgufDeepseekV3, GreedyTokensAndLogitsAgainstTheReference) { expect_reference_agreement(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Files, GgufDeepseekV3, ::testing::ValuesIn(kCases), gguf_case_name);

// The strongest form of "the GGUF file is its safetensors": llama.cpp's BF16 file of a BF16
// checkpoint holds the same bits, and stormo's logits from it are the fixture directory's, bit for
// bit (kv_b_proj, which the mapping joins as float32 values, and the router, which the converter
// writes as F32, included).
TEST(GgufDeepseekV3Bits, TheBf16FileGivesTheFixturesLogitsBits) {
    const std::vector<int32_t> ids = fixture_sequence("deepseek_v3");
    const std::vector<float> from_gguf = all_logits(gguf_path("deepseek_v3-bf16.gguf"), ids);
    const std::vector<float> from_fixture = all_logits(fixture_dir("deepseek_v3"), ids);
    ASSERT_FALSE(from_gguf.empty());
    EXPECT_TRUE(same_bits(from_gguf, from_fixture)) << "the BF16 GGUF and the fixture's safetensors differ in bits";
}

// What a test changes in a copy of a GGUF file: keys and tensors left out (by name), keys set
// (written before the file's own), tensors added (after them).
struct GgufEdit {
    std::vector<std::string> drop;
    test::GgufBuilder keys;
    std::vector<test::GgufTestTensor> tensors;
};

test::GgufTestTensor copied(const GgufFile& file, const GgufTensorInfo& t, std::string name) {
    const auto bytes = file.bytes(t);
    return {std::move(name), static_cast<uint32_t>(t.type), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
            std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())};
}

// A copy of a GGUF file rebuilt key by key and tensor by tensor with `edit` applied (scalar and
// string keys only: the fixtures' files, converted without a tokenizer, have no array keys).
std::string rebuilt(const GgufFile& file, const test::TempDir& dir, const std::string& name, GgufEdit edit) {
    test::GgufBuilder& b = edit.keys;
    b.alignment = file.header().alignment;
    auto dropped = [&](const std::string& n) { return std::find(edit.drop.begin(), edit.drop.end(), n) != edit.drop.end(); };
    for (const auto& [key, v] : file.header().metadata) {
        if (dropped(key)) continue;
        EXPECT_FALSE(v.is_array()) << key;
        if (v.type == GgufValueType::string)
            b.kv_str(key, v.text);
        else
            b.kv_raw(key, static_cast<uint32_t>(v.type), std::string(reinterpret_cast<const char*>(v.raw.data()), v.raw.size()));
    }
    for (const GgufTensorInfo& t : file.header().tensors)
        if (!dropped(t.name)) b.tensor(copied(file, t, t.name));
    for (auto& t : edit.tensors) b.tensor(std::move(t));
    b.write(dir.file(name));
    return dir.file(name);
}

// A deepseek2 file whose converter kept the multi-token-prediction layer (llama.cpp's converter
// drops DeepSeek-V3's, README; it keeps GLM-4.7-Flash's, which it also writes as deepseek2):
// block_count counts it, nextn_predict_layers says so, and its blk.3.* tensors (layer 2's, plus the
// nextn.* ones) are there. The mapping recognises the block, leaves it out, and the logits are the
// file's without it, to the bit.
TEST(GgufDeepseekV3Mapping, AMultiTokenPredictionBlockIsRecognisedAndLeftOut) {
    auto file = GgufFile::open(gguf_path("deepseek_v3-f16.gguf"));
    ASSERT_TRUE(file) << file.error().message;
    test::TempDir dir;
    GgufEdit edit;
    edit.drop = {"deepseek2.block_count"};
    edit.keys.kv_u32("deepseek2.block_count", 4).kv_u32("deepseek2.nextn_predict_layers", 1);
    for (const GgufTensorInfo& t : file->header().tensors)
        if (t.name.starts_with("blk.2.")) edit.tensors.push_back(copied(*file, t, "blk.3." + t.name.substr(6)));
    const GgufTensorInfo& norm = *file->header().tensor("output_norm.weight");
    for (const char* n : {"blk.3.nextn.enorm.weight", "blk.3.nextn.hnorm.weight", "blk.3.nextn.shared_head_norm.weight"})
        edit.tensors.push_back(copied(*file, norm, n));
    const uint64_t hidden = norm.ne[0];  // eh_proj: [hidden, 2 * hidden], F32 zeros
    edit.tensors.push_back({"blk.3.nextn.eh_proj.weight", 0, {2 * hidden, hidden}, std::string(2 * hidden * hidden * 4, '\0')});
    const std::string path = rebuilt(*file, dir, "mtp.gguf", std::move(edit));
    auto source = open_gguf_source(path);
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(*(*source)->config().integer("num_hidden_layers"), 3);
    EXPECT_EQ(*(*source)->config().integer("num_nextn_predict_layers"), 1);
    for (const TensorInfo& t : (*source)->tensors()) EXPECT_FALSE(t.name.starts_with("model.layers.3.")) << t.name;
    const std::vector<int32_t> ids = fixture_sequence("deepseek_v3");
    EXPECT_TRUE(same_bits(all_logits(path, ids), all_logits(gguf_path("deepseek_v3-f16.gguf"), ids)));
}

// The converter leaves expert_gating_func out when config.json has no scoring_func (transformers 5
// saves none): the router's exp_probs_b says the file is DeepSeek-V3's sigmoid router. A file
// saying sigmoid maps as well; softmax, and no key without exp_probs_b (DeepSeek-V2's router, as
// llama.cpp reads such a file), are refused by name, as are the other things llama.cpp's deepseek2
// accepts and the family cannot hold.
TEST(GgufDeepseekV3Mapping, RefusesWhatTheFamilyCannotHold) {
    auto file = GgufFile::open(gguf_path("deepseek_v3-f16.gguf"));
    ASSERT_TRUE(file) << file.error().message;
    test::TempDir dir;
    auto with = [&](const std::string& name, GgufEdit edit) { return open_gguf_source(rebuilt(*file, dir, name, std::move(edit))); };
    auto set_u32 = [](const char* key, uint32_t v) {
        GgufEdit e;
        e.drop = {key};
        e.keys.kv_u32(key, v);
        return e;
    };

    auto sigmoid = with("sigmoid.gguf", set_u32("deepseek2.expert_gating_func", 2));
    ASSERT_TRUE(sigmoid) << sigmoid.error().message;

    auto softmax = with("softmax.gguf", set_u32("deepseek2.expert_gating_func", 1));
    ASSERT_FALSE(softmax);
    EXPECT_EQ(softmax.error().kind, ErrorKind::unsupported);
    EXPECT_THAT(softmax.error().message, HasSubstr("softmax.gguf: key \"deepseek2.expert_gating_func\" is 1, a softmax router"));

    // DeepSeek-V2's router: no gating key and no correction bias.
    GgufEdit v2;
    v2.drop = {"blk.1.exp_probs_b.bias", "blk.2.exp_probs_b.bias"};
    auto v2_router = with("v2.gguf", std::move(v2));
    ASSERT_FALSE(v2_router);
    EXPECT_THAT(v2_router.error().message, HasSubstr("v2.gguf: key \"deepseek2.expert_gating_func\" is absent and the MoE "
                                                     "layers have no exp_probs_b"));

    auto kv_heads = with("kv.gguf", set_u32("deepseek2.attention.head_count_kv", 4));
    ASSERT_FALSE(kv_heads);
    EXPECT_THAT(kv_heads.error().message, HasSubstr("kv.gguf: key \"deepseek2.attention.head_count_kv\" is 4"));

    GgufEdit attn_factor;
    attn_factor.keys.kv_f32("deepseek2.rope.scaling.yarn_attn_factor", 2.0f);
    auto scaled = with("attn_factor.gguf", std::move(attn_factor));
    ASSERT_FALSE(scaled);
    EXPECT_THAT(scaled.error().message, HasSubstr("attn_factor.gguf: key \"deepseek2.rope.scaling.yarn_attn_factor\" is 2"));

    GgufEdit no_log_multiplier;
    no_log_multiplier.drop = {"deepseek2.rope.scaling.yarn_log_multiplier"};
    auto unscaled = with("no_mscale.gguf", std::move(no_log_multiplier));
    ASSERT_FALSE(unscaled);
    EXPECT_THAT(unscaled.error().message,
                HasSubstr("no_mscale.gguf: key \"deepseek2.rope.scaling.yarn_log_multiplier\" is missing"));
}

// Three deepseek2 files in llama.cpp's block types (tests/data/gguf/README.md): the
// deepseek-v3-tiny synth preset cut to 3 layers (1 dense) and 8 routed experts, hidden 256 so that
// rows of 256 hold whole K-quant blocks; its FP8 weights decoded to BF16, converted by llama.cpp's
// converter, then quantized by llama-quantize with per-tensor overrides that put each block type on
// routed experts and on dense matrices: as Q4_K_M with Q4_0, Q4_K, Q5_K and Q6_K, and as Q3_K_M
// with Q2_K, Q3_K, Q4_1, Q5_0, Q5_1 and IQ4_NL (the types llama-quantize falls back to where a row
// of 32, 64 or 128 holds no 256-value block, and the non-linear 4-bit type of its i-quants);
// plainly as IQ4_XS; and as IQ2_M with the i-quants below 4 bits. No transformers reference exists
// for them: the synth checkpoint and their own dequantized weights are the references.
struct QuantFile {
    std::string file;
    // The types llama-quantize chose, as its log says (README).
    std::map<std::string, GgufType> types;
    // The relative RMS error of a tensor of each block type against the BF16 weights it was
    // quantized from, at most.
    std::map<DType, double> rounding;
    // The block types the file is made for: each holds routed experts and other matrices.
    std::vector<GgufType> spread;
};

// Test names print the file, not the struct's bytes.
void PrintTo(const QuantFile& f, std::ostream* os) { *os << f.file; }

// Measured 2026-12-03 with gguf-py's dequantizer, per tensor or expert: Q4_0 at most 0.088, Q4_K
// 0.072, Q5_K 0.036, Q6_K 0.0175.
QuantFile q4_k_m_file() {
    return {"deepseek_v3_tiny-q4_k_m.gguf",
            {
                {"token_embd.weight", GgufType::Q4_K},
                {"output.weight", GgufType::Q6_K},
                {"blk.0.ffn_gate.weight", GgufType::Q4_K},
                {"blk.0.ffn_up.weight", GgufType::Q5_K},
                {"blk.0.ffn_down.weight", GgufType::Q4_K},
                {"blk.1.ffn_gate_exps.weight", GgufType::Q4_K},
                {"blk.2.ffn_gate_exps.weight", GgufType::Q6_K},
                {"blk.1.ffn_up_exps.weight", GgufType::Q5_K},
                {"blk.2.ffn_up_exps.weight", GgufType::Q5_K},
                {"blk.1.ffn_down_exps.weight", GgufType::Q4_0},
                {"blk.2.ffn_down_exps.weight", GgufType::Q4_0},
                {"blk.1.ffn_gate_shexp.weight", GgufType::Q4_K},
                {"blk.1.ffn_up_shexp.weight", GgufType::Q4_K},
                {"blk.1.ffn_down_shexp.weight", GgufType::Q4_0},
                {"blk.1.ffn_gate_inp.weight", GgufType::F32},
                {"blk.1.exp_probs_b.bias", GgufType::F32},
                {"blk.0.attn_q_a.weight", GgufType::Q4_K},
                {"blk.0.attn_q_b.weight", GgufType::Q4_0},
                {"blk.0.attn_kv_a_mqa.weight", GgufType::Q6_K},
                {"blk.0.attn_k_b.weight", GgufType::Q4_0},
                {"blk.0.attn_v_b.weight", GgufType::Q4_0},
                {"blk.0.attn_output.weight", GgufType::Q4_0},
                {"blk.0.attn_norm.weight", GgufType::F32},
            },
            {{DType::GGUF_Q4_0, 0.1}, {DType::GGUF_Q4_K, 0.1}, {DType::GGUF_Q5_K, 0.05}, {DType::GGUF_Q6_K, 0.025}},
            {GgufType::Q4_0, GgufType::Q4_K, GgufType::Q5_K, GgufType::Q6_K}};
}

// Measured 2026-12-06 with gguf-py's dequantizer against the BF16 file, per tensor or expert:
// Q2_K at most 0.299, Q3_K 0.152, Q4_1 0.079, IQ4_NL 0.077, Q5_0 0.043, Q5_1 0.038 (2.6 to 6 bits a
// weight on random normal weights).
QuantFile q3_k_m_file() {
    return {"deepseek_v3_tiny-q3_k_m.gguf",
            {
                {"token_embd.weight", GgufType::Q2_K},
                {"output.weight", GgufType::Q3_K},
                {"blk.0.ffn_gate.weight", GgufType::Q2_K},
                {"blk.0.ffn_up.weight", GgufType::Q3_K},
                {"blk.0.ffn_down.weight", GgufType::Q4_1},
                {"blk.1.ffn_gate_exps.weight", GgufType::Q2_K},
                {"blk.2.ffn_gate_exps.weight", GgufType::Q3_K},
                {"blk.1.ffn_up_exps.weight", GgufType::Q4_1},
                {"blk.2.ffn_up_exps.weight", GgufType::IQ4_NL},
                {"blk.1.ffn_down_exps.weight", GgufType::Q5_0},
                {"blk.2.ffn_down_exps.weight", GgufType::Q5_1},
                {"blk.1.ffn_gate_shexp.weight", GgufType::Q2_K},
                {"blk.1.ffn_up_shexp.weight", GgufType::Q3_K},
                {"blk.1.ffn_down_shexp.weight", GgufType::Q5_0},
                {"blk.1.ffn_gate_inp.weight", GgufType::F32},
                {"blk.1.exp_probs_b.bias", GgufType::F32},
                {"blk.0.attn_q_a.weight", GgufType::IQ4_NL},
                {"blk.0.attn_q_b.weight", GgufType::Q5_0},
                {"blk.0.attn_kv_a_mqa.weight", GgufType::Q3_K},
                {"blk.0.attn_k_b.weight", GgufType::Q5_1},
                {"blk.0.attn_v_b.weight", GgufType::Q4_1},
                {"blk.0.attn_output.weight", GgufType::IQ4_NL},
                {"blk.0.attn_norm.weight", GgufType::F32},
            },
            {{DType::GGUF_Q2_K, 0.35},
             {DType::GGUF_Q3_K, 0.2},
             {DType::GGUF_Q4_1, 0.1},
             {DType::GGUF_IQ4_NL, 0.1},
             {DType::GGUF_Q5_0, 0.05},
             {DType::GGUF_Q5_1, 0.05}},
            {GgufType::Q2_K, GgufType::Q3_K, GgufType::Q4_1, GgufType::IQ4_NL, GgufType::Q5_0, GgufType::Q5_1}};
}

// Plain IQ4_XS, as llama-quantize writes it: its own fallbacks put IQ4_NL on the rows of 32 to
// 128 (attn_k_b, attn_v_b, attn_q_b, ffn_down_exps, ffn_down_shexp) and Q5_1 on attn_output, and
// the head is Q6_K. Measured 2026-12-06 with gguf-py's dequantizer against the BF16 file, per
// tensor or expert: IQ4_XS at most 0.0775, IQ4_NL 0.0777, Q5_1 0.038, Q6_K 0.013.
QuantFile iq4_xs_file() {
    return {"deepseek_v3_tiny-iq4_xs.gguf",
            {
                {"token_embd.weight", GgufType::IQ4_XS},
                {"output.weight", GgufType::Q6_K},
                {"blk.0.ffn_gate.weight", GgufType::IQ4_XS},
                {"blk.0.ffn_up.weight", GgufType::IQ4_XS},
                {"blk.0.ffn_down.weight", GgufType::IQ4_XS},
                {"blk.1.ffn_gate_exps.weight", GgufType::IQ4_XS},
                {"blk.2.ffn_gate_exps.weight", GgufType::IQ4_XS},
                {"blk.1.ffn_up_exps.weight", GgufType::IQ4_XS},
                {"blk.2.ffn_up_exps.weight", GgufType::IQ4_XS},
                {"blk.1.ffn_down_exps.weight", GgufType::IQ4_NL},
                {"blk.2.ffn_down_exps.weight", GgufType::IQ4_NL},
                {"blk.1.ffn_gate_shexp.weight", GgufType::IQ4_XS},
                {"blk.1.ffn_up_shexp.weight", GgufType::IQ4_XS},
                {"blk.1.ffn_down_shexp.weight", GgufType::IQ4_NL},
                {"blk.1.ffn_gate_inp.weight", GgufType::F32},
                {"blk.1.exp_probs_b.bias", GgufType::F32},
                {"blk.0.attn_q_a.weight", GgufType::IQ4_XS},
                {"blk.0.attn_q_b.weight", GgufType::IQ4_NL},
                {"blk.0.attn_kv_a_mqa.weight", GgufType::IQ4_XS},
                {"blk.0.attn_k_b.weight", GgufType::IQ4_NL},
                {"blk.0.attn_v_b.weight", GgufType::IQ4_NL},
                {"blk.0.attn_output.weight", GgufType::Q5_1},
                {"blk.0.attn_norm.weight", GgufType::F32},
            },
            {{DType::GGUF_IQ4_XS, 0.1}, {DType::GGUF_IQ4_NL, 0.1}, {DType::GGUF_Q5_1, 0.05}, {DType::GGUF_Q6_K, 0.025}},
            {GgufType::IQ4_XS, GgufType::IQ4_NL}};
}

// The i-quants below 4 bits, quantized by llama-quantize as IQ2_M with a uniform importance matrix
// (it refuses them without one) and overrides that put IQ1_S, IQ1_M, IQ2_XXS and IQ3_S on routed
// experts and each of the seven on other matrices (IQ2_XS, IQ2_S and IQ3_XXS on the shared experts'
// and the dense layer's); its own fallbacks put IQ4_NL on the rows of 32 to 128 and Q5_1 on
// attn_output. Measured 2026-12-06 with gguf-py's dequantizer against the BF16 file, per tensor or
// expert: IQ1_S at most 0.490, IQ1_M 0.455, IQ2_XXS 0.344, IQ2_XS 0.302, IQ2_S 0.249, IQ3_XXS
// 0.182, IQ3_S 0.138, IQ4_NL 0.079, Q5_1 0.038 (1.6 to 3.4 bits a weight on random normal weights).
QuantFile iq2_m_file() {
    return {"deepseek_v3_tiny-iq2_m.gguf",
            {
                {"token_embd.weight", GgufType::IQ3_XXS},
                {"output.weight", GgufType::IQ2_XXS},
                {"blk.0.ffn_gate.weight", GgufType::IQ2_S},
                {"blk.0.ffn_up.weight", GgufType::IQ2_XS},
                {"blk.0.ffn_down.weight", GgufType::IQ3_XXS},
                {"blk.1.ffn_gate_exps.weight", GgufType::IQ1_S},
                {"blk.2.ffn_gate_exps.weight", GgufType::IQ1_M},
                {"blk.1.ffn_up_exps.weight", GgufType::IQ2_XXS},
                {"blk.2.ffn_up_exps.weight", GgufType::IQ3_S},
                {"blk.1.ffn_down_exps.weight", GgufType::IQ4_NL},
                {"blk.2.ffn_down_exps.weight", GgufType::IQ4_NL},
                {"blk.1.ffn_gate_shexp.weight", GgufType::IQ2_XS},
                {"blk.2.ffn_gate_shexp.weight", GgufType::IQ2_S},
                {"blk.1.ffn_up_shexp.weight", GgufType::IQ3_XXS},
                {"blk.2.ffn_up_shexp.weight", GgufType::IQ1_S},
                {"blk.1.ffn_down_shexp.weight", GgufType::IQ4_NL},
                {"blk.1.ffn_gate_inp.weight", GgufType::F32},
                {"blk.1.exp_probs_b.bias", GgufType::F32},
                {"blk.0.attn_q_a.weight", GgufType::IQ1_M},
                {"blk.0.attn_q_b.weight", GgufType::IQ4_NL},
                {"blk.0.attn_kv_a_mqa.weight", GgufType::IQ3_S},
                {"blk.0.attn_k_b.weight", GgufType::IQ4_NL},
                {"blk.0.attn_v_b.weight", GgufType::IQ4_NL},
                {"blk.0.attn_output.weight", GgufType::Q5_1},
                {"blk.0.attn_norm.weight", GgufType::F32},
            },
            {{DType::GGUF_IQ1_S, 0.55},
             {DType::GGUF_IQ1_M, 0.55},
             {DType::GGUF_IQ2_XXS, 0.4},
             {DType::GGUF_IQ2_XS, 0.35},
             {DType::GGUF_IQ2_S, 0.3},
             {DType::GGUF_IQ3_XXS, 0.22},
             {DType::GGUF_IQ3_S, 0.17},
             {DType::GGUF_IQ4_NL, 0.1},
             {DType::GGUF_Q5_1, 0.05}},
            {GgufType::IQ1_S, GgufType::IQ1_M, GgufType::IQ2_XXS, GgufType::IQ3_S}};
}

// kv_b_proj is joined from attn_k_b and attn_v_b, in every layer of layer 0's types: the bound of
// the coarser half.
double kv_b_bound(const QuantFile& f) {
    double bound = 0;
    for (const char* half : {"blk.0.attn_k_b.weight", "blk.0.attn_v_b.weight"})
        bound = std::max(bound, f.rounding.at(*gguf_dtype(f.types.at(half))));
    return bound;
}

// Token ids spread over the tiny model's 1024 (any sequence does: what is compared is two roads
// over the same weights).
std::vector<int32_t> quant_file_ids() {
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 24; ++i) ids.push_back((i * 389 + 7) % 1024);
    return ids;
}

// The synth checkpoint the file was made from.
Expected<synth::SynthPlan> quant_file_plan() {
    synth::SynthOptions o;
    o.preset = "deepseek-v3-tiny";
    o.layers = 3;
    o.experts = 8;
    return synth::plan_synth(o);
}

// A synth tensor's values: FP8 E4M3 times its 128 x 128 block's weight_scale_inv, rounded to BF16
// as the file's chain did (README); BF16 and F32 as they are.
std::vector<float> synth_values(const synth::SynthPlan& plan, const std::string& name) {
    auto bytes_of = [&](const std::string& n, const synth::PlannedTensor*& t) {
        const auto it = std::find_if(plan.tensors.begin(), plan.tensors.end(), [&](const auto& p) { return p.name == n; });
        EXPECT_NE(it, plan.tensors.end()) << n;
        if (it == plan.tensors.end()) return std::vector<std::byte>{};
        t = &*it;
        std::vector<std::byte> b(it->nbytes);
        synth::fill_tensor_bytes(plan, static_cast<size_t>(it - plan.tensors.begin()), 0, b.data(), b.size());
        return b;
    };
    const synth::PlannedTensor* t = nullptr;
    const std::vector<std::byte> bytes = bytes_of(name, t);
    if (t == nullptr) return {};
    const size_t n = static_cast<size_t>(element_count(t->shape));
    if (t->dtype != DType::F8_E4M3) return to_f32(t->dtype, bytes.data(), n);
    const synth::PlannedTensor* st = nullptr;
    const std::vector<std::byte> scale_bytes = bytes_of(name + "_scale_inv", st);
    if (st == nullptr) return {};
    const std::vector<float> scales = to_f32(st->dtype, scale_bytes.data(), static_cast<size_t>(element_count(st->shape)));
    const int64_t cols = t->shape[1], scale_cols = st->shape[1];
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t r = static_cast<int64_t>(i) / cols, c = static_cast<int64_t>(i) % cols;
        const float x = f8_e4m3_to_f32(static_cast<uint8_t>(bytes[i])) * scales[static_cast<size_t>(r / 128 * scale_cols + c / 128)];
        v[i] = bf16_round(x);
    }
    return v;
}

class GgufDeepseekV3Quants : public ::testing::TestWithParam<QuantFile> {
protected:
    void SetUp() override {
        auto opened = open_gguf_source(gguf_path(GetParam().file));
        ASSERT_TRUE(opened) << opened.error().message;
        source_ = std::move(*opened);
    }
    std::unique_ptr<ModelSource> source_;
};

// The types llama-quantize chose, read back through the host's GGUF reader; each block type the
// file is made for holds at least one routed-expert matrix and at least one other matrix the
// engine multiplies by.
TEST_P(GgufDeepseekV3Quants, EachBlockTypeHoldsExpertsAndDenseMatrices) {
    auto file = GgufFile::open(gguf_path(GetParam().file));
    ASSERT_TRUE(file) << file.error().message;
    std::map<std::string, GgufType> types;
    for (const GgufTensorInfo& t : file->header().tensors) types[t.name] = t.type;
    for (const auto& [name, type] : GetParam().types) {
        ASSERT_TRUE(types.contains(name)) << name;
        EXPECT_EQ(gguf_type_name(types[name]), gguf_type_name(type)) << name;
    }
    for (const GgufType type : GetParam().spread) {
        std::set<std::string> experts, dense;
        for (const auto& [name, t] : types)
            if (t == type) (name.find("_exps.") != std::string::npos ? experts : dense).insert(name);
        EXPECT_FALSE(experts.empty()) << gguf_type_name(type) << " holds no routed experts";
        EXPECT_FALSE(dense.empty()) << gguf_type_name(type) << " holds no dense matrix";
    }
}

// The mapped config is the synth preset's, cut as the file's checkpoint was, field by field as the
// family parses it (the multi-token-prediction layer excepted: the converter dropped it); the
// routed experts reach the family as byte ranges of the file in their block types.
TEST_P(GgufDeepseekV3Quants, ConfigIsThePresetsAndExpertsStayInTheirBlocks) {
    auto plan = quant_file_plan();
    ASSERT_TRUE(plan) << plan.error().message;
    auto want = deepseek_v3::parse_deepseek_v3_config(*ModelConfig::parse(plan->config_json, "config.json"));
    ASSERT_TRUE(want) << want.error().message;
    auto got = deepseek_v3::parse_deepseek_v3_config(source_->config());
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->hidden_size, want->hidden_size);
    EXPECT_EQ(got->intermediate_size, want->intermediate_size);
    EXPECT_EQ(got->moe_intermediate_size, want->moe_intermediate_size);
    EXPECT_EQ(got->n_layers, want->n_layers);
    EXPECT_EQ(got->n_heads, want->n_heads);
    EXPECT_EQ(got->vocab_size, want->vocab_size);
    EXPECT_EQ(got->q_lora_rank, want->q_lora_rank);
    EXPECT_EQ(got->kv_lora_rank, want->kv_lora_rank);
    EXPECT_EQ(got->qk_nope_head_dim, want->qk_nope_head_dim);
    EXPECT_EQ(got->qk_rope_head_dim, want->qk_rope_head_dim);
    EXPECT_EQ(got->v_head_dim, want->v_head_dim);
    EXPECT_EQ(got->n_experts, want->n_experts);
    EXPECT_EQ(got->top_k, want->top_k);
    EXPECT_EQ(got->n_shared_experts, want->n_shared_experts);
    EXPECT_EQ(got->n_group, want->n_group);
    EXPECT_EQ(got->topk_group, want->topk_group);
    EXPECT_EQ(got->first_k_dense_replace, want->first_k_dense_replace);
    EXPECT_EQ(got->norm_topk_prob, want->norm_topk_prob);
    EXPECT_EQ(got->routed_scaling_factor, want->routed_scaling_factor);
    EXPECT_EQ(got->rope_interleave, want->rope_interleave);
    EXPECT_EQ(got->max_position_embeddings, want->max_position_embeddings);
    EXPECT_EQ(got->attention_bias, want->attention_bias);
    EXPECT_EQ(got->tie_word_embeddings, want->tie_word_embeddings);
    EXPECT_EQ(static_cast<float>(got->rms_norm_eps), static_cast<float>(want->rms_norm_eps));
    EXPECT_EQ(want->mtp_layers, 1);
    EXPECT_EQ(got->mtp_layers, 0) << "the converter drops DeepSeek-V3's MTP layer";
    EXPECT_EQ(got->rope.type, want->rope.type);
    EXPECT_EQ(got->rope.theta, want->rope.theta);
    EXPECT_EQ(got->rope.factor, want->rope.factor);
    EXPECT_EQ(got->rope.beta_fast, want->rope.beta_fast);
    EXPECT_EQ(got->rope.beta_slow, want->rope.beta_slow);
    EXPECT_EQ(got->rope.original_max_position_embeddings, want->rope.original_max_position_embeddings);
    EXPECT_EQ(got->rope.mscale, want->rope.mscale);
    EXPECT_EQ(got->rope.mscale_all_dim, want->rope.mscale_all_dim);
    EXPECT_EQ(deepseek_v3::softmax_scale(*got), deepseek_v3::softmax_scale(*want));
    // llama.cpp's converter split MLA's kv_b_proj; the mapping joins it back from its halves' blocks, in memory.
    const TensorInfo* kv_b = source_->find("model.layers.1.self_attn.kv_b_proj.weight");
    ASSERT_NE(kv_b, nullptr);
    EXPECT_TRUE(source_->in_memory(*kv_b));
    for (const char* layer : {"1", "2"})
        for (const auto& [part, gguf_part] : {std::pair{"gate_proj", "ffn_gate_exps"}, std::pair{"up_proj", "ffn_up_exps"},
                                              std::pair{"down_proj", "ffn_down_exps"}}) {
            const GgufType type = GetParam().types.at(std::string("blk.") + layer + "." + gguf_part + ".weight");
            expect_in_file(*source_, std::string("model.layers.") + layer + ".mlp.experts.5." + part + ".weight",
                           *gguf_dtype(type));
        }
}

// Every tensor of the synth checkpoint (its MTP layer and FP8 scales aside) is in the mapped
// model under its name and shape, its values within its block type's rounding of the BF16 weights
// the file was quantized from (QuantFile::rounding), kv_b_proj as its halves' (the bound of the
// coarser); norms, the router and its bias exactly (F32 in the file). A layout error (a transpose,
// experts or heads out of place) leaves unrelated values, about 1.4.
TEST_P(GgufDeepseekV3Quants, TensorsAreThePresetsWithinTheirBlockTypesRounding) {
    auto plan = quant_file_plan();
    ASSERT_TRUE(plan) << plan.error().message;
    size_t compared = 0;
    for (const synth::PlannedTensor& want : plan->tensors) {
        if (want.name.ends_with("_scale_inv") || want.name.starts_with("model.layers.3.")) continue;
        const TensorInfo* got = source_->find(want.name);
        ASSERT_NE(got, nullptr) << want.name << " is missing from the mapped GGUF";
        ASSERT_EQ(got->shape, want.shape) << want.name;
        const std::vector<float> values = read_floats(*source_, *got), expected = synth_values(*plan, want.name);
        ASSERT_EQ(values.size(), expected.size()) << want.name;
        double err = 0, norm = 0;
        for (size_t i = 0; i < values.size(); ++i) {
            err += (static_cast<double>(values[i]) - expected[i]) * (static_cast<double>(values[i]) - expected[i]);
            norm += static_cast<double>(expected[i]) * expected[i];
        }
        const double rel = std::sqrt(err / norm);
        const std::map<DType, double>& rounding = GetParam().rounding;
        double bound = 0;
        if (const auto it = rounding.find(got->dtype); it != rounding.end()) bound = it->second;
        else if (want.name.ends_with("kv_b_proj.weight")) bound = kv_b_bound(GetParam());
        EXPECT_LE(rel, bound) << want.name << " (" << dtype_name(got->dtype) << ")";
        ++compared;
    }
    // 3 layers of 4 norms and 5 attention matrices; the dense layer's 3 MLP matrices; 2 MoE layers
    // of a router, its bias, 3 x 8 experts and 3 shared; embedding, final norm, head.
    EXPECT_EQ(compared, 3u * 9 + 3 + 2 * (2 + 24 + 3) + 3);
}

TEST_P(GgufDeepseekV3Quants, LogitsEqualASafetensorsCheckpointOfTheDequantizedWeights) {
    expect_logits_bits_of_a_safetensors_checkpoint(*source_, GetParam().file, quant_file_ids());
}

// The logits are numbers, and greedy decoding from the file runs its course (the first tests say
// the file is read right; this says what is read runs).
TEST_P(GgufDeepseekV3Quants, LogitsAreFiniteAndGreedyDecodingRuns) {
    const std::vector<int32_t> ids = quant_file_ids();
    const std::vector<float> logits = all_logits(gguf_path(GetParam().file), ids);
    ASSERT_EQ(logits.size(), ids.size() * 1024);
    EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
    const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 8);
    const std::vector<int32_t> generated = greedy_tokens(GetParam().file, prompt, 16);
    ASSERT_EQ(generated.size(), 16u);
    for (int32_t t : generated) {
        EXPECT_GE(t, 0);
        EXPECT_LT(t, 1024);
    }
}

INSTANTIATE_TEST_SUITE_P(Files, GgufDeepseekV3Quants, ::testing::Values(q4_k_m_file(), q3_k_m_file(), iq4_xs_file(), iq2_m_file()),
                         [](const auto& p) {
                             std::string name = p.param.file.substr(p.param.file.find('-') + 1);
                             name = name.substr(0, name.find('.'));
                             return name;
                         });

// `stormo inspect` on a deepseek2 file names the family that claimed it and the dimensions its
// mapping read.
TEST(GgufDeepseekV3Mapping, InspectNamesTheFamily) {
    const test::CommandResult r = test::run_cli("inspect --model '" + gguf_path("deepseek_v3_noqlora-f16.gguf") + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("family   deepseek_v3"));
    EXPECT_THAT(r.out, HasSubstr("kv_lora_rank             32"));
}

// The deepseek_v3 family, and it alone, claims llama.cpp's deepseek2.
TEST(GgufDeepseekV3Mapping, TheFamilyClaimsDeepseek2) {
    auto plugins = PluginRegistry::discover(PluginSearch{});
    ASSERT_TRUE(plugins) << plugins.error().message;
    std::vector<std::string> claimants;
    for (const LoadedPlugin& p : plugins->plugins()) {
        if (!p.family) continue;
        const std::vector<std::string> archs = p.family->gguf_architectures();
        if (std::find(archs.begin(), archs.end(), "deepseek2") != archs.end()) claimants.push_back(p.name);
    }
    EXPECT_EQ(claimants, std::vector<std::string>{"deepseek_v3"});
}

}  // namespace
}  // namespace stormo::testing
