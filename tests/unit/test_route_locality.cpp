// Routing with locality and the cache against the optimum: route traces of both versions, Belady's
// optimum against every policy, the calibrated synthetic routes, the replay of a trace onto a
// bigger model, the next-use policy, and `bench --routing` (bench only, and said to mean nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "cli_runner.hpp"
#include "runtime/trace_routing.hpp"
#include "store/cache_simulation.hpp"
#include "tools/synthetic_routes.hpp"
#include "stormo/json.hpp"

namespace stormo::testing {
namespace {

using stormo::test::run_cli;

std::vector<RouteStep> one_layer(const std::vector<int32_t>& pages) {
    std::vector<RouteStep> trace;
    for (int32_t p : pages) trace.push_back(RouteStep{0, {p}});
    return trace;
}

// The calibrated preset's locality on a shape of the test's own.
SyntheticRouting preset_on(int layers, int experts, int top_k, size_t tokens, uint64_t seed) {
    SyntheticRouting r = published_routing_preset();
    r.layers = layers;
    r.experts = experts;
    r.top_k = top_k;
    r.tokens = tokens;
    r.seed = seed;
    return r;
}

TEST(Belady, GivesTheTextbookOptimumOnBeladysReferenceString) {
    // 1 2 3 4 1 2 5 1 2 3 4 5: the optimum faults 7 times with 3 frames and 6 with 4.
    const auto trace = one_layer({1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5});
    const CacheSimulation three = simulate_belady(trace, 3, 1, 6);
    EXPECT_EQ(three.misses, 7u);
    EXPECT_EQ(three.hits, 5u);
    EXPECT_EQ(simulate_belady(trace, 4, 1, 6).misses, 6u);
    // LRU on the same string faults 10 times with 3 frames, 8 with 4.
    EXPECT_EQ(simulate_cache(trace, 3, EvictionSettings{EvictionPolicy::lru, 0.0, -1.0}, 1, 6).misses, 10u);
    EXPECT_EQ(simulate_cache(trace, 4, EvictionSettings{EvictionPolicy::lru, 0.0, -1.0}, 1, 6).misses, 8u);
}

TEST(Belady, KeepsAStepsExpertsTogether) {
    // Two slots: step 2 must evict 0 or 1, both wanted by step 3; nothing can save the third read.
    const std::vector<RouteStep> trace{{0, {0, 1}}, {1, {2}}, {0, {0, 1}}};
    const CacheSimulation sim = simulate_belady(trace, 2, 2, 3);
    EXPECT_EQ(sim.hits, 1u);
    EXPECT_EQ(sim.misses, 4u);
    // A step with more experts than slots reads the rest without caching them, as the store does.
    const std::vector<RouteStep> wide{{0, {0, 1, 2}}, {0, {0, 1, 2}}};
    EXPECT_EQ(simulate_belady(wide, 2, 1, 3).hits, 2u);
    // Across layers: the expert of the layer that comes next stays, the one just used leaves.
    const std::vector<RouteStep> cycle{{0, {0}}, {1, {0}}, {2, {0}}, {0, {0}}, {1, {0}}, {2, {0}}};
    EXPECT_EQ(simulate_belady(cycle, 2, 3, 1).hits, 2u);
}

TEST(Belady, NoPolicyBeatsItOnRandomTraces) {
    std::mt19937_64 rng(20261204);
    const std::vector<EvictionSettings> policies{
        {EvictionPolicy::lru, 0.0, -1.0},      {EvictionPolicy::hotness, 0.95, 0.25}, {EvictionPolicy::hotness, 0.5, -1.0},
        {EvictionPolicy::hotness, 1.0, -1.0},  {EvictionPolicy::next_use, 0.95, 0.25}, {EvictionPolicy::next_use, 0.8, -1.0},
        {EvictionPolicy::adaptive, 0.95, 0.25}, {EvictionPolicy::adaptive, 0.9, -1.0}};
    for (int round = 0; round < 200; ++round) {
        const int layers = 1 + static_cast<int>(rng() % 4), experts = 2 + static_cast<int>(rng() % 8);
        const size_t width = 1 + rng() % 3;
        std::vector<RouteStep> trace;
        const size_t steps = 20 + rng() % 80;
        for (size_t t = 0; t < steps; ++t) {
            RouteStep step{static_cast<int>(t % static_cast<size_t>(layers)), {}};
            // Skewed: low ids more often, so policies have something to keep.
            while (step.experts.size() < std::min<size_t>(width, static_cast<size_t>(experts))) {
                const auto e = static_cast<int32_t>(std::min(rng() % static_cast<uint64_t>(experts), rng() % static_cast<uint64_t>(experts)));
                if (std::find(step.experts.begin(), step.experts.end(), e) == step.experts.end()) step.experts.push_back(e);
            }
            trace.push_back(step);
        }
        const size_t pairs = static_cast<size_t>(layers * experts);
        const size_t slots = width + rng() % (pairs - std::min(width, pairs) + 1);
        const CacheSimulation best = simulate_belady(trace, slots, layers, experts);
        for (const EvictionSettings& s : policies) {
            const CacheSimulation sim = simulate_cache(trace, slots, s, layers, experts);
            ASSERT_EQ(sim.hits + sim.misses, best.hits + best.misses);
            ASSERT_GE(best.hits, sim.hits) << "round " << round << ", " << eviction_policy_name(s.policy) << " decay " << s.decay
                                           << ", " << slots << " slots";
        }
    }
}

TEST(Prefetch, ReadsTheRecordedPredictionAheadAndCountsItsAccuracy) {
    // Layer 1's prediction is made while layer 0's step is pinned.
    std::vector<RouteStep> trace;
    for (int t = 0; t < 4; ++t) {
        trace.push_back(RouteStep{0, {t % 2}, 1, {}});
        trace.push_back(RouteStep{1, {2 + t}, 1, {2 + t, 7}});
    }
    const PredictionAccuracy a = prediction_accuracy(trace);
    EXPECT_EQ(a.steps, 4u);
    EXPECT_DOUBLE_EQ(a.recall(), 1.0);
    EXPECT_DOUBLE_EQ(a.precision(), 0.5);
    const EvictionSettings lru{EvictionPolicy::lru, 0.0, -1.0};
    // Room for everything: layer 0's 0 and 1 come back; each of layer 1's is read ahead, 7 once.
    const CacheSimulation plain = simulate_cache(trace, 8, lru, 2, 8);
    const CacheSimulation ahead = simulate_cache(trace, 8, lru, 2, 8, true);
    EXPECT_EQ(plain.hits, 2u);
    EXPECT_EQ(ahead.prefetch_issued, 5u);
    EXPECT_EQ(ahead.prefetch_used, 4u);
    EXPECT_EQ(ahead.hits, 6u);
    EXPECT_EQ(ahead.reads(), plain.reads() + 1);  // the wrong guess, 7, is the one read more
}

TEST(RouteTrace, Version1TracesStillReadAndVersion2RoundTrips) {
    auto old = parse_route_trace("0 1 2\n\n1 3\n", "old");
    ASSERT_TRUE(old) << old.error().message;
    ASSERT_EQ(old->size(), 2u);
    EXPECT_EQ((*old)[0].experts, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ((*old)[0].rows, 0u);
    EXPECT_TRUE((*old)[1].predicted.empty());

    const std::vector<RouteStep> steps{{0, {1, 4}, 3, {}}, {1, {2}, 1, {2, 5}}};
    const std::string text = format_route_trace(steps);
    EXPECT_EQ(text, "#stormo-route-trace 2\n0 3 | 1 4 |\n1 1 | 2 | 2 5\n");
    // Appended after a version 1 trace, each part read in its own version.
    auto both = parse_route_trace("0 7\n" + text, "both");
    ASSERT_TRUE(both) << both.error().message;
    ASSERT_EQ(both->size(), 3u);
    EXPECT_EQ((*both)[0].experts, (std::vector<int32_t>{7}));
    EXPECT_EQ((*both)[2].rows, 1u);
    EXPECT_EQ((*both)[2].predicted, (std::vector<int32_t>{2, 5}));

    auto future = parse_route_trace("#stormo-route-trace 3\n", "t");
    ASSERT_FALSE(future);
    EXPECT_EQ(future.error().message, "t:1: trace version 3 is outside 0..2");
    auto stray = parse_route_trace("# a comment\n", "t");
    ASSERT_FALSE(stray);
    EXPECT_NE(stray.error().message.find("t:1: a line starting with # must be the header"), std::string::npos);
    auto no_bars = parse_route_trace("#stormo-route-trace 2\n0 1 2 3\n", "t");
    ASSERT_FALSE(no_bars);
    EXPECT_NE(no_bars.error().message.find("t:2: expected \"layer rows | experts | predicted\""), std::string::npos);
}

TEST(RouteTrace, TheShippedDemoTracesReadWithTheirPredictions) {
    for (const char* demo : {"gpt-oss-demo", "qwen3-moe-demo", "deepseek-v3-demo", "glm-moe-dsa-demo"}) {
        std::ifstream in(std::string(STORMO_SOURCE_DIR) + "/data/route_traces/" + demo + ".trace");
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto trace = parse_route_trace(text, demo);
        ASSERT_TRUE(trace) << trace.error().message;
        EXPECT_GT(trace->size(), 2000u) << demo;
        EXPECT_GT(prediction_accuracy(*trace).recall(), 0.5) << demo;
    }
}

TEST(SyntheticRoutes, ThePresetHitsThePublishedFiguresOnAFixedSeed) {
    SyntheticRouting r = preset_on(4, 128, 8, 1024, 1);
    auto trace = generate_routes(r);
    ASSERT_TRUE(trace) << trace.error().message;
    ASSERT_EQ(trace->size(), 4096u);
    const RouteFigures f = measure_routes(*trace, r.experts, kFigureWindow);
    EXPECT_GE(f.consecutive_share, 0.25);  // published 25-44%
    EXPECT_LE(f.consecutive_share, 0.44);
    EXPECT_NEAR(f.top_half_share, 0.78, 0.03);  // OLMoE
    EXPECT_NEAR(f.hot_list_share, 0.10, 0.03);  // 32 of 512
    EXPECT_NEAR(f.lru_hit_rate, 0.81, 0.04);    // 128 of 512
    // The Gini of 0.76 is not one of its targets (docs/expert_store.md says why); it is measured.
    EXPECT_GT(f.gini, 0.2);
    // Deterministic for a seed, different for another.
    auto again = generate_routes(r);
    ASSERT_TRUE(again);
    EXPECT_EQ(format_route_trace(*trace), format_route_trace(*again));
    r.seed = 2;
    auto other = generate_routes(r);
    ASSERT_TRUE(other);
    EXPECT_NE(format_route_trace(*trace), format_route_trace(*other));
}

TEST(SyntheticRoutes, ParsesItsSpecificationAndRefusesNonsense) {
    SyntheticRouting base;
    base.layers = 3;
    auto r = parse_synthetic_routing("synthetic:zipf=0.7,reuse=0.2,tokens=50,working-set=2.5", base);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->layers, 3);
    EXPECT_DOUBLE_EQ(r->zipf, 0.7);
    EXPECT_DOUBLE_EQ(r->reuse, 0.2);
    EXPECT_DOUBLE_EQ(r->working_set, 2.5);
    EXPECT_EQ(r->tokens, 50u);
    EXPECT_DOUBLE_EQ(r->turnover, published_routing_preset().turnover);
    EXPECT_FALSE(parse_synthetic_routing("synthetic:reuse=2", base));
    EXPECT_FALSE(parse_synthetic_routing("synthetic:colour=red", base));
    EXPECT_FALSE(parse_synthetic_routing("synthetic:top-k=500", base));
    EXPECT_FALSE(parse_synthetic_routing("synthetic:zipf", base));
}

TEST(TraceRouting, MapsASmallTraceOntoABiggerModelDeterministically) {
    // Two trace layers, top-2, 8 experts; a prefill pass (3 rows) that replay leaves out.
    std::vector<RouteStep> trace{{0, {0, 1, 2}, 3, {}}, {1, {3, 4, 5}, 3, {}},
                                 {0, {3, 5}, 1, {}},    {1, {1, 7}, 1, {1, 6}},
                                 {0, {2, 3}, 1, {}},    {1, {0, 4}, 1, {0, 4}}};
    // Three MoE layers (model layers 1, 2, 3), 16 experts, top-4: r = 2, trace layer i mod 2.
    const RoutedModelShape model{{1, 2, 3}, 16, 4};
    auto made = TraceRouting::create(trace, model);
    ASSERT_TRUE(made) << made.error().message;
    TraceRouting& routes = *made;
    ASSERT_EQ(routes.passes(), 2u);
    EXPECT_TRUE(routes.has_predictions());
    // Trace expert e stands for 2e and 2e+1.
    EXPECT_EQ(routes.experts_of(0, 0), (std::vector<int32_t>{6, 7, 10, 11}));
    EXPECT_EQ(routes.experts_of(0, 1), (std::vector<int32_t>{2, 3, 14, 15}));
    EXPECT_EQ(routes.experts_of(0, 2), (std::vector<int32_t>{6, 7, 10, 11}));  // model MoE layer 2 -> trace layer 0
    EXPECT_EQ(routes.prediction_of(0, 1), (std::vector<int32_t>{2, 3, 12, 13}));
    // A row replays a pass by its sequence and position alone: a sequence's positions walk the
    // passes in turn (here 0, 1, 0 or 1, 0, 1), whatever block or batch they come in.
    const std::vector<int32_t> pass0{6, 7, 10, 11}, pass1{4, 5, 6, 7};
    const std::vector<RouteRow> three{{7, 0}, {7, 1}, {7, 2}};
    const auto block = routes.route(1, three, 4, 16);
    ASSERT_EQ(block.size(), 12u);
    const std::vector<int32_t> first(block.begin(), block.begin() + 4);
    ASSERT_TRUE(first == pass0 || first == pass1);
    const std::vector<int32_t>& other = first == pass0 ? pass1 : pass0;
    std::vector<int32_t> want = first;
    want.insert(want.end(), other.begin(), other.end());
    want.insert(want.end(), first.begin(), first.end());
    EXPECT_EQ(block, want);
    EXPECT_EQ(routes.predict(2), (std::vector<int32_t>{0, 1, 2, 3, 8, 9, 12, 13}));
    const auto layer2 = routes.route(2, three, 4, 16);
    EXPECT_TRUE(layer2 == (std::vector<int32_t>{2, 3, 14, 15, 0, 1, 8, 9, 2, 3, 14, 15}) ||
                layer2 == (std::vector<int32_t>{0, 1, 8, 9, 2, 3, 14, 15, 0, 1, 8, 9}));
    // Position 1 alone, or in a batch after another sequence's row: the row's own pass.
    const std::vector<RouteRow> alone{{7, 1}}, batched{{9, 0}, {7, 1}};
    EXPECT_EQ(routes.route(1, alone, 4, 16), other);
    const auto in_batch = routes.route(1, batched, 4, 16);
    EXPECT_EQ(std::vector<int32_t>(in_batch.begin() + 4, in_batch.end()), other);
    // Ids that fold onto each other (modulo 5 experts): completed with the ids after the largest.
    auto folded = TraceRouting::create({{0, {0, 2}, 1, {}}}, RoutedModelShape{{0}, 5, 4});
    ASSERT_TRUE(folded);
    EXPECT_EQ(folded->experts_of(0, 0), (std::vector<int32_t>{0, 1, 4, 2}));
    // Nothing to replay: refused.
    EXPECT_FALSE(TraceRouting::create({{0, {1}, 4, {}}}, model));
}

// cache-sim --streams: N sequences decoding together acquire, per layer and token, the union of
// what each would acquire alone, each walking the trace from its own place.
TEST(TraceRouting, StreamsDecodingTogetherAcquireTheUnionOfTheirRoutes) {
    auto trace = generate_routes(preset_on(3, 16, 2, 40, 5));
    ASSERT_TRUE(trace) << trace.error().message;
    // One sequence: sequence 0 starts at the first pass, so the trace comes back step by step.
    auto alone = batched_route_trace(*trace, 1);
    ASSERT_TRUE(alone) << alone.error().message;
    ASSERT_EQ(alone->size(), trace->size());
    for (size_t i = 0; i < trace->size(); ++i) {
        std::vector<int32_t> want = (*trace)[i].experts;
        std::sort(want.begin(), want.end());
        EXPECT_EQ((*alone)[i].layer, (*trace)[i].layer);
        EXPECT_EQ((*alone)[i].experts, want) << "step " << i;
        EXPECT_EQ((*alone)[i].rows, 1u);
    }
    auto four = batched_route_trace(*trace, 4);
    ASSERT_TRUE(four) << four.error().message;
    ASSERT_EQ(four->size(), trace->size());
    size_t wider = 0;
    for (size_t i = 0; i < trace->size(); ++i) {
        const RouteStep& step = (*four)[i];
        EXPECT_EQ(step.layer, (*trace)[i].layer);
        EXPECT_EQ(step.rows, 4u);
        EXPECT_LE(step.experts.size(), 8u);
        EXPECT_TRUE(std::is_sorted(step.experts.begin(), step.experts.end()));
        EXPECT_EQ(std::adjacent_find(step.experts.begin(), step.experts.end()), step.experts.end());
        // Sequence 0's own experts and prediction are in the union.
        for (int32_t e : (*trace)[i].experts) EXPECT_TRUE(std::binary_search(step.experts.begin(), step.experts.end(), e));
        for (int32_t e : (*trace)[i].predicted) EXPECT_TRUE(std::count(step.predicted.begin(), step.predicted.end(), e));
        wider += step.experts.size() > 2 ? 1 : 0;
    }
    EXPECT_GT(wider, trace->size() / 2) << "the other sequences walk other passes";
    // A union is never cheaper to cache than its parts: the optimum hits a smaller share of it.
    const size_t slots = 12;
    EXPECT_LT(simulate_belady(*four, slots, 3, 16).hit_rate(), simulate_belady(*alone, slots, 3, 16).hit_rate());
    EXPECT_FALSE(batched_route_trace(*trace, 0));
    EXPECT_FALSE(batched_route_trace(*trace, kMaxStreams + 1));
    EXPECT_FALSE(batched_route_trace({{0, {0, 1}, 3, {}}}, 2)) << "no one-row step to replay";
}

TEST(CacheSimStreams, ReportsReadsPerTokenForSequencesDecodingTogether) {
    const std::string sim = "cache-sim --synthetic layers=4,experts=16,top-k=2,tokens=64 --slots 20 --policy belady --policy lru --prefetch --json";
    const auto four = run_cli(sim + " --streams 4");
    ASSERT_EQ(four.status, 0) << four.err;
    auto parsed = Json::parse(four.out, "cache-sim --json");
    ASSERT_TRUE(parsed) << four.out;
    auto number = [](const Json& object, std::string_view key) {
        const Json* v = object.find(key);
        return v != nullptr && v->as_double() ? *v->as_double() : -1.0;
    };
    EXPECT_EQ(number(*parsed, "streams"), 4.0);
    EXPECT_EQ(number(*parsed, "tokens_generated"), 256.0);
    EXPECT_EQ(number(*parsed, "steps"), 256.0);
    const Json* results = parsed->find("results");
    ASSERT_TRUE(results != nullptr && results->as_array() != nullptr && results->as_array()->size() == 2u) << four.out;
    const Json& belady = (*results->as_array())[0];
    const Json& lru = (*results->as_array())[1];
    EXPECT_EQ(belady.find("policy")->as_string(), "belady");
    EXPECT_GE(number(belady, "hit_rate"), number(lru, "hit_rate"));
    // Belady's reads are its misses; LRU's with the prefetch replay, its misses and prefetches.
    EXPECT_DOUBLE_EQ(number(belady, "reads_per_token"), number(belady, "misses") / 256.0);
    EXPECT_GT(number(lru, "prefetch_issued"), 0.0);
    EXPECT_DOUBLE_EQ(number(lru, "reads_per_token"), (number(lru, "prefetch_misses") + number(lru, "prefetch_issued")) / 256.0);
    const auto text = run_cli("cache-sim --synthetic layers=4,experts=16,top-k=2,tokens=64 --slots 20 --policy belady --streams 4");
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("4 sequences decoding together"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("reads/token"), std::string::npos) << text.out;
    const auto none = run_cli(sim + " --streams 0");
    EXPECT_EQ(none.status, 2);
    EXPECT_NE(none.err.find("--streams 0: must be from 1 to"), std::string::npos) << none.err;
}

TEST(NextUseEviction, KeepsTheExpertOfTheLayerThatRunsNext) {
    auto e = make_eviction(EvictionSettings{EvictionPolicy::next_use, 0.9, -1.0}, 6, 3, 2);
    for (int layer = 0; layer < 3; ++layer) {
        e->on_layer_step(layer);
        e->on_use(layer, 0);
    }
    // Layer 2 just ran: at equal use, its expert waits longest, layer 0's the least.
    EXPECT_TRUE(e->colder(2, 0, 0, 0));
    EXPECT_TRUE(e->colder(1, 0, 0, 0));
    EXPECT_TRUE(e->colder(2, 0, 1, 0));
    // Never used: colder than anything used.
    EXPECT_TRUE(e->colder(0, 1, 2, 0));
    EXPECT_EQ(eviction_policy_from_text("next-use"), EvictionPolicy::next_use);
    EXPECT_FALSE(eviction_policy_from_text("belady"));
}

// Routes whose working set wanders (the calibrated synthetic ones) and routes with a fixed skew
// (a trained model's router over a short context): the adaptive policy must do about as well as
// the better of its two candidates on each, whichever it is.
std::vector<RouteStep> skewed_fixed(int layers, int experts, int k, size_t tokens, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<RouteStep> trace;
    for (size_t t = 0; t < tokens; ++t)
        for (int l = 0; l < layers; ++l) {
            RouteStep step{l, {}, 1, {}};
            while (step.experts.size() < static_cast<size_t>(k)) {
                // The lowest of three uniform draws: a steep, fixed preference for low ids.
                const auto e = static_cast<int32_t>(std::min({rng() % static_cast<uint64_t>(experts), rng() % static_cast<uint64_t>(experts),
                                                              rng() % static_cast<uint64_t>(experts)}));
                if (std::find(step.experts.begin(), step.experts.end(), e) == step.experts.end()) step.experts.push_back(e);
            }
            trace.push_back(step);
        }
    return trace;
}

// The calibrated preset on a small shape: 12 layers x 32 experts, top-4, 400 tokens.
SyntheticRouting small_preset() { return preset_on(12, 32, 4, 400, published_routing_preset().seed); }

TEST(AdaptiveEviction, FollowsTheBetterOfItsCandidatesOnWanderingAndOnFixedRoutes) {
    auto wandering = generate_routes(small_preset());
    ASSERT_TRUE(wandering) << wandering.error().message;
    const auto fixed = skewed_fixed(12, 32, 4, 400, 7);
    const EvictionSettings slow{EvictionPolicy::hotness, 0.95, 0.25}, fast{EvictionPolicy::hotness, 0.6, 0.25},
        adaptive{EvictionPolicy::adaptive, 0.95, 0.25};
    for (const std::vector<RouteStep>* trace : {static_cast<const std::vector<RouteStep>*>(&*wandering), &fixed}) {
        const bool is_fixed = trace == &fixed;
        for (size_t slots : {77, 115, 154}) {  // 20, 30 and 40% of the 384 experts
            const double s = simulate_cache(*trace, slots, slow, 12, 32).hit_rate();
            const double f = simulate_cache(*trace, slots, fast, 12, 32).hit_rate();
            const double a = simulate_cache(*trace, slots, adaptive, 12, 32).hit_rate();
            // Which candidate wins is the premise: the slow decay on fixed routes, the fast one
            // on wandering routes, by a clear margin at some budget (checked below).
            EXPECT_GE(a, std::max(s, f) - 0.02) << (is_fixed ? "fixed" : "wandering") << ", " << slots << " slots: slow " << s
                                                 << ", fast " << f << ", adaptive " << a;
        }
    }
    EXPECT_GT(simulate_cache(*wandering, 115, fast, 12, 32).hit_rate(), simulate_cache(*wandering, 115, slow, 12, 32).hit_rate() + 0.05);
    EXPECT_GT(simulate_cache(fixed, 77, slow, 12, 32).hit_rate(), simulate_cache(fixed, 77, fast, 12, 32).hit_rate() + 0.01);
    EXPECT_EQ(eviction_policy_from_text("adaptive"), EvictionPolicy::adaptive);
}

TEST(InformedEviction, SeesTheGeneratorsStateAndStaysBelowBelady) {
    const SyntheticRouting r = small_preset();
    std::vector<std::vector<float>> next_draw;
    auto trace = generate_routes(r, &next_draw);
    ASSERT_TRUE(trace) << trace.error().message;
    ASSERT_EQ(next_draw.size(), trace->size());
    // A step's odds: the working set's members share (1 - reuse), the experts just chosen reuse.
    double total = 0.0;
    for (float p : next_draw[0]) total += p;
    EXPECT_GT(total, 1.0 - 1e-3);
    EXPECT_LT(total, 1.05);  // plus the small chances of joining the set, outside it
    for (int32_t e : (*trace)[0].experts) EXPECT_GE(next_draw[0][static_cast<size_t>(e)], r.reuse / 4) << e;
    // The generator's route of the same seed is the same with or without the odds.
    auto plain = generate_routes(r);
    ASSERT_TRUE(plain);
    EXPECT_EQ(format_route_trace(*plain), format_route_trace(*trace));
    for (size_t slots : {77, 154}) {
        const CacheSimulation informed = simulate_informed(*trace, next_draw, slots, 12, 32);
        const CacheSimulation best = simulate_belady(*trace, slots, 12, 32);
        const CacheSimulation lru = simulate_cache(*trace, slots, EvictionSettings{EvictionPolicy::lru, 0.0, -1.0}, 12, 32);
        EXPECT_EQ(informed.hits + informed.misses, best.hits + best.misses);
        EXPECT_LE(informed.hits, best.hits) << slots;
        EXPECT_GT(informed.hit_rate(), lru.hit_rate()) << slots;  // knowing the working set is worth something
    }
}

TEST(BenchRouting, OnlyBenchTakesItAndSaysTheLogitsMeanNothing) {
    for (const char* command : {"generate", "run", "chat", "serve", "logits"}) {
        const auto r = run_cli(std::string(command) + " --model " + STORMO_SOURCE_DIR + "/models/gpt-oss-demo --routing synthetic");
        EXPECT_NE(r.status, 0) << command;
        EXPECT_NE(r.err.find("routing"), std::string::npos) << command << ": " << r.err;
    }
    const std::string demo = std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo";
    const std::string fast = " --prompt-tokens 6 --gen-tokens 3 --ram-probe 8MiB --ram-repeats 1 --ram-probe-after 0"
                             " --paired-probe 0 --disk-probe 0 --expert-budget 1MiB --threads 2";
    const auto bad = run_cli("bench --model " + demo + fast + " --routing sideways");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.err.find("--routing sideways: expected trace:FILE or synthetic"), std::string::npos) << bad.err;

    const auto table = run_cli("bench --model " + demo + fast + " --routing synthetic:seed=3");
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("routing OVERRIDDEN"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("the logits and tokens of this run mean nothing"), std::string::npos);
    EXPECT_NE(table.out.find("an LRU of 1/4 of the experts hits"), std::string::npos);

    const auto json = run_cli("bench --model " + demo + fast + " --json --routing trace:" + STORMO_SOURCE_DIR +
                              "/data/route_traces/qwen3-moe-demo.trace");
    ASSERT_EQ(json.status, 0) << json.err;
    auto parsed = Json::parse(json.out, "bench --json");
    ASSERT_TRUE(parsed) << parsed.error().message;
    const Json* meaningful = parsed->find("logits_meaningful");
    ASSERT_TRUE(meaningful && meaningful->as_bool());
    EXPECT_FALSE(*meaningful->as_bool());
    const Json* routing = parsed->find("routing");
    ASSERT_TRUE(routing && routing->as_string());
    EXPECT_GT(*parsed->find("routing_prediction_recall")->as_double(), 0.5);

    // Routes by sequence and position alone: sequence 0 computes the same tokens in the batch as
    // alone, and a verify step accepts every draft replayed from plain decoding.
    const auto batch = run_cli("bench --model " + demo + fast + " --parallel 2 --routing synthetic");
    ASSERT_EQ(batch.status, 0) << batch.err;
    EXPECT_NE(batch.out.find("identical to alone"), std::string::npos) << batch.out;
    const auto speculating = run_cli("bench --model " + demo + fast + " --routing synthetic --draft-replay-acceptance 1 --speculation-rounds 1");
    ASSERT_EQ(speculating.status, 0) << speculating.err;
    EXPECT_NE(speculating.out.find("same tokens"), std::string::npos) << speculating.out;
    EXPECT_EQ(speculating.out.find("TOKENS DIFFER"), std::string::npos) << speculating.out;
}

}  // namespace
}  // namespace stormo::testing
