// How a step's experts share the pool on the expert-parallel path: most rows first, and the
// path taken only when that keeps the threads about equally busy.
#include <gtest/gtest.h>

#include "runtime/expert_schedule.hpp"

namespace stormo::testing {
namespace {

TEST(ExpertSchedule, TakesTheLargestExpertsFirstAndKeepsTiesInOrder) {
    const std::vector<size_t> rows{1, 3, 1, 2, 3};
    const ExpertSchedule s = schedule_experts(rows, 2);
    EXPECT_EQ(s.order, (std::vector<size_t>{1, 4, 3, 0, 2}));
}

TEST(ExpertSchedule, SharesADecodeBatchButNotOneBigExpert) {
    // A decode step of 8 sequences: about 20 experts of 1 to 4 rows, work 2 to 5 each.
    const std::vector<size_t> batch{1, 2, 1, 1, 4, 2, 1, 1, 3, 1, 2, 1, 1, 2, 1, 1, 3, 1, 2, 1};
    EXPECT_TRUE(schedule_experts(batch, 2).balanced);
    // A sequence alone: 4 experts of one row each, two a thread.
    EXPECT_TRUE(schedule_experts(std::vector<size_t>{1, 1, 1, 1}, 2).balanced);
    // One expert chosen by most of a prompt's rows: 61 + 3 x 2 = 67 of work, 33.5 a thread even,
    // and the big one alone is 61 (1.82x): its matrices are split over the pool instead.
    EXPECT_FALSE(schedule_experts(std::vector<size_t>{60, 1, 1, 1}, 2).balanced);
    // Three equal experts on two threads: 2 of 3 on one thread, 1.33x the even share.
    EXPECT_FALSE(schedule_experts(std::vector<size_t>{4, 4, 4}, 2).balanced);
    // One expert, or one thread: nothing to share.
    EXPECT_FALSE(schedule_experts(std::vector<size_t>{3}, 2).balanced);
    EXPECT_FALSE(schedule_experts(std::vector<size_t>{1, 1}, 1).balanced);
    EXPECT_EQ(schedule_experts(std::vector<size_t>{}, 2).order.size(), 0u);
}

}  // namespace
}  // namespace stormo::testing
