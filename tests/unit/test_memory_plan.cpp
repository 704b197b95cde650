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

TEST(MemoryPlan, ThisProcessHasAResidentSetAndSomeMemoryIsAvailable) {
    EXPECT_GT(current_rss_bytes(), 0u);
    EXPECT_GE(peak_rss_bytes(), current_rss_bytes());
    const AvailableMemory m = available_memory();
    EXPECT_GT(m.bytes, 0u);
    EXPECT_FALSE(m.source.empty());
}

}  // namespace
}  // namespace stormo
