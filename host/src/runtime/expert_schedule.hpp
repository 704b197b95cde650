#pragma once
// How a step's experts share the worker pool when each is computed whole on one thread (the
// expert-parallel path of forward.cpp): the order the threads take them in, and whether that
// keeps the threads about equally busy. Otherwise each expert's matrices are split over the pool
// instead, one expert after another, with a wait for the slowest thread after every matrix.
#include <cstddef>
#include <span>
#include <vector>

namespace stormo {

struct ExpertSchedule {
    // Indexes into the experts, most rows first: a thread that finishes takes the next one, so the
    // last to start are the smallest (longest processing time first).
    std::vector<size_t> order;
    // The busiest thread of that schedule has at most kExpertScheduleSlack more work than an even
    // share. An expert's work is its rows plus one, for reading and unpacking its weights once.
    bool balanced = false;
};
inline constexpr double kExpertScheduleSlack = 0.125;

// `rows[i]`: how many rows chose expert i; `threads`: the pool's size.
ExpertSchedule schedule_experts(std::span<const size_t> rows, size_t threads);

}  // namespace stormo
