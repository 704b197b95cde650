// A request that carries the whole context (a chat's next turn) keeps the KV of the prefix the
// session already holds and computes only the rest, with the tokens and bits of a fresh session.
// On gpt_oss_long (windows of 128) a turn that rewinds past the last answer keeps its sliding
// windows when the session has an answer's worth of rewind slack, and replays when it has none.
#include <cstring>
#include <random>

#include "oracle_support.hpp"

namespace stormo::testing {
namespace {

std::vector<int32_t> random_ids(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> id(0, 1021);  // the fixture's vocabulary is 1024
    std::vector<int32_t> out(n);
    for (auto& t : out) t = id(rng);
    return out;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

GenerationRequest whole_context(std::vector<int32_t> prompt, size_t max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.whole_context = true;
    return r;
}

std::unique_ptr<Engine> open_with_slack(size_t slack) {
    EngineOptions o;
    o.setup.model_dir = fixture_dir("gpt_oss_long");
    o.threads = 2;
    o.rewind_slack = slack;
    auto e = Engine::open(o);
    EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message);
    return e ? std::move(*e) : nullptr;
}

// Turn 1: 200 prompt tokens, 60 generated. Turn 2 keeps the first 180 (the rest of the history is
// "rewritten", as Harmony rewrites the last answer) and adds 30 new ones: the session rewinds
// 260 - 180 = 80 positions, more than a block of 16 covers.
struct TwoTurns {
    std::vector<int32_t> first = random_ids(200, 7);
    std::vector<int32_t> second = concat(std::vector<int32_t>(first.begin(), first.begin() + 180), random_ids(30, 8));
};

void check_second_turn_matches_fresh(size_t slack, uint64_t want_replays) {
    auto engine = open_with_slack(slack);
    ASSERT_NE(engine, nullptr);
    const TwoTurns turns;
    auto session = engine->new_session(400, 16);
    ASSERT_TRUE(session.has_value()) << session.error().message;
    auto one = generate(engine->pipeline(), **session, whole_context(turns.first, 60));
    ASSERT_TRUE(one.has_value()) << one.error().message;
    EXPECT_EQ(one->reused_positions, 0u);
    EXPECT_EQ((*session)->position(), 200u + 59u) << "the last generated token is not fed";

    const uint64_t replays = engine->pipeline().times().replays;
    auto two = generate(engine->pipeline(), **session, whole_context(turns.second, 20));
    ASSERT_TRUE(two.has_value()) << two.error().message;
    EXPECT_EQ(two->reused_positions, 180u);
    EXPECT_EQ(engine->pipeline().times().replays - replays, want_replays);

    auto fresh = engine->new_session(400, 16);
    ASSERT_TRUE(fresh.has_value());
    auto reference = generate(engine->pipeline(), **fresh, whole_context(turns.second, 20));
    ASSERT_TRUE(reference.has_value()) << reference.error().message;
    EXPECT_EQ(two->tokens, reference->tokens);
    // And the next step's logits, bit for bit.
    const int32_t next[1] = {two->tokens.back()};
    const int32_t next_fresh[1] = {reference->tokens.back()};
    auto a = engine->pipeline().forward(**session, next, {});
    auto b = engine->pipeline().forward(**fresh, next_fresh, {});
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->size(), b->size());
    EXPECT_EQ(std::memcmp(a->data(), b->data(), a->size() * sizeof(float)), 0);
}

TEST(PrefixReuse, WithAnAnswersSlackTheWindowsSurviveTheRewind) { check_second_turn_matches_fresh(80, 0); }

TEST(PrefixReuse, WithoutSlackTheSessionReplaysAndStillMatches) { check_second_turn_matches_fresh(0, 1); }

TEST(PrefixReuse, ReusablePrefixAlwaysLeavesTheLastPromptPosition) {
    const std::vector<int32_t> held = {1, 2, 3, 4};
    EXPECT_EQ(reusable_prefix(held, std::vector<int32_t>{1, 2, 9}), 2u);
    EXPECT_EQ(reusable_prefix(held, std::vector<int32_t>{1, 2, 3, 4}), 3u) << "the last position gives the logits";
    EXPECT_EQ(reusable_prefix(held, std::vector<int32_t>{1, 2, 3, 4, 5, 6}), 4u);
    EXPECT_EQ(reusable_prefix(held, std::vector<int32_t>{7}), 0u);
    EXPECT_EQ(reusable_prefix({}, std::vector<int32_t>{1, 2}), 0u);
}

TEST(PrefixReuse, APromptBeyondTheContextIsRefusedBeforeTheSessionChanges) {
    auto engine = open_with_slack(0);
    ASSERT_NE(engine, nullptr);
    auto session = engine->new_session(64, 16);
    ASSERT_TRUE(session.has_value());
    auto one = generate(engine->pipeline(), **session, whole_context(random_ids(20, 1), 5));
    ASSERT_TRUE(one.has_value()) << one.error().message;
    const std::vector<int32_t> held((*session)->tokens().begin(), (*session)->tokens().end());
    auto too_long = generate(engine->pipeline(), **session, whole_context(concat(held, random_ids(60, 2)), 5));
    ASSERT_FALSE(too_long.has_value());
    EXPECT_NE(too_long.error().message.find("exceed the context of 64"), std::string::npos) << too_long.error().message;
    EXPECT_TRUE(std::ranges::equal((*session)->tokens(), held)) << "a refused request changed the session";
}

TEST(PrefixReuse, ACancelStopsAfterTheTokenInFlight) {
    auto engine = open_with_slack(0);
    ASSERT_NE(engine, nullptr);
    auto session = engine->new_session(128, 16);
    ASSERT_TRUE(session.has_value());
    std::atomic<bool> cancel{false};
    auto request = whole_context(random_ids(10, 3), 30);
    request.cancel = &cancel;
    size_t seen = 0;
    auto result = generate(engine->pipeline(), **session, request, [&](int32_t) {
        if (++seen == 4) cancel.store(true);
    });
    ASSERT_TRUE(result.has_value()) << result.error().message;
    EXPECT_EQ(result->reason, StopReason::cancelled);
    EXPECT_EQ(result->tokens.size(), 4u);
}

}  // namespace
}  // namespace stormo::testing
