#pragma once
// The bounded FIFO between the connections and the one worker: a request waits here for a slot of
// the compute stream; past the bound it is refused at once (HTTP 429), never left waiting unbounded.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "serve/job.hpp"

namespace stormo::serve {

class RequestQueue {
public:
    explicit RequestQueue(size_t capacity);

    // false when the queue is full or closed (the job was not taken).
    bool try_push(std::shared_ptr<Job> job);
    // The oldest job, waiting for one; nullptr once the queue is closed.
    std::shared_ptr<Job> pop();
    // The oldest job if `take` accepts it, without waiting; nullptr when empty, closed or refused
    // (the jobs behind a refused one wait too: first come, first served).
    std::shared_ptr<Job> try_pop(const std::function<bool(const Job&)>& take);
    // Refuses new jobs, wakes pop(), and returns the jobs still waiting (oldest first).
    std::vector<std::shared_ptr<Job>> close();
    size_t size() const;
    size_t capacity() const { return capacity_; }

private:
    size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable available_;
    std::deque<std::shared_ptr<Job>> jobs_;
    bool closed_ = false;
};

}  // namespace stormo::serve
