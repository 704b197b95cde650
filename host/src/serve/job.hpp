#pragma once
// One generation request between the connection that received it and the worker that runs it:
// the prepared prompt, the pieces of the reply as they are produced (the connection's thread takes
// them as they come), the end, and the flags that stop it early (the client gone, a shutdown).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/speculate_mode.hpp"
#include "reply/reply_parser.hpp"
#include "runtime/sampler.hpp"
#include "serve/api_error.hpp"
#include "serve/openai_request.hpp"

namespace stormo::serve {

// A request ready for the worker: the prompt in ids, checked against the context.
struct PreparedRequest {
    Endpoint endpoint = Endpoint::chat;
    std::vector<int32_t> prompt;
    size_t max_tokens = 0;
    SamplingParams sampling;
    std::vector<std::string> stop;
    bool ignore_eos = false;
    std::shared_ptr<const constrain::Grammar> grammar;  // structured output: the answer's grammar
    // logprobs: how many of the most likely alternatives each generated token lists; nullopt: no
    // logprobs at all.
    std::optional<size_t> top_logprobs;
    // The request's speculation (speculate, draft_max); absent: the server's.
    std::optional<SpeculateMode> speculate;
    std::optional<size_t> draft_max;
    // The prompt cache partition and slot reuse scope of the API key the request came with
    // (runtime/prompt_cache.hpp: cache_partition); "" when shared.
    std::string partition;
};

// A token as logprobs show it: its bytes (the whole token, special or not) and log-probability.
struct TokenChoice {
    std::string bytes;
    double logprob = 0.0;
    bool special = false;  // not part of a text completion's text
};

// One generated token's entry in logprobs: the token and its most likely alternatives.
struct LogprobEntry {
    TokenChoice token;
    std::vector<TokenChoice> top;
};

enum class FinishReason { stop, length, tool_calls, cancelled };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "tool_calls", "cancelled"

struct JobResult {
    FinishReason finish = FinishReason::stop;
    std::string content;    // the answer as sent (a stop sequence and what followed cut off)
    std::string reasoning;
    std::vector<text::ToolCall> tool_calls;
    size_t prompt_tokens = 0;
    size_t completion_tokens = 0;
    size_t cached_tokens = 0;  // prompt positions not computed: kept in the slot or restored from the prompt cache
    std::vector<LogprobEntry> logprobs;  // one per generated token but a final stop id, when asked for
    // When the first token was chosen (the request log's time to first token); none when none was.
    std::optional<std::chrono::steady_clock::time_point> first_token_at;
    std::optional<ApiError> error;  // the request failed (or the server shut down under it)
};

class Job {
public:
    // client_fd: the connection's socket, probed between tokens to notice a client gone (-1: none).
    Job(PreparedRequest request, int client_fd);

    const PreparedRequest& request() const { return request_; }
    int client_fd() const { return client_fd_; }

    // Worker side.
    void post(text::ReplyPiece piece);
    // A generated token's logprobs entry (logprobs requests), before the pieces it completes.
    void post(LogprobEntry entry);
    void finish(JobResult result);
    // Generation's cancel flag: set when the client is gone or the server stops the request.
    const std::atomic<bool>& halt() const { return halt_; }

    // The worker ends the request itself after the token in flight (a stop sequence matched).
    void stop_after_token() { halt_.store(true); }
    // Either side: stop the request after the token in flight.
    void cancel_client_gone();
    void cancel_shutdown();
    bool client_gone() const { return client_gone_.load(); }
    bool shut_down() const { return shutdown_.load(); }

    // Connection side: waits up to `timeout` for news; returns the pieces not taken before, and
    // the result once the job has finished (then no more pieces come).
    struct Update {
        std::vector<text::ReplyPiece> pieces;
        std::vector<LogprobEntry> logprobs;
        std::optional<JobResult> result;
    };
    Update wait(std::chrono::milliseconds timeout);
    // The result the job finished with (a copy), for the request's log line; nullopt before.
    std::optional<JobResult> final_result();

private:
    PreparedRequest request_;
    int client_fd_;
    std::atomic<bool> halt_{false};
    std::atomic<bool> client_gone_{false};
    std::atomic<bool> shutdown_{false};
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<text::ReplyPiece> pieces_;
    std::vector<LogprobEntry> logprobs_;
    std::optional<JobResult> result_;
    bool result_taken_ = false;
};

}  // namespace stormo::serve
