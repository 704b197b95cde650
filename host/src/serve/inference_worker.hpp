#pragma once
// The one compute stream: a thread that owns the engine's sessions (the slots), admits the queued
// requests in arrival order into free slots while their KV fits (each into the slot whose session
// keeps most of its prompt; then the prompt cache may restore more of it), runs every admitted request through one batched step at a time
// (BatchScheduler), and hands each reply's pieces to its connection as they come.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "constrain/token_trie.hpp"
#include "reply/reply_parser.hpp"
#include "runtime/batch_scheduler.hpp"
#include "runtime/engine.hpp"
#include "runtime/prompt_cache.hpp"
#include "runtime/session.hpp"
#include "serve/metrics.hpp"
#include "serve/request_queue.hpp"
#include "serve/server_log.hpp"
#include "serve/slot_admission.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::serve {

struct WorkerContext {
    Engine* engine = nullptr;
    std::vector<Session*> sessions;  // the slots: one running request each at most
    const text::Tokenizer* tokenizer = nullptr;
    text::ReplyFormat format = text::ReplyFormat::plain;
    std::vector<int32_t> stop_ids;  // the model's end-of-answer ids
    RequestQueue* queue = nullptr;
    Metrics* metrics = nullptr;
    BatchSettings batch;
    size_t rewind_slack = 0;  // the sessions' (it sizes their rings' KV)
    // The prompt cache (--cache-dir), or none: admission restores the longest cached prefix of a
    // prompt past what its slot holds, and each step's sequences store the blocks they complete.
    PromptCache* cache = nullptr;
    ServerLog* log = nullptr;  // where its notes go (none: stderr, as text)
    // Called once, on the worker's thread, with the answer of the first request that fails
    // because a rank of an mpirun was lost (ErrorKind::peer_lost): no request can be answered after it.
    std::function<void(const ApiError&)> on_peer_lost;
};

class InferenceWorker {
public:
    explicit InferenceWorker(WorkerContext context);
    ~InferenceWorker();
    InferenceWorker(const InferenceWorker&) = delete;
    InferenceWorker& operator=(const InferenceWorker&) = delete;

    // Runs until the queue is closed and the requests admitted are done.
    void start();
    void join();
    // Requests admitted and not yet finished.
    size_t running() const { return running_.load(); }
    size_t slots() const { return ctx_.sessions.size(); }
    uint64_t kv_bytes_in_use() const { return kv_in_use_.load(); }
    uint64_t kv_bytes_reserved() const { return ledger_.reserved(); }

private:
    struct Active;
    void run();
    // Admits queued requests while a slot is free and their KV fits; a request halted while it
    // waited is answered at once.
    void admit();
    void begin(std::shared_ptr<Job> job);
    void step();
    // The prompt cache: the longest cached prefix of the request's prompt into its slot's session
    // (and its experts into the store), then after each step the blocks the sequences completed.
    void restore_from_cache(Active& a);
    void capture_blocks(const BatchStep& report, const std::vector<size_t>& positions_before);
    // Finishes the requests whose sequences are done and frees their slots.
    void retire();
    // A done request's result: its answer and finish reason, or the error it ended with.
    JobResult conclude(Active& a);
    // Counts the request's outcome and hands the result to its connection.
    void settle(Job& job, JobResult result);
    void publish();
    // The constraint of a request with a grammar (structured output), on the vocabulary's trie,
    // made at the first such request.
    Expected<std::shared_ptr<TokenConstraint>> constraint_for(const PreparedRequest& request, const std::vector<int32_t>& stop_ids);
    // A note about the worker's trouble, in the server log's format.
    void note(const std::string& message) const;
    // The request's error, as its HTTP answer; a lost rank is remembered (and said once).
    ApiError answer_for(const Error& e);

    WorkerContext ctx_;
    std::shared_ptr<const constrain::TokenTrie> vocabulary_;
    KvLedger ledger_;
    BatchScheduler scheduler_;
    std::vector<std::unique_ptr<Active>> active_;
    std::vector<SlotState> slots_;  // per slot: busy, and when it was last taken (held is read at the choice)
    std::shared_ptr<SpeculationMemory> speculation_memory_;  // what the speculation gates learned across requests
    uint64_t admissions_ = 0;
    size_t generated_in_step_ = 0;
    std::thread thread_;
    std::atomic<size_t> running_{0};
    std::atomic<uint64_t> kv_in_use_{0};
    // The lost rank's error once a request failed with it: every request admitted after fails with
    // it at once, without touching a session.
    std::optional<Error> peer_lost_;
};

}  // namespace stormo::serve
