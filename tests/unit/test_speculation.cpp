// Speculative decoding is exact (docs/speculation.md): for every fixture and demo, generation with
// drafts verified in blocks gives the ids plain decoding gives, greedy and seeded sampling alike,
// under a repetition penalty and a structured-output constraint, alone and batched; rejected rows
// are forgotten without a replay (sessions of 8-position blocks whose rings wrap: the long
// fixtures' sliding windows are crossed); a step that fails leaves the session as it was.
// Drafts come from a replay of the plain run with each position right with probability 1/2 (a mix
// of right and wrong drafts), from prompt lookup, and from the constraint's forced tokens.
#include <memory>
#include <optional>
#include <random>

#include "constrain/gbnf.hpp"
#include "constrain/structured_output.hpp"
#include "oracle_support.hpp"
#include "runtime/batch_scheduler.hpp"
#include "runtime/context_draft_source.hpp"
#include "runtime/generation.hpp"
#include "runtime/replay_draft_source.hpp"
#include "runtime/sequence_generation.hpp"

namespace stormo::testing {
namespace {

constexpr size_t kBlock = 8;  // sessions' blocks: rings of window + 7 rows, drafts of at most 7

struct Case {
    std::string name;
    SamplingParams sampling;
};

std::vector<Case> cases() {
    SamplingParams seeded;
    seeded.temperature = 0.9f;
    seeded.top_k = 20;
    seeded.top_p = 0.9f;
    seeded.repetition_penalty = 1.2f;
    seeded.seed = 17;
    SamplingParams penalty;
    penalty.repetition_penalty = 1.3f;
    return {{"greedy", {}}, {"seeded", seeded}, {"greedy-penalty", penalty}};
}

class Speculation : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto engine = try_open_engine(model_dir_of(GetParam()));
        if (!engine && engine.error().kind == ErrorKind::unsupported) GTEST_SKIP() << engine.error().message;
        ASSERT_TRUE(engine.has_value()) << engine.error().message;
        engine_ = std::move(*engine);
        const std::vector<int32_t> source = token_source_of(GetParam());
        // The prompt runs close to the end of the reference sequence, so a long fixture's
        // generation crosses its sliding window (128) with rings that wrap.
        const size_t length = source.size() > 40 ? source.size() - 24 : source.size();
        prompt_.assign(source.begin(), source.begin() + static_cast<ptrdiff_t>(length));
    }
    GenerationRequest request(const SamplingParams& sampling, size_t max_tokens = 20) const {
        GenerationRequest r;
        r.prompt = prompt_;
        r.max_tokens = max_tokens;
        r.sampling = sampling;
        return r;
    }
    std::unique_ptr<Session> session(size_t extra = 0) const {
        return std::move(*engine_->new_session(prompt_.size() + 24 + extra, kBlock));
    }
    Expected<GenerationResult> run(const GenerationRequest& r) const {
        auto s = session();
        return generate(engine_->pipeline(), *s, r);
    }
    std::unique_ptr<Engine> engine_;
    std::vector<int32_t> prompt_;
};

TEST_P(Speculation, ReplayedDraftsGiveThePlainIdsAtEveryDraftLength) {
    for (const Case& c : cases()) {
        auto plain = run(request(c.sampling));
        ASSERT_TRUE(plain.has_value()) << plain.error().message;
        const uint64_t replays = engine_->pipeline().times().replays;
        for (size_t draft_max : {size_t{1}, size_t{3}, size_t{7}}) {
            GenerationRequest r = request(c.sampling);
            r.speculation.mode = SpeculateMode::context;
            r.speculation.draft_max = draft_max;
            r.draft_source = std::make_shared<ReplayDraftSource>(plain->tokens, 0.5, draft_max, engine_->model().vocab_size());
            auto spec = run(r);
            ASSERT_TRUE(spec.has_value()) << c.name << ": " << spec.error().message;
            EXPECT_EQ(spec->tokens, plain->tokens) << c.name << ", drafts of " << draft_max;
            EXPECT_EQ(spec->reason, plain->reason) << c.name;
            EXPECT_GT(spec->speculation.verify_steps, 0u) << c.name;
            EXPECT_GT(spec->speculation.accepted, 0u) << c.name;
            EXPECT_LT(spec->speculation.accepted, spec->speculation.drafted) << c.name << ": no draft was wrong";
        }
        EXPECT_EQ(engine_->pipeline().times().replays, replays) << c.name << ": a rejected draft cost a replay";
    }
}

// Whether prompt lookup finds a draft at some decode step of a plain run that generated
// `tokens` after `prompt`: the speculative run follows the same tokens, so it reaches the first
// such step too (every step before it is plain).
bool lookup_finds_drafts(const std::vector<int32_t>& prompt, const std::vector<int32_t>& tokens) {
    std::vector<int32_t> sequence = prompt;
    for (size_t j = 0; j + 2 < tokens.size(); ++j) {  // the last step has no room for a draft
        sequence.push_back(tokens[j]);
        if (!lookup_continuation(sequence, 1, 2, 8).empty()) return true;
    }
    return false;
}

TEST_P(Speculation, PromptLookupAndTheGateGiveThePlainIds) {
    // A prompt that repeats itself: the context source finds continuations to draft.
    std::vector<int32_t> repeated = prompt_;
    repeated.resize(std::min<size_t>(repeated.size(), 12));
    const std::vector<int32_t> unit = repeated;
    for (int i = 0; i < 2; ++i) repeated.insert(repeated.end(), unit.begin(), unit.end());
    for (const SpeculateMode mode : {SpeculateMode::context, SpeculateMode::automatic}) {
        GenerationRequest plain_request;
        plain_request.prompt = repeated;
        plain_request.max_tokens = 16;
        auto s = engine_->new_session(repeated.size() + 16, kBlock);
        auto plain = generate(engine_->pipeline(), **s, plain_request);
        ASSERT_TRUE(plain.has_value()) << plain.error().message;
        GenerationRequest r = plain_request;
        r.speculation.mode = mode;
        r.speculation.draft_max = 5;
        auto s2 = engine_->new_session(repeated.size() + 16, kBlock);
        auto spec = generate(engine_->pipeline(), **s2, r);
        ASSERT_TRUE(spec.has_value()) << spec.error().message;
        EXPECT_EQ(spec->tokens, plain->tokens) << speculate_mode_name(mode);
        EXPECT_EQ((*s2)->tokens().size(), (*s)->tokens().size());
        if (mode == SpeculateMode::context) {
            EXPECT_EQ(spec->speculation.drafted > 0, lookup_finds_drafts(repeated, plain->tokens));
        }
        // Every decode step asked the source; the 15 tokens after the first came one per step
        // and one per draft kept.
        uint64_t steps = 0;
        for (const auto& [k, n] : spec->speculation.gate_choices) steps += n;
        EXPECT_EQ(steps, spec->speculation.verify_steps + spec->speculation.plain_steps);
        EXPECT_EQ(steps + spec->speculation.accepted, 15u);
    }
}

// A grammar over a few ids of the model's vocabulary: literal runs (forced tokens, free drafts)
// around choices the model makes.
std::shared_ptr<TokenConstraint> constraint_for(size_t vocab) {
    using namespace constrain;
    auto trie = std::make_shared<const TokenTrie>(
        TokenTrie::build({{3, "a"}, {4, "b"}, {5, "c"}, {6, "ab"}, {7, "ca"}}, vocab));
    auto g = parse_gbnf(R"(root ::= "abcab" ("a" | "b") ("a" | "b") "cabca" ("a" | "b" | "c") "ab")");
    EXPECT_TRUE(g.has_value());
    return std::make_shared<StructuredOutput>(std::make_shared<const Grammar>(std::move(*g)), trie, ReplyMarkers{},
                                              std::vector<int32_t>{});
}

TEST_P(Speculation, AConstraintsForcedTokensGiveThePlainIds) {
    for (const Case& c : cases()) {
        GenerationRequest plain_request = request(c.sampling);
        plain_request.constraint = constraint_for(engine_->model().vocab_size());
        auto plain = run(plain_request);
        ASSERT_TRUE(plain.has_value()) << plain.error().message;
        EXPECT_EQ(plain->reason, StopReason::stop) << c.name << ": the grammar ends the answer";
        for (const SpeculateMode mode : {SpeculateMode::grammar, SpeculateMode::automatic}) {
            GenerationRequest r = request(c.sampling);
            r.constraint = constraint_for(engine_->model().vocab_size());
            r.speculation.mode = mode;
            r.speculation.draft_max = 4;
            auto spec = run(r);
            ASSERT_TRUE(spec.has_value()) << spec.error().message;
            EXPECT_EQ(spec->tokens, plain->tokens) << c.name << ", " << speculate_mode_name(mode);
            if (mode == SpeculateMode::grammar) {
                EXPECT_GT(spec->speculation.drafted, 0u) << c.name;
            }
        }
    }
}

TEST_P(Speculation, BatchedSequencesSomeSpeculatingGetTheirIdsAlone) {
    const std::vector<Case> all = cases();
    std::vector<GenerationRequest> requests;
    std::vector<std::vector<int32_t>> alone;
    for (size_t i = 0; i < all.size(); ++i) {
        auto plain = run(request(all[i].sampling, 12 + i));
        ASSERT_TRUE(plain.has_value()) << plain.error().message;
        alone.push_back(plain->tokens);
        requests.push_back(request(all[i].sampling, 12 + i));
        if (i != 1) {  // the second runs plain beside the others' verify blocks
            requests.back().speculation.mode = SpeculateMode::context;
            requests.back().speculation.draft_max = 3 + 2 * i;
            requests.back().draft_source =
                std::make_shared<ReplayDraftSource>(plain->tokens, 0.6, 5 + i, engine_->model().vocab_size());
        }
    }
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<SequenceGeneration> sequences;
    for (const GenerationRequest& r : requests) {
        sessions.push_back(session());
        auto begun = SequenceGeneration::begin(*sessions.back(), r);
        ASSERT_TRUE(begun.has_value()) << begun.error().message;
        sequences.push_back(std::move(*begun));
    }
    BatchScheduler scheduler(engine_->pipeline(), BatchSettings{16});
    std::vector<SequenceGeneration*> running;
    for (SequenceGeneration& s : sequences) running.push_back(&s);
    for (size_t step = 0; step < 200; ++step) scheduler.step(running);
    for (size_t i = 0; i < sequences.size(); ++i) {
        ASSERT_TRUE(sequences[i].done());
        auto result = sequences[i].take_result();
        ASSERT_TRUE(result.has_value()) << result.error().message;
        EXPECT_EQ(result->tokens, alone[i]) << "request " << i;
        if (i != 1) {
            EXPECT_GT(result->speculation.verify_steps, 0u) << "request " << i;
        }
    }
}

// Proposes an id outside the vocabulary: the verify step fails before anything changes.
class OutsideDraftSource final : public DraftSource {
public:
    explicit OutsideDraftSource(int32_t id) : id_(id) {}
    std::string_view name() const override { return "outside"; }
    std::vector<int32_t> propose(const DraftContext&, size_t limit) override { return std::vector<int32_t>(limit, id_); }

private:
    int32_t id_;
};

TEST_P(Speculation, AFailedVerifyStepLeavesTheSessionAsItWas) {
    auto s = session();
    GenerationRequest first = request({}, 4);
    ASSERT_TRUE(generate(engine_->pipeline(), *s, first).has_value());
    const std::vector<int32_t> held(s->tokens().begin(), s->tokens().end());
    GenerationRequest bad = request({}, 6);
    bad.prompt = {prompt_.front()};
    bad.speculation.mode = SpeculateMode::context;
    bad.speculation.draft_max = 3;
    bad.draft_source = std::make_shared<OutsideDraftSource>(static_cast<int32_t>(engine_->model().vocab_size()) + 3);
    auto failed = generate(engine_->pipeline(), *s, bad);
    ASSERT_FALSE(failed.has_value());
    EXPECT_NE(failed.error().message.find("outside the vocabulary"), std::string::npos) << failed.error().message;
    EXPECT_EQ(std::vector<int32_t>(s->tokens().begin(), s->tokens().end()), held);
    // And the session goes on as one that never saw the failed request.
    GenerationRequest next = request({}, 5);
    next.prompt = {prompt_.back()};
    auto fresh = session();
    ASSERT_TRUE(generate(engine_->pipeline(), *fresh, first).has_value());
    auto a = generate(engine_->pipeline(), *s, next);
    auto b = generate(engine_->pipeline(), *fresh, next);
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(a->tokens, b->tokens);
}

// A source that reads the main model's hidden rows (as an MTP head would): it records what it is
// handed and drafts from a replay.
class HiddenReadingSource final : public DraftSource {
public:
    struct Seen {
        std::vector<int32_t> tokens;
        std::vector<float> hidden;
    };
    explicit HiddenReadingSource(std::shared_ptr<DraftSource> inner) : inner_(std::move(inner)) {}
    std::string_view name() const override { return "hidden"; }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override {
        if (!ctx.last_hidden.empty())
            seen.push_back({std::vector<int32_t>(ctx.tokens.begin(), ctx.tokens.end()),
                            std::vector<float>(ctx.last_hidden.begin(), ctx.last_hidden.end())});
        return inner_->propose(ctx, limit);
    }
    bool wants_hidden() const override { return true; }
    std::vector<Seen> seen;

private:
    std::shared_ptr<DraftSource> inner_;
};

TEST_P(Speculation, TheHiddenRowHookHandsTheRowThatChoseTheLastToken) {
    auto plain = run(request({}));
    ASSERT_TRUE(plain.has_value()) << plain.error().message;
    GenerationRequest r = request({});
    r.speculation.mode = SpeculateMode::context;
    r.speculation.draft_max = 3;
    auto source = std::make_shared<HiddenReadingSource>(
        std::make_shared<ReplayDraftSource>(plain->tokens, 0.5, 3, engine_->model().vocab_size()));
    r.draft_source = source;
    auto spec = run(r);
    ASSERT_TRUE(spec.has_value()) << spec.error().message;
    EXPECT_EQ(spec->tokens, plain->tokens);
    ASSERT_FALSE(source->seen.empty());
    const size_t width = engine_->model().hidden_size();
    for (const auto& seen : source->seen) {
        // The last token was chosen from the row that consumed the one before it.
        const std::span<const int32_t> consumed(seen.tokens.data(), seen.tokens.size() - 1);
        auto fresh = engine_->new_session(consumed.size(), consumed.size());
        ASSERT_TRUE(fresh.has_value());
        std::vector<float> rows;
        ForwardOptions options;
        options.final_rows_out = &rows;
        ASSERT_TRUE(engine_->pipeline().forward(**fresh, consumed, options).has_value());
        ASSERT_EQ(seen.hidden.size(), width);
        EXPECT_TRUE(same_bits(seen.hidden, std::span<const float>(rows.data() + rows.size() - width, width)))
            << "after " << consumed.size() << " positions";
    }
}

INSTANTIATE_TEST_SUITE_P(Models, Speculation, ::testing::ValuesIn(fixture_and_demo_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return test_name_of(info.param); });

TEST(PromptLookup, ProposesWhatFollowedTheMostRecentLongestMatch) {
    // ... 1 2 3 9 ... 1 2 3 7 8 ... 2 3 -> the most recent "2 3" is followed by 7 8.
    const std::vector<int32_t> t = {1, 2, 3, 9, 5, 1, 2, 3, 7, 8, 4, 2, 3};
    EXPECT_EQ(lookup_continuation(t, 2, 2, 8), (std::vector<int32_t>{7, 8}));
    // A longer match wins over a more recent shorter one: "1 2 3" occurs once before, followed by 9.
    const std::vector<int32_t> u = {1, 2, 3, 9, 6, 2, 3, 5, 1, 2, 3};
    EXPECT_EQ(lookup_continuation(u, 3, 2, 8), (std::vector<int32_t>{9, 6, 2}));
    EXPECT_TRUE(lookup_continuation(std::vector<int32_t>{1, 2, 3, 4}, 4, 2, 8).empty());
    EXPECT_TRUE(lookup_continuation(u, 0, 2, 8).empty());
}

// The definition, suffix length by suffix length from the longest, each at its most recent
// occurrence: the one-pass lookup must give what it gives on any sequence.
std::vector<int32_t> lookup_by_definition(std::span<const int32_t> t, size_t limit, size_t min_ngram, size_t max_ngram) {
    const size_t n = t.size();
    if (limit == 0 || min_ngram == 0 || n < min_ngram + 1) return {};
    for (size_t len = std::min(max_ngram, n - 1); len >= min_ngram; --len) {
        for (size_t s = n - len; s-- > 0;)
            if (std::equal(t.end() - static_cast<ptrdiff_t>(len), t.end(), t.begin() + static_cast<ptrdiff_t>(s))) {
                const size_t from = s + len;
                return {t.begin() + static_cast<ptrdiff_t>(from), t.begin() + static_cast<ptrdiff_t>(from + std::min(limit, n - from))};
            }
        if (len == min_ngram) break;
    }
    return {};
}

TEST(PromptLookup, GivesWhatLookingUpEachSuffixLengthGivesOnRandomSequences) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 4000; ++trial) {
        const size_t n = rng() % 40;
        const int32_t vocab = 2 + static_cast<int32_t>(rng() % 5);  // small vocabularies: many repeats
        std::vector<int32_t> t(n);
        for (int32_t& v : t) v = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
        const size_t limit = rng() % 6, min_ngram = rng() % 4, max_ngram = min_ngram + rng() % 6;
        EXPECT_EQ(lookup_continuation(t, limit, min_ngram, max_ngram), lookup_by_definition(t, limit, min_ngram, max_ngram))
            << "trial " << trial << ", n " << n << ", limit " << limit << ", ngrams " << min_ngram << ".." << max_ngram;
    }
}

}  // namespace
}  // namespace stormo::testing
