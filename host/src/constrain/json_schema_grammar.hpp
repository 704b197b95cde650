#pragma once
// A JSON Schema compiled to a GBNF grammar (gbnf.hpp) whose every sentence is a JSON text the
// schema accepts: objects with their properties in the schema's order (the required ones first),
// optional ones present or not, `enum` and `const` as literals, arrays with `items`, `minItems`
// and `maxItems`, strings with `minLength` and `maxLength`, the scalar types, `anyOf`/`oneOf` as
// alternatives, `allOf` of one schema, `$ref` to `#`, `#/$defs/...` and `#/definitions/...`
// (recursion included), `additionalProperties` (`false`; a schema or `true` for an object without
// `properties`). Whitespace between tokens is bounded (one space, or a newline and up to 20 spaces
// or tabs), numbers to 16 digits per part, so an answer cannot run on forever inside them.
//
// A keyword that constrains values and is not compiled (`pattern`, `format`, `minimum`, ...) is
// refused, naming it and its place in the schema ("$.properties.email.format"); so is an unknown
// keyword when `strict`. Annotations (`title`, `description`, `default`, `examples`, ...) are
// ignored.
#include <string>

#include "jinja/chat_value.hpp"
#include "stormo/error.hpp"

namespace stormo::constrain {

// Errors are ErrorKind::unsupported (a keyword not honoured) or invalid_argument (a schema that
// is not one: a wrong type, a $ref that leads nowhere), and start with the JSON path at fault.
Expected<std::string> json_schema_to_gbnf(const text::Value& schema, bool strict);

// Any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

// `bytes` as a GBNF string literal, quotes included.
std::string gbnf_literal(std::string_view bytes);

}  // namespace stormo::constrain
