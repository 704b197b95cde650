// The persistent pool behind every parallel kernel call. Workers sleep on a condition variable
// between calls (nothing spins while the engine is idle). A call cuts [0, n) into contiguous
// chunks that the workers and the calling thread claim one at a time from an atomic counter, so
// a slow or preempted thread on a shared machine delays only the chunk it holds.
//
// Workers are not pinned by default: under a hypervisor the vCPU numbers map to nothing stable,
// and on a machine shared with other processes a pinned worker waits for its one vCPU where an
// unpinned one would run on the other; `pin_threads: true` pins them (docs/benchmarks.md has
// the measurement that chose the default). Results never depend on which thread runs a chunk.
#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "kernels/worker_pool.hpp"

namespace stormo {

namespace {
// Chunks per thread: enough to rebalance around a preempted thread, few enough to keep the
// per-chunk cost (one atomic claim, one call) negligible.
constexpr size_t kChunksPerThread = 4;
}  // namespace

struct WorkerPool::State {
    std::mutex mutex;
    std::condition_variable wake;  // workers: a new job or shutdown
    std::condition_variable idle;  // caller: the last active worker left the job
    std::vector<std::thread> workers;
    bool stopping = false;
    uint64_t generation = 0;  // bumped for every job posted to the workers

    // The current job. Workers read it only while counted in `active`.
    const std::function<void(size_t, size_t)>* fn = nullptr;
    size_t n = 0;
    size_t n_chunks = 0;
    std::atomic<size_t> next_chunk{0};
    size_t active = 0;
    std::atomic<bool> failed{false};
    std::exception_ptr error;

    // Set while a call uses the workers; a nested or concurrent call then runs inline.
    std::atomic<bool> busy{false};

    std::vector<int> pinned_cpus;
    std::string pin_error;

    void run_chunks();
    void worker_loop();
};

// Claims chunks until none is left. After a failure the remaining chunks are claimed but skipped.
void WorkerPool::State::run_chunks() {
    for (;;) {
        const size_t k = next_chunk.fetch_add(1, std::memory_order_relaxed);
        if (k >= n_chunks) return;
        if (failed.load(std::memory_order_relaxed)) continue;
        const size_t begin = n * k / n_chunks;
        const size_t end = n * (k + 1) / n_chunks;
        try {
            (*fn)(begin, end);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!error) error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
        }
    }
}

void WorkerPool::State::worker_loop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
        wake.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping) return;
        seen = generation;
        // A worker that wakes after the caller drained every chunk stays out of the job, so the
        // caller never waits for a thread that has nothing to do.
        if (next_chunk.load(std::memory_order_relaxed) >= n_chunks) continue;
        ++active;
        lock.unlock();
        run_chunks();
        lock.lock();
        if (--active == 0) idle.notify_one();
    }
}

namespace {

// Pins `thread` to `cpu`; an error message, or "" on success.
std::string pin(std::thread& thread, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const int rc = pthread_setaffinity_np(thread.native_handle(), sizeof set, &set);
    return rc == 0 ? std::string() : "cannot pin a worker to CPU " + std::to_string(cpu) + ": " + std::strerror(rc);
}

}  // namespace

WorkerPool::WorkerPool(size_t n_threads, bool pin_workers) : state_(new State) {
    const size_t n_workers = n_threads > 1 ? n_threads - 1 : 0;
    state_->workers.reserve(n_workers);
    for (size_t i = 0; i < n_workers; ++i) {
        try {
            state_->workers.emplace_back([s = state_] { s->worker_loop(); });
        } catch (const std::system_error&) {
            break;  // the OS refused another thread: run with the ones we have (size() says so)
        }
    }
    if (!pin_workers || state_->workers.empty()) return;
    const std::vector<int> cpus = cpus_by_core();
    if (cpus.empty()) {
        state_->pin_error = "cannot pin the workers: no CPU found in this process's affinity mask";
        return;
    }
    for (size_t i = 0; i < state_->workers.size(); ++i) {
        const int cpu = cpus[(i + 1) % cpus.size()];
        if (std::string error = pin(state_->workers[i], cpu); !error.empty()) {
            state_->pin_error = std::move(error);
            return;
        }
        state_->pinned_cpus.push_back(cpu);
    }
}

const std::vector<int>& WorkerPool::pinned_cpus() const { return state_->pinned_cpus; }

const std::string& WorkerPool::pin_error() const { return state_->pin_error; }

WorkerPool::~WorkerPool() {
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->stopping = true;
    }
    state_->wake.notify_all();
    for (std::thread& t : state_->workers) t.join();
    delete state_;
}

size_t WorkerPool::size() const { return state_->workers.size() + 1; }

void WorkerPool::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
    if (n == 0) return;
    State& s = *state_;
    const size_t max_chunks = n / std::max<size_t>(grain, 1);
    if (s.workers.empty() || max_chunks <= 1 || s.busy.exchange(true, std::memory_order_acquire)) {
        fn(0, n);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.fn = &fn;
        s.n = n;
        s.n_chunks = std::min(max_chunks, size() * kChunksPerThread);
        s.next_chunk.store(0, std::memory_order_relaxed);
        s.failed.store(false, std::memory_order_relaxed);
        s.error = nullptr;
        ++s.generation;
    }
    s.wake.notify_all();
    s.run_chunks();
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(s.mutex);
        s.idle.wait(lock, [&] { return s.active == 0; });
        s.fn = nullptr;
        error = std::move(s.error);
        s.error = nullptr;
    }
    s.busy.store(false, std::memory_order_release);
    if (error) std::rethrow_exception(error);
}

}  // namespace stormo
