#include "serve/api_error.hpp"

#include "jinja/chat_value.hpp"
#include "util/utf8.hpp"

namespace stormo::serve {

tl::unexpected<ApiError> bad_request(std::string message, std::optional<std::string> param,
                                     std::optional<std::string> code) {
    ApiError e;
    e.status = 400;
    e.message = std::move(message);
    e.param = std::move(param);
    e.code = std::move(code);
    return tl::unexpected<ApiError>(std::move(e));
}

// Messages and params may quote bytes of the request (a model id from the URL, a field's value):
// made valid UTF-8, so the body stays JSON whatever the client sent.
std::string error_body(const ApiError& error) {
    auto optional_text = [](const std::optional<std::string>& s) { return s ? text::Value(text::utf8::lossy(*s)) : text::Value(); };
    text::Value inner = text::Value::object({{"message", text::Value(text::utf8::lossy(error.message))},
                                             {"type", text::Value(error.type)},
                                             {"param", optional_text(error.param)},
                                             {"code", optional_text(error.code)}});
    return text::to_json(text::Value::object({{"error", std::move(inner)}}));
}

}  // namespace stormo::serve
