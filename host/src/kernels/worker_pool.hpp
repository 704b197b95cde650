#pragma once
// The host's thread pool behind the SDK's ThreadPool interface: plugins use a pool, only the host
// makes one (its size comes from the engine's configuration).
#include <cstddef>
#include <functional>

#include "stormo/kernels.hpp"

namespace stormo {

class WorkerPool final : public ThreadPool {
public:
    explicit WorkerPool(size_t n_threads);  // 0 is taken as 1: the caller alone
    ~WorkerPool() override;
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    size_t size() const override;
    void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) override;

private:
    struct State;
    State* state_;
};

// Physical cores this process may run on: the default thread count.
size_t physical_core_count();

}  // namespace stormo
