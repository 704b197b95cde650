#pragma once
// The one compute stream: a thread that owns the engine's session, takes the queued requests one
// at a time in arrival order, generates each (keeping the KV prefix it shares with what the
// session holds), and hands the reply's pieces to the request's connection as they come.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "reply/reply_parser.hpp"
#include "runtime/engine.hpp"
#include "runtime/session.hpp"
#include "serve/metrics.hpp"
#include "serve/request_queue.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::serve {

struct WorkerContext {
    Engine* engine = nullptr;
    Session* session = nullptr;
    const text::Tokenizer* tokenizer = nullptr;
    text::ReplyFormat format = text::ReplyFormat::plain;
    std::vector<int32_t> stop_ids;  // the model's end-of-answer ids
    RequestQueue* queue = nullptr;
    Metrics* metrics = nullptr;
};

class InferenceWorker {
public:
    explicit InferenceWorker(WorkerContext context);
    ~InferenceWorker();
    InferenceWorker(const InferenceWorker&) = delete;
    InferenceWorker& operator=(const InferenceWorker&) = delete;

    // Runs until the queue is closed and the job in hand is done.
    void start();
    void join();
    size_t running() const { return running_.load(); }

private:
    void run();
    void serve(Job& job);
    JobResult generate_reply(Job& job);

    WorkerContext ctx_;
    std::thread thread_;
    std::atomic<size_t> running_{0};
};

}  // namespace stormo::serve
