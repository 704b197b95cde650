// `stormo bench --parallel N`: N sequences of their own prompts run together through the batch
// scheduler, sequence 0 alone in the same run. The figures are counted consistently (the tokens,
// the decode steps, the store's bytes, the experts' union), sequence 0's tokens are the ones it
// gets alone in every family, and a mismatch is found. No figure's speed is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cli_runner.hpp"
#include "stormo/json.hpp"
#include "tools/parallel_bench.hpp"

namespace stormo::test {
namespace {

std::string demo(const std::string& name) { return std::string(STORMO_SOURCE_DIR) + "/models/" + name; }

// The probes as small as they go: the run, not the machine, is under test.
const std::string kSmallProbes = " --ram-probe 8MiB --ram-repeats 1 --ram-probe-after 0 --disk-probe 0";

double number(const Json& j, const char* key) {
    const Json* v = j.find(key);
    EXPECT_NE(v, nullptr) << key;
    EXPECT_TRUE(v && v->is_number()) << key;
    return v && v->is_number() ? *v->as_double() : std::nan("");
}

std::vector<double> numbers(const Json& j, const char* key) {
    const Json* v = j.find(key);
    std::vector<double> out;
    EXPECT_TRUE(v && v->as_array()) << key;
    if (v && v->as_array())
        for (const Json& e : *v->as_array()) out.push_back(e.as_double().value_or(std::nan("")));
    return out;
}

// Three prompts of 5 fit one step (128 rows), so every sequence decodes from the second step on:
// 3 steps of 3 decode rows, 9 tokens after the 3 first ones. The budget of 1MiB streams experts,
// so the store's bytes are there to count.
TEST(BenchParallel, JsonFiguresAreConsistent) {
    const auto r = run_cli("bench --model " + demo("gpt-oss-demo") +
                           " --parallel 3 --prompt-tokens 5 --gen-tokens 4 --expert-budget 1MiB --json" + kSmallProbes);
    ASSERT_EQ(r.status, 0) << r.err;
    auto parsed = Json::parse(r.out, "bench --parallel --json");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message << "\n" << r.out;
    const Json& j = *parsed;
    EXPECT_EQ(number(j, "parallel"), 3.0);
    EXPECT_EQ(number(j, "prompt_tokens"), 5.0);
    EXPECT_EQ(number(j, "gen_tokens"), 4.0);
    EXPECT_EQ(number(j, "generated_tokens"), 3.0 * 4.0);
    EXPECT_EQ(number(j, "steps"), 4.0);
    EXPECT_EQ(number(j, "decode_steps"), 3.0);
    EXPECT_EQ(number(j, "full_decode_steps"), 3.0);
    EXPECT_EQ(number(j, "decode_tokens"), 3.0 * 3.0);
    ASSERT_TRUE(j.find("tokens_identical_to_alone") && j.find("tokens_identical_to_alone")->as_bool());
    EXPECT_TRUE(*j.find("tokens_identical_to_alone")->as_bool());

    EXPECT_GT(number(j, "aggregate_decode_tokens_per_s"), 0.0);
    // The contract's fields: decode_tokens_per_s is the aggregate under --parallel.
    EXPECT_EQ(number(j, "decode_tokens_per_s"), number(j, "aggregate_decode_tokens_per_s"));
    for (const char* key : {"expert_hit_rate", "memory_bound_tokens_per_s", "peak_rss_bytes", "prefill_tokens_per_s",
                            "expert_bytes_read_per_token"})
        EXPECT_TRUE(j.find(key) != nullptr) << key;
    EXPECT_NEAR(number(j, "aggregate_decode_tokens_per_s"), number(j, "decode_tokens") / number(j, "decode_seconds"), 1e-6);
    EXPECT_LE(number(j, "sequence_decode_tokens_per_s_min"), number(j, "sequence_decode_tokens_per_s_mean"));
    const std::vector<double> first = numbers(j, "first_token_seconds");
    ASSERT_EQ(first.size(), 3u);
    for (double s : first) EXPECT_GT(s, 0.0);
    EXPECT_EQ(number(j, "first_token_seconds_max"), *std::max_element(first.begin(), first.end()));
    EXPECT_NEAR(number(j, "first_token_seconds_mean"), (first[0] + first[1] + first[2]) / 3.0, 1e-12);
    EXPECT_NEAR(number(j, "prefill_tokens_per_s"), 15.0 / number(j, "first_token_seconds_max"), 1e-6);
    EXPECT_LE(number(j, "first_token_seconds_max"), number(j, "batch_seconds"));
    // A sequence's last token comes after its first, its decode time between them; the batch ends
    // with the last one.
    const std::vector<double> decode = numbers(j, "sequence_decode_seconds"), last = numbers(j, "last_token_seconds");
    ASSERT_EQ(decode.size(), 3u);
    ASSERT_EQ(last.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_GT(last[i], first[i]);
        EXPECT_LE(decode[i], last[i]);
        EXPECT_LE(last[i], number(j, "batch_seconds"));
    }
    EXPECT_EQ(number(j, "last_token_seconds_max"), *std::max_element(last.begin(), last.end()));
    EXPECT_LE(number(j, "last_token_seconds_mean"), number(j, "last_token_seconds_max"));

    // The store's counters over the decode steps, per token they generated.
    const double tokens = number(j, "decode_tokens");
    EXPECT_GT(number(j, "expert_bytes_read"), 0.0);
    EXPECT_NEAR(number(j, "expert_bytes_read_per_token") * tokens, number(j, "expert_bytes_read"), 1e-6);
    EXPECT_NEAR(number(j, "expert_reads_per_token") * tokens, number(j, "expert_misses") + number(j, "prefetch_issued"),
                1e-9);
    EXPECT_GE(number(j, "expert_bytes_read_total"), number(j, "expert_bytes_read"));
    // A layer's union of 3 rows' experts: at least one row's top_k, at most every row's or every expert.
    const double top_k = number(j, "top_k"), union_size = number(j, "distinct_experts_per_layer");
    EXPECT_EQ(number(j, "rows_times_top_k"), 3.0 * top_k);
    EXPECT_GE(union_size, top_k);
    EXPECT_LE(union_size, std::min(3.0 * top_k, number(j, "n_experts")));

    // Sequence 0 alone: the same shape, so the same KV per session and ratios of the same run.
    EXPECT_EQ(number(j, "kv_bytes"), 3.0 * number(j, "alone_kv_bytes"));
    EXPECT_GT(number(j, "alone_decode_tokens_per_s"), 0.0);
    EXPECT_GT(number(j, "alone_first_token_seconds"), 0.0);
    EXPECT_GT(number(j, "alone_expert_bytes_read_per_token"), 0.0);
    EXPECT_GE(number(j, "alone_expert_reads_per_token"), 0.0);
    EXPECT_NEAR(number(j, "decode_speedup"),
                number(j, "aggregate_decode_tokens_per_s") / number(j, "alone_decode_tokens_per_s"), 1e-9);
    EXPECT_NEAR(number(j, "expert_bytes_per_token_ratio"),
                number(j, "expert_bytes_read_per_token") / number(j, "alone_expert_bytes_read_per_token"), 1e-9);
    EXPECT_NEAR(number(j, "first_token_ratio"),
                number(j, "first_token_seconds_max") / number(j, "alone_first_token_seconds"), 1e-9);
    EXPECT_NEAR(number(j, "last_token_ratio"),
                number(j, "last_token_seconds_max") / number(j, "alone_last_token_seconds"), 1e-9);
}

// Every family's demo, streaming its experts: the batch's sequence 0 is the same tokens alone.
TEST(BenchParallel, EveryFamilyMatchesAlone) {
    for (const char* name : {"gpt-oss-demo", "qwen3-moe-demo", "deepseek-v3-demo", "glm-moe-dsa-demo"}) {
        const auto r = run_cli("bench --model " + demo(name) +
                               " --parallel 4 --prompt-tokens 6 --gen-tokens 5 --expert-budget 1MiB" + kSmallProbes);
        ASSERT_EQ(r.status, 0) << name << "\n" << r.err;
        for (const char* label : {"batched (4)", "decode tokens/s", "time to first token", "time to last token",
                                  "expert bytes read/token",
                                  "distinct experts/layer", "KV cache", "identical to alone", "RAM read bandwidth"})
            EXPECT_NE(r.out.find(label), std::string::npos) << name << ": " << label << "\n" << r.out;
    }
}

TEST(BenchParallel, NoBaselineAndRefusals) {
    const auto r = run_cli("bench --model " + demo("gpt-oss-demo") +
                           " --parallel 2 --prompt-tokens 4 --gen-tokens 3 --no-baseline --no-warmup --json" + kSmallProbes);
    ASSERT_EQ(r.status, 0) << r.err;
    auto parsed = Json::parse(r.out, "bench --parallel --no-baseline --json");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    EXPECT_EQ(number(*parsed, "generated_tokens"), 2.0 * 3.0);
    for (const char* key : {"alone_decode_tokens_per_s", "decode_speedup", "expert_bytes_per_token_ratio",
                            "alone_kv_bytes", "tokens_identical_to_alone"}) {
        const Json* none = parsed->find(key);
        ASSERT_NE(none, nullptr) << key;
        EXPECT_TRUE(none->is_null()) << key;
    }
    // --parallel 1 is the bench of one sequence as before.
    const auto one = run_cli("bench --model " + demo("gpt-oss-demo") +
                             " --parallel 1 --prompt-tokens 4 --gen-tokens 3 --paired-probe 0 --json" + kSmallProbes);
    ASSERT_EQ(one.status, 0) << one.err;
    auto single = Json::parse(one.out, "bench --json");
    ASSERT_TRUE(single.has_value()) << single.error().message;
    EXPECT_EQ(single->find("parallel"), nullptr);
    EXPECT_NE(single->find("memory_bound_ratio"), nullptr);

    const auto zero = run_cli("bench --model " + demo("gpt-oss-demo") + " --parallel 0");
    EXPECT_EQ(zero.status, 2);
    EXPECT_NE(zero.err.find("--parallel"), std::string::npos) << zero.err;
}

// The check itself: the first position where the batch's sequence 0 and its run alone differ.
TEST(BenchParallel, TokensMatchFindsTheFirstDifference) {
    ParallelBenchRun run;
    run.tokens = {{5, 6, 7, 8}, {1, 2, 3, 4}};
    EXPECT_FALSE(parallel_tokens_match(run).has_value());  // no baseline: nothing checked
    run.alone.emplace();
    run.alone->tokens = {5, 6, 7, 8};
    EXPECT_EQ(parallel_tokens_match(run), std::optional<bool>(true));
    run.alone->tokens = {5, 6, 9, 8};
    size_t where = 0;
    EXPECT_EQ(parallel_tokens_match(run, &where), std::optional<bool>(false));
    EXPECT_EQ(where, 2u);
    run.alone->tokens = {5, 6, 7};  // alone stopped short
    EXPECT_EQ(parallel_tokens_match(run, &where), std::optional<bool>(false));
    EXPECT_EQ(where, 3u);
}

}  // namespace
}  // namespace stormo::test
