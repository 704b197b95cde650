#include "serve/request_queue.hpp"

namespace stormo::serve {

RequestQueue::RequestQueue(size_t capacity) : capacity_(capacity) {}

bool RequestQueue::try_push(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mutex_);
        if (closed_ || jobs_.size() >= capacity_) return false;
        jobs_.push_back(std::move(job));
    }
    available_.notify_one();
    return true;
}

std::shared_ptr<Job> RequestQueue::pop() {
    std::unique_lock lock(mutex_);
    available_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    if (closed_) return nullptr;
    std::shared_ptr<Job> job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
}

std::shared_ptr<Job> RequestQueue::try_pop(const std::function<bool(const Job&)>& take) {
    std::lock_guard lock(mutex_);
    if (closed_ || jobs_.empty() || !take(*jobs_.front())) return nullptr;
    std::shared_ptr<Job> job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
}

std::vector<std::shared_ptr<Job>> RequestQueue::close() {
    std::vector<std::shared_ptr<Job>> left;
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
        left.assign(jobs_.begin(), jobs_.end());
        jobs_.clear();
    }
    available_.notify_all();
    return left;
}

size_t RequestQueue::size() const {
    std::lock_guard lock(mutex_);
    return jobs_.size();
}

}  // namespace stormo::serve
