#pragma once
// An HTTP error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}. Every refusal
// the server makes (bad JSON, a wrong field, a full queue, a missing key) travels as one of these.
#include <optional>
#include <string>

#include <tl/expected.hpp>

namespace stormo::serve {

struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::optional<std::string> param;  // the request field at fault, when one is
    std::optional<std::string> code;   // e.g. "context_length_exceeded", "invalid_api_key"
};

template <class T>
using ApiExpected = tl::expected<T, ApiError>;

// 400 invalid_request_error naming `param` (and a code when one applies).
tl::unexpected<ApiError> bad_request(std::string message, std::optional<std::string> param = std::nullopt,
                                     std::optional<std::string> code = std::nullopt);

// The response body: {"error": {...}} as JSON text.
std::string error_body(const ApiError& error);

}  // namespace stormo::serve
