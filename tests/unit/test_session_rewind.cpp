// Rewinding a session whose sliding-window layers keep a ring of rows: a rewind within the ring's
// slack keeps the KV as it is; one further back makes the next forward replay the recorded tokens
// from position 0. Either way the logits are the bits of a session that never went past the
// rewind point. A request that fails in a later block goes through the same rewind, and a failed
// replay is owed until one succeeds.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>

#include "oracle_support.hpp"

namespace stormo::testing {
namespace {

// gpt_oss_long slides over 128 positions: with blocks of 16 its rings hold 128 + 16 - 1 = 143
// rows, so 300 positions wrap them twice.
constexpr size_t kBlock = 16;
constexpr size_t kCapacity = 340;
constexpr size_t kFed = 300;

std::vector<int32_t> token_ids(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> id(0, 1021);  // the fixture's vocabulary is 1024
    std::vector<int32_t> out(n);
    for (auto& t : out) t = id(rng);
    return out;
}

std::span<const int32_t> first(const std::vector<int32_t>& v, size_t n) { return {v.data(), n}; }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

ForwardOptions all_logits() {
    ForwardOptions o;
    o.all_logits = true;
    return o;
}

class SessionRewind : public ::testing::Test {
protected:
    void SetUp() override {
        engine_ = open_engine(fixture_dir("gpt_oss_long"));
        ASSERT_NE(engine_, nullptr);
        history_ = token_ids(kFed, 1);
    }

    std::unique_ptr<Session> session_fed(Engine& engine, size_t n) {
        auto s = engine.new_session(kCapacity, kBlock);
        EXPECT_TRUE(s.has_value()) << s.error().message;
        if (!s) return nullptr;
        auto fed = engine.pipeline().forward(**s, first(history_, n), {});
        EXPECT_TRUE(fed.has_value()) << fed.error().message;
        return std::move(*s);
    }

    // The logits of `continuation` in a session that was fed history_[0, n) and nothing else.
    std::vector<float> never_went_past(size_t n, const std::vector<int32_t>& continuation) {
        auto s = session_fed(*engine_, n);
        if (!s) return {};
        auto logits = engine_->pipeline().forward(*s, continuation, all_logits());
        EXPECT_TRUE(logits.has_value()) << logits.error().message;
        return logits ? *logits : std::vector<float>{};
    }

    std::unique_ptr<Engine> engine_;
    std::vector<int32_t> history_;
};

TEST_F(SessionRewind, PastTheRingReplaysAndGivesTheBitsOfASessionThatNeverWentPast) {
    auto session = session_fed(*engine_, kFed);
    ASSERT_NE(session, nullptr);
    EXPECT_FALSE(session->needs_replay());
    // In sequence: each rewind starts from the state the previous continuation left.
    for (size_t to : {200u, 150u, 40u}) {
        session->rewind(to);
        EXPECT_TRUE(session->needs_replay()) << "rewind to " << to << ": the ring lost keys the next query needs";
        EXPECT_EQ(session->position(), to);
        const auto continuation = token_ids(40, static_cast<uint32_t>(to));
        const ForwardTimes before = engine_->pipeline().times();
        std::vector<RouteStep> routes;
        engine_->pipeline().record_routes(&routes);
        auto got = engine_->pipeline().forward(*session, continuation, all_logits());
        engine_->pipeline().record_routes(nullptr);
        ASSERT_TRUE(got.has_value()) << got.error().message;
        EXPECT_FALSE(session->needs_replay());
        // The replay recomputes positions already counted: only the request's 3 blocks x 4 MoE
        // layers are in the route trace.
        EXPECT_EQ(routes.size(), 12u) << "rewind to " << to;
        EXPECT_EQ(engine_->pipeline().times().replays, before.replays + 1);
        EXPECT_EQ(engine_->pipeline().times().replayed_positions, before.replayed_positions + to);
        EXPECT_TRUE(same_bits(*got, never_went_past(to, continuation))) << "rewind to " << to;
        // The session's record of its tokens is what a fresh session was fed.
        std::vector<int32_t> want(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(to));
        want.insert(want.end(), continuation.begin(), continuation.end());
        EXPECT_TRUE(std::ranges::equal(session->tokens(), want)) << "rewind to " << to;
        // The next rewind's reference is fed this history.
        history_ = want;
    }
}

TEST_F(SessionRewind, WithinTheRingsSlackKeepsTheKvWithoutAReplay) {
    // After 300 positions a 143-row ring holds [157, 300); a query at p needs [p - 127, p), so
    // going back to 284 (a block's worth) is free and 283 is not.
    auto session = session_fed(*engine_, kFed);
    ASSERT_NE(session, nullptr);
    session->rewind(284);
    EXPECT_FALSE(session->needs_replay());
    const auto continuation = token_ids(40, 284);
    const ForwardTimes before = engine_->pipeline().times();
    auto got = engine_->pipeline().forward(*session, continuation, all_logits());
    ASSERT_TRUE(got.has_value()) << got.error().message;
    EXPECT_EQ(engine_->pipeline().times().replays, before.replays) << "a rewind within the slack replayed";
    EXPECT_TRUE(same_bits(*got, never_went_past(284, continuation)));

    auto other = session_fed(*engine_, kFed);
    ASSERT_NE(other, nullptr);
    other->rewind(283);
    EXPECT_TRUE(other->needs_replay()) << "position 156 is gone from the ring";
    // Forgetting everything needs nothing back.
    other->rewind(0);
    EXPECT_FALSE(other->needs_replay());
    EXPECT_TRUE(other->tokens().empty());
}

// Fails every read while armed.
class ArmedFailureBackend final : public ReadBackend {
public:
    ArmedFailureBackend(std::unique_ptr<ReadBackend> inner, std::shared_ptr<std::atomic<bool>> armed)
        : inner_(std::move(inner)), armed_(std::move(armed)) {}
    Expected<size_t> read(const std::string& file, uint64_t offset, size_t size, void* dst) override {
        if (armed_->load()) return fail(ErrorKind::io, file + ": injected read failure at offset " + std::to_string(offset));
        return inner_->read(file, offset, size, dst);
    }
    bool direct_io() const override { return inner_->direct_io(); }
    size_t alignment() const override { return inner_->alignment(); }

private:
    std::unique_ptr<ReadBackend> inner_;
    std::shared_ptr<std::atomic<bool>> armed_;
};

// Arms the failure when a block reaching `position` is embedded, i.e. before its layers read experts.
class ArmAtPosition final : public Tracer {
public:
    ArmAtPosition(int64_t position, std::shared_ptr<std::atomic<bool>> armed) : position_(position), armed_(std::move(armed)) {}
    bool wants(int layer) const override { return layer < 0; }
    void record(const std::string& name, int, const float*, size_t, size_t, std::span<const int64_t> positions) override {
        if (name == "embedding" && !positions.empty() && positions.back() >= position_) armed_->store(true);
    }

private:
    int64_t position_;
    std::shared_ptr<std::atomic<bool>> armed_;
};

TEST_F(SessionRewind, RequestFailingInALaterBlockLeavesTheSessionAsItWas) {
    // A streaming store of three slots misses in every block, so an armed backend fails the block.
    EngineOptions probe;
    probe.setup.model_dir = fixture_dir("gpt_oss_long");
    probe.expert_budget.kind = SizeSpec::Kind::bytes;
    probe.expert_budget.bytes = engine_->store().total_expert_bytes() - 1;
    auto streaming_probe = Engine::open(probe);
    ASSERT_TRUE(streaming_probe.has_value()) << streaming_probe.error().message;
    const uint64_t slot_bytes = (*streaming_probe)->store().stats().slot_bytes;

    auto armed = std::make_shared<std::atomic<bool>>(false);
    EngineOptions o = probe;
    o.expert_budget.bytes = 3 * slot_bytes;
    o.wrap_read_backend = [&](std::unique_ptr<ReadBackend> inner) {
        return std::unique_ptr<ReadBackend>(std::make_unique<ArmedFailureBackend>(std::move(inner), armed));
    };
    auto engine = Engine::open(o);
    ASSERT_TRUE(engine.has_value()) << engine.error().message;
    ASSERT_TRUE((*engine)->store().streams());
    Pipeline& pipeline = (*engine)->pipeline();

    auto session = session_fed(**engine, 100);
    ASSERT_NE(session, nullptr);
    // Positions 100..299 in blocks of 16: the failure comes in the block [260, 276), after blocks
    // that wrapped the rings over positions the session at 100 still needs.
    ArmAtPosition arm(260, armed);
    ForwardOptions traced;
    traced.tracer = &arm;
    auto failed = pipeline.forward(*session, token_ids(200, 99), traced);
    ASSERT_FALSE(failed.has_value()) << "the injected read failure went unnoticed";
    EXPECT_NE(failed.error().message.find("injected read failure"), std::string::npos) << failed.error().message;
    EXPECT_EQ(session->position(), 100u);
    EXPECT_TRUE(std::ranges::equal(session->tokens(), first(history_, 100)));
    EXPECT_TRUE(session->needs_replay()) << "the failed blocks overwrote ring rows position 100 needs";

    // Still armed: a replay that fails is still owed, and the session stays where it was.
    const auto continuation = token_ids(40, 100);
    const uint64_t replays = pipeline.times().replays;
    auto failed_replay = pipeline.forward(*session, continuation, all_logits());
    ASSERT_FALSE(failed_replay.has_value());
    EXPECT_EQ(session->position(), 100u);
    EXPECT_TRUE(session->needs_replay());
    EXPECT_EQ(pipeline.times().replays, replays);

    armed->store(false);
    auto got = pipeline.forward(*session, continuation, all_logits());
    ASSERT_TRUE(got.has_value()) << got.error().message;
    EXPECT_EQ(pipeline.times().replays, replays + 1);
    EXPECT_TRUE(same_bits(*got, never_went_past(100, continuation)));
}

// What a Session reads of a model: its layers' KV plans. Nothing here computes.
class PlanOnlyModel final : public Model {
public:
    explicit PlanOnlyModel(std::vector<LayerPlan> plans) : plans_(std::move(plans)) {}
    int n_layers() const override { return static_cast<int>(plans_.size()); }
    size_t hidden_size() const override { return 0; }
    size_t vocab_size() const override { return 0; }
    const LayerPlan& layer_plan(int layer) const override { return plans_[static_cast<size_t>(layer)]; }
    Expected<void> embed(std::span<const int32_t>, Rows) const override { return refuse(); }
    void norm(NormSite, int, const Rows&, Rows) const override {}
    Expected<void> attention(int, const StepContext&, const Rows&, BlockKv, Rows) const override { return refuse(); }
    Routing route(int, const StepContext&, const Rows&) const override { return {}; }
    Expected<void> expert_ffn(int, const ExpertView&, const Rows&, Rows) const override { return refuse(); }
    Expected<void> dense_ffn(int, const Rows&, Rows) const override { return refuse(); }
    void head(const Rows&, Rows) const override {}

private:
    static Expected<void> refuse() { return fail(ErrorKind::unsupported, "a plan-only model computes nothing"); }
    std::vector<LayerPlan> plans_;
};

LayerPlan plan_with_window(size_t window) {
    LayerPlan plan;
    plan.kv = {KvBufferDecl{"k", 4, window}, KvBufferDecl{"v", 4, window}};
    return plan;
}

void feed(Session& session, size_t n) {
    const std::vector<int32_t> ids(n, 3);
    session.will_write(session.position(), session.position() + n);
    session.advance(ids);
}

TEST(SessionRings, FullAttentionOrAnUnwrappedRingNeverNeedsAReplay) {
    const PlanOnlyModel full({plan_with_window(0), plan_with_window(0)});
    Session a(full, 1000, 16);
    feed(a, 900);
    a.rewind(10);
    EXPECT_FALSE(a.needs_replay()) << "full-attention rows never wrap";
    EXPECT_EQ(a.tokens().size(), 10u);

    // A ring as long as the context (8 + 16 - 1 = 23 rows >= 20 positions) never wraps either.
    const PlanOnlyModel sliding({plan_with_window(8), plan_with_window(0)});
    Session b(sliding, 20, 16);
    feed(b, 20);
    b.rewind(1);
    EXPECT_FALSE(b.needs_replay());

    // The same window in a longer context wraps: 40 positions leave [17, 40) in 23 rows.
    Session c(sliding, 100, 16);
    feed(c, 40);
    c.rewind(24);  // needs [17, 24)
    EXPECT_FALSE(c.needs_replay());
    c.rewind(23);  // needs [16, 23)
    EXPECT_TRUE(c.needs_replay());
}

}  // namespace
}  // namespace stormo::testing
