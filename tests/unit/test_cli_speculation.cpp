// --speculate and --draft-max on the command line: generate gives the same ids with any mode, its
// --stats reports the drafts; mtp fails loudly naming the model; bad values name the option;
// bench's replayed drafts run the cost side and report both sides.
#include <gtest/gtest.h>

#include "cli_runner.hpp"
#include "oracle_support.hpp"
#include "stormo/json.hpp"
#include "util/file.hpp"

namespace stormo::testing {
namespace {

using stormo::test::run_cli;

// A prompt that repeats itself: prompt lookup finds drafts in it.
const std::string kIds = "1,2,0,40,3,4,8,45,4,6,1,2,0,40,3,4,8,45,4,6,1,2,0,40";

TEST(CliSpeculation, GenerateGivesTheSameIdsInEveryModeAndReportsTheDrafts) {
    const std::string model = demo_dir();
    const auto plain = run_cli("generate --model " + model + " --ids " + kIds + " --max-tokens 12 --ignore-eos");
    ASSERT_EQ(plain.status, 0) << plain.err;
    stormo::test::TempDir tmp;
    for (const char* mode : {"context", "auto", "grammar", "off"}) {
        const std::string stats = tmp.file(std::string(mode) + ".json");
        const auto spec = run_cli("generate --model " + model + " --ids " + kIds +
                                  " --max-tokens 12 --ignore-eos --speculate " + mode + " --draft-max 4 --stats " + stats);
        ASSERT_EQ(spec.status, 0) << mode << ": " << spec.err;
        EXPECT_EQ(spec.out, plain.out) << mode;
        auto json = Json::parse(*read_file(stats), stats);
        ASSERT_TRUE(json.has_value());
        const Json* s = json->find("speculation");
        ASSERT_NE(s, nullptr) << mode;
        EXPECT_EQ(*s->find("mode")->as_string(), mode);
        // The 11 tokens after the first: one per plain step, one per verify step and one per
        // draft kept.
        EXPECT_EQ(*s->find("verify_steps")->as_int() + *s->find("plain_steps")->as_int() + *s->find("accepted")->as_int(), 11)
            << mode;
        EXPECT_NE(s->find("tokens_per_gb_read"), nullptr);
        EXPECT_NE(s->find("by_source"), nullptr);
    }
}

TEST(CliSpeculation, MtpFailsLoudlyAndBadValuesNameTheOption) {
    const auto mtp = run_cli("generate --model " + demo_dir() + " --ids 1,2 --max-tokens 2 --speculate mtp");
    EXPECT_NE(mtp.status, 0);
    EXPECT_NE(mtp.err.find("multi-token-prediction"), std::string::npos) << mtp.err;
    EXPECT_NE(mtp.err.find("gpt-oss-demo"), std::string::npos) << mtp.err;
    EXPECT_NE(mtp.err.find("--speculate"), std::string::npos) << mtp.err;
    const auto bad = run_cli("generate --model " + demo_dir() + " --ids 1,2 --speculate sometimes");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.err.find("--speculate"), std::string::npos) << bad.err;
    const auto zero = run_cli("generate --model " + demo_dir() + " --ids 1,2 --speculate context --draft-max 0");
    EXPECT_NE(zero.status, 0);
    EXPECT_NE(zero.err.find("--draft-max"), std::string::npos) << zero.err;
}

// The demos with a trained MTP layer: `--speculate mtp` gives plain decoding's ids, greedy and
// seeded, and --stats reports its drafts by source.
TEST(CliSpeculation, MtpDraftsGiveThePlainIds) {
    stormo::test::TempDir tmp;
    // "5+7=" and "rev abcd=" style prompts of the demos' public problems (reference/eval.json).
    const std::string ids = "3,40,8,45";
    for (const char* demo : {"deepseek-v3-demo", "glm-moe-dsa-demo"}) {
        for (const std::string& sampling : {std::string(), std::string(" --temperature 0.8 --seed 3")}) {
            const std::string base = "generate --model " + demo_dir(demo) + " --ids " + ids + " --max-tokens 8" + sampling;
            const auto plain = run_cli(base);
            ASSERT_EQ(plain.status, 0) << plain.err;
            for (const char* draft_max : {"1", "3"}) {
                const std::string stats = tmp.file(std::string(demo) + draft_max + ".json");
                const auto spec = run_cli(base + " --speculate mtp --draft-max " + draft_max + " --stats " + stats);
                ASSERT_EQ(spec.status, 0) << demo << ": " << spec.err;
                EXPECT_EQ(spec.out, plain.out) << demo << sampling << " draft-max " << draft_max;
                auto json = Json::parse(*read_file(stats), stats);
                ASSERT_TRUE(json.has_value());
                const Json* s = json->find("speculation");
                ASSERT_NE(s, nullptr);
                EXPECT_EQ(*s->find("mode")->as_string(), "mtp");
                EXPECT_NE(s->find("by_source")->find("mtp"), nullptr) << demo;
            }
        }
    }
}

TEST(CliSpeculation, BenchReplaysDraftsAtAStatedAcceptance) {
    const auto r = run_cli("bench --model " + fixture_dir("qwen3_moe") +
                           " --prompt-tokens 8 --gen-tokens 10 --json --ram-probe 16MiB --ram-repeats 1 --ram-probe-after 0"
                           " --paired-probe 0 --disk-probe 0 --speculate auto --draft-max 4 --draft-replay-acceptance 0.7"
                           " --speculation-rounds 2");
    ASSERT_EQ(r.status, 0) << r.err;
    auto parsed = Json::parse(r.out, "bench --json");
    ASSERT_TRUE(parsed.has_value()) << r.out;
    const Json* run = parsed->find("speculative_run");
    ASSERT_NE(run, nullptr) << r.out;
    EXPECT_TRUE(*run->find("same_tokens")->as_bool());
    EXPECT_GT(*run->find("decode_tokens_per_s")->as_double(), 0.0);
    EXPECT_GT(*run->find("plain_decode_tokens_per_s")->as_double(), 0.0);
    EXPECT_GT(*run->find("tokens_per_gb_read")->as_double(), 0.0);
    // Two rounds of a plain and a speculative decode, each of the 9 steps after the first token.
    EXPECT_EQ(*run->find("rounds")->as_int(), 2);
    EXPECT_EQ(*run->find("decode_steps")->as_int(), 18);
    ASSERT_NE(run->find("round_speedups"), nullptr);
    ASSERT_NE(run->find("round_speedups")->as_array(), nullptr);
    EXPECT_EQ(run->find("round_speedups")->as_array()->size(), 2u);
    EXPECT_GT(*run->find("speedup")->as_double(), 0.0);
    const Json* s = parsed->find("speculation");
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s->find("gate_choices"), nullptr);
    const auto refused = run_cli("bench --model " + fixture_dir("qwen3_moe") + " --draft-replay-acceptance 1.5");
    EXPECT_NE(refused.status, 0);
    EXPECT_NE(refused.err.find("--draft-replay-acceptance"), std::string::npos) << refused.err;
    const auto no_rounds = run_cli("bench --model " + fixture_dir("qwen3_moe") + " --speculate auto --speculation-rounds 0");
    EXPECT_NE(no_rounds.status, 0);
    EXPECT_NE(no_rounds.err.find("--speculation-rounds"), std::string::npos) << no_rounds.err;
}

}  // namespace
}  // namespace stormo::testing
