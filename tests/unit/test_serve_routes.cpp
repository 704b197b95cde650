// stormo serve's routes before the model is loaded, through a recording sink: /health says 503
// loading, generations are refused with 503 (not queued), /tokenize already works, the API key
// guards every route but /health, the page and its icon; the model by its id, embeddings refused,
// CORS, and the log line each request leaves.
#include <gtest/gtest.h>

#include <sstream>

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

TEST(ServeRoutes, ApiKeyGuardsEveryRouteButHealthThePageAndItsIcon) {
    const Loading demo = demo_text();
    ApiRoutes routes(demo.tokenizer, demo.chat_template, RouteSettings{"demo", {"k3y"}, 4});
    EXPECT_EQ(call(routes, "GET", "/health").status, 503);  // no key needed (and still loading)
    // The page holds no secret: it asks for the key the API needs.
    EXPECT_EQ(call(routes, "GET", "/").status, 200);
    EXPECT_EQ(call(routes, "GET", "/favicon.ico").status, 200);
    for (const char* path : {"/v1/models", "/v1/models/demo", "/v1/embeddings", "/metrics", "/tokenize",
                             "/v1/chat/completions", "/nowhere"}) {
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
    // No external assets: nothing is fetched from another origin; the one link is the server's icon.
    for (const char* external : {"http://", "https://", "//cdn", "src=\""})
        EXPECT_EQ(page.body.find(external), std::string::npos) << external;
    const std::string icon = R"(<link rel="icon" href="/favicon.ico" type="image/svg+xml">)";
    const size_t link = page.body.find("<link ");
    EXPECT_EQ(page.body.find(icon), link);
    EXPECT_EQ(page.body.find("<link ", link + 1), std::string::npos);
    const HttpResponse favicon = call(routes, "GET", "/favicon.ico");
    EXPECT_EQ(favicon.status, 200);
    EXPECT_EQ(favicon.content_type, "image/svg+xml");
    EXPECT_TRUE(favicon.body.starts_with("<svg ")) << favicon.body;
}

TEST(ServeRoutes, TheModelByItsIdAndEmbeddingsRefusedByName) {
    const Loading demo = demo_text();
    RouteSettings settings{"org/tiny", {}, 4};
    ApiRoutes routes(demo.tokenizer, demo.chat_template, settings);
    for (const char* path : {"/v1/models/org/tiny", "/v1/models/org%2Ftiny", "/models/org/tiny"}) {
        const HttpResponse found = call(routes, "GET", path);
        EXPECT_EQ(found.status, 200) << path;
        EXPECT_NE(found.body.find(R"("id": "org/tiny", "object": "model")"), std::string::npos) << found.body;
    }
    const HttpResponse unknown = call(routes, "GET", "/v1/models/gpt-4o");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_NE(unknown.body.find(R"("code": "model_not_found")"), std::string::npos) << unknown.body;
    EXPECT_NE(unknown.body.find("'gpt-4o' does not exist: this server serves org/tiny"), std::string::npos) << unknown.body;
    EXPECT_EQ(call(routes, "GET", "/v1/models/org%2").status, 404);  // a broken escape names no model
    EXPECT_EQ(call(routes, "POST", "/v1/models/org/tiny").status, 405);
    const HttpResponse embeddings = call(routes, "POST", "/v1/embeddings", R"({"input": "x", "model": "org/tiny"})");
    EXPECT_EQ(embeddings.status, 404);
    EXPECT_NE(embeddings.body.find("this server serves chat and text completions of org/tiny; embeddings are not served"),
              std::string::npos)
        << embeddings.body;
}

HttpResponse call_from(ApiRoutes& routes, const std::string& method, const std::string& path, const std::string& origin,
                       const std::string& requested_headers = "") {
    RecordingSink sink;
    HttpRequest request{method, path, "", ""};
    request.origin = origin;
    request.requested_headers = requested_headers;
    EXPECT_TRUE(routes.handle(request, sink));
    return sink.responses.empty() ? HttpResponse{} : sink.responses.back();
}

std::optional<std::string> header(const HttpResponse& r, const std::string& name) {
    for (const auto& [key, value] : r.headers)
        if (key == name) return value;
    return std::nullopt;
}

TEST(ServeRoutes, CorsHeadersOnlyForAllowedOriginsAndPreflightsAnswered) {
    const Loading demo = demo_text();
    RouteSettings settings{"demo", {"k3y"}, 4};
    settings.cors_origins = {"https://app.example"};
    ApiRoutes routes(demo.tokenizer, demo.chat_template, settings);
    // A preflight needs no key; it answers what the page may send.
    const HttpResponse preflight = call_from(routes, "OPTIONS", "/v1/chat/completions", "https://app.example", "x-stainless-os");
    EXPECT_EQ(preflight.status, 204);
    EXPECT_EQ(header(preflight, "Access-Control-Allow-Origin"), "https://app.example");
    EXPECT_EQ(header(preflight, "Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
    EXPECT_EQ(header(preflight, "Access-Control-Allow-Headers"), "Authorization, Content-Type, x-stainless-os");
    EXPECT_EQ(header(preflight, "Vary"), "Origin");
    // Every answer to the origin carries the header, a refusal too (so the page can read it).
    const HttpResponse refused = call_from(routes, "GET", "/v1/models", "https://app.example");
    EXPECT_EQ(refused.status, 401);
    EXPECT_EQ(header(refused, "Access-Control-Allow-Origin"), "https://app.example");
    // Another origin gets none, and its preflight is refused.
    EXPECT_EQ(header(call_from(routes, "GET", "/health", "https://evil.example"), "Access-Control-Allow-Origin"), std::nullopt);
    EXPECT_EQ(call_from(routes, "OPTIONS", "/v1/chat/completions", "https://evil.example").status, 403);

    RouteSettings any{"demo", {}, 4};
    any.cors_origins = {"*"};
    ApiRoutes open(demo.tokenizer, demo.chat_template, any);
    EXPECT_EQ(header(call_from(open, "GET", "/v1/models", "https://anywhere.example"), "Access-Control-Allow-Origin"), "*");

    // Without --cors-origin: no CORS header, and OPTIONS is no route's method.
    ApiRoutes closed(demo.tokenizer, demo.chat_template, RouteSettings{"demo", {}, 4});
    const HttpResponse plain = call_from(closed, "GET", "/v1/models", "https://app.example");
    for (const auto& [key, value] : plain.headers) EXPECT_FALSE(key.starts_with("Access-Control-")) << key;
    EXPECT_EQ(call_from(closed, "OPTIONS", "/v1/chat/completions", "https://app.example").status, 405);
}

TEST(ServeRoutes, OneLogLinePerRequestInTheChosenFormat) {
    const Loading demo = demo_text();
    for (const LogFormat format : {LogFormat::text, LogFormat::json}) {
        std::ostringstream out;
        ServerLog log(format, out);
        RouteSettings settings{"demo", {}, 4};
        settings.log = &log;
        ApiRoutes routes(demo.tokenizer, demo.chat_template, settings);
        call(routes, "GET", "/v1/models");
        call(routes, "GET", "/nowhere");
        std::istringstream lines(out.str());
        std::string first, second, more;
        ASSERT_TRUE(std::getline(lines, first));
        ASSERT_TRUE(std::getline(lines, second));
        EXPECT_FALSE(std::getline(lines, more)) << more;
        if (format == LogFormat::text) {
            EXPECT_TRUE(first.starts_with("stormo: GET /v1/models 200 prompt_tokens=0 completion_tokens=0 first_token_ms=- total_ms="))
                << first;
            EXPECT_TRUE(second.starts_with("stormo: GET /nowhere 404 ")) << second;
        } else {
            auto parsed = text::parse_json_value(first, "log line");
            ASSERT_TRUE(parsed) << first;
            EXPECT_EQ(parsed->find("method")->as_string(), "GET");
            EXPECT_EQ(parsed->find("route")->as_string(), "/v1/models");
            EXPECT_EQ(parsed->find("status")->as_int(), 200);
            EXPECT_EQ(parsed->find("prompt_tokens")->as_int(), 0);
            EXPECT_EQ(parsed->find("completion_tokens")->as_int(), 0);
            EXPECT_TRUE(parsed->find("first_token_ms")->is_null());
            EXPECT_TRUE(parsed->find("total_ms")->is_int() || parsed->find("total_ms")->is_float());
            EXPECT_NE(second.find(R"("status": 404)"), std::string::npos) << second;
        }
    }
}

TEST(ServeRoutes, LogLinesCarryEveryFieldInBothFormats) {
    RequestRecord r;
    r.method = "POST";
    r.route = "/v1/chat/completions";
    r.status = 200;
    r.prompt_tokens = 8;
    r.completion_tokens = 4;
    r.first_token_seconds = 0.01234;
    r.total_seconds = 0.05;
    std::ostringstream sink;
    const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796383258123));
    EXPECT_EQ(ServerLog(LogFormat::text, sink).request_line(r, at),
              "stormo: POST /v1/chat/completions 200 prompt_tokens=8 completion_tokens=4 first_token_ms=12.3 total_ms=50.0");
    EXPECT_EQ(ServerLog(LogFormat::json, sink).request_line(r, at),
              R"({"time": "2026-12-04T11:20:58.123Z", "level": "info", "message": "request", "method": "POST", )"
              R"("route": "/v1/chat/completions", "status": 200, "prompt_tokens": 8, "completion_tokens": 4, )"
              R"("first_token_ms": 12.3, "total_ms": 50.0})");
    EXPECT_EQ(ServerLog(LogFormat::json, sink).note_line("ready: demo", "info", at),
              R"({"time": "2026-12-04T11:20:58.123Z", "level": "info", "message": "ready: demo"})");
    EXPECT_EQ(ServerLog(LogFormat::text, sink).note_line("ready: demo", "info", at), "stormo: ready: demo");
    EXPECT_FALSE(parse_log_format("yaml"));
}

}  // namespace
}  // namespace stormo::serve
