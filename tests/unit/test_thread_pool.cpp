// The thread pool and the pooled matmul: every index exactly once, exceptions reported without
// losing the pool, and bit-identical results whatever the thread count.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "compute/worker_pool.hpp"
#include "kernel_test_support.hpp"
#include "stormo/kernels.hpp"

namespace stormo {
namespace {

TEST(ThreadPool, SizeCountsTheCaller) {
    EXPECT_EQ(WorkerPool(0).size(), 1u);
    EXPECT_EQ(WorkerPool(1).size(), 1u);
    EXPECT_EQ(WorkerPool(3).size(), 3u);
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnceInContiguousChunks) {
    WorkerPool pool(3);
    for (size_t n : {size_t{1}, size_t{2}, size_t{5}, size_t{97}, size_t{10007}}) {
        for (size_t grain : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{20000}}) {
            std::vector<std::atomic<int>> hits(n);
            std::mutex m;
            std::vector<std::pair<size_t, size_t>> chunks;
            pool.parallel_for(n, grain, [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
                std::lock_guard<std::mutex> lock(m);
                chunks.emplace_back(b, e);
            });
            for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n " << n << " grain " << grain << " index " << i;
            for (const auto& [b, e] : chunks) {
                EXPECT_LT(b, e);
                // Chunks hold at least `grain` indices unless the whole range is smaller.
                if (grain > 0 && n >= grain) {
                    EXPECT_GE(e - b, grain);
                }
            }
        }
    }
    pool.parallel_for(0, 1, [](size_t, size_t) { FAIL() << "called for an empty range"; });
}

TEST(ThreadPool, UsesSeveralThreadsForLargeRanges) {
    WorkerPool pool(2);
    std::mutex m;
    std::vector<std::thread::id> ids;
    for (int attempt = 0; attempt < 50; ++attempt) {
        pool.parallel_for(64, 1, [&](size_t, size_t) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            std::lock_guard<std::mutex> lock(m);
            ids.push_back(std::this_thread::get_id());
        });
        std::sort(ids.begin(), ids.end());
        if (std::unique(ids.begin(), ids.end()) - ids.begin() >= 2) return;
    }
    FAIL() << "a pool of 2 never ran a chunk on its worker";
}

TEST(ThreadPool, ExceptionIsReportedAndThePoolStillWorks) {
    WorkerPool pool(3);
    EXPECT_THROW(pool.parallel_for(1000, 10,
                                   [](size_t b, size_t e) {
                                       if (b <= 500 && 500 < e) throw std::runtime_error("chunk with 500");
                                   }),
                 std::runtime_error);
    std::atomic<size_t> sum{0};
    pool.parallel_for(1000, 10, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) sum += i;
    });
    EXPECT_EQ(sum.load(), 999u * 1000u / 2u);
    // The single-thread path reports the same way.
    WorkerPool one(1);
    EXPECT_THROW(one.parallel_for(10, 1, [](size_t, size_t) { throw std::logic_error("x"); }), std::logic_error);
}

TEST(ThreadPool, NestedCallRunsInlineInsteadOfDeadlocking) {
    WorkerPool pool(2);
    std::atomic<size_t> inner{0};
    pool.parallel_for(8, 1, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i)
            pool.parallel_for(10, 1, [&](size_t ib, size_t ie) { inner += ie - ib; });
    });
    EXPECT_EQ(inner.load(), 80u);
}

// CPU time this process used, user and system, all threads.
double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Between calls the workers spin for at most a fraction of a millisecond, then sleep: a pool of 3
// kept alive (idle) for 300 ms right after a burst of calls uses almost no CPU. A worker that
// kept spinning would burn about 600 ms of CPU time here.
TEST(ThreadPool, WorkersDoNotSpinBetweenCalls) {
    WorkerPool pool(3);
    std::atomic<size_t> sum{0};
    for (int call = 0; call < 200; ++call)
        pool.parallel_for(64, 1, [&](size_t b, size_t e) { sum += e - b; });
    EXPECT_EQ(sum.load(), 200u * 64u);
    const double before = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double used = process_cpu_seconds() - before;
    std::printf("[ measured ] idle pool of 3: %.2f ms of CPU in 300 ms\n", used * 1e3);
    EXPECT_LT(used, 0.03) << "the idle pool used CPU: a worker is spinning";
}

TEST(ThreadPool, PhysicalCoreCountIsPlausible) {
    const size_t cores = physical_core_count();
    EXPECT_GE(cores, 1u);
    EXPECT_LE(cores, std::max(1u, std::thread::hardware_concurrency()));
}

// The pooled matmul over 1, 2 and 3 threads (and no pool) on an odd-sized matrix: same bits.
TEST(ThreadPool, CpusByCoreListsEachAllowedCpuOnceDistinctCoresFirst) {
    const std::vector<int> cpus = cpus_by_core();
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    EXPECT_EQ(cpus.size(), static_cast<size_t>(CPU_COUNT(&allowed)));
    for (const int cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu, &allowed)) << cpu;
    EXPECT_EQ(std::set<int>(cpus.begin(), cpus.end()).size(), cpus.size());
    EXPECT_GE(cpus.size(), physical_core_count());
}

TEST(ThreadPool, PinnedWorkersRunOnlyOnTheirCpuAndTheCallerStaysFree) {
    const std::vector<int> cpus = cpus_by_core();
    if (cpus.size() < 2) GTEST_SKIP() << "one CPU allowed: nothing to pin apart";
    cpu_set_t before;
    CPU_ZERO(&before);
    ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
    WorkerPool pool(3, true);
    ASSERT_EQ(pool.pin_error(), "");
    ASSERT_EQ(pool.pinned_cpus().size(), 2u);
    // Worker k is on cpus[k + 1], wrapping: the first CPU is the caller's.
    EXPECT_EQ(pool.pinned_cpus()[0], cpus[1]);
    EXPECT_EQ(pool.pinned_cpus()[1], cpus[2 % cpus.size()]);
    const std::thread::id caller = std::this_thread::get_id();
    std::mutex m;
    std::vector<int> worker_cpus;
    for (int round = 0; round < 50; ++round)
        pool.parallel_for(1 << 12, 1, [&](size_t, size_t) {
            if (std::this_thread::get_id() == caller) return;
            const int cpu = sched_getcpu();
            std::lock_guard lock(m);
            worker_cpus.push_back(cpu);
        });
    for (const int cpu : worker_cpus)
        EXPECT_NE(std::find(pool.pinned_cpus().begin(), pool.pinned_cpus().end(), cpu), pool.pinned_cpus().end()) << cpu;
    cpu_set_t after;
    CPU_ZERO(&after);
    ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
    EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "the calling thread's mask must not change";
}

TEST(ThreadPool, UnpinnedPoolsPinNothing) {
    WorkerPool pool(3);
    EXPECT_TRUE(pool.pinned_cpus().empty());
    EXPECT_EQ(pool.pin_error(), "");
}

TEST(ThreadPool, MatmulIsBitIdenticalAcrossThreadCounts) {
    std::mt19937 rng(3);
    WorkerPool p1(1), p2(2), p3(3);
    const size_t rows = 1031;
    const size_t cols = 160;
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            if (f == WeightFormat::MXFP4 && l == Layout::in_out) continue;
            SCOPED_TRACE(std::string(weight_format_name(f)) + (l == Layout::out_in ? " out_in" : " in_out"));
            const testing::TestMatrix m = testing::random_matrix(f, l, rows, cols, rng);
            for (size_t n_x : {size_t{1}, size_t{3}}) {
                const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                std::vector<float> y0(n_x * rows), y1(n_x * rows), y2(n_x * rows), y3(n_x * rows);
                matmul(Compute{&reference_kernels(), nullptr}, m.view(), x.data(), n_x, y0.data());
                matmul(Compute{&reference_kernels(), &p1}, m.view(), x.data(), n_x, y1.data());
                matmul(Compute{&reference_kernels(), &p2}, m.view(), x.data(), n_x, y2.data());
                matmul(Compute{&reference_kernels(), &p3}, m.view(), x.data(), n_x, y3.data());
                EXPECT_EQ(std::memcmp(y0.data(), y1.data(), y0.size() * 4), 0);
                EXPECT_EQ(std::memcmp(y0.data(), y2.data(), y0.size() * 4), 0);
                EXPECT_EQ(std::memcmp(y0.data(), y3.data(), y0.size() * 4), 0);
            }
        }
    }
}

// The integer road through the pool: quantized once, split by output rows, same bits.
TEST(ThreadPool, IntegerRoadIsBitIdenticalAcrossThreadCounts) {
    std::mt19937 rng(4);
    const KernelTable& int8 = reference_kernels();  // with Compute::int8_activations below
    WorkerPool p1(1), p2(2), p3(3);
    const testing::TestMatrix m = testing::random_matrix(WeightFormat::MXFP4, Layout::out_in, 1031, 160, rng);
    for (size_t n_x : {size_t{1}, size_t{3}}) {
        const std::vector<float> x = testing::random_floats(n_x * 160, rng);
        std::vector<float> y0(n_x * 1031), y1(n_x * 1031), y2(n_x * 1031), y3(n_x * 1031);
        matmul(Compute{&int8, nullptr, true}, m.view(), x.data(), n_x, y0.data());
        matmul(Compute{&int8, &p1, true}, m.view(), x.data(), n_x, y1.data());
        matmul(Compute{&int8, &p2, true}, m.view(), x.data(), n_x, y2.data());
        matmul(Compute{&int8, &p3, true}, m.view(), x.data(), n_x, y3.data());
        EXPECT_EQ(std::memcmp(y0.data(), y1.data(), y0.size() * 4), 0);
        EXPECT_EQ(std::memcmp(y0.data(), y2.data(), y0.size() * 4), 0);
        EXPECT_EQ(std::memcmp(y0.data(), y3.data(), y0.size() * 4), 0);
    }
}

// Several matrices over the same rows in one call of the pool: every output has the bits of its
// own matmul, on both roads (two activation block sizes here: 32 and the K-quants' 256), for any
// thread count, and with an in_out matrix among them (which the call runs one by one).
TEST(ThreadPool, MatmulManyGivesEachMatrixItsOwnMatmulsBits) {
    std::mt19937 rng(6);
    const size_t cols = 512;
    struct Shape {
        WeightFormat format;
        Layout layout;
        size_t rows;
    };
    const std::vector<std::vector<Shape>> lists = {
        {{WeightFormat::BF16, Layout::out_in, 37}, {WeightFormat::GGUF_Q4_K, Layout::out_in, 100},
         {WeightFormat::MXFP4, Layout::out_in, 64}, {WeightFormat::GGUF_Q8_0, Layout::out_in, 17}},
        {{WeightFormat::GGUF_MXFP4, Layout::out_in, 300}, {WeightFormat::GGUF_MXFP4, Layout::out_in, 300}},
        {{WeightFormat::F32, Layout::in_out, 33}, {WeightFormat::GGUF_Q6_K, Layout::out_in, 48}},
    };
    WorkerPool p1(1), p2(2), p3(3);
    for (const auto& list : lists) {
        std::vector<testing::TestMatrix> matrices;
        for (const Shape& s : list) matrices.push_back(testing::random_matrix(s.format, s.layout, s.rows, cols, rng));
        for (bool int8 : {false, true})
            for (size_t n_x : {size_t{1}, size_t{5}}) {
                const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                std::vector<std::vector<float>> want;
                for (const auto& m : matrices) {
                    want.emplace_back(n_x * m.rows);
                    matmul(Compute{&reference_kernels(), nullptr, int8}, m.view(), x.data(), n_x, want.back().data());
                }
                for (WorkerPool* pool : {&p1, &p2, &p3}) {
                    std::vector<std::vector<float>> got;
                    std::vector<MatmulOut> outs;
                    for (const auto& m : matrices) got.emplace_back(n_x * m.rows, -1.0f);
                    for (size_t i = 0; i < matrices.size(); ++i) outs.push_back({matrices[i].view(), got[i].data()});
                    matmul_many(Compute{&reference_kernels(), pool, int8}, outs, x.data(), n_x);
                    for (size_t i = 0; i < matrices.size(); ++i)
                        EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * 4), 0)
                            << "matrix " << i << " (" << weight_format_name(list[i].format) << "), int8 " << int8
                            << ", n_x " << n_x << ", " << pool->size() << " threads";
                }
            }
    }
}

TEST(ThreadPool, MatmulWithoutAKernelPoisonsTheOutput) {
    testing::TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.layout = Layout::in_out;
    m.rows = 4;
    m.cols = 32;
    m.data.assign(64, 0x11);
    m.scales.assign(4, 127);
    std::vector<float> x(32, 1.0f), y(4, 0.0f);
    WorkerPool pool(2);
    matmul(Compute{&reference_kernels(), &pool}, m.view(), x.data(), 1, y.data());
    for (float v : y) EXPECT_TRUE(std::isnan(v));
}

// A table with an empty entry falls back to the reference kernel.
TEST(ThreadPool, MatmulFallsBackToTheReferenceForEmptyEntries) {
    KernelTable sparse;  // every entry nullptr
    std::mt19937 rng(5);
    const testing::TestMatrix m = testing::random_matrix(WeightFormat::BF16, Layout::out_in, 50, 40, rng);
    const std::vector<float> x = testing::random_floats(40, rng);
    std::vector<float> a(50), b(50);
    WorkerPool pool(2);
    matmul(Compute{&sparse, &pool}, m.view(), x.data(), 1, a.data());
    matmul(Compute{&reference_kernels(), nullptr}, m.view(), x.data(), 1, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

}  // namespace
}  // namespace stormo
