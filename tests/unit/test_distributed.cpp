// Expert parallelism's parts that need no MPI: the split of experts over ranks, the wire's
// messages, and the plan `inspect --ranks` prints (docs/distributed.md). The runs under mpirun
// themselves are tests/mpi.
#include <gtest/gtest.h>

#include <cmath>

#include "distributed/expert_split.hpp"
#include "distributed/rank_plan.hpp"
#include "distributed/wire.hpp"

namespace stormo {
namespace {

TEST(ExpertSplit, EveryExpertHasOneOwnerAndSharesDifferByOneAtMost) {
    for (int ranks : {1, 2, 3, 5, 7, 16})
        for (int n : {1, 4, 8, 32, 128, 129, 256}) {
            const ExpertSplit split{ranks};
            std::vector<int> counted(static_cast<size_t>(ranks), 0);
            int previous = 0;
            for (int e = 0; e < n; ++e) {
                const int owner = split.owner(e, n);
                ASSERT_GE(owner, previous) << "owners are contiguous, in rank order";
                ASSERT_LT(owner, ranks);
                ASSERT_GE(e, split.first(owner, n));
                ASSERT_LT(e, split.first(owner + 1, n));
                ++counted[static_cast<size_t>(owner)];
                previous = owner;
            }
            int least = n, most = 0;
            for (int r = 0; r < ranks; ++r) {
                EXPECT_EQ(counted[static_cast<size_t>(r)], split.count(r, n));
                least = std::min(least, counted[static_cast<size_t>(r)]);
                most = std::max(most, counted[static_cast<size_t>(r)]);
            }
            EXPECT_LE(most - least, 1) << ranks << " ranks, " << n << " experts";
        }
}

TEST(ExpertSplit, ThirtyTwoExpertsOverThreeRanks) {
    const ExpertSplit split{3};
    EXPECT_EQ(split.first(1, 32), 10);
    EXPECT_EQ(split.first(2, 32), 21);
    EXPECT_EQ(split.owner(9, 32), 0);
    EXPECT_EQ(split.owner(10, 32), 1);
    EXPECT_EQ(split.owner(20, 32), 1);
    EXPECT_EQ(split.owner(21, 32), 2);
    EXPECT_EQ(split.owner(31, 32), 2);
}

wire::WorkMessage sample_work() {
    wire::WorkMessage m;
    m.layer = 7;
    m.width = 3;
    m.experts = {4, 9};
    m.rows = {{0, 1}, {1}};
    m.hidden = {1.5f, -2.0f, 0.25f, 3.0f, 1e-30f, -0.0f};
    return m;
}

TEST(Wire, WorkResultIdentityAndVerdictComeBackAsSent) {
    const wire::WorkMessage work = sample_work();
    auto w = wire::decode_work(wire::encode(work));
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_EQ(w->layer, 7);
    EXPECT_EQ(w->width, 3u);
    EXPECT_EQ(w->experts, work.experts);
    EXPECT_EQ(w->rows, work.rows);
    ASSERT_EQ(w->hidden.size(), work.hidden.size());
    for (size_t i = 0; i < work.hidden.size(); ++i) {
        EXPECT_EQ(std::signbit(w->hidden[i]), std::signbit(work.hidden[i])) << "row value " << i;
        EXPECT_EQ(w->hidden[i], work.hidden[i]) << "row value " << i;
    }

    const wire::ResultMessage result{7, "", {0.5f, 1.0f, 2.0f}};
    auto r = wire::decode_result(wire::encode(result));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->layer, 7);
    EXPECT_TRUE(r->error.empty());
    EXPECT_EQ(r->outputs, result.outputs);

    const wire::IdentityMessage identity{"node-2", EngineIdentity{"aa11", "bb22", "stormo SDK 1, family plugin x 1", "kernels avx2 1, f32 activations"}};
    auto i = wire::decode_identity(wire::encode(identity));
    ASSERT_TRUE(i) << i.error().message;
    EXPECT_EQ(i->host, "node-2");
    EXPECT_EQ(i->identity.model, "aa11");
    EXPECT_EQ(i->identity.config, "bb22");
    EXPECT_EQ(i->identity.engine, identity.identity.engine);
    EXPECT_EQ(i->identity.kernels, identity.identity.kernels);

    auto v = wire::decode_verdict(wire::encode(wire::VerdictMessage{false, "rank 2 differs"}));
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_FALSE(v->accepted);
    EXPECT_EQ(v->reason, "rank 2 differs");
}

TEST(Wire, TruncatedForeignOrInconsistentMessagesAreRefused) {
    const auto bytes = wire::encode(sample_work());
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
        auto w = wire::decode_work(std::span(bytes).first(cut));
        ASSERT_FALSE(w) << "a work message cut to " << cut << " bytes was accepted";
        EXPECT_NE(w.error().message.find("malformed expert work message"), std::string::npos) << w.error().message;
    }
    auto longer = bytes;
    longer.push_back(std::byte{0});
    EXPECT_FALSE(wire::decode_work(longer));
    EXPECT_FALSE(wire::decode_result(bytes)) << "a work message read as a result";

    wire::WorkMessage stray = sample_work();
    stray.rows[1] = {2};  // only rows 0 and 1 were sent
    auto s = wire::decode_work(wire::encode(stray));
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("row 2 of 2"), std::string::npos) << s.error().message;
}

TEST(RankPlan, SharesAndBytesPerTokenFollowTheSplit) {
    // Two MoE layers of 8 experts of 100 bytes each, rows of 4 floats, top-2, 2 ranks.
    std::vector<ExpertLayerLayout> layers(2);
    for (auto& layer : layers) {
        layer.locations.resize(8);
        for (auto& expert : layer.locations) expert.push_back(ExpertPartLocation{nullptr, 0, 100, std::nullopt});
    }
    const RankPlan plan = plan_ranks(layers, 2, 2, 4);
    ASSERT_EQ(plan.ranks.size(), 2u);
    EXPECT_EQ(plan.ranks[0].experts, 8u);
    EXPECT_EQ(plan.ranks[1].experts, 8u);
    EXPECT_EQ(plan.ranks[0].bytes, 800u);
    EXPECT_EQ(plan.ranks[1].bytes, 800u);
    // A token's row goes to rank 1 unless both experts fall in rank 0's 4 of 8: 1 - (4*3)/(8*7).
    EXPECT_NEAR(plan.bytes_out_per_token, 2 * 16 * (1.0 - 12.0 / 56.0), 1e-9);
    // Half of the 2 experts, on average, come back from rank 1.
    EXPECT_NEAR(plan.bytes_back_per_token, 2 * 16 * 1.0, 1e-9);
    EXPECT_EQ(plan.max_bytes_out_per_token, 2u * 16u);
    EXPECT_EQ(plan.max_bytes_back_per_token, 2u * 2u * 16u);
}

}  // namespace
}  // namespace stormo
