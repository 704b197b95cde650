// The expert budget: asked sizes, "all", and the auto plan (available - KV - reserve).
#include <gtest/gtest.h>

#include "runtime/memory_plan.hpp"

namespace stormo {
namespace {

constexpr uint64_t GiB = uint64_t{1} << 30;

TEST(MemoryPlan, AllKeepsEveryExpert) {
    const ExpertBudget b = plan_expert_budget(SizeSpec{SizeSpec::Kind::all, 0}, 10 * GiB, GiB, {GiB, "test"});
    EXPECT_TRUE(b.all);
    EXPECT_EQ(b.bytes, 10 * GiB);
}

TEST(MemoryPlan, AskedSizeStreamsBelowTheTotalAndHoldsAllAtOrAbove) {
    ExpertBudget b = plan_expert_budget(SizeSpec{SizeSpec::Kind::bytes, 2 * GiB}, 10 * GiB, GiB, {64 * GiB, "test"});
    EXPECT_FALSE(b.all);
    EXPECT_EQ(b.bytes, 2 * GiB);
    b = plan_expert_budget(SizeSpec{SizeSpec::Kind::bytes, 10 * GiB}, 10 * GiB, GiB, {GiB, "test"});
    EXPECT_TRUE(b.all);
}

TEST(MemoryPlan, AutoIsAvailableMinusKvMinusReserve) {
    const uint64_t available = 8 * GiB;
    const uint64_t kv = GiB / 4;
    const ExpertBudget b = plan_expert_budget(SizeSpec{}, 20 * GiB, kv, {available, "cgroup v1 test"});
    EXPECT_FALSE(b.all);
    EXPECT_EQ(b.bytes, available - kv - memory_reserve(available));
    EXPECT_NE(b.reason.find("cgroup v1 test"), std::string::npos) << b.reason;
    EXPECT_NE(b.reason.find("reserve"), std::string::npos) << b.reason;
    // Enough room for every expert: all resident.
    EXPECT_TRUE(plan_expert_budget(SizeSpec{}, GiB, kv, {available, "x"}).all);
    // Nothing left: a zero budget (the store then refuses it as below its minimum).
    EXPECT_EQ(plan_expert_budget(SizeSpec{}, 20 * GiB, kv, {GiB / 2, "x"}).bytes, 0u);
}

// Asking for more resident experts than the memory holds is refused before anything is read (a
// 61 GB qwen3-30b-a3b with `--expert-budget all` on a 23 GiB machine was OOM-killed).
TEST(MemoryPlan, AnAskedBudgetBeyondTheAvailableMemoryIsRefused) {
    const AvailableMemory available{20 * GiB, "MemAvailable"};
    const SizeSpec all{SizeSpec::Kind::all, 0};
    auto refused = check_budget_fits(all, plan_expert_budget(all, 58 * GiB, GiB, available), 58 * GiB, available,
                                     "--expert-budget");
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().kind, ErrorKind::resource);
    EXPECT_NE(refused.error().message.find("--expert-budget all"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("58.00 GiB"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("20.00 GiB is available (MemAvailable)"), std::string::npos)
        << refused.error().message;
    const SizeSpec big{SizeSpec::Kind::bytes, 32 * GiB};
    EXPECT_FALSE(check_budget_fits(big, plan_expert_budget(big, 58 * GiB, GiB, available), 58 * GiB, available, "x"));
    // What fits is fine, and a size above the total only keeps the total.
    EXPECT_TRUE(check_budget_fits(all, plan_expert_budget(all, 8 * GiB, GiB, available), 8 * GiB, available, "x"));
    EXPECT_TRUE(check_budget_fits(big, plan_expert_budget(big, 8 * GiB, GiB, available), 8 * GiB, available, "x"));
    const SizeSpec automatic{};
    EXPECT_TRUE(check_budget_fits(automatic, plan_expert_budget(automatic, 58 * GiB, GiB, available), 58 * GiB,
                                  available, "x"));
}

// Several sequences (a server's slots): as many KV caches as fit beside the reserve and a minimum
// expert budget when left to the memory, an asked number refused by name when they do not fit.
TEST(MemoryPlan, SequencesLeftToTheMemoryFitBesideAnExpertBudget) {
    const AvailableMemory available{16 * GiB, "MemAvailable"};
    const uint64_t room = 16 * GiB - memory_reserve(16 * GiB) - 2 * GiB;
    // Room for 3 KV caches of a third of the room each (just under: rounding).
    const uint64_t kv = room / 3;
    auto three = plan_sequences(0, 4, "--parallel", kv, 4096, 2 * GiB, available);
    ASSERT_TRUE(three) << three.error().message;
    EXPECT_EQ(three->sequences, 3u);
    EXPECT_NE(three->reason.find("--parallel 3 (chosen from memory: KV 3 x"), std::string::npos) << three->reason;
    EXPECT_NE(three->reason.find("a context of 4096"), std::string::npos) << three->reason;
    EXPECT_NE(three->reason.find("2.00 GiB expert budget"), std::string::npos) << three->reason;
    // Room for many: the default's cap, said.
    auto capped = plan_sequences(0, 4, "--parallel", GiB / 64, 4096, 2 * GiB, available);
    ASSERT_TRUE(capped);
    EXPECT_EQ(capped->sequences, 4u);
    EXPECT_NE(capped->reason.find("at most 4 unless asked"), std::string::npos) << capped->reason;
    // Room for none: one, as a single-session run always was.
    auto one = plan_sequences(0, 4, "--parallel", 64 * GiB, 4096, 2 * GiB, available);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->sequences, 1u);
}

TEST(MemoryPlan, AskedSequencesThatDoNotFitAreRefusedByName) {
    const AvailableMemory available{16 * GiB, "MemAvailable"};
    const uint64_t room = 16 * GiB - memory_reserve(16 * GiB) - 2 * GiB;
    auto refused = plan_sequences(8, 4, "--parallel", room / 3, 4096, 2 * GiB, available);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, ErrorKind::resource);
    EXPECT_NE(refused.error().message.find("--parallel 8: KV 8 x"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("ask for --parallel 3 or less"), std::string::npos) << refused.error().message;
    // Asked and fitting: taken, past the default's cap too.
    auto five = plan_sequences(5, 4, "--parallel", room / 6, 4096, 2 * GiB, available);
    ASSERT_TRUE(five) << five.error().message;
    EXPECT_EQ(five->sequences, 5u);
    // One asked is never refused here: the context's own check decides, as before.
    auto one = plan_sequences(1, 4, "--parallel", 64 * GiB, 4096, 2 * GiB, available);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->sequences, 1u);
}

TEST(MemoryPlan, TheRunPlanReservesTheKvOfEverySequence) {
    auto config = ModelConfig::parse("{}", "config.json");
    ASSERT_TRUE(config);
    RunMemoryRequest r;
    r.config = &*config;
    KvBufferDecl kv;
    kv.floats_per_position = 1024;
    r.kv = {kv, kv};
    r.context = 1024;
    r.context_origin = "--context";
    r.expert_bytes = 64 * GiB;
    r.available = {16 * GiB, "MemAvailable"};
    r.sequences = 3;
    auto planned = plan_run_memory(r);
    ASSERT_TRUE(planned) << planned.error().message;
    EXPECT_EQ(planned->sequences, 3u);
    EXPECT_EQ(planned->kv_bytes_per_sequence, kv_cache_bytes(r.kv, 1024));
    EXPECT_EQ(planned->kv_bytes, 3 * planned->kv_bytes_per_sequence);
    // The auto expert budget is what the three KV caches leave.
    EXPECT_EQ(planned->budget.bytes, 16 * GiB - planned->kv_bytes - memory_reserve(16 * GiB));
}

TEST(MemoryPlan, ThisProcessHasAResidentSetAndSomeMemoryIsAvailable) {
    EXPECT_GT(current_rss_bytes(), 0u);
    EXPECT_GE(peak_rss_bytes(), current_rss_bytes());
    const AvailableMemory m = available_memory();
    EXPECT_GT(m.bytes, 0u);
    EXPECT_FALSE(m.source.empty());
}

}  // namespace
}  // namespace stormo
