// Shared prefix KV: two sessions that hold the same prompt prefix hold its KV pages once. For every
// fixture and demo:
//   - a session that takes another's prefix (Session::share_prefix) and continues with its own
//     tokens, batched with the donor continuing with others, gives each step the logits bits of
//     its sequence run alone from scratch, whether the donor stopped at the prefix or ran on past
//     it (a sliding window's ring then no longer holds the window: a replay);
//   - a request begun as a server would (share the longest reusable prefix of another session,
//     then a whole-context generation) generates the tokens it generates alone, reusing them;
//   - the donor rewinding into the shared pages and writing other tokens copies them first: the
//     other session's bits do not change;
//   - a snapshot restored after its rows were rewritten, and the rewritten pages shared since,
//     recomputes its rows into pages of its own: its bits and the other session's are unchanged;
//   - two sessions sharing a prefix hold its pages once (kv_bytes_in_use), until one writes into
//     a shared page.
#include <algorithm>
#include <cstring>
#include <memory>

#include "oracle_support.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {
namespace {

constexpr size_t kBlock = 4;    // sessions of 4-position blocks: gpt_oss's 16-window rings wrap
constexpr size_t kPrefix = 35;  // two whole pages and three positions of a third
constexpr size_t kContext = 64;

// The source rotated by `shift`, `length` long.
std::vector<int32_t> tokens_of(const std::vector<int32_t>& source, size_t shift, size_t length) {
    std::vector<int32_t> s(length);
    for (size_t j = 0; j < length; ++j) s[j] = source[(shift + j) % source.size()];
    return s;
}

std::vector<int32_t> joined(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SharedPrefixKv : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        source_ = token_source_of(GetParam());
        auto engine = try_open_engine(model_dir_of(GetParam()));
        if (!engine && engine.error().kind == ErrorKind::unsupported) GTEST_SKIP() << engine.error().message;
        ASSERT_TRUE(engine.has_value()) << engine.error().message;
        engine_ = std::move(*engine);
        prefix_ = tokens_of(source_, 0, kPrefix);
    }

    std::unique_ptr<Session> session() { return std::move(*engine_->new_session(kContext, kBlock)); }
    Expected<std::vector<float>> run(Session& s, std::span<const int32_t> tokens) {
        return engine_->pipeline().forward(s, tokens, ForwardOptions{});
    }

    // Every position's logits of `tokens` run alone from scratch.
    std::vector<float> alone(const std::vector<int32_t>& tokens) {
        auto s = session();
        ForwardOptions all;
        all.all_logits = true;
        auto logits = engine_->pipeline().forward(*s, tokens, all);
        EXPECT_TRUE(logits.has_value()) << logits.error().message;
        return logits ? *logits : std::vector<float>{};
    }

    // Feeds each session its tail in chunks of `chunk` (as many steps as the longest needs), the
    // sessions batched in one step, and checks each step's last row against `want` (every
    // position's logits of that session's whole sequence alone).
    void continue_batched(const std::vector<Session*>& sessions, const std::vector<std::vector<int32_t>>& tails,
                          const std::vector<size_t>& chunks, const std::vector<std::vector<float>>& want,
                          const std::string& what) {
        const size_t vocab = engine_->model().vocab_size();
        std::vector<size_t> fed(sessions.size(), 0);
        for (bool more = true; more;) {
            std::vector<SequenceStep> steps;
            std::vector<size_t> who;
            for (size_t i = 0; i < sessions.size(); ++i) {
                if (fed[i] == tails[i].size()) continue;
                const size_t n = std::min(chunks[i], tails[i].size() - fed[i]);
                steps.push_back({sessions[i], std::span<const int32_t>(tails[i]).subspan(fed[i], n),
                                 SequenceStep::Want::last_logits, {}, -1});
                who.push_back(i);
            }
            more = !steps.empty();
            if (!more) break;
            auto ran = engine_->pipeline().forward_batch(steps);
            ASSERT_TRUE(ran.has_value()) << what << ": " << ran.error().message;
            for (size_t k = 0; k < steps.size(); ++k) {
                const size_t i = who[k];
                fed[i] += steps[k].tokens.size();
                const size_t last = sessions[i]->position() - 1;
                ASSERT_TRUE(same_bits(steps[k].logits, std::span<const float>(want[i]).subspan(last * vocab, vocab)))
                    << what << ": session " << i << ", position " << last;
            }
        }
    }

    std::vector<int32_t> source_, prefix_;
    std::unique_ptr<Engine> engine_;
};

TEST_P(SharedPrefixKv, ASharedPrefixGivesEachSequenceItsBitsAlone) {
    const std::vector<int32_t> a_tail = tokens_of(source_, 5, 9), b_tail = tokens_of(source_, 11, 10);
    const std::vector<std::vector<float>> want = {alone(joined(prefix_, a_tail)), alone(joined(prefix_, b_tail))};

    // The donor at the prefix: the other takes it and both go on, batched.
    auto a = session();
    ASSERT_TRUE(run(*a, prefix_).has_value());
    auto b = session();
    auto shared = b->share_prefix(*a, kPrefix);
    ASSERT_TRUE(shared.has_value()) << shared.error().message;
    EXPECT_EQ(b->position(), kPrefix);
    EXPECT_TRUE(std::ranges::equal(b->tokens(), prefix_));
    EXPECT_GT(b->kv_bytes_shared(), 0u) << "the prefix's pages are not shared";
    continue_batched({a.get(), b.get()}, {a_tail, b_tail}, {2, 3}, want, "donor at the prefix");

    // The donor ran on past the prefix (its sliding rings may have lost the window before it).
    auto c = session();
    shared = c->share_prefix(*a, kPrefix);
    ASSERT_TRUE(shared.has_value()) << shared.error().message;
    continue_batched({c.get()}, {b_tail}, {4}, {want[1]}, "donor past the prefix");
    const uint64_t two_pages = c->kv_bytes_for(2 * Session::kPagePositions) - c->kv_bytes_for(0);
    EXPECT_EQ(c->kv_bytes_shared(), two_pages) << "a replay of the prefix copied its whole pages";
}

TEST_P(SharedPrefixKv, ARequestOnASharedPrefixGeneratesItsTokensAlone) {
    GenerationRequest first, second;
    first.prompt = joined(prefix_, tokens_of(source_, 5, 4));
    second.prompt = joined(prefix_, tokens_of(source_, 11, 3));
    for (GenerationRequest* r : {&first, &second}) {
        r->max_tokens = 6;
        r->whole_context = true;
        r->sampling.temperature = 0.8f;
        r->sampling.seed = 5;
    }
    auto fresh = session();
    auto want = generate(engine_->pipeline(), *fresh, second);
    ASSERT_TRUE(want.has_value()) << want.error().message;

    auto a = session();
    ASSERT_TRUE(generate(engine_->pipeline(), *a, first).has_value());
    auto b = session();
    const size_t reusable = reusable_prefix(a->tokens(), second.prompt);
    EXPECT_GE(reusable, kPrefix);
    ASSERT_TRUE(b->share_prefix(*a, reusable).has_value());
    auto got = generate(engine_->pipeline(), *b, second);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    EXPECT_EQ(got->tokens, want->tokens);
    EXPECT_EQ(got->reused_positions, reusable);
}

TEST_P(SharedPrefixKv, ARewindIntoSharedPagesCopiesThemFirst) {
    const std::vector<int32_t> b_tail = tokens_of(source_, 11, 10);
    const size_t keep = 20;  // inside the second page
    const std::vector<int32_t> a_new = tokens_of(source_, 7, 12);
    const std::vector<int32_t> a_prefix(prefix_.begin(), prefix_.begin() + static_cast<ptrdiff_t>(keep));
    const std::vector<std::vector<float>> want = {alone(joined(a_prefix, a_new)), alone(joined(prefix_, b_tail))};

    auto a = session();
    ASSERT_TRUE(run(*a, prefix_).has_value());
    auto b = session();
    ASSERT_TRUE(b->share_prefix(*a, kPrefix).has_value());
    // The donor rewrites positions of pages the other holds, alone first, then batched with it.
    a->rewind(keep);
    const std::vector<int32_t> first(a_new.begin(), a_new.begin() + 5), rest(a_new.begin() + 5, a_new.end());
    auto rewritten = run(*a, first);
    ASSERT_TRUE(rewritten.has_value()) << rewritten.error().message;
    const size_t vocab = engine_->model().vocab_size();
    EXPECT_TRUE(same_bits(*rewritten, std::span<const float>(want[0]).subspan((keep + first.size() - 1) * vocab, vocab)));
    continue_batched({a.get(), b.get()}, {rest, b_tail}, {3, 2}, want, "after the donor's rewind");
}

TEST_P(SharedPrefixKv, ASnapshotRestoredOverSharedPagesGetsItsOwnRowsBack) {
    const std::vector<int32_t> a_tail = tokens_of(source_, 5, 9), other = tokens_of(source_, 7, 8);
    const size_t keep = 20;
    const std::vector<int32_t> b_prefix = joined(std::vector<int32_t>(prefix_.begin(), prefix_.begin() + static_cast<ptrdiff_t>(keep)), other);
    const std::vector<int32_t> b_tail = tokens_of(source_, 11, 6);
    const std::vector<std::vector<float>> want = {alone(joined(prefix_, a_tail)), alone(joined(b_prefix, b_tail))};

    auto a = session();
    ASSERT_TRUE(run(*a, prefix_).has_value());
    const SessionSnapshot at_prefix = a->snapshot();
    // a rewrites positions 20..27, then b takes those rewritten rows: the pages now hold rows the
    // snapshot never saw, and b holds them too.
    a->rewind(keep);
    ASSERT_TRUE(run(*a, other).has_value());
    auto b = session();
    ASSERT_TRUE(b->share_prefix(*a, b_prefix.size()).has_value());
    a->restore(at_prefix);
    EXPECT_TRUE(a->needs_replay());
    continue_batched({a.get(), b.get()}, {a_tail, b_tail}, {3, 2}, want, "a snapshot restored over shared pages");
}

TEST_P(SharedPrefixKv, SessionsSharingAPrefixHoldItsPagesOnce) {
    auto a = session();
    const uint64_t empty = a->kv_bytes_in_use();  // the rings, held from the start
    const uint64_t page = a->kv_bytes_for(Session::kPagePositions) - a->kv_bytes_for(0);
    ASSERT_GT(page, 0u) << "no full-attention buffer to page";
    EXPECT_EQ(empty, a->kv_bytes_for(0));
    ASSERT_TRUE(run(*a, prefix_).has_value());
    const uint64_t prefix_pages = 3 * page;  // 35 positions
    EXPECT_EQ(a->kv_bytes_in_use(), empty + prefix_pages) << "pages are allocated as positions are written";

    auto b = session();
    ASSERT_TRUE(b->share_prefix(*a, kPrefix).has_value());
    const Session* both[] = {a.get(), b.get()};
    EXPECT_EQ(b->kv_bytes_in_use(), empty + prefix_pages);
    EXPECT_EQ(a->kv_bytes_shared(), prefix_pages);
    EXPECT_EQ(b->kv_bytes_shared(), prefix_pages);
    EXPECT_EQ(Session::kv_bytes_in_use(both), 2 * empty + prefix_pages) << "the shared pages counted twice";

    // b writes position 35, in the third page: it copies that page, the first two stay shared.
    ASSERT_TRUE(run(*b, std::vector<int32_t>{source_[1]}).has_value());
    EXPECT_EQ(b->kv_bytes_shared(), 2 * page);
    EXPECT_EQ(Session::kv_bytes_in_use(both), 2 * empty + prefix_pages + page);

    // a lets go of everything: b's pages are its own.
    a->rewind(0);
    EXPECT_EQ(a->kv_bytes_in_use(), empty);
    EXPECT_EQ(b->kv_bytes_shared(), 0u);
    EXPECT_EQ(Session::kv_bytes_in_use(both), 2 * empty + prefix_pages);
}

TEST_P(SharedPrefixKv, APrefixPastTheDonorIsRefused) {
    auto a = session();
    ASSERT_TRUE(run(*a, prefix_).has_value());
    auto b = session();
    EXPECT_FALSE(b->share_prefix(*a, kPrefix + 1).has_value());
    EXPECT_FALSE(b->share_prefix(*b, 0).has_value());
    EXPECT_EQ(b->position(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, SharedPrefixKv, ::testing::ValuesIn(fixture_and_demo_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return test_name_of(info.param); });

}  // namespace
}  // namespace stormo::testing
