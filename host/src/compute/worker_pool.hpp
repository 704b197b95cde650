#pragma once
// The host's thread pool behind the SDK's ThreadPool interface: plugins use a pool, only the host
// makes one (its size comes from the engine's configuration).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "stormo/kernels.hpp"

namespace stormo {

class WorkerPool final : public ThreadPool {
public:
    // 0 is taken as 1: the caller alone. pin_workers: worker k runs only on cpus_by_core()[k + 1]
    // (wrapping), which leaves the first CPU to the calling thread, which is never pinned (every
    // thread it starts later, the store's readers among them, would inherit its mask).
    explicit WorkerPool(size_t n_threads, bool pin_workers = false);
    ~WorkerPool() override;
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    size_t size() const override;
    // The CPU each worker was pinned to, in worker order (empty when not asked).
    const std::vector<int>& pinned_cpus() const;
    // Why pinning failed ("" when it did not): the caller decides whether that is an error.
    const std::string& pin_error() const;
    void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) override;

private:
    struct State;
    State* state_;
};

// Physical cores this process may run on: the default thread count.
size_t physical_core_count();
// The CPUs this process may run on, one per physical core first (in core order), then the other
// SMT siblings, so the first N hold N distinct cores whenever there are that many.
std::vector<int> cpus_by_core();

}  // namespace stormo
