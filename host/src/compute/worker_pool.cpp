// The persistent pool behind every parallel kernel call. A call cuts [0, n) into contiguous
// chunks that the workers and the calling thread claim one at a time from an atomic counter, so
// a slow or preempted thread on a shared machine delays only the chunk it holds.
//
// Between calls a worker first spins for a short while (kSpin) watching for the next job, then
// sleeps on a condition variable, so nothing spins while the engine is idle. The spin is there
// because a decode step makes hundreds of calls of 50-500 us each, and waking a sleeping thread
// costs tens of microseconds under a hypervisor: with workers that slept between calls, two
// threads ran a 768 x 2048 Q4_K expert matrix no faster than one (docs/kernels.md has the
// figures). The caller waits for the last worker the same way: a spin, then the condition variable.
//
// Workers are not pinned by default: under a hypervisor the vCPU numbers map to nothing stable,
// and on a machine shared with other processes a pinned worker waits for its one vCPU where an
// unpinned one would run on the other; `pin_threads: true` pins them (docs/benchmarks.md has
// the measurement that chose the default). Results never depend on which thread runs a chunk.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "compute/worker_pool.hpp"

namespace stormo {

namespace {
// Chunks per thread: enough to rebalance around a preempted thread, few enough to keep the
// per-chunk cost (one atomic claim, one call) negligible.
constexpr size_t kChunksPerThread = 4;

// How long a thread spins for a change before it sleeps: longer than the serial work between
// two kernel calls of a decode step, short enough that an idle engine leaves the CPU at once.
constexpr std::chrono::microseconds kSpin{300};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; done()'s last value.
template <class Done>
bool spin_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    for (;;) {
        for (int k = 0; k < 64; ++k) {
            if (done()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= deadline) return done();
    }
}
}  // namespace

struct WorkerPool::State {
    std::mutex mutex;
    std::condition_variable wake;  // workers: a new job or shutdown
    std::condition_variable idle;  // caller: the last active worker left the job
    std::vector<std::thread> workers;
    std::atomic<bool> stopping{false};
    std::atomic<uint64_t> generation{0};  // bumped (under the mutex) for every job posted
    size_t sleepers = 0;                  // workers waiting on `wake` (under the mutex)
    bool caller_waiting = false;          // the caller waits on `idle` (under the mutex)

    // The current job, written under the mutex while no worker is active. Workers read it only
    // while counted in `active`.
    const std::function<void(size_t, size_t)>* fn = nullptr;
    size_t n = 0;
    size_t n_chunks = 0;
    std::atomic<size_t> next_chunk{0};
    std::atomic<size_t> active{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;

    // Set while a call uses the workers; a nested or concurrent call then runs inline.
    std::atomic<bool> busy{false};

    std::vector<int> pinned_cpus;
    std::string pin_error;

    void run_chunks();
    void leave_job();
    void worker_loop();
};

// Claims chunks until none is left. After a failure the remaining chunks are claimed but skipped.
void WorkerPool::State::run_chunks() {
    for (;;) {
        const size_t k = next_chunk.fetch_add(1);
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

// A worker stops counting in `active`; the last one wakes a caller that sleeps.
void WorkerPool::State::leave_job() {
    if (active.fetch_sub(1) != 1) return;
    std::lock_guard<std::mutex> lock(mutex);
    if (caller_waiting) idle.notify_one();
}

void WorkerPool::State::worker_loop() {
    uint64_t seen = 0;
    for (;;) {
        spin_until([&] { return generation.load(std::memory_order_acquire) != seen || stopping.load(); });
        std::unique_lock<std::mutex> lock(mutex);
        if (generation.load() == seen && !stopping.load()) {
            ++sleepers;
            wake.wait(lock, [&] { return stopping.load() || generation.load() != seen; });
            --sleepers;
        }
        if (stopping.load()) return;
        seen = generation.load();
        // Counted before looking: a caller that saw no active worker after draining every chunk
        // has left, and this worker then sees the chunks drained and never touches the job.
        active.fetch_add(1);
        if (next_chunk.load() >= n_chunks) {
            active.fetch_sub(1);
            if (caller_waiting && active.load() == 0) idle.notify_one();
            continue;
        }
        lock.unlock();
        run_chunks();
        leave_job();
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
        state_->stopping.store(true);
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
        // No worker is active here (the last call waited for them), so the job can be rewritten.
        std::lock_guard<std::mutex> lock(s.mutex);
        s.fn = &fn;
        s.n = n;
        s.n_chunks = std::min(max_chunks, size() * kChunksPerThread);
        s.next_chunk.store(0);
        s.failed.store(false, std::memory_order_relaxed);
        s.error = nullptr;
        s.generation.fetch_add(1, std::memory_order_release);
        if (s.sleepers > 0) s.wake.notify_all();
    }
    s.run_chunks();
    if (!spin_until([&] { return s.active.load() == 0; })) {
        std::unique_lock<std::mutex> lock(s.mutex);
        s.caller_waiting = true;
        s.idle.wait(lock, [&] { return s.active.load() == 0; });
        s.caller_waiting = false;
    }
    std::exception_ptr error;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.fn = nullptr;
        error = std::move(s.error);
        s.error = nullptr;
    }
    s.busy.store(false, std::memory_order_release);
    if (error) std::rethrow_exception(error);
}

}  // namespace stormo
