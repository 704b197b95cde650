// A sequence whose layer keeps a recurrent state (KvBufferDecl::Kind::state: one row overwritten
// by every step, as a linear-attention layer keeps it) goes through the same session, forward
// pass, batched steps, snapshots and replays as KV rows do:
//   - batched with other sequences, each gets the logits bits it gets alone;
//   - restoring a snapshot gives back the state's bits, with no replay;
//   - a rewind (not to a snapshot) owes a replay, which recomputes the state from position 0;
//   - a snapshot whose rows were rewritten since restores through a replay, to the same bits.
// The model is a toy written here: the state s_t = 0.5 s_{t-1} + x_t, read out as the layer's output.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/forward.hpp"
#include "runtime/session.hpp"

namespace stormo::testing {
namespace {

constexpr size_t kWidth = 4;
constexpr size_t kVocab = 11;

class RecurrentToy final : public Model {
public:
    RecurrentToy() {
        plan_.kv = {KvBufferDecl{"state", kWidth, 0, KvBufferDecl::Kind::state},
                    KvBufferDecl{"k", kWidth, 0, KvBufferDecl::Kind::per_position}};
        plan_.ffn = FfnKind::dense;
    }
    int n_layers() const override { return 2; }
    size_t hidden_size() const override { return kWidth; }
    size_t vocab_size() const override { return kVocab; }
    const LayerPlan& layer_plan(int) const override { return plan_; }
    Expected<void> embed(std::span<const int32_t> tokens, Rows out) const override {
        for (size_t r = 0; r < tokens.size(); ++r)
            for (size_t i = 0; i < kWidth; ++i) out.row(r)[i] = 0.1f * static_cast<float>(tokens[r] + 1) + 0.01f * static_cast<float>(i);
        return {};
    }
    void norm(NormSite, int, const Rows& in, Rows out) const override { std::copy_n(in.data, in.n * in.width, out.data); }
    // The state, updated row by row in position order; plus the mean of the sequence's keys so far
    // (per-position rows) so both kinds of buffer meet in one layer.
    Expected<void> attention(int, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override {
        for (const SequenceKv& seq : kv) {
            float* state = seq.kv.at(0, 0);
            for (size_t r = seq.first_row; r < seq.first_row + seq.n_rows; ++r) {
                const int64_t p = ctx.positions[r];
                if (p == 0) std::fill_n(state, kWidth, 0.0f);
                std::copy_n(normed.row(r), kWidth, seq.kv.at(1, p));
                for (size_t i = 0; i < kWidth; ++i) {
                    state[i] = 0.5f * state[i] + normed.row(r)[i];
                    float mean = 0.0f;
                    for (int64_t q = 0; q <= p; ++q) mean += seq.kv.at(1, q)[i];
                    out.row(r)[i] = state[i] + mean / static_cast<float>(p + 1);
                }
            }
        }
        return {};
    }
    Routing route(int, const StepContext&, const Rows&) const override { return {}; }
    Expected<void> expert_ffn(int, const ExpertView&, const Rows&, Rows) const override {
        return fail(ErrorKind::internal, "the toy has no experts");
    }
    Expected<void> dense_ffn(int, const Rows& in, Rows out) const override {
        for (size_t i = 0; i < in.n * in.width; ++i) out.data[i] = 0.25f * in.data[i];
        return {};
    }
    void head(const Rows& normed, Rows logits) const override {
        for (size_t r = 0; r < normed.n; ++r)
            for (size_t v = 0; v < kVocab; ++v) logits.row(r)[v] = normed.row(r)[v % kWidth] * static_cast<float>(v + 1);
    }

private:
    LayerPlan plan_;
};

class NoExperts final : public ExpertStore {
public:
    Expected<void> add_layer(ExpertLayerLayout) override { return {}; }
    Expected<void> finish_loading() override { return {}; }
    Expected<std::unique_ptr<ExpertBatch>> acquire(int, std::span<const int32_t>) override {
        return fail(ErrorKind::internal, "the toy has no experts");
    }
    size_t max_batch() const override { return 1; }
    void prefetch(int, std::span<const int32_t>, size_t) override {}
    bool streams() const override { return false; }
    ExpertStoreStats stats() const override { return {}; }
    uint64_t resident_bytes() const override { return 0; }
    uint64_t total_expert_bytes() const override { return 0; }
};

bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SessionState : public ::testing::Test {
protected:
    // Every position's logits of `tokens` from a fresh session, in blocks of `block`.
    std::vector<float> alone(std::span<const int32_t> tokens, size_t block = 3) {
        Session session(model_, 64, 8);
        ForwardOptions all;
        all.all_logits = true;
        all.max_block = block;
        auto logits = pipeline_.forward(session, tokens, all);
        EXPECT_TRUE(logits.has_value()) << logits.error().message;
        return logits ? *logits : std::vector<float>{};
    }
    std::vector<float> last_row(const std::vector<float>& all, size_t position) {
        return {all.begin() + static_cast<long>(position * kVocab), all.begin() + static_cast<long>((position + 1) * kVocab)};
    }
    RecurrentToy model_;
    NoExperts store_;
    Pipeline pipeline_{model_, store_};
};

TEST_F(SessionState, BatchedSequencesGetTheirStateBitsAlone) {
    const std::vector<int32_t> a = {1, 5, 2, 9, 3, 3, 7, 0, 4}, b = {8, 8, 1, 6, 2};
    const auto alone_a = alone(a), alone_b = alone(b, 1);
    Session sa(model_, 64, 8), sb(model_, 64, 8);
    size_t fa = 0, fb = 0;
    while (fa < a.size() || fb < b.size()) {
        std::vector<SequenceStep> steps;
        const size_t na = std::min<size_t>(2, a.size() - fa), nb = std::min<size_t>(3, b.size() - fb);
        if (na > 0) steps.push_back({&sa, std::span<const int32_t>(a).subspan(fa, na), SequenceStep::Want::last_logits, {}, -1});
        if (nb > 0) steps.push_back({&sb, std::span<const int32_t>(b).subspan(fb, nb), SequenceStep::Want::last_logits, {}, -1});
        ASSERT_TRUE(pipeline_.forward_batch(steps).has_value());
        size_t k = 0;
        if (na > 0) EXPECT_TRUE(same_bits(steps[k++].logits, last_row(alone_a, (fa += na) - 1))) << "a at " << fa;
        if (nb > 0) EXPECT_TRUE(same_bits(steps[k].logits, last_row(alone_b, (fb += nb) - 1))) << "b at " << fb;
    }
}

TEST_F(SessionState, RestoringASnapshotGivesBackTheStateWithoutAReplay) {
    const std::vector<int32_t> head = {2, 4, 6}, draft = {1, 1, 9}, real = {3, 0};
    std::vector<int32_t> expected_tokens = head;
    expected_tokens.insert(expected_tokens.end(), real.begin(), real.end());
    const auto expected = alone(expected_tokens);
    Session s(model_, 64, 8);
    ASSERT_TRUE(pipeline_.forward(s, head, {}).has_value());
    const SessionSnapshot mark = s.snapshot();
    ASSERT_TRUE(pipeline_.forward(s, draft, {}).has_value());
    s.restore(mark);
    EXPECT_EQ(s.position(), head.size());
    EXPECT_FALSE(s.needs_replay()) << "restoring a snapshot whose rows were not rewritten needs no replay";
    auto logits = pipeline_.forward(s, real, {});
    ASSERT_TRUE(logits.has_value());
    EXPECT_TRUE(same_bits(*logits, last_row(expected, expected_tokens.size() - 1)));
    EXPECT_EQ(pipeline_.times().replays, 0u);
}

TEST_F(SessionState, ARewindOwesAReplayThatRecomputesTheState) {
    const std::vector<int32_t> tokens = {5, 1, 4, 1, 5, 9, 2};
    const std::vector<int32_t> kept(tokens.begin(), tokens.begin() + 4), other = {7, 7};
    std::vector<int32_t> expected_tokens = kept;
    expected_tokens.insert(expected_tokens.end(), other.begin(), other.end());
    const auto expected = alone(expected_tokens);
    Session s(model_, 64, 8);
    ASSERT_TRUE(pipeline_.forward(s, tokens, {}).has_value());
    s.rewind(kept.size());
    EXPECT_TRUE(s.needs_replay()) << "the state after position 7 cannot give the state after position 4";
    auto logits = pipeline_.forward(s, other, {});
    ASSERT_TRUE(logits.has_value());
    EXPECT_TRUE(same_bits(*logits, last_row(expected, expected_tokens.size() - 1)));
    EXPECT_EQ(pipeline_.times().replays, 1u);
}

TEST_F(SessionState, ASnapshotWhoseRowsWereRewrittenRestoresThroughAReplay) {
    const std::vector<int32_t> first = {3, 1, 4, 1, 5}, rewrite = {2, 2, 2}, after = {6};
    std::vector<int32_t> expected_tokens = first;
    expected_tokens.insert(expected_tokens.end(), after.begin(), after.end());
    const auto expected = alone(expected_tokens);
    Session s(model_, 64, 8);
    ASSERT_TRUE(pipeline_.forward(s, first, {}).has_value());
    const SessionSnapshot mark = s.snapshot();
    s.rewind(2);  // below the snapshot, then other tokens over its rows
    ASSERT_TRUE(pipeline_.forward(s, rewrite, {}).has_value());
    s.restore(mark);
    EXPECT_TRUE(s.needs_replay()) << "rows 2..4 hold other tokens' keys now";
    auto logits = pipeline_.forward(s, after, {});
    ASSERT_TRUE(logits.has_value());
    EXPECT_TRUE(same_bits(*logits, last_row(expected, expected_tokens.size() - 1)));
}

}  // namespace
}  // namespace stormo::testing
