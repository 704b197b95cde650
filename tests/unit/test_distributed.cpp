// Expert parallelism's parts that need no MPI: the split of experts over ranks, the wire's
// messages, and the plan `inspect --ranks` prints (docs/distributed.md). The runs under mpirun
// themselves are tests/mpi.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "distributed/expert_split.hpp"
#include "distributed/rank_plan.hpp"
#include "distributed/wire.hpp"

namespace stormo {
namespace {

TEST(ExpertSplit, EveryExpertHasOneOwnerAndSharesDifferByOneAtMost) {
    for (int ranks : {1, 2, 3, 5, 7, 16})
        for (int n : {1, 4, 8, 32, 128, 129, 256}) {
            const ExpertSplit split = ExpertSplit::even(ranks);
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
    const ExpertSplit split = ExpertSplit::even(3);
    EXPECT_EQ(split.first(1, 32), 10);
    EXPECT_EQ(split.first(2, 32), 21);
    EXPECT_EQ(split.owner(9, 32), 0);
    EXPECT_EQ(split.owner(10, 32), 1);
    EXPECT_EQ(split.owner(20, 32), 1);
    EXPECT_EQ(split.owner(21, 32), 2);
    EXPECT_EQ(split.owner(31, 32), 2);
}

int sum(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); }

TEST(WeightedSplit, EqualRanksThatHoldAnEvenShareSplitEvenly) {
    const std::vector<RankCapacity> ranks(4, RankCapacity{100.0, 0.0});
    EXPECT_EQ(weighted_shares(ranks, 32), (std::vector<int>{8, 8, 8, 8}));
    // Equal remainders: the lower ranks take the leftover experts.
    EXPECT_EQ(weighted_shares(std::span(ranks).first(3), 32), (std::vector<int>{11, 11, 10}));
}

TEST(WeightedSplit, WaterFillingCapsSmallRanksAndBalancesTheRest) {
    // Capacities 4, 100, 100 experts per layer for 32: rank 0 holds all it can, the others split the rest.
    const std::vector<RankCapacity> ranks{{4.0, 1e9}, {100.0, 1e9}, {100.0, 1e9}};
    EXPECT_EQ(weighted_shares(ranks, 32), (std::vector<int>{4, 14, 14}));
    // Disk bandwidth plays no part while the memory holds every expert.
    const std::vector<RankCapacity> other_disks{{4.0, 1.0}, {100.0, 5e9}, {100.0, 1.0}};
    EXPECT_EQ(weighted_shares(other_disks, 32), (std::vector<int>{4, 14, 14}));
    // Exactly enough memory: each rank holds its capacity.
    const std::vector<RankCapacity> exact{{10.0, 0.0}, {22.0, 0.0}};
    EXPECT_EQ(weighted_shares(exact, 32), (std::vector<int>{10, 22}));
}

TEST(WeightedSplit, StreamingSharesBalanceDiskTime) {
    // 4 + 4 experts fit of 32; the 24 left go 1:2 by bandwidth: 8 and 16 more.
    const std::vector<RankCapacity> ranks{{4.0, 1e9}, {4.0, 2e9}};
    EXPECT_EQ(weighted_shares(ranks, 32), (std::vector<int>{12, 20}));
    // Each rank's streamed experts over its bandwidth are the same time per token.
    const std::vector<int> shares = weighted_shares(ranks, 32);
    EXPECT_DOUBLE_EQ((shares[0] - 4.0) / 1e9, (shares[1] - 4.0) / 2e9);
}

TEST(WeightedSplit, RoundingKeepsTheSumAndBreaksTiesToTheLowerRank) {
    for (int n : {1, 2, 3, 7, 8, 32, 64, 128, 129, 256, 384})
        for (int r = 1; r <= 7; ++r) {
            std::vector<RankCapacity> ranks;
            for (int i = 0; i < r; ++i) ranks.push_back({0.37 * (i + 1) * n / r, 1e8 * (r - i)});
            const std::vector<int> shares = weighted_shares(ranks, n);
            ASSERT_EQ(shares.size(), static_cast<size_t>(r));
            EXPECT_EQ(sum(shares), n) << r << " ranks, " << n << " experts";
            for (int s : shares) EXPECT_GE(s, 0);
            if (n >= r)
                for (int s : shares) EXPECT_GE(s, 1) << "every rank with a positive share holds one";
        }
    // Real shares 10.5, 10.5, 11 of 32: the one expert left over goes to rank 0.
    const std::vector<RankCapacity> tie{{10.5, 0.0}, {10.5, 0.0}, {11.0, 0.0}};
    EXPECT_EQ(weighted_shares(tie, 32), (std::vector<int>{11, 10, 11}));
}

TEST(WeightedSplit, AZeroMemoryRankHoldsNothingWhenTheOthersHoldEverything) {
    const std::vector<RankCapacity> ranks{{0.0, 0.0}, {40.0, 0.0}, {40.0, 0.0}};
    EXPECT_EQ(weighted_shares(ranks, 32), (std::vector<int>{0, 16, 16}));
    const ExpertSplit split = ExpertSplit::weighted(ranks, std::vector<int>{32});
    EXPECT_EQ(split.count(0, 32), 0);
    EXPECT_EQ(split.owner(0, 32), 1) << "an empty range owns nothing";
    EXPECT_EQ(split.owner(15, 32), 1);
    EXPECT_EQ(split.owner(16, 32), 2);
    // Streaming, it holds its disk's share: no memory but a disk is still a weight.
    const std::vector<RankCapacity> streaming{{0.0, 1e9}, {8.0, 1e9}};
    EXPECT_EQ(weighted_shares(streaming, 32), (std::vector<int>{12, 20}));
    // No memory and no disk anywhere: an even split.
    const std::vector<RankCapacity> nothing(2, RankCapacity{});
    EXPECT_EQ(weighted_shares(nothing, 32), (std::vector<int>{16, 16}));
}

TEST(WeightedSplit, OwnersAreContiguousInRankOrderForEveryLayerSize) {
    const std::vector<RankCapacity> ranks{{3.0, 1e9}, {0.0, 0.0}, {50.0, 3e9}, {7.0, 2e9}};
    const std::vector<int> sizes{8, 32, 129};
    const ExpertSplit split = ExpertSplit::weighted(ranks, sizes);
    EXPECT_EQ(split.ranks(), 4);
    for (int n : {8, 32, 129, 64}) {  // 64 was not planned for: computed when asked
        int previous = 0;
        const std::vector<int> shares = weighted_shares(ranks, n);
        for (int e = 0; e < n; ++e) {
            const int owner = split.owner(e, n);
            ASSERT_GE(owner, previous);
            ASSERT_GE(e, split.first(owner, n));
            ASSERT_LT(e, split.first(owner + 1, n));
            previous = owner;
        }
        for (int r = 0; r < 4; ++r) EXPECT_EQ(split.count(r, n), shares[static_cast<size_t>(r)]) << n;
        EXPECT_EQ(split.first(4, n), n);
    }
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

    const wire::IdentityMessage identity{"node-2", EngineIdentity{"aa11", "bb22", "stormo SDK 1, family plugin x 1", "kernels avx2 1, f32 activations"}, true};
    auto i = wire::decode_identity(wire::encode(identity));
    ASSERT_TRUE(i) << i.error().message;
    EXPECT_EQ(i->host, "node-2");
    EXPECT_TRUE(i->streams);
    EXPECT_EQ(i->identity.model, "aa11");
    EXPECT_EQ(i->identity.config, "bb22");
    EXPECT_EQ(i->identity.engine, identity.identity.engine);
    EXPECT_EQ(i->identity.kernels, identity.identity.kernels);

    auto v = wire::decode_verdict(wire::encode(wire::VerdictMessage{false, "rank 2 differs"}));
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_FALSE(v->accepted);
    EXPECT_EQ(v->reason, "rank 2 differs");
}

TEST(Wire, PrefetchHintAndMeasurementComeBackAsSent) {
    auto p = wire::decode_prefetch(wire::encode(wire::PrefetchMessage{5, {3, 17, 30}}));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->layer, 5);
    EXPECT_EQ(p->experts, (std::vector<int32_t>{3, 17, 30}));

    const wire::MeasureMessage measure{"node-3", uint64_t{6} << 30, false, 1.25e9};
    const auto bytes = wire::encode(measure);
    EXPECT_EQ(bytes.size(), wire::kMeasureBytes) << "one allgather slot";
    auto m = wire::decode_measure(bytes);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->host, "node-3");
    EXPECT_EQ(m->expert_memory, uint64_t{6} << 30);
    EXPECT_FALSE(m->holds_all);
    EXPECT_EQ(m->disk_bytes_per_s, 1.25e9);
    // A host name longer than the slot allows is cut, never spilled past it.
    auto long_host = wire::decode_measure(wire::encode(wire::MeasureMessage{std::string(2000, 'h'), 1, true, 0.0}));
    ASSERT_TRUE(long_host) << long_host.error().message;
    EXPECT_LT(long_host->host.size(), wire::kMeasureBytes);
    EXPECT_TRUE(long_host->holds_all);
}

TEST(Wire, MalformedHintsAndMeasurementsAreRefused) {
    const auto hint = wire::encode(wire::PrefetchMessage{5, {3, 17}});
    for (size_t cut = 0; cut < hint.size(); ++cut) {
        auto p = wire::decode_prefetch(std::span(hint).first(cut));
        ASSERT_FALSE(p) << "a hint cut to " << cut << " bytes was accepted";
        EXPECT_NE(p.error().message.find("malformed prefetch hint message"), std::string::npos) << p.error().message;
    }
    auto negative = wire::decode_prefetch(wire::encode(wire::PrefetchMessage{5, {-1}}));
    ASSERT_FALSE(negative);
    EXPECT_NE(negative.error().message.find("expert -1"), std::string::npos) << negative.error().message;
    EXPECT_FALSE(wire::decode_work(hint)) << "a hint read as work";

    const auto measure = wire::encode(wire::MeasureMessage{"node-1", 100, false, 5.0});
    EXPECT_FALSE(wire::decode_measure(std::span(measure).first(wire::kMeasureBytes - 1)));
    auto stray = measure;
    stray.back() = std::byte{1};  // not padding
    auto s = wire::decode_measure(stray);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("malformed measurement"), std::string::npos) << s.error().message;
    auto bad = wire::decode_measure(wire::encode(wire::MeasureMessage{"node-1", 100, false, -5.0}));
    EXPECT_FALSE(bad) << "a negative bandwidth";
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
