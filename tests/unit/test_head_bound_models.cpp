// The bounded head on whole models: on every fixture and every shipped demo, each greedy step's
// token from the bounded head equals the full head's argmax (teacher-forced over the reference
// sequence, so one step never hides another), generation gives the same tokens with
// `--head exact-only`, the steps really went through the bounded path, and the counters show how
// many rows were computed exactly. Sampling keeps the full head.
#include <cstdio>

#include "cli_runner.hpp"
#include "gguf_fixture_support.hpp"  // gguf_path
#include "oracle_support.hpp"
#include "runtime/sampler.hpp"

namespace stormo::testing {
namespace {

std::unique_ptr<Engine> open_head(const std::string& dir, HeadRead head, const std::string& kernels = "auto") {
    EngineOptions o;
    o.setup.model_dir = dir;
    o.setup.kernels.value = kernels;
    o.threads = 2;
    o.head = head;
    auto e = Engine::open(o);
    EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message);
    return e ? std::move(*e) : nullptr;
}

struct Sequence {
    std::vector<int32_t> prompt, full;
};

Sequence fixture_sequence(const std::string& dir) {
    Sequence s;
    s.prompt = int_list(*read_json_file(dir + "/reference/input_ids.json").find("input_ids"));
    s.full = int_list(*read_json_file(dir + "/reference/greedy.json").find("full_sequence"));
    return s;
}

// Per step of the sequence after the prompt's last position: the bounded engine's token (fed the
// reference sequence one token at a time) and the full head's argmax at the same position.
void expect_every_step_equal(Engine& bounded, Engine& exact, const Sequence& s, const std::string& what) {
    ASSERT_NE(bounded.compact_head(), nullptr) << what << ": " << bounded.head_note();
    ASSERT_EQ(exact.compact_head(), nullptr);
    const size_t vocab = bounded.model().vocab_size();
    auto full_session = exact.new_session(s.full.size());
    ASSERT_TRUE(full_session);
    ForwardOptions all;
    all.all_logits = true;
    auto logits = exact.pipeline().forward(**full_session, s.full, all);
    ASSERT_TRUE(logits) << logits.error().message;

    auto session = bounded.new_session(s.full.size());
    ASSERT_TRUE(session);
    const ForwardTimes before = bounded.pipeline().times();
    int32_t token = -1;
    ForwardOptions greedy;
    greedy.argmax_out = &token;
    size_t steps = 0;
    for (size_t t = s.prompt.size() - 1; t < s.full.size(); ++t) {
        const std::span<const int32_t> feed = t + 1 == s.prompt.size()
                                                  ? std::span<const int32_t>(s.prompt)
                                                  : std::span<const int32_t>(s.full).subspan(t, 1);
        auto out = bounded.pipeline().forward(**session, feed, greedy);
        ASSERT_TRUE(out) << out.error().message;
        EXPECT_TRUE(out->empty()) << "an argmax step returns no logits";
        const std::span<const float> row(logits->data() + t * vocab, vocab);
        EXPECT_EQ(token, argmax(row)) << what << " position " << t;
        ++steps;
    }
    const ForwardTimes& after = bounded.pipeline().times();
    EXPECT_EQ(after.bounded_head_steps - before.bounded_head_steps, steps) << "every step read the head by bound";
    const double exact_rows = static_cast<double>(after.bounded_head_exact_rows - before.bounded_head_exact_rows);
    const double share = exact_rows / (static_cast<double>(steps) * static_cast<double>(vocab));
    std::printf("[ head bound ] %s: %zu steps, %.1f of %zu rows computed exactly per step (%.2f%%)\n", what.c_str(),
                steps, exact_rows / static_cast<double>(steps), vocab, 100.0 * share);
    EXPECT_LT(share, 0.25) << "most rows should be skipped";
}

class HeadBoundFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(HeadBoundFixtures, EveryGreedyStepEqualsTheFullHead) {
    const std::string dir = fixture_dir(GetParam());
    for (const char* kernels : {"auto", "reference"}) {
        std::unique_ptr<Engine> bounded, exact;
        STORMO_OPEN_FIXTURE_OR_SKIP(bounded, dir, kernels);
        exact = open_head(dir, HeadRead::exact_only, kernels);
        ASSERT_TRUE(exact);
        expect_every_step_equal(*bounded, *exact, fixture_sequence(dir), GetParam() + " (" + kernels + " kernels)");
    }
}

TEST_P(HeadBoundFixtures, GenerationGivesTheExactOnlyTokens) {
    const std::string dir = fixture_dir(GetParam());
    std::unique_ptr<Engine> bounded;
    STORMO_OPEN_FIXTURE_OR_SKIP(bounded, dir);
    auto exact = open_head(dir, HeadRead::exact_only);
    ASSERT_TRUE(exact);
    const Sequence s = fixture_sequence(dir);
    const std::vector<int32_t> reference(s.full.begin() + static_cast<std::ptrdiff_t>(s.prompt.size()), s.full.end());
    for (Engine* e : {bounded.get(), exact.get()}) {
        auto session = e->new_session(s.full.size());
        ASSERT_TRUE(session);
        GenerationRequest request;
        request.prompt = s.prompt;
        request.max_tokens = reference.size();
        auto result = generate(e->pipeline(), **session, request);
        ASSERT_TRUE(result) << result.error().message;
        EXPECT_EQ(result->tokens, reference) << (e == bounded.get() ? "bounded" : "exact-only") << " head";
    }
    EXPECT_EQ(bounded->pipeline().times().bounded_head_steps, reference.size());
    EXPECT_EQ(exact->pipeline().times().bounded_head_steps, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HeadBoundFixtures, ::testing::ValuesIn(fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

class HeadBoundDemos : public ::testing::TestWithParam<std::string> {};

TEST_P(HeadBoundDemos, EvalTokensEqualTheFullHead) {
    const std::string dir = demo_dir(GetParam());
    auto bounded = open_head(dir, HeadRead::bounded);
    auto exact = open_head(dir, HeadRead::exact_only);
    ASSERT_TRUE(bounded && exact);
    ASSERT_NE(bounded->compact_head(), nullptr) << bounded->head_note();
    const Json eval = read_json_file(dir + "/reference/eval.json");
    const auto* problems = eval.find("problems")->as_array();
    ASSERT_NE(problems, nullptr);
    auto stops = stop_ids_of(bounded->source());
    ASSERT_TRUE(stops);
    // Every problem's greedy tokens, and each step teacher-forced on the first 20 problems.
    size_t compared = 0;
    for (const auto& p : *problems) {
        std::vector<int32_t> tokens[2];
        Engine* engines[2] = {bounded.get(), exact.get()};
        for (int k = 0; k < 2; ++k) {
            auto session = engines[k]->new_session(64);
            ASSERT_TRUE(session);
            GenerationRequest request;
            request.prompt = int_list(*p.find("prompt_ids"));
            request.max_tokens = 12;
            request.stop_ids = *stops;
            auto result = generate(engines[k]->pipeline(), **session, request);
            ASSERT_TRUE(result) << result.error().message;
            tokens[k] = result->tokens;
        }
        EXPECT_EQ(tokens[0], tokens[1]) << "problem " << *p.find("index")->as_int();
        if (compared++ < 20) {
            Sequence s;
            s.prompt = int_list(*p.find("prompt_ids"));
            s.full = s.prompt;
            s.full.insert(s.full.end(), tokens[1].begin(), tokens[1].end());
            expect_every_step_equal(*bounded, *exact, s, GetParam() + " problem " + std::to_string(compared));
        }
    }
    EXPECT_EQ(compared, problems->size());
}

INSTANTIATE_TEST_SUITE_P(Demos, HeadBoundDemos, ::testing::ValuesIn(demo_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                             std::string name = p.param;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

TEST(HeadBoundModels, SamplingAndThePenaltyKeepTheFullHead) {
    auto engine = open_head(fixture_dir("gpt_oss"), HeadRead::bounded);
    ASSERT_TRUE(engine);
    const Sequence s = fixture_sequence(fixture_dir("gpt_oss"));
    SamplingParams sampled;
    sampled.temperature = 0.8f;
    sampled.seed = 3;
    SamplingParams penalised;
    penalised.repetition_penalty = 1.3f;
    for (const SamplingParams& params : {sampled, penalised}) {
        EXPECT_FALSE(takes_argmax(params));
        auto session = engine->new_session(s.prompt.size() + 8);
        ASSERT_TRUE(session);
        GenerationRequest request;
        request.prompt = s.prompt;
        request.max_tokens = 8;
        request.sampling = params;
        const uint64_t before = engine->pipeline().times().bounded_head_steps;
        auto result = generate(engine->pipeline(), **session, request);
        ASSERT_TRUE(result) << result.error().message;
        EXPECT_EQ(engine->pipeline().times().bounded_head_steps, before) << "the full logits were needed";
    }
    SamplingParams greedy;
    EXPECT_TRUE(takes_argmax(greedy));
    greedy.repetition_window = 0;
    greedy.repetition_penalty = 1.3f;
    EXPECT_TRUE(takes_argmax(greedy)) << "a penalty over no tokens changes nothing";
}

TEST(HeadBoundModels, CompactCopyIsAboutAHalfOfABf16Head) {
    auto engine = open_head(fixture_dir("gpt_oss"), HeadRead::bounded);
    ASSERT_TRUE(engine && engine->compact_head());
    const WeightView* head = engine->model().head_weight();
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(engine->compact_head()->bytes(), head->rows * (head->cols + sizeof(CompactRowBound)));
    EXPECT_EQ(engine->head_note(), "bounded");
    auto off = open_head(fixture_dir("gpt_oss"), HeadRead::exact_only);
    ASSERT_TRUE(off);
    EXPECT_EQ(off->compact_head(), nullptr);
    EXPECT_EQ(off->head_note(), "exact-only (--head)");
}

// The copy costs rows * (cols + 16) bytes; a head whose own rows are no larger is read in full
// (the bound would read the copy and then exact rows on top). BF16 rows are twice the copy's
// values; GGUF Q8_0 rows of 64 values are 68 bytes against 80; Q6_K rows of 256, 210 against 272.
TEST(HeadBoundModels, OwnBytesAgainstTheCopy) {
    WeightView w;
    w.rows = 10;
    w.cols = 256;
    w.format = WeightFormat::BF16;
    EXPECT_EQ(CompactHead::bytes_for(w), 10u * (256 + sizeof(CompactRowBound)));
    EXPECT_EQ(CompactHead::own_bytes(w), std::optional<uint64_t>(10u * 256 * 2));
    w.format = WeightFormat::F32;
    EXPECT_EQ(CompactHead::own_bytes(w), std::optional<uint64_t>(10u * 256 * 4));
    w.format = WeightFormat::GGUF_Q6_K;
    EXPECT_EQ(CompactHead::own_bytes(w), std::optional<uint64_t>(10u * 210));
    w.format = WeightFormat::GGUF_Q8_0;
    EXPECT_EQ(CompactHead::own_bytes(w), std::optional<uint64_t>(10u * 8 * 34));
    w.cols = 100;  // not a whole number of blocks: no size claimed
    EXPECT_EQ(CompactHead::own_bytes(w), std::nullopt);
    w.format = WeightFormat::MXFP4;
    EXPECT_EQ(CompactHead::own_bytes(w), std::nullopt);
}

// On whole GGUF files: the Q8_0 file's head (64 values a row, 68 bytes) is read in full and no
// copy is made, and the tokens are the exact-only engine's; the F16 file's head gets the copy.
TEST(HeadBoundModels, AHeadNoLargerThanTheCopyIsReadInFull) {
    auto q8 = open_head(gguf_path("qwen3_moe-q8_0.gguf"), HeadRead::bounded);
    ASSERT_TRUE(q8);
    EXPECT_EQ(q8->compact_head(), nullptr);
    EXPECT_EQ(q8->head_note().rfind("full head: its GGUF_Q8_0 rows", 0), 0u) << q8->head_note();
    auto f16 = open_head(gguf_path("qwen3_moe-f16.gguf"), HeadRead::bounded);
    ASSERT_TRUE(f16);
    EXPECT_NE(f16->compact_head(), nullptr) << f16->head_note();
    EXPECT_EQ(f16->head_note(), "bounded");

    auto exact = open_head(gguf_path("qwen3_moe-q8_0.gguf"), HeadRead::exact_only);
    ASSERT_TRUE(exact);
    const std::vector<int32_t> prompt = {1, 5, 9, 2};
    std::vector<int32_t> tokens[2];
    Engine* engines[2] = {q8.get(), exact.get()};
    for (int k = 0; k < 2; ++k) {
        auto session = engines[k]->new_session(prompt.size() + 6);
        ASSERT_TRUE(session);
        int32_t token = -1;
        ForwardOptions greedy;
        greedy.argmax_out = &token;
        std::vector<int32_t> feed = prompt;
        for (int step = 0; step < 6; ++step) {
            auto ran = engines[k]->pipeline().forward(**session, feed, greedy);
            ASSERT_TRUE(ran) << ran.error().message;
            tokens[k].push_back(token);
            feed = {token};
        }
    }
    EXPECT_EQ(tokens[0], tokens[1]);
}

using stormo::test::run_cli;

// A path as one shell word.
std::string shell_word(const std::string& path) {
    std::string out = "'";
    out += path;
    out += "'";
    return out;
}

TEST(HeadBoundCli, ExactOnlyGivesTheSameTokensAndBadValuesAreRefused) {
    const std::string model = shell_word(demo_dir());
    const auto bounded = run_cli("generate --model " + model + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12");
    const auto exact = run_cli("generate --model " + model + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12 --head exact-only");
    ASSERT_EQ(bounded.status, 0) << bounded.err;
    ASSERT_EQ(exact.status, 0) << exact.err;
    EXPECT_EQ(bounded.out, exact.out);
    EXPECT_EQ(bounded.out, "5\n7\n9\n48\n");
    const auto bad = run_cli("generate --model " + model + " --ids 1,2 --head sometimes");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--head 'sometimes': must be bounded or exact-only"), std::string::npos) << bad.err;
}

TEST(HeadBoundCli, InspectCountsTheCompactCopy) {
    const std::string model = shell_word(fixture_dir("gpt_oss"));
    const auto on = run_cli("inspect --json --model " + model);
    const auto off = run_cli("inspect --json --model " + model + " --head exact-only");
    ASSERT_EQ(on.status, 0) << on.err;
    ASSERT_EQ(off.status, 0) << off.err;
    auto a = Json::parse(on.out, "inspect");
    auto b = Json::parse(off.out, "inspect");
    ASSERT_TRUE(a && b);
    const Json& plan = *a->find("memory_plan");
    const int64_t vocab = *a->find("vocab_size")->as_int(), hidden = *a->find("hidden_size")->as_int();
    EXPECT_EQ(*plan.find("compact_head_bytes")->as_int(), vocab * (hidden + 16));
    EXPECT_EQ(*b->find("memory_plan")->find("compact_head_bytes")->as_int(), 0);
}

TEST(HeadBoundCli, BenchCountsTheHeadBytesActuallyRead) {
    const std::string model = shell_word(fixture_dir("gpt_oss"));
    const std::string args = " --prompt-tokens 8 --gen-tokens 6 --json --ram-probe 16MiB --ram-repeats 1 --disk-probe 0";
    const auto on = run_cli("bench --model " + model + args);
    const auto off = run_cli("bench --model " + model + args + " --head exact-only");
    ASSERT_EQ(on.status, 0) << on.err;
    ASSERT_EQ(off.status, 0) << off.err;
    auto a = Json::parse(on.out, "bench");
    auto b = Json::parse(off.out, "bench");
    ASSERT_TRUE(a && b);
    const double head = *a->find("head_bytes")->as_double();
    const double read_on = *a->find("head_bytes_read_per_token")->as_double();
    const double read_off = *b->find("head_bytes_read_per_token")->as_double();
    const double compact = *a->find("compact_head_bytes")->as_double();
    EXPECT_GT(head, 0.0);
    EXPECT_DOUBLE_EQ(read_off, head) << "exact-only reads every row every step";
    EXPECT_GE(read_on, compact);
    EXPECT_LT(read_on, 0.75 * head) << "a BF16 head read by bound: the int8 copy (half) plus a few rows";
    EXPECT_EQ(*a->find("head")->as_string(), "bounded");
    EXPECT_LT(*a->find("bytes_touched_per_token")->as_double(), *b->find("bytes_touched_per_token")->as_double());
    std::printf("[ head bound ] gpt_oss fixture: head %.0f bytes, read per token %.0f (compact %.0f + %.1f rows)\n",
                head, read_on, compact, *a->find("head_exact_rows_per_token")->as_double());
}

}  // namespace
}  // namespace stormo::testing
