#pragma once
// Cross-origin requests (--cors-origin): which pages elsewhere may call the API from a browser,
// the headers that let them read the answers, and the answer to a browser's preflight. With no
// origin allowed the server sends no CORS header at all, so browsers keep other pages out.
#include <optional>
#include <string>
#include <vector>

#include "serve/http_types.hpp"

namespace stormo::serve {

class CorsPolicy {
public:
    // Origins as browsers send them (https://app.example.com), or "*" for any.
    explicit CorsPolicy(std::vector<std::string> origins = {});
    bool enabled() const { return !origins_.empty(); }
    // Whether a request from `origin` may read the answer.
    bool allows(const std::string& origin) const;
    // The headers every response to the request carries (none when it comes from no allowed origin).
    HttpHeaders headers_for(const HttpRequest& request) const;
    // The answer to a preflight (OPTIONS): 204 with the methods and headers allowed, or 403 naming
    // an origin not allowed.
    HttpResponse preflight(const HttpRequest& request) const;

private:
    std::vector<std::string> origins_;
    bool any_ = false;
};

// Each origin --cors-origin takes: "*" or scheme://host[:port], nothing after; nullopt when fine,
// else what is wrong with it.
std::optional<std::string> cors_origin_problem(const std::string& origin);

}  // namespace stormo::serve
