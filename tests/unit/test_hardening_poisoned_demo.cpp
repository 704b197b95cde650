// The shipped gpt-oss demo with one kind of tensor poisoned (a NaN or an infinity in attention, the
// router, an expert, a norm, the embedding or the head): every kernels plugin, on every road, ends
// the run as the reference kernels do: a NaN fails it with the same message naming the same stage
// and no answer; an infinity gives the reference's outcome, whichever it is. Before, the SIMD softmax's clamped exponential turned a NaN score into
// a finite one: `run --prompt 123+456=` printed 590 and exited 0 on avx2 and vnni.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "kernel_test_support.hpp"
#include "model/model_source.hpp"
#include "oracle_support.hpp"

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::run_command;
using stormo::test::TempDir;

using stormo::testing::demo_dir;

// Values of one tensor to overwrite: element indices into it.
struct Site {
    std::string tensor;
    std::vector<uint64_t> elements;
};

// A copy of demo `model` whose sites hold `bits` (a BF16 NaN or infinity).
void write_poisoned_demo(const TempDir& dir, const std::string& model, const std::vector<Site>& sites, uint16_t bits) {
    namespace fs = std::filesystem;
    for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "special_tokens_map.json",
                          "tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(demo_dir(model) + "/" + f, dir.file(f));
    auto source = stormo::open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    for (const Site& site : sites) {
        const stormo::TensorInfo* t = (*source)->find(site.tensor);
        ASSERT_NE(t, nullptr) << site.tensor;
        ASSERT_EQ(t->dtype, stormo::DType::BF16) << site.tensor;
        const int fd = ::open(t->file.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0) << t->file;
        for (uint64_t e : site.elements) {
            ASSERT_LE(2 * e + 2, t->nbytes) << site.tensor;
            ASSERT_EQ(::pwrite(fd, &bits, 2, static_cast<off_t>(t->offset + 2 * e)), 2);
        }
        ::close(fd);
    }
}

// Element `column` of every row of a tensor of `rows` rows of `width` values.
std::vector<uint64_t> every_row(uint64_t rows, uint64_t width, uint64_t column) {
    std::vector<uint64_t> at;
    for (uint64_t r = 0; r < rows; ++r) at.push_back(r * width + column);
    return at;
}

// The same element of `name_of(e)` for each of the demos' 8 routed experts.
std::vector<Site> every_expert(const std::string& prefix, const std::string& suffix, uint64_t element) {
    std::vector<Site> sites;
    for (int e = 0; e < 8; ++e) sites.push_back({prefix + std::to_string(e) + suffix, {element}});
    return sites;
}

struct Poison {
    const char* kind;
    std::vector<Site> sites;
    bool nan_must_fail = true;  // false where a NaN may legitimately not reach the logits
};

// One tensor of each kind. Every demo: hidden 128, 8 routed experts, 64 tokens. An expert's poison
// goes into every expert, so whichever the prompt routes to holds it; the embedding's into every
// row, so every token's does.
std::vector<Poison> gpt_oss_poisons() {
    return {
        {"attention (query)", {{"model.layers.2.self_attn.q_proj.weight", {5 * 128 + 7}}}},
        {"attention (key)", {{"model.layers.2.self_attn.k_proj.weight", {3 * 128 + 100}}}},
        {"attention (sink)", {{"model.layers.0.self_attn.sinks", {1}}}},
        {"router", {{"model.layers.2.mlp.router.weight", {1 * 128 + 9}}}},
        {"expert", {{"model.layers.1.mlp.experts.gate_up_proj", every_row(8, 128 * 256, 4 * 256 + 11)}}},
        {"norm", {{"model.layers.3.post_attention_layernorm.weight", {17}}}},
        {"embedding", {{"model.embed_tokens.weight", every_row(64, 128, 30)}}},
        {"head", {{"lm_head.weight", {9 * 128 + 2}}}},
    };
}

std::vector<Poison> qwen3_moe_poisons() {
    return {
        {"attention (query)", {{"model.layers.2.self_attn.q_proj.weight", {5 * 128 + 7}}}},
        {"attention (key norm)", {{"model.layers.1.self_attn.k_norm.weight", {3}}}},
        {"router", {{"model.layers.2.mlp.gate.weight", {1 * 128 + 9}}}},
        {"expert", every_expert("model.layers.1.mlp.experts.", ".down_proj.weight", 6 * 128 + 40)},
        {"norm", {{"model.layers.3.input_layernorm.weight", {17}}}},
        {"head", {{"lm_head.weight", {9 * 128 + 2}}}},
    };
}

// GLM's indexer only chooses which keys attention reads: a NaN in it may change the choice (as a
// NaN score does in transformers' topk) without reaching the logits.
std::vector<Poison> glm_dsa_poisons() {
    return {
        {"attention (latent query)", {{"model.layers.2.self_attn.q_b_proj.weight", {5 * 64 + 7}}}},
        {"attention (latent KV)", {{"model.layers.1.self_attn.kv_b_proj.weight", {3 * 64 + 10}}}},
        {"attention (indexer)", {{"model.layers.1.self_attn.indexer.wk.weight", {2 * 128 + 5}}}, false},
        {"router", {{"model.layers.2.mlp.gate.weight", {1 * 128 + 9}}}},
        {"expert", every_expert("model.layers.1.mlp.experts.", ".gate_proj.weight", 6 * 128 + 40)},
        {"shared expert", {{"model.layers.2.mlp.shared_experts.up_proj.weight", {6 * 128 + 40}}}},
        {"dense FFN", {{"model.layers.0.mlp.gate_proj.weight", {2 * 128 + 1}}}},
        {"head", {{"lm_head.weight", {9 * 128 + 2}}}},
    };
}

// The kernels this CPU runs, each with the vnni flavours it has.
std::vector<std::string> kernel_choices() {
    std::vector<std::string> out{"--kernels reference"};
    if (stormo::testing::kernels_unusable_reason("avx2").empty()) out.push_back("--kernels avx2");
    if (stormo::testing::kernels_unusable_reason("vnni").empty()) {
        out.push_back("--kernels vnni");
        const bool avx_vnni = stormo::testing::cpu_has_all({stormo::CpuFeature::avx_vnni});
        const bool avx512_vnni = stormo::testing::cpu_has_all(
            {stormo::CpuFeature::avx512f, stormo::CpuFeature::avx512bw, stormo::CpuFeature::avx512vl,
             stormo::CpuFeature::avx512_vnni});
        if (avx_vnni && avx512_vnni) out.push_back("--kernels vnni (avx_vnni)");
    }
    return out;
}

CommandResult run_demo(const std::string& dir, const std::string& kernels, const std::string& road) {
    std::string env, flags = kernels;
    if (const size_t paren = kernels.find(" ("); paren != std::string::npos) {
        env = "STORMO_VNNI_FLAVOUR=" + kernels.substr(paren + 2, kernels.size() - paren - 3) + " ";
        flags = kernels.substr(0, paren);
    }
    return run_command(env + "'" + STORMO_CLI + "' run --model " + dir + " --prompt 123+456= " + flags + " " + road);
}

// Every poison, as a NaN on every road and as -Inf on the default one, against the reference.
void check_demo(const std::string& model, const std::vector<Poison>& poisons) {
    for (const Poison& p : poisons)
        for (const uint16_t bits : {uint16_t{0x7fc0}, uint16_t{0xff80}}) {  // NaN, -Inf
            const bool nan = bits == 0x7fc0;
            TempDir dir;
            write_poisoned_demo(dir, model, p.sites, bits);
            std::vector<const char*> roads{"--activations f32"};
            if (nan) roads.insert(roads.end(), {"--activations int8", "--dense-bf16 plain --head exact-only"});
            for (const char* road : roads) {
                const CommandResult want = run_demo(dir.path(), "--kernels reference", road);
                const std::string what =
                    model + ", " + p.kind + " " + p.sites[0].tensor + (nan ? " NaN" : " -Inf") + ", " + road;
                // An infinity may legitimately stop short of the logits (GPT-OSS clamps the up
                // projection to its limit, as torch's clamp does).
                if (nan && p.nan_must_fail) {
                    ASSERT_EQ(want.status, 1) << what << ": the reference ran: " << want.out << want.err;
                    ASSERT_NE(want.err.find("non-finite values (NaN or Inf) first produced by"), std::string::npos)
                        << what << ": " << want.err;
                }
                for (const std::string& kernels : kernel_choices()) {
                    const CommandResult got = run_demo(dir.path(), kernels, road);
                    EXPECT_EQ(got.status, want.status) << what << ", " << kernels << ": " << got.out << got.err;
                    EXPECT_EQ(got.out, want.out) << what << ", " << kernels;
                    if (want.status != 0) {
                        EXPECT_EQ(got.err, want.err) << what << ", " << kernels;
                    }
                }
            }
        }
}

TEST(HardeningPoisonedDemo, GptOssEveryPluginAndRoadEndsAsTheReferenceDoes) {
    check_demo("gpt-oss-demo", gpt_oss_poisons());
}
TEST(HardeningPoisonedDemo, Qwen3MoeEveryPluginAndRoadEndsAsTheReferenceDoes) {
    check_demo("qwen3-moe-demo", qwen3_moe_poisons());
}
TEST(HardeningPoisonedDemo, GlmDsaEveryPluginAndRoadEndsAsTheReferenceDoes) {
    check_demo("glm-moe-dsa-demo", glm_dsa_poisons());
}

// The reproducer through the other front ends: pipe answers the turn with ERROR and no
// token, and keeps serving (a RESET and the next turn get their answers).
TEST(HardeningPoisonedDemo, PipeAnswersAnErrorNotTokens) {
    TempDir dir;
    write_poisoned_demo(dir, "gpt-oss-demo", {{"model.layers.2.self_attn.q_proj.weight", {5 * 128 + 7}}}, 0x7fc0);
    const CommandResult r = run_command("printf 'TURN 4 0 0 1 0 3 1 2 3\\nRESET\\nTURN 4 0 0 1 0 2 4 5\\nSHUTDOWN\\n' | '" +
                                        std::string(STORMO_CLI) + "' pipe --model " + dir.path());
    EXPECT_EQ(r.out.find("TOKEN"), std::string::npos) << r.out;
    size_t errors = 0;
    for (size_t at = r.out.find("ERROR"); at != std::string::npos; at = r.out.find("ERROR", at + 1)) ++errors;
    EXPECT_EQ(errors, 2u) << r.out << r.err;
    EXPECT_NE(r.out.find("non-finite values"), std::string::npos) << r.out;
}

}  // namespace
