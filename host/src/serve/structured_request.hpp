#pragma once
// A request's structured output, read and compiled before it is queued: `response_format`
// ({"type": "json_object"}, {"type": "json_schema", "json_schema": {"name", "schema", "strict"}};
// llama-server's {"type": "json_object", "schema": ...} too), a `grammar` (GBNF text) or
// llama-server's `json_schema`. A schema keyword the engine cannot honour or a grammar that does
// not parse is a 400 naming the keyword and its path, or the line and column.
#include <memory>

#include "constrain/grammar.hpp"
#include "jinja/chat_value.hpp"
#include "serve/api_error.hpp"

namespace stormo::serve {

// The grammar the answer must match, or none (no field, or response_format {"type": "text"}).
ApiExpected<std::shared_ptr<const constrain::Grammar>> read_structured_output(const text::Value& body);

}  // namespace stormo::serve
