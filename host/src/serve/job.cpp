#include "serve/job.hpp"

namespace stormo::serve {

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::stop: return "stop";
        case FinishReason::length: return "length";
        case FinishReason::tool_calls: return "tool_calls";
        case FinishReason::cancelled: return "cancelled";
    }
    return "stop";
}

Job::Job(PreparedRequest request, int client_fd) : request_(std::move(request)), client_fd_(client_fd) {}

void Job::post(text::ReplyPiece piece) {
    {
        std::lock_guard lock(mutex_);
        pieces_.push_back(std::move(piece));
    }
    changed_.notify_all();
}

void Job::post(LogprobEntry entry) {
    {
        std::lock_guard lock(mutex_);
        logprobs_.push_back(std::move(entry));
    }
    changed_.notify_all();
}

void Job::finish(JobResult result) {
    {
        std::lock_guard lock(mutex_);
        result_ = std::move(result);
    }
    changed_.notify_all();
}

void Job::cancel_client_gone() {
    client_gone_.store(true);
    halt_.store(true);
}

void Job::cancel_shutdown() {
    shutdown_.store(true);
    halt_.store(true);
}

std::optional<JobResult> Job::final_result() {
    std::lock_guard lock(mutex_);
    return result_;
}

Job::Update Job::wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return !pieces_.empty() || !logprobs_.empty() || (result_ && !result_taken_); });
    Update update;
    update.pieces.swap(pieces_);
    update.logprobs.swap(logprobs_);
    if (result_ && !result_taken_) {
        update.result = result_;
        result_taken_ = true;
    }
    return update;
}

}  // namespace stormo::serve
