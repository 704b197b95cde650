#include "serve/cors.hpp"

#include <algorithm>

#include "serve/api_error.hpp"

namespace stormo::serve {
namespace {

// How long a browser may keep a preflight's answer, in seconds.
constexpr const char* kPreflightMaxAge = "600";

}  // namespace

CorsPolicy::CorsPolicy(std::vector<std::string> origins)
    : origins_(std::move(origins)), any_(std::ranges::find(origins_, std::string("*")) != origins_.end()) {}

bool CorsPolicy::allows(const std::string& origin) const {
    return !origin.empty() && (any_ || std::ranges::find(origins_, origin) != origins_.end());
}

HttpHeaders CorsPolicy::headers_for(const HttpRequest& request) const {
    HttpHeaders out;
    if (!allows(request.origin)) return out;
    // A named origin is echoed, so caches must keep answers to different origins apart.
    out.emplace_back("Access-Control-Allow-Origin", any_ ? std::string("*") : request.origin);
    if (!any_) out.emplace_back("Vary", "Origin");
    out.emplace_back("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate");
    return out;
}

HttpResponse CorsPolicy::preflight(const HttpRequest& request) const {
    HttpResponse r;
    if (!allows(request.origin)) {
        ApiError e;
        e.status = 403;
        e.message = request.origin.empty() ? std::string("a CORS preflight needs an Origin header")
                                           : "origin " + request.origin + " is not allowed (--cors-origin)";
        e.code = "origin_not_allowed";
        r.status = e.status;
        r.body = error_body(e);
        return r;
    }
    r.status = 204;
    r.content_type.clear();
    r.headers = headers_for(request);
    r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    // What the page asked to send (the OpenAI client adds its own x-stainless-* headers) besides
    // the two every API call needs.
    std::string allowed = "Authorization, Content-Type";
    if (!request.requested_headers.empty()) allowed += ", " + request.requested_headers;
    r.headers.emplace_back("Access-Control-Allow-Headers", allowed);
    r.headers.emplace_back("Access-Control-Max-Age", kPreflightMaxAge);
    return r;
}

std::optional<std::string> cors_origin_problem(const std::string& origin) {
    if (origin == "*") return std::nullopt;
    const size_t scheme_end = origin.find("://");
    if (scheme_end == std::string::npos || scheme_end == 0)
        return "--cors-origin " + origin + ": an origin is scheme://host[:port] (https://app.example.com) or *";
    const std::string rest = origin.substr(scheme_end + 3);
    if (rest.empty() || rest.find_first_of("/?# ") != std::string::npos)
        return "--cors-origin " + origin + ": an origin has no path, query or space (https://app.example.com)";
    return std::nullopt;
}

}  // namespace stormo::serve
