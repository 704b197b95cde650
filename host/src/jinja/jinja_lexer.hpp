#pragma once
// Jinja template text to tokens, with the whitespace rules transformers' environment sets:
// `-` strips whitespace on its side of a tag, trim_blocks drops the newline after a block or
// comment tag, lstrip_blocks drops the spaces and tabs before a block or comment tag that starts
// a line, and one trailing newline of the template is dropped (keep_trailing_newline=False).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"

namespace stormo::text::jinja {

enum class TokenType {
    text,         // template data between tags, whitespace rules applied
    print_begin,  // {{
    print_end,    // }}
    block_begin,  // {%
    block_end,    // %}
    name,
    string,
    integer,
    floating,
    op,  // + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    end,
};

struct Token {
    TokenType type = TokenType::end;
    std::string text;  // text data, name, operator, or a string literal's decoded value
    int64_t integer = 0;
    double floating = 0;
    int line = 1;
};

// `source` names the template in errors ("chat_template.jinja:3: unclosed tag").
Expected<std::vector<Token>> tokenize(std::string_view text, const std::string& source);

}  // namespace stormo::text::jinja
