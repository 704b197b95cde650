// stormo serve's routes before the model is loaded, through a recording sink: /health says 503
// loading, generations are refused with 503 (not queued), /tokenize already works, and the API
// key guards every route but /health.
#include <gtest/gtest.h>

#include "oracle_support.hpp"
#include "recording_sink.hpp"
#include "serve/api_routes.hpp"

namespace stormo::serve {
namespace {

using testing::RecordingSink;

struct Loading {
    text::Tokenizer tokenizer;
    text::ChatTemplate chat_template;
};

Loading demo_text() {
    auto tokenizer = text::Tokenizer::load(stormo::testing::demo_dir());
    auto chat_template = text::ChatTemplate::load(stormo::testing::demo_dir());
    EXPECT_TRUE(tokenizer && chat_template);
    return Loading{std::move(*tokenizer), std::move(*chat_template)};
}

HttpResponse call(ApiRoutes& routes, const std::string& method, const std::string& path, const std::string& body = "",
                  const std::string& authorization = "") {
    RecordingSink sink;
    EXPECT_TRUE(routes.handle(HttpRequest{method, path, authorization, body}, sink));
    EXPECT_EQ(sink.responses.size(), 1u);
    return sink.responses.empty() ? HttpResponse{} : sink.responses.back();
}

TEST(ServeRoutes, WhileLoadingHealthIs503AndGenerationsAreRefused) {
    const Loading demo = demo_text();
    ApiRoutes routes(demo.tokenizer, demo.chat_template, RouteSettings{"demo", {}, 4});
    const HttpResponse health = call(routes, "GET", "/health");
    EXPECT_EQ(health.status, 503);
    EXPECT_EQ(health.body, R"({"status":"loading"})");
    const HttpResponse chat =
        call(routes, "POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "1+1="}]})");
    EXPECT_EQ(chat.status, 503);
    EXPECT_NE(chat.body.find("\"code\": \"model_loading\""), std::string::npos) << chat.body;
    // A bad request is still a 400: validation comes first.
    EXPECT_EQ(call(routes, "POST", "/v1/chat/completions", R"({"messages": 3})").status, 400);
    const HttpResponse tokens = call(routes, "POST", "/tokenize", R"({"content": "12+3="})");
    EXPECT_EQ(tokens.status, 200);
    EXPECT_EQ(tokens.body, R"({"tokens": [1, 2, 40, 3, 45]})");
    EXPECT_EQ(call(routes, "GET", "/v1/models").status, 200);
    const HttpResponse metrics = call(routes, "GET", "/metrics");
    EXPECT_NE(metrics.body.find("stormo_model_ready 0\n"), std::string::npos);
    EXPECT_NE(metrics.body.find("stormo_requests_total{outcome=\"rejected\"} 1\n"), std::string::npos) << metrics.body;
}

TEST(ServeRoutes, ApiKeyGuardsEveryRouteButHealth) {
    const Loading demo = demo_text();
    ApiRoutes routes(demo.tokenizer, demo.chat_template, RouteSettings{"demo", {"k3y"}, 4});
    EXPECT_EQ(call(routes, "GET", "/health").status, 503);  // no key needed (and still loading)
    for (const char* path : {"/", "/v1/models", "/metrics", "/tokenize", "/v1/chat/completions", "/nowhere"}) {
        const HttpResponse r = call(routes, "GET", path);
        EXPECT_EQ(r.status, 401) << path;
        EXPECT_NE(r.body.find("invalid_api_key"), std::string::npos) << path;
    }
    EXPECT_EQ(call(routes, "GET", "/v1/models", "", "Bearer k3y").status, 200);
    EXPECT_EQ(call(routes, "GET", "/v1/models", "", "Bearer k3").status, 401);
}

TEST(ServeRoutes, UnknownRoutesAndMethods) {
    const Loading demo = demo_text();
    ApiRoutes routes(demo.tokenizer, demo.chat_template, RouteSettings{"demo", {}, 4});
    EXPECT_EQ(call(routes, "GET", "/v2/everything").status, 404);
    EXPECT_EQ(call(routes, "GET", "/v1/chat/completions").status, 405);
    EXPECT_EQ(call(routes, "POST", "/v1/models").status, 405);
    EXPECT_EQ(call(routes, "POST", "/").status, 405);
    const HttpResponse detok = call(routes, "POST", "/detokenize", R"({"tokens": [5, 7, 9, 48]})");
    EXPECT_EQ(detok.status, 200);
    EXPECT_EQ(detok.body, R"({"content": "579<|end|>"})");
}

TEST(ServeRoutes, TheRootIsTheSelfContainedChatPage) {
    const Loading demo = demo_text();
    ApiRoutes routes(demo.tokenizer, demo.chat_template, RouteSettings{"demo", {}, 4});
    const HttpResponse page = call(routes, "GET", "/");  // served while loading too: it holds no model data
    EXPECT_EQ(page.status, 200);
    EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
    EXPECT_TRUE(page.body.starts_with("<!doctype html>"));
    EXPECT_NE(page.body.find("/v1/chat/completions"), std::string::npos);
    // No external assets: nothing is fetched from another origin.
    for (const char* external : {"http://", "https://", "//cdn", "<link ", "src=\""})
        EXPECT_EQ(page.body.find(external), std::string::npos) << external;
}

}  // namespace
}  // namespace stormo::serve
