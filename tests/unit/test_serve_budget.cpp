// The bytes of request text the server parses and tokenizes at once are bounded: a body that does
// not fit what is left of --tokenize-budget is refused with 429 (retry), one larger than the whole
// budget with 413, on /tokenize, /detokenize and the completions alike; the share comes back
// when the request is done.
#include <gtest/gtest.h>

#include "oracle_support.hpp"
#include "recording_sink.hpp"
#include "serve/api_routes.hpp"

namespace stormo::serve {
namespace {

TEST(ServeBudget, ALeaseHoldsItsBytesUntilReleasedOrDestroyed) {
    ByteBudget budget(100);
    auto first = budget.try_take(60);
    ASSERT_TRUE(first);
    EXPECT_EQ(budget.in_use(), 60u);
    EXPECT_FALSE(budget.try_take(41));
    {
        auto second = budget.try_take(40);
        ASSERT_TRUE(second);
        EXPECT_EQ(budget.in_use(), 100u);
        ByteBudget::Lease moved = std::move(*second);
        EXPECT_EQ(budget.in_use(), 100u);
    }
    EXPECT_EQ(budget.in_use(), 60u);
    first->release();
    first->release();  // once only
    EXPECT_EQ(budget.in_use(), 0u);
    EXPECT_TRUE(budget.try_take(100));
    EXPECT_EQ(budget.in_use(), 0u);  // the unnamed lease ended with the statement
}

using testing::RecordingSink;

HttpResponse post(ApiRoutes& routes, const std::string& path, const std::string& body) {
    RecordingSink sink;
    EXPECT_TRUE(routes.handle(HttpRequest{"POST", path, "", body}, sink));
    return sink.responses.empty() ? HttpResponse{} : sink.responses.back();
}

bool has_code(const HttpResponse& r, const std::string& code) {
    return r.body.find("\"code\": \"" + code + "\"") != std::string::npos;
}

TEST(ServeBudget, RoutesRefuseTextPastTheBudget) {
    auto tokenizer = text::Tokenizer::load(stormo::testing::demo_dir());
    auto chat_template = text::ChatTemplate::load(stormo::testing::demo_dir());
    ASSERT_TRUE(tokenizer && chat_template);
    RouteSettings settings{"demo", {}, 4};
    settings.tokenize_budget = 64;
    ApiRoutes routes(*tokenizer, *chat_template, settings);
    const std::string small = R"({"content": "12+3="})";

    // Larger than the whole budget: it can never be taken.
    const HttpResponse huge = post(routes, "/tokenize", R"({"content": ")" + std::string(80, '1') + R"("})");
    EXPECT_EQ(huge.status, 413);
    EXPECT_TRUE(has_code(huge, "tokenize_budget_exceeded")) << huge.body;

    // Other requests hold most of it: each text route says retry.
    auto held = routes.tokenize_budget().try_take(50);
    ASSERT_TRUE(held);
    for (const char* path : {"/tokenize", "/detokenize", "/v1/completions", "/v1/chat/completions"}) {
        const HttpResponse busy = post(routes, path, small);
        EXPECT_EQ(busy.status, 429) << path;
        EXPECT_TRUE(has_code(busy, "tokenize_budget_busy")) << busy.body;
        ASSERT_FALSE(busy.headers.empty());
        EXPECT_EQ(busy.headers[0].first, "Retry-After");
    }
    held->release();
    const HttpResponse tokens = post(routes, "/tokenize", small);
    EXPECT_EQ(tokens.status, 200);
    EXPECT_EQ(tokens.body, R"({"tokens": [1, 2, 40, 3, 45]})");
    EXPECT_EQ(routes.tokenize_budget().in_use(), 0u);
    EXPECT_EQ(post(routes, "/tokenize", R"({"content": ""})").body, R"({"tokens": []})");
}

}  // namespace
}  // namespace stormo::serve
