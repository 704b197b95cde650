#pragma once
// Tokens to the template's statement tree, following Jinja2's grammar and operator precedence.
// A tag, filter or test this engine does not implement is an ErrorKind::unsupported error
// naming it and its line; a syntax error is ErrorKind::format.
#include <string>
#include <vector>

#include "jinja/jinja_ast.hpp"
#include "jinja/jinja_lexer.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja {

Expected<NodeList> parse_template(const std::vector<Token>& tokens, const std::string& source);

}  // namespace stormo::text::jinja
