// The model-running commands through the real binary, as the command-line contract specifies them:
// `generate` prints only ids, `logits` writes .npy files equal to the engine's, `--dump` writes
// per-layer checkpoints, bad input exits non-zero with one line on stderr.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <sys/wait.h>

#include "oracle_support.hpp"
#include "cli_runner.hpp"
#include "safetensors_writer.hpp"

namespace stormo::testing {
namespace {

using stormo::test::CommandResult;
CommandResult run(const std::string& args) { return stormo::test::run_cli(args); }

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(CliGenerate, DemoAnswersTheReadmeProblem) {
    const CommandResult r = run("generate --model " + demo_dir() + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "5\n7\n9\n48\n");  // "579<|end|>"
}

TEST(CliGenerate, PinnedWorkersGiveTheSameAnswerAndSaySoWhenVerbose) {
    if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: nothing to pin apart";
    stormo::test::TempDir tmp;
    stormo::test::write_bytes(tmp.file("pin.yaml"), std::string("pin_threads: true\n"));
    const CommandResult r = run("generate --model " + demo_dir() + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12 --threads 2 -v --config " +
                                tmp.file("pin.yaml"));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "5\n7\n9\n48\n");
    EXPECT_NE(r.err.find("workers pinned to CPU "), std::string::npos) << r.err;
}

TEST(CliGenerate, VerbosePrintsTheExpertBudgetAtStartOnStderr) {
    const CommandResult r = run("generate --model " + demo_dir() + " --ids 1,2,3,40,4,5,6,45 --verbose --expert-budget 1MiB");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "5\n7\n9\n48\n");  // stdout holds only ids, whatever the budget
    EXPECT_NE(r.err.find("expert budget 1.00 MiB"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("slots"), std::string::npos) << r.err;
    const CommandResult automatic = run("generate --model " + demo_dir() + " --ids 1,2 --max-tokens 1 -v");
    EXPECT_NE(automatic.err.find("expert budget auto: "), std::string::npos) << automatic.err;
}

TEST(CliInspect, KernelTableShowsTheIntegerRoadAndWhetherItIsOn) {
    const std::string model = fixture_dir("gpt_oss_mxfp4");
    const CommandResult off = run("inspect --model " + model);
    const CommandResult on = run("inspect --model " + model + " --activations int8");
    ASSERT_EQ(off.status, 0) << off.err;
    ASSERT_EQ(on.status, 0) << on.err;
    EXPECT_NE(off.out.find("matmul_q8 MXFP4 out_in (int8 road off)"), std::string::npos) << off.out;
    EXPECT_NE(on.out.find("matmul_q8 MXFP4 out_in "), std::string::npos) << on.out;
    EXPECT_EQ(on.out.find("(int8 road off)"), std::string::npos) << on.out;
}

TEST(CliGenerate, FixtureGreedyTokensFromAnIdsFileWithStats) {
    stormo::test::TempDir tmp;
    const Json greedy = read_json_file(fixture_dir("gpt_oss") + "/reference/greedy.json");
    const auto prompt = int_list(*read_json_file(fixture_dir("gpt_oss") + "/reference/input_ids.json").find("input_ids"));
    std::string ids;
    for (int32_t t : prompt) ids += std::to_string(t) + (ids.size() % 3 ? " " : ",\n");
    stormo::test::write_bytes(tmp.file("ids.txt"), ids);
    const CommandResult r = run("generate --model " + fixture_dir("gpt_oss") + " --ids-file " + tmp.file("ids.txt") +
                      " --max-tokens 32 --ignore-eos --stats " + tmp.file("stats.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    std::string want;
    for (int32_t t : int_list(*greedy.find("generated"))) want += std::to_string(t) + "\n";
    EXPECT_EQ(r.out, want);
    const Json stats = read_json_file(tmp.file("stats.json"));
    for (const char* key : {"prompt_tokens", "generated_tokens", "prefill_seconds", "decode_seconds", "expert_hits",
                            "expert_misses", "expert_bytes_read", "peak_rss_bytes"})
        EXPECT_NE(stats.find(key), nullptr) << key;
    EXPECT_EQ(*stats.find("prompt_tokens")->as_int(), static_cast<int64_t>(prompt.size()));
    EXPECT_EQ(*stats.find("generated_tokens")->as_int(), 32);
    EXPECT_GT(*stats.find("peak_rss_bytes")->as_int(), 0);
}

TEST(CliGenerate, SamplingWithASeedIsReproducible) {
    const std::string args = "generate --model " + demo_dir() + " --ids 1,2,40,3,45 --max-tokens 6 --temperature 1.2 --top-k 8 --top-p 0.95 --seed 9";
    const CommandResult a = run(args), b = run(args);
    EXPECT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    EXPECT_GE(lines(a.out), 1u);
}

TEST(CliGenerate, BadInputExitsNonZeroWithOneLine) {
    for (const std::string& args : std::vector<std::string>{
             "generate --model " + demo_dir() + " --ids 1,2,999", "generate --model " + demo_dir() + " --ids 1,x,3",
          "generate --model " + demo_dir(), std::string("generate --ids 1,2"), "generate --model /nonexistent --ids 1",
          "generate --model " + demo_dir() + " --ids 1,2 --max-tokens 10 --context 5",
          "generate --model " + demo_dir() + " --ids 1,2 --top-p 0"}) {
        const CommandResult r = run(args);
        EXPECT_NE(r.status, 0) << args;
        EXPECT_EQ(r.out, "") << args;
        EXPECT_EQ(lines(r.err), 1u) << args << "\n" << r.err;
        EXPECT_EQ(r.err.rfind("stormo: ", 0), 0u) << r.err;
    }
}

TEST(CliLogits, WritesLogitsAndHiddenStatesLikeTheReference) {
    stormo::test::TempDir tmp;
    const std::string dir = fixture_dir("gpt_oss");
    const auto seq = int_list(*read_json_file(dir + "/reference/greedy.json").find("full_sequence"));
    std::string ids;
    for (int32_t t : seq) {
        if (!ids.empty()) ids += ',';  // appended apart: g++ 12 warns falsely (-Wrestrict) on literal + string
        ids += std::to_string(t);
    }
    const CommandResult r = run("logits --model " + dir + " --ids " + ids + " --out " + tmp.file("l.npy") + " --hidden-out " +
                      tmp.file("h.npy"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "");
    const NpyArray logits = read_reference(tmp.file("l.npy"));
    const NpyArray hidden = read_reference(tmp.file("h.npy"));
    const NpyArray ref_logits = read_reference(dir + "/reference/logits.npy");
    const NpyArray ref_hidden = read_reference(dir + "/reference/hidden.npy");
    EXPECT_EQ(logits.shape, ref_logits.shape);
    EXPECT_EQ(hidden.shape, ref_hidden.shape);
    EXPECT_LE(compare(logits.floats(), ref_logits.floats()).relative(), 2e-5);
    EXPECT_LE(compare(hidden.floats(), ref_hidden.floats()).relative(), 2e-5);
}

TEST(CliLogits, DumpWritesEachLayersCheckpointsOfThePosition) {
    stormo::test::TempDir tmp;
    const std::string dump = tmp.file("dump");
    const CommandResult r = run("logits --model " + fixture_dir("gpt_oss") + " --ids 5,6,7,8,9 --out " + tmp.file("l.npy") +
                      " --dump " + dump + " --dump-position 3");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* name : {"model_embedding.npy", "layer0_attn_in.npy", "layer0_q_rope.npy", "layer0_k_rope.npy",
                             "layer0_attn_probs.npy", "layer0_attn_out.npy", "layer0_router_logits.npy",
                             "layer0_router_topk_idx.npy", "layer0_moe_out.npy", "layer3_layer_out.npy",
                             "model_final_norm.npy"})
        EXPECT_TRUE(std::filesystem::exists(dump + "/" + name)) << name;
    size_t experts = 0;
    for (const auto& f : std::filesystem::directory_iterator(dump))
        if (f.path().filename().string().starts_with("layer1_expert_")) ++experts;
    EXPECT_EQ(experts, 2u) << "position 3 chose top-2 experts in layer 1";
    // The embedding row is the checkpoint's row for token 8 at position 3.
    const NpyArray emb = read_reference(dump + "/model_embedding.npy");
    EXPECT_EQ(emb.shape, (Shape{64}));
}

TEST(CliGenerate, DumpRecordsAGeneratedPosition) {
    stormo::test::TempDir tmp;
    const std::string dump = tmp.file("dump");
    // Position 9 is the second generated token of "123+456=" (8 prompt positions).
    const CommandResult r = run("generate --model " + demo_dir() + " --ids 1,2,3,40,4,5,6,45 --dump " + dump + " --dump-position 9");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "5\n7\n9\n48\n");
    const NpyArray emb = read_reference(dump + "/model_embedding.npy");
    // The embedding recorded at position 9 is the row of the token fed there: "7" (id 7).
    auto engine = open_engine(demo_dir());
    std::vector<float> want(128);
    ASSERT_TRUE(engine->model().embed(std::vector<int32_t>{7}, Rows{want.data(), 1, 128}).has_value());
    EXPECT_EQ(emb.floats(), want);
    EXPECT_TRUE(std::filesystem::exists(dump + "/layer3_layer_out.npy"));
}

}  // namespace
}  // namespace stormo::testing
