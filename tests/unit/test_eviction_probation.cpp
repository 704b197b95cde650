// Probation in hotness eviction: a newly read expert that is not clearly hotter than the coldest
// cached one is held on probation and leaves first, so a batch of sequences, whose steps touch most
// of each layer's experts, does not swap the cache on noise; with the margin off, every read takes
// a place as before.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "store/cache_simulation.hpp"

namespace stormo {
namespace {

constexpr int kLayers = 24, kExperts = 32, kTopK = 4;

// `steps` decode steps of `rows` sequences routed uniformly at random: per layer and step, the union
// of the rows' top-k (what the forward pass acquires at once).
std::vector<RouteStep> uniform_batch_trace(int rows, int steps, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<RouteStep> trace;
    for (int s = 0; s < steps; ++s)
        for (int layer = 0; layer < kLayers; ++layer) {
            std::set<int32_t> chosen;
            for (int r = 0; r < rows; ++r) {
                std::set<int32_t> row;
                while (static_cast<int>(row.size()) < kTopK) row.insert(static_cast<int32_t>(rng() % kExperts));
                chosen.insert(row.begin(), row.end());
            }
            trace.push_back({layer, {chosen.begin(), chosen.end()}});
        }
    return trace;
}

CacheSimulation replay(const std::vector<RouteStep>& trace, size_t slots, double margin) {
    return simulate_cache(trace, slots, EvictionSettings{EvictionPolicy::hotness, 0.95, margin}, kLayers, kExperts);
}

uint64_t misses_per_token_x100(const CacheSimulation& sim, int rows, int steps) {
    return sim.misses * 100 / static_cast<uint64_t>(rows * steps);
}

TEST(EvictionProbation, BatchedStepsKeepMoreOfTheCacheWithAMargin) {
    // The shape of issue 36's measurement: the gpt-oss-20b layers and experts, 321 slots (its
    // default budget under an 8 GiB cap), 8 sequences against 1.
    const auto batch = uniform_batch_trace(8, 40, 7), alone = uniform_batch_trace(1, 40, 7);
    const CacheSimulation batch_off = replay(batch, 321, -1.0), batch_on = replay(batch, 321, 0.25);
    const CacheSimulation alone_off = replay(alone, 321, -1.0), alone_on = replay(alone, 321, 0.25);
    // Measured when written: hit rates 0.306 -> 0.368 at 8 rows, 0.374 -> 0.380 alone; the test asks
    // for the direction and a clear gain in the batch, not those exact figures.
    EXPECT_GT(batch_on.hit_rate(), batch_off.hit_rate() + 0.03);
    EXPECT_GE(alone_on.hit_rate(), alone_off.hit_rate() - 0.005);
    // Issue 36's aim in reads: 8 sequences read at most 0.7x of one sequence's experts per token.
    EXPECT_LE(misses_per_token_x100(batch_on, 8, 40) * 10, misses_per_token_x100(alone_on, 1, 40) * 7);
}

// Heats set by hand: colder compares them, displaces says whether the newcomer is hot enough.
class TableEviction final : public Eviction {
public:
    std::vector<double> heat;
    bool newcomer_displaces = false;
    void on_layer_step(int) override {}
    void on_use(int, int) override {}
    bool colder(int, int a, int, int b) const override { return heat[static_cast<size_t>(a)] < heat[static_cast<size_t>(b)]; }
    bool displaces(int, int, int, int) const override { return newcomer_displaces; }
};

TEST(EvictionProbation, ANewcomerNotHotEnoughTakesAPlaceOnProbation) {
    TableEviction table;
    table.heat = {5.0, 9.0, 3.0, 7.0, 1.0};
    auto choose = [&](bool displaces) {
        table.newcomer_displaces = displaces;
        VictimChoice choice(table);
        choice.offer(10, 0, 0, false);
        choice.offer(11, 0, 1, true);   // on probation, though hotter than every cached expert
        choice.offer(12, 0, 2, false);  // the coldest cached
        choice.offer(13, 0, 3, true);
        return choice.choose(0, 4);
    };
    const auto displacing = choose(true);
    ASSERT_TRUE(displacing);
    EXPECT_EQ(displacing->slot, 12u);
    EXPECT_FALSE(displacing->on_probation);
    const auto held = choose(false);  // the coldest on probation leaves, whatever the cached heats
    ASSERT_TRUE(held);
    EXPECT_EQ(held->slot, 13u);
    EXPECT_TRUE(held->on_probation);
}

TEST(EvictionProbation, AGuessTakesOnlyAPlaceOnProbation) {
    TableEviction table;
    table.heat = {5.0, 9.0, 3.0, 7.0, 1.0};
    for (bool displaces : {true, false}) {
        table.newcomer_displaces = displaces;
        VictimChoice with_probation(table, /*read_ahead=*/true);
        with_probation.offer(10, 0, 0, false);
        with_probation.offer(12, 0, 2, false);  // the coldest cached: a use earned its place
        with_probation.offer(13, 0, 3, true);
        const auto place = with_probation.choose(0, 4);
        ASSERT_TRUE(place);
        EXPECT_EQ(place->slot, 13u) << "displaces " << displaces;
        EXPECT_TRUE(place->on_probation);
        VictimChoice all_earned(table, /*read_ahead=*/true);
        all_earned.offer(10, 0, 0, false);
        all_earned.offer(12, 0, 2, false);
        EXPECT_FALSE(all_earned.choose(0, 4)) << "displaces " << displaces << ": the guess is not read";
    }
}

TEST(EvictionProbation, WithNoneOnProbationTheColdestCachedLeavesEitherWay) {
    TableEviction table;
    table.heat = {5.0, 2.0, 1.0};
    VictimChoice choice(table);
    choice.offer(0, 0, 0, false);
    choice.offer(1, 0, 1, false);
    const auto place = choice.choose(0, 2);
    ASSERT_TRUE(place);
    EXPECT_EQ(place->slot, 1u);
    EXPECT_TRUE(place->on_probation);
    EXPECT_FALSE(VictimChoice(table).choose(0, 2)) << "nothing offered: no place";
}

TEST(EvictionProbation, HotnessDisplacesOnlyBeyondTheMargin) {
    // Expert 0 used at 3 steps in a row: heat 0.95^2 + 0.95 + 1 = 2.8525 at the last one. Expert 1,
    // never used, comes with heat 1 (the use it is read for); expert 2, used at the 3 steps before,
    // comes with 2.8525 * 0.95^3 + 1 = 3.4457.
    for (double margin : {-1.0, 0.0, 0.25, 0.3}) {
        auto e = make_eviction(EvictionSettings{EvictionPolicy::hotness, 0.95, margin}, 3, 1, 3);
        for (int i = 0; i < 3; ++i) {
            e->on_layer_step(0);
            e->on_use(0, 2);
        }
        for (int i = 0; i < 3; ++i) {
            e->on_layer_step(0);
            e->on_use(0, 0);
        }
        EXPECT_EQ(e->displaces(0, 1, 0, 0), margin < 0.0) << margin;
        // 3.4457 > 2.8525 * (1 + m) for m below 0.208
        EXPECT_EQ(e->displaces(0, 2, 0, 0), margin < 0.208) << margin;
    }
}

TEST(EvictionProbation, LruNeverHoldsOnProbation) {
    const auto trace = uniform_batch_trace(2, 10, 3);
    const auto a = simulate_cache(trace, 64, EvictionSettings{EvictionPolicy::lru, 0.95, 0.25}, kLayers, kExperts);
    const auto b = simulate_cache(trace, 64, EvictionSettings{EvictionPolicy::lru, 0.95, -1.0}, kLayers, kExperts);
    EXPECT_EQ(a.hits, b.hits);
    EXPECT_EQ(a.misses, b.misses);
}

}  // namespace
}  // namespace stormo
