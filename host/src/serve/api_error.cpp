#include "serve/api_error.hpp"

#include "jinja/chat_value.hpp"

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

std::string error_body(const ApiError& error) {
    auto optional_text = [](const std::optional<std::string>& s) { return s ? text::Value(*s) : text::Value(); };
    text::Value inner = text::Value::object({{"message", text::Value(error.message)},
                                             {"type", text::Value(error.type)},
                                             {"param", optional_text(error.param)},
                                             {"code", optional_text(error.code)}});
    return text::to_json(text::Value::object({{"error", std::move(inner)}}));
}

}  // namespace stormo::serve
