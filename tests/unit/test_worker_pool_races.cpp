// The worker pool's hand-offs under ThreadSanitizer (tsan.WorkerPoolRaces): workers that catch
// the next job while still spinning, workers that had gone to sleep, a caller that spins or sleeps
// for the last worker, failures, and pools destroyed while their workers spin.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "compute/worker_pool.hpp"

namespace stormo {
namespace {

// Every index once per call, whether the workers were spinning (back-to-back calls) or asleep
// (a pause longer than their spin before some calls).
TEST(WorkerPoolRaces, BackToBackAndAfterSleepEveryIndexOnce) {
    WorkerPool pool(3);
    std::vector<int> hits(257);
    for (int call = 0; call < 600; ++call) {
        if (call % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        pool.parallel_for(hits.size(), 1, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) ++hits[i];  // chunks are disjoint: no atomics needed
        });
    }
    for (int h : hits) ASSERT_EQ(h, 600);
}

// A failing chunk is reported to its caller; the next calls see whole, fresh jobs.
TEST(WorkerPoolRaces, FailuresDoNotLeakIntoTheNextCall) {
    WorkerPool pool(2);
    for (int call = 0; call < 300; ++call) {
        std::atomic<size_t> covered{0};
        const bool fail = call % 3 == 0;
        auto job = [&](size_t b, size_t e) {
            if (fail && b == 0) throw std::runtime_error("chunk 0 failed");
            covered += e - b;
        };
        if (fail) {
            EXPECT_THROW(pool.parallel_for(64, 1, job), std::runtime_error);
        } else {
            pool.parallel_for(64, 1, job);
            ASSERT_EQ(covered.load(), 64u);
        }
    }
}

// Destroying a pool whose workers are still spinning after their last job joins them cleanly.
TEST(WorkerPoolRaces, DestroyedWhileWorkersSpin) {
    for (int k = 0; k < 50; ++k) {
        std::atomic<size_t> sum{0};
        {
            WorkerPool pool(3);
            pool.parallel_for(32, 1, [&](size_t b, size_t e) { sum += e - b; });
        }
        ASSERT_EQ(sum.load(), 32u);
    }
}

}  // namespace
}  // namespace stormo
