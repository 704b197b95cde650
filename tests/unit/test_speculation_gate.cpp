// The speculation gate's decisions on synthetic step costs and acceptance (decisions, not
// timing): it converges to plain decoding when drafts are never accepted, explores now and then
// with a growing interval and recovers when drafts start to be accepted, drafts long when rows
// are cheap and acceptance high, seldom (to explore) when a row costs a whole step, and
// drafts shorter when the extra rows' experts must be read from disk.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/speculation_gate.hpp"

namespace stormo {
namespace {

constexpr MoeShape kShape{4, 32, 4};  // 4 MoE layers of 32 experts, top-4

// Steps of 1 and 5 rows costing t(n) = a + b (n - 1) + c m, m the misses given.
StepCostModel costs(double a, double b, double c = 0.0, double resident = 1.0) {
    StepCostModel model(kShape);
    for (int i = 0; i < 20; ++i)
        for (size_t rows : {size_t{1}, size_t{5}}) {
            const double union_experts = 32.0 * (1.0 - std::pow(1.0 - 4.0 / 32.0, static_cast<double>(rows))) * 4.0;
            const uint64_t acquired = static_cast<uint64_t>(std::lround(union_experts));
            const uint64_t misses = static_cast<uint64_t>(std::lround(union_experts * (1.0 - resident)));
            model.observe(rows, acquired, misses, a + b * static_cast<double>(rows - 1) + c * static_cast<double>(misses));
        }
    return model;
}

TEST(SpeculationGate, TheCostModelFitsTheStepsItSaw) {
    const StepCostModel model = costs(1.0, 0.1);
    EXPECT_NEAR(model.predict(1), 1.0, 0.02);
    EXPECT_NEAR(model.predict(5), 1.4, 0.02);
    EXPECT_NEAR(model.predict(3), 1.2, 0.02);  // between the rows it saw: the line through them
    const StepCostModel streaming = costs(1.0, 0.1, 0.05, 0.5);
    EXPECT_GT(streaming.expected_misses(5), streaming.expected_misses(1));
    EXPECT_GT(streaming.predict(5) - streaming.predict(1), model.predict(5) - model.predict(1));
}

TEST(SpeculationGate, NoStepSeenMeansPlainDecoding) {
    StepCostModel model(kShape);
    SpeculationGate gate(8, model);
    EXPECT_EQ(gate.choose("context", 8), 0u);
}

TEST(SpeculationGate, ThePromptPricesARowBeforeAnyVerify) {
    // A prompt of 20 rows at 5% of a step a row: the first decode step already drafts, where the
    // prior alone (a row costs a whole step) would wait for an exploration.
    StepCostModel priced(kShape);
    priced.observe(20, 0, 0, 1.0 + 19 * 0.05, StepCostModel::StepKind::prompt);
    EXPECT_FALSE(priced.ready());  // no decode step yet: no constant term
    priced.observe(1, 0, 0, 1.0);
    SpeculationGate gate(8, priced);
    EXPECT_GT(gate.choose("context", 8), 0u);

    StepCostModel prior_only(kShape);
    prior_only.observe(1, 0, 0, 1.0);
    SpeculationGate cautious(8, prior_only);
    EXPECT_EQ(cautious.choose("context", 8), 0u);
    // A short answer still gets its try: the opening exploration comes at the second step.
    EXPECT_EQ(cautious.choose("context", 8), 1u);

    // A prompt whose rows cost a whole step each (a tiny model, compute-bound): no draft is
    // planned, but the prompt is only a prior, so the opening try still comes. Once a verify has
    // measured a second row at a whole step too, tries come only at the longest interval.
    StepCostModel dear(kShape);
    dear.observe(20, 0, 0, 20.0, StepCostModel::StepKind::prompt);
    dear.observe(1, 0, 0, 1.0);
    SpeculationGate tiny(8, dear);
    EXPECT_EQ(tiny.choose("context", 8), 0u);
    EXPECT_EQ(tiny.choose("context", 8), 1u);
    dear.observe(2, 0, 0, 2.0);
    tiny.record("context", 1, 1);
    size_t tries = 0;
    for (int step = 0; step < 1000; ++step) tries += tiny.choose("context", 8);
    EXPECT_EQ(tries, 1000u / 512u);
}

TEST(SpeculationGate, ASlowFirstDecodeStepDoesNotPriceEveryRowAtAWholeStep) {
    // The prompt's 20 rows took 1.95 steps (0.0975 a row); the first decode step took three steps' time (a
    // cold start, a busy machine), the others one. The prior prices the second row by the
    // prompt, whatever that first step took: the gate drafts.
    StepCostModel model(kShape);
    model.observe(20, 0, 0, 1.95, StepCostModel::StepKind::prompt);
    model.observe(1, 0, 0, 3.0);
    for (int i = 0; i < 10; ++i) model.observe(1, 0, 0, 1.0);
    EXPECT_NEAR(model.predict(2) - model.predict(1), 0.0975, 1e-6);
    SpeculationGate gate(8, model);
    EXPECT_GT(gate.choose("context", 8), 0u);
}

TEST(SpeculationGate, VerifyStepsOutweighWhatThePromptSaid) {
    // The prompt's rows looked cheap (5% of a step), but a verify of two rows costs 1.7 steps
    // (gpt-oss-20b in RAM: 1.69): at an acceptance of one half k = 1 loses. A wider verify, priced
    // hopefully at the prompt's rows, may be tried, once per width; timed on the line too, the
    // gate stops.
    StepCostModel model(kShape);
    model.observe(200, 0, 0, 1.0 + 199 * 0.05, StepCostModel::StepKind::prompt);
    model.observe(1, 0, 0, 1.0);
    SpeculationGate gate(8, model);
    EXPECT_GT(gate.choose("context", 8), 0u);
    for (int i = 0; i < 20; ++i) {
        model.observe(1, 0, 0, 1.0);
        model.observe(2, 0, 0, 1.7);
        gate.record("context", 1, static_cast<size_t>(i % 2));
    }
    EXPECT_NEAR(model.predict(2), 1.7, 0.1);
    size_t tries = 0, k = gate.choose("context", 8);
    for (; k > 0 && tries < 8; k = gate.choose("context", 8), ++tries) {
        EXPECT_GT(1 + k, model.widest_timed()) << "only a width never timed is tried on hope";
        model.observe(1 + k, 0, 0, 1.0 + 0.7 * static_cast<double>(k));
        gate.record("context", k, k / 2);
    }
    EXPECT_LT(tries, 8u);
    EXPECT_EQ(k, 0u);
}

// A prompt row at 0.45 of a step, 2-row verifies timed at 1.8 steps, drafts right 9 times in 10:
// the best timed length is k = 1 (1.9 tokens for 1.8 steps), and the line through the timed steps
// prices a 9-row verify at 7.4 steps. Priced at the prompt's rows past two, a wider verify pays
// more: it is tried. Where its rows really cost less (0.3 of a step past two, about what
// gpt-oss-20b in RAM measured: 9 rows 3.97 steps), the gate goes on drafting long; where they cost
// what the line said, it goes back to short drafts.
TEST(SpeculationGate, AVerifyWiderThanAnyTimedIsTriedWhereAPromptRowSaysItCouldPay) {
    for (const double row_past_two : {0.3, 0.8}) {
        StepCostModel model(kShape);
        model.observe(32, 0, 0, 32 * 0.45, StepCostModel::StepKind::prompt);
        SpeculationGate gate(8, model);
        for (int i = 0; i < 40; ++i) {
            model.observe(1, 0, 0, 1.0);
            model.observe(2, 0, 0, 1.8);
            gate.record("context", 1, i % 10 == 0 ? 0 : 1);
        }
        EXPECT_NEAR(model.predict(9), 7.4, 0.05);
        const auto verify_seconds = [&](size_t k) { return 1.8 + row_past_two * static_cast<double>(k - 1); };
        std::mt19937 draws(7);  // each draft right with probability 0.9, given the ones before it
        const auto accepted_of = [&](size_t k) {
            for (size_t j = 0; j < k; ++j)
                if (draws() % 10 == 0) return j;
            return k;
        };
        const size_t tried = gate.choose("context", 8);
        ASSERT_GT(tried, 1u) << row_past_two;
        model.observe(1 + tried, 0, 0, verify_seconds(tried));
        gate.record("context", tried, accepted_of(tried));
        size_t longest_late = 0;
        for (int i = 0; i < 30; ++i) {
            const size_t k = gate.choose("context", 8);
            if (i >= 20) longest_late = std::max(longest_late, k);
            if (k == 0) continue;
            model.observe(1 + k, 0, 0, verify_seconds(k));
            gate.record("context", k, accepted_of(k));
        }
        if (row_past_two < 0.5) {
            EXPECT_GE(longest_late, 4u) << "the wide verify was cheap: the gate drafts long";
        } else {
            EXPECT_LE(longest_late, 2u) << "the wide verifies cost what the line said: the gate went back to short drafts";
        }
    }
}

TEST(SpeculationGate, DraftsNeverAcceptedConvergeToPlainDecodingAndExplorationBacksOff) {
    StepCostModel model = costs(1.0, 0.05);
    SpeculationGate gate(8, model);
    EXPECT_GT(gate.choose("context", 8), 0u);  // the prior (1/2) on cheap rows: worth a try
    size_t verifies = 0;
    size_t first_plain = 0;
    for (size_t step = 0; step < 400; ++step) {
        const size_t k = gate.choose("context", 8);
        if (k == 0) {
            if (first_plain == 0) first_plain = step;
            continue;
        }
        ++verifies;
        gate.record("context", k, 0);
    }
    // Rows at 5% of a step stay worth a draft while its acceptance is above about 5%: a few
    // dozen rejections at most, about one plain step's time lost in all.
    EXPECT_LT(first_plain, 30u);
    // The rest are exploration tries of one draft, further and further apart (16, 32, 64, ...).
    EXPECT_LE(verifies, first_plain + 6);
    EXPECT_LT(gate.acceptance("context", 1), 0.1);
}

TEST(SpeculationGate, ASourceThatStartsToBeRightRecovers) {
    StepCostModel model = costs(1.0, 0.05);
    SpeculationGate gate(8, model);
    for (int i = 0; i < 30; ++i) {
        const size_t k = gate.choose("context", 8);
        if (k > 0) gate.record("context", k, 0);
    }
    size_t longest = 0;
    for (size_t step = 0; step < 300; ++step) {
        const size_t k = gate.choose("context", 8);
        if (k > 0) gate.record("context", k, k);  // every draft right from now on
        longest = std::max(longest, k);
    }
    EXPECT_EQ(longest, 8u);
}

TEST(SpeculationGate, CheapRowsAndHighAcceptanceDraftLongExpensiveRowsNever) {
    StepCostModel cheap = costs(1.0, 0.05);
    SpeculationGate gate(8, cheap);
    for (int i = 0; i < 50; ++i) gate.record("context", 8, 8);
    EXPECT_EQ(gate.choose("context", 8), 8u);
    EXPECT_EQ(gate.choose("context", 3), 3u);  // never past the limit given

    StepCostModel whole = costs(1.0, 1.0);  // a row costs as much as a step
    SpeculationGate never(8, whole);
    for (int i = 0; i < 50; ++i) never.record("context", 8, 7);  // even at high acceptance
    EXPECT_EQ(never.choose("context", 8), 0u);
}

TEST(SpeculationGate, ExpertsReadFromDiskShortenTheDrafts) {
    StepCostModel resident = costs(1.0, 0.05);
    StepCostModel streaming = costs(1.0, 0.05, 0.05, 0.3);
    SpeculationGate in_ram(8, resident), streamed(8, streaming);
    // Acceptance that falls with the position (0.8, 0.75, 0.67, 0.5, then none).
    for (int i = 0; i < 60; ++i) {
        in_ram.record("context", 8, static_cast<size_t>(i % 5));
        streamed.record("context", 8, static_cast<size_t>(i % 5));
    }
    const size_t k_ram = in_ram.choose("context", 8);
    const size_t k_disk = streamed.choose("context", 8);
    EXPECT_GT(k_ram, 0u);
    EXPECT_LT(k_disk, k_ram);
}

TEST(SpeculationGate, ADraftNearBreakEvenIsNotTakenAClearGainIs) {
    // A 2-row verify at 1.57 plain steps and drafts right 58% of the time: 1.58 tokens for 1.57
    // steps, a 1% gain on paper that the estimates' noise turns either way (the gpt-oss-120b
    // shape under an 8 GiB cap decoded at 0.962x of plain drafting there).
    StepCostModel model = costs(1.0, 0.57);
    SpeculationGate near(8, model), clear(8, model);
    for (int i = 0; i < 100; ++i) {
        near.record("context", 1, (i * 58 / 100) != ((i + 1) * 58 / 100) ? 1 : 0);
        clear.record("context", 1, i % 5 != 0 ? 1 : 0);  // right 80% of the time: 1.8 tokens, 15% more
    }
    EXPECT_NEAR(near.acceptance("context", 1), 0.58, 0.05);
    EXPECT_EQ(near.choose("context", 1), 0u);
    EXPECT_EQ(clear.choose("context", 1), 1u);
}

TEST(SpeculationGate, AnUntriedPositionIsExpectedToDoAsTheOneBeforeIt) {
    // Every draft of one token right, a second row at 0.59 of a step (gpt-oss-20b in RAM: a 2-row
    // verify at 1.59 steps): position 2 was never tried, and it is priced like position 1, so the
    // gate drafts further. With a prior of 1/2 for it, k = 3 (2.73 tokens for 2.77 steps) never
    // beat k = 1 (1.99 tokens for 1.59) and the gate stayed at one draft for good.
    StepCostModel model = costs(1.0, 0.59);
    SpeculationGate gate(8, model);
    for (int i = 0; i < 50; ++i) gate.record("context", 1, 1);
    EXPECT_GT(gate.acceptance("context", 1), 0.95);
    EXPECT_NEAR(gate.acceptance("context", 2), gate.acceptance("context", 1), 0.01);
    EXPECT_GT(gate.choose("context", 8), 1u);
    // Where position 2 was tried and failed, it counts for itself.
    SpeculationGate tried(8, model);
    for (int i = 0; i < 50; ++i) tried.record("context", 2, 1);
    EXPECT_LT(tried.acceptance("context", 2), 0.1);
    EXPECT_EQ(tried.choose("context", 8), 1u);
}

TEST(SpeculationGate, ARequestStartsFromTheRunsAcceptanceWorthAFewTries) {
    // Rows at 0.65 of a step (gpt-oss-20b in RAM): on its prior of one half a new request's gate
    // does not draft, so each short request of a run paid its own ramp-up. Seeded from what the
    // run's earlier requests saw (every draft right), it drafts long at its first step.
    StepCostModel model = costs(1.0, 0.65);
    AcceptanceHistory history;
    SpeculationGate fresh(8, model);
    EXPECT_EQ(fresh.choose("context", 8), 0u);
    {
        SpeculationGate earlier(8, model, &history);
        for (int i = 0; i < 100; ++i) earlier.record("context", 8, 8);
    }
    SpeculationGate next(8, model, &history);
    EXPECT_GT(next.choose("context", 8), 2u);
    // Worth a few tries only: this request's own rejections soon outweigh it.
    for (int i = 0; i < 6; ++i) next.record("context", 1, 0);
    EXPECT_LT(next.acceptance("context", 1), 0.5);
}

TEST(SpeculationGate, ExpectedTokensAreOnePlusTheRunsOfAcceptance) {
    EXPECT_DOUBLE_EQ(SpeculationGate::expected_tokens({0.5, 0.5}, 0), 1.0);
    EXPECT_DOUBLE_EQ(SpeculationGate::expected_tokens({0.5, 0.5}, 2), 1.0 + 0.5 + 0.25);
    EXPECT_DOUBLE_EQ(SpeculationGate::expected_tokens({1.0, 1.0, 1.0}, 3), 4.0);
}

}  // namespace
}  // namespace stormo
