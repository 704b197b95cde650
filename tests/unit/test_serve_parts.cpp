// stormo serve's pure parts: stop sequences on streamed text, SSE framing, the bounded queue,
// the Prometheus text, the API key comparison and the response JSON.
#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "serve/api_key.hpp"
#include "serve/metrics.hpp"
#include "serve/openai_response.hpp"
#include "serve/request_queue.hpp"
#include "serve/sse.hpp"
#include "serve/stop_sequences.hpp"

namespace stormo::serve {
namespace {

// Feeds pieces through a matcher; returns what was sent and whether it matched.
std::pair<std::string, bool> through(StopMatcher& m, const std::vector<std::string>& pieces) {
    std::string sent;
    for (const std::string& p : pieces) {
        auto r = m.push(p);
        sent += r.text;
        if (r.matched) return {sent, true};
    }
    sent += m.flush();
    return {sent, false};
}

TEST(ServeStopSequences, CutsAtTheFirstStopAcrossPieces) {
    StopMatcher m({"END"});
    auto [sent, matched] = through(m, {"57", "9E", "N", "Dtail"});
    EXPECT_TRUE(matched);
    EXPECT_EQ(sent, "579");
    EXPECT_TRUE(m.push("more").text.empty());  // nothing after a match
}

TEST(ServeStopSequences, HoldsBackOnlyWhatCouldStillMatch) {
    StopMatcher m({"abc"});
    auto r1 = m.push("xxab");
    EXPECT_EQ(r1.text, "xx");  // "ab" may become "abc"
    auto r2 = m.push("d");
    EXPECT_EQ(r2.text, "abd");  // it did not
    EXPECT_FALSE(r2.matched);
    auto r3 = m.push("a");
    EXPECT_EQ(r3.text, "");
    EXPECT_EQ(m.flush(), "a");  // the end: what was held back is sent
}

TEST(ServeStopSequences, EarliestOfSeveralWinsAndNoStopsPassEverything) {
    StopMatcher m({"9", "57"});
    auto [sent, matched] = through(m, {"1579"});
    EXPECT_TRUE(matched);
    EXPECT_EQ(sent, "1");
    StopMatcher none({});
    auto [all, any] = through(none, {"a", "b"});
    EXPECT_FALSE(any);
    EXPECT_EQ(all, "ab");
}

TEST(ServeSse, FramesEventsAndDone) {
    EXPECT_EQ(sse_event(R"({"a": 1})"), "data: {\"a\": 1}\n\n");
    EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

PreparedRequest tiny() {
    PreparedRequest p;
    p.prompt = {1, 2};
    return p;
}

TEST(ServeQueue, BoundedFifoRefusesPastItsCapacity) {
    RequestQueue q(2);
    auto a = std::make_shared<Job>(tiny(), -1);
    auto b = std::make_shared<Job>(tiny(), -1);
    auto c = std::make_shared<Job>(tiny(), -1);
    EXPECT_TRUE(q.try_push(a));
    EXPECT_TRUE(q.try_push(b));
    EXPECT_FALSE(q.try_push(c));
    EXPECT_EQ(q.size(), 2u);
    EXPECT_EQ(q.pop(), a);  // first in, first out
    EXPECT_TRUE(q.try_push(c));
    EXPECT_EQ(q.pop(), b);
    EXPECT_EQ(q.pop(), c);
}

TEST(ServeQueue, CloseWakesAWaitingPopAndReturnsWhatWaited) {
    RequestQueue q(4);
    std::shared_ptr<Job> popped = std::make_shared<Job>(tiny(), -1);
    std::thread waiter([&] { popped = q.pop(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(q.close().empty());
    waiter.join();
    EXPECT_EQ(popped, nullptr);
    EXPECT_FALSE(q.try_push(std::make_shared<Job>(tiny(), -1)));

    RequestQueue r(4);
    auto a = std::make_shared<Job>(tiny(), -1);
    r.try_push(a);
    auto left = r.close();
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0], a);
}

TEST(ServeJob, PiecesThenTheResultReachTheWaiter) {
    Job job(tiny(), -1);
    job.post({text::ReplyPiece::Kind::content, "57"});
    job.post({text::ReplyPiece::Kind::reasoning, "think"});
    Job::Update u = job.wait(std::chrono::milliseconds(10));
    ASSERT_EQ(u.pieces.size(), 2u);
    EXPECT_EQ(u.pieces[0].text, "57");
    EXPECT_FALSE(u.result);
    JobResult done;
    done.content = "579";
    job.finish(done);
    u = job.wait(std::chrono::milliseconds(10));
    ASSERT_TRUE(u.result);
    EXPECT_EQ(u.result->content, "579");
    EXPECT_FALSE(job.wait(std::chrono::milliseconds(1)).result);  // taken once
    EXPECT_FALSE(job.halt().load());
    job.cancel_client_gone();
    EXPECT_TRUE(job.halt().load());
    EXPECT_TRUE(job.client_gone());
}

TEST(ServeMetrics, PrometheusTextHasEveryFamily) {
    Metrics m;
    m.count(Outcome::ok);
    m.count(Outcome::ok);
    m.count(Outcome::cancelled);
    m.count(Outcome::rejected);
    m.add_generation({10, 4, 5, 0.5, 2.0});
    ExpertStoreStats s;
    s.hits = 3;
    s.misses = 1;
    s.bytes_read = 4096;
    m.set_store(s);
    // Two steps: 3 sequences (2 decode rows, a prompt chunk of 30), then 2 decode rows; 4 tokens.
    m.add_step(BatchStep{3, 2, 30, false}, 2, s);
    s.hits = 7;
    s.bytes_read = 8192;
    m.add_step(BatchStep{2, 2, 0, true}, 2, s);
    const std::string text = m.render(
        {.queue_depth = 2, .running = 1, .slots = 4, .kv_bytes_in_use = 1000, .kv_bytes_reserved = 4000, .ready = true});
    for (const char* line :
         {"# TYPE stormo_requests_total counter\n", "stormo_requests_total{outcome=\"ok\"} 2\n",
          "stormo_requests_total{outcome=\"cancelled\"} 1\n", "stormo_requests_total{outcome=\"rejected\"} 1\n",
          "stormo_requests_total{outcome=\"failed\"} 0\n", "stormo_prompt_tokens_total 10\n",
          "stormo_prompt_tokens_reused_total 4\n", "stormo_generated_tokens_total 5\n",
          "stormo_prefill_tokens_per_second 12\n",  // (10 - 4) / 0.5
          "stormo_decode_tokens_per_second 2.5\n", "stormo_expert_hit_rate 0.875\n",
          "stormo_expert_bytes_read_total 8192\n", "stormo_queue_depth 2\n", "stormo_requests_running 1\n",
          "stormo_model_ready 1\n", "stormo_slots 4\n", "stormo_batch_steps_total 2\n", "stormo_batch_sequences_total 5\n",
          "stormo_batch_rows_total{kind=\"decode\"} 4\n", "stormo_batch_rows_total{kind=\"prompt\"} 30\n",
          "stormo_batch_isolated_steps_total 1\n",
          "stormo_expert_reads_per_token 2\n",  // (7 + 1) acquisitions / 4 tokens
          "stormo_expert_bytes_read_per_token 2048\n", "stormo_kv_bytes_in_use 1000\n", "stormo_kv_bytes_reserved 4000\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
    EXPECT_EQ(m.requests(Outcome::ok), 2u);
    // Every line is a comment or "name[{labels}] value".
    size_t start = 0;
    while (start < text.size()) {
        const size_t end = text.find('\n', start);
        const std::string line = text.substr(start, end - start);
        EXPECT_TRUE(line.rfind("# ", 0) == 0 || line.find(' ') != std::string::npos) << line;
        start = end + 1;
    }
}

TEST(ServeApiKey, ConstantTimeCompareAndBearerHeader) {
    EXPECT_TRUE(constant_time_equal("secret", "secret"));
    EXPECT_FALSE(constant_time_equal("secret", "secreT"));
    EXPECT_FALSE(constant_time_equal("secret", "secret2"));
    EXPECT_FALSE(constant_time_equal("", "x"));
    EXPECT_TRUE(constant_time_equal("", ""));
    EXPECT_TRUE(bearer_matches("Bearer secret", "secret"));
    EXPECT_TRUE(bearer_matches("bearer secret", "secret"));
    EXPECT_FALSE(bearer_matches("Bearer secre", "secret"));
    EXPECT_FALSE(bearer_matches("Basic secret", "secret"));
    EXPECT_FALSE(bearer_matches("secret", "secret"));
    EXPECT_FALSE(bearer_matches("", "secret"));
}

TEST(ServeResponse, ChatCompletionCarriesReasoningToolCallsAndUsage) {
    JobResult r;
    r.content = "579";
    r.reasoning = "add the digits";
    r.tool_calls.push_back({"add", text::Value::object({{"a", text::Value(1)}})});
    r.finish = FinishReason::tool_calls;
    r.prompt_tokens = 8;
    r.completion_tokens = 4;
    const std::string json = chat_completion_json({"chatcmpl-1", 100, "demo"}, r);
    auto v = text::parse_json_value(json, "response");
    ASSERT_TRUE(v) << json;
    EXPECT_EQ(v->find("object")->as_string(), "chat.completion");
    EXPECT_EQ(v->find("created")->as_int(), 100);
    const text::Value& choice = v->find("choices")->as_list()[0];
    EXPECT_EQ(choice.find("finish_reason")->as_string(), "tool_calls");
    const text::Value& message = *choice.find("message");
    EXPECT_EQ(message.find("content")->as_string(), "579");
    EXPECT_EQ(message.find("reasoning_content")->as_string(), "add the digits");
    const text::Value& call = message.find("tool_calls")->as_list()[0];
    EXPECT_EQ(call.find("type")->as_string(), "function");
    EXPECT_EQ(call.find("function")->find("name")->as_string(), "add");
    EXPECT_EQ(call.find("function")->find("arguments")->as_string(), R"({"a": 1})");  // JSON text, as OpenAI sends it
    EXPECT_EQ(v->find("usage")->find("total_tokens")->as_int(), 12);

    JobResult plain;
    plain.content = "olleh";
    auto p = text::parse_json_value(chat_completion_json({"chatcmpl-2", 1, "demo"}, plain), "response");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->find("choices")->as_list()[0].find("message")->find("reasoning_content"), nullptr);  // absent without reasoning
}

TEST(ServeResponse, StreamChunksAreChatCompletionChunks) {
    const ResponseIdentity who{"chatcmpl-3", 5, "demo"};
    auto first = text::parse_json_value(chat_role_chunk(who), "chunk");
    ASSERT_TRUE(first);
    EXPECT_EQ(first->find("object")->as_string(), "chat.completion.chunk");
    EXPECT_EQ(first->find("choices")->as_list()[0].find("delta")->find("role")->as_string(), "assistant");
    auto reasoning = text::parse_json_value(chat_piece_chunk(who, {text::ReplyPiece::Kind::reasoning, "hm"}), "chunk");
    ASSERT_TRUE(reasoning);
    EXPECT_EQ(reasoning->find("choices")->as_list()[0].find("delta")->find("reasoning_content")->as_string(), "hm");
    auto done = text::parse_json_value(chat_finish_chunk(who, FinishReason::length), "chunk");
    ASSERT_TRUE(done);
    EXPECT_EQ(done->find("choices")->as_list()[0].find("finish_reason")->as_string(), "length");
    JobResult r;
    r.prompt_tokens = 3;
    r.completion_tokens = 2;
    auto usage = text::parse_json_value(chat_usage_chunk(who, r), "chunk");
    ASSERT_TRUE(usage);
    EXPECT_TRUE(usage->find("choices")->as_list().empty());
    EXPECT_EQ(usage->find("usage")->find("completion_tokens")->as_int(), 2);
    auto text_chunk = text::parse_json_value(text_piece_chunk({"cmpl-1", 5, "demo"}, "57"), "chunk");
    ASSERT_TRUE(text_chunk);
    EXPECT_EQ(text_chunk->find("object")->as_string(), "text_completion");
    EXPECT_EQ(text_chunk->find("choices")->as_list()[0].find("text")->as_string(), "57");
    auto models = text::parse_json_value(models_json("demo", 9), "models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->find("data")->as_list()[0].find("id")->as_string(), "demo");
}

TEST(ServeResponse, LogprobsInChatAndTextCompletionShapes) {
    LogprobEntry five;
    five.token = {"5", -0.25, false};
    five.top = {{"5", -0.25, false}, {"4", -1.5, false}};
    LogprobEntry broken;  // a token that ends inside a character, and one of no probability
    broken.token = {"\xe2\x82", -std::numeric_limits<double>::infinity(), false};
    LogprobEntry end;
    end.token = {"<|end|>", -0.5, true};
    const std::vector<LogprobEntry> entries = {five, broken, end};
    EXPECT_EQ(text::to_json(chat_logprobs_value(entries)),
              R"({"content": [{"token": "5", "logprob": -0.25, "bytes": [53], "top_logprobs": [)"
              R"({"token": "5", "logprob": -0.25, "bytes": [53]}, {"token": "4", "logprob": -1.5, "bytes": [52]}]}, )"
              R"({"token": ")" "\xef\xbf\xbd" R"(", "logprob": -9999.0, "bytes": [226, 130], "top_logprobs": []}, )"
              R"({"token": "<|end|>", "logprob": -0.5, "bytes": [60, 124, 101, 110, 100, 124, 62], "top_logprobs": []}], )"
              R"("refusal": null})");
    size_t offset = 3;
    EXPECT_EQ(text::to_json(text_logprobs_value(entries, offset)),
              R"({"tokens": ["5", ")" "\xef\xbf\xbd" R"(", "<|end|>"], "token_logprobs": [-0.25, -9999.0, -0.5], )"
              R"("top_logprobs": [{"5": -0.25, "4": -1.5}, {}, {}], "text_offset": [3, 4, 6]})");
    EXPECT_EQ(offset, 6u);  // a special token is not part of the text
    JobResult result;
    result.content = "5";
    result.logprobs = {five};
    const ResponseIdentity who{"cmpl-1", 1700000000, "demo"};
    EXPECT_NE(text_completion_json(who, result, true).find(R"("logprobs": {"tokens": ["5"])"), std::string::npos);
    EXPECT_NE(text_completion_json(who, result).find(R"("logprobs": null)"), std::string::npos);
    EXPECT_NE(chat_completion_json(who, result, true).find(R"("logprobs": {"content": [{"token": "5")"), std::string::npos);
}

}  // namespace
}  // namespace stormo::serve
