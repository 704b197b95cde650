// The Jinja lexer: template data and tags, then the expression tokens inside each tag.
#include "jinja/jinja_lexer.hpp"

#include <cerrno>
#include <cstdlib>

#include "util/utf8.hpp"

namespace stormo::text::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
public:
    Lexer(std::string_view text, const std::string& source) : src_(text), source_(source) {}

    Expected<std::vector<Token>> run();

private:
    Error error(int line, const std::string& message) const {
        return Error{ErrorKind::format, source_ + ":" + std::to_string(line) + ": " + message};
    }
    void emit(TokenType type, std::string text, int line) {
        Token t;
        t.type = type;
        t.text = std::move(text);
        t.line = line;
        tokens_.push_back(std::move(t));
    }
    // Moves pos_ forward by n characters, counting the newlines passed.
    void advance(size_t n) {
        for (size_t k = 0; k < n && pos_ < src_.size(); ++k, ++pos_)
            if (src_[pos_] == '\n') ++line_;
    }
    bool at(std::string_view s) const { return src_.substr(pos_, s.size()) == s; }
    void skip_whitespace() {
        while (pos_ < src_.size() && is_space(src_[pos_])) advance(1);
    }
    // After a tag's closing delimiter: `-` strips all whitespace, else trim_blocks drops one
    // newline after block and comment tags. Records whether the next data starts a line.
    void after_tag_end(bool strip, bool trim_newline) {
        size_t start = pos_;
        if (strip) skip_whitespace();
        else if (trim_newline && pos_ < src_.size() && src_[pos_] == '\n') advance(1);
        if (pos_ > start) line_starting_ = src_[pos_ - 1] == '\n';
    }
    void emit_data(std::string data, char tag_kind, char sign, int line);
    Expected<void> lex_comment(int open_line);
    Expected<void> lex_tag(char kind, int open_line);
    bool try_lex_raw(int open_line, Expected<void>& result);
    Expected<void> lex_string(int line);
    Expected<void> lex_number(int line);

    std::string_view src_;
    const std::string& source_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;  // the last lexeme ended a line (or nothing was read yet)
    std::vector<Token> tokens_;
};

// Template data before a tag opener of `tag_kind` ('{', '%' or '#'; 0 at the end of the template)
// with `sign` ('-', '+' or 0).
void Lexer::emit_data(std::string data, char tag_kind, char sign, int line) {
    if (sign == '-') {
        while (!data.empty() && is_space(data.back())) data.pop_back();
    } else if (sign != '+' && (tag_kind == '%' || tag_kind == '#')) {  // lstrip_blocks
        size_t line_start = data.rfind('\n');
        line_start = line_start == std::string::npos ? 0 : line_start + 1;
        if (line_start > 0 || line_starting_) {
            bool blank = line_start < data.size();
            for (size_t k = line_start; k < data.size(); ++k) blank = blank && is_space(data[k]);
            if (blank) data.resize(line_start);
        }
    }
    if (!data.empty()) emit(TokenType::text, std::move(data), line);
}

Expected<void> Lexer::lex_comment(int open_line) {
    size_t close = src_.find("#}", pos_);
    if (close == std::string_view::npos) return tl::unexpected(error(open_line, "unclosed comment"));
    bool strip = close > pos_ && src_[close - 1] == '-';
    advance(close + 2 - pos_);
    after_tag_end(strip, true);
    return {};
}

// {% raw %}...{% endraw %}: the body is data, untouched.
bool Lexer::try_lex_raw(int open_line, Expected<void>& result) {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.substr(p, 3) != "raw" || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    bool strip_after = p < src_.size() && src_[p] == '-';
    if (strip_after) ++p;
    if (src_.substr(p, 2) != "%}") {
        result = tl::unexpected(error(open_line, "malformed raw tag"));
        return true;
    }
    advance(p + 2 - pos_);
    after_tag_end(strip_after, true);
    for (size_t q = src_.find("{%", pos_); q != std::string_view::npos; q = src_.find("{%", q + 2)) {
        size_t r = q + 2;
        char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r++] : 0;
        while (r < src_.size() && is_space(src_[r])) ++r;
        if (src_.substr(r, 6) != "endraw") continue;
        r += 6;
        while (r < src_.size() && is_space(src_[r])) ++r;
        bool strip_end = r < src_.size() && src_[r] == '-';
        if (strip_end) ++r;
        if (src_.substr(r, 2) != "%}") continue;
        int body_line = line_;
        std::string body(src_.substr(pos_, q - pos_));
        if (sign == '-')
            while (!body.empty() && is_space(body.back())) body.pop_back();
        if (!body.empty()) emit(TokenType::text, std::move(body), body_line);
        advance(r + 2 - pos_);
        after_tag_end(strip_end, true);
        result = {};
        return true;
    }
    result = tl::unexpected(error(open_line, "unclosed 'raw' block"));
    return true;
}

// A Python string literal; escapes decoded as Python's unicode-escape does.
Expected<void> Lexer::lex_string(int line) {
    char quote = src_[pos_];
    advance(1);
    std::string value;
    while (true) {
        if (pos_ >= src_.size()) return tl::unexpected(error(line, "unterminated string"));
        char c = src_[pos_];
        if (c == quote) {
            advance(1);
            break;
        }
        if (c != '\\' || pos_ + 1 >= src_.size()) {
            value += c;
            advance(1);
            continue;
        }
        char e = src_[pos_ + 1];
        advance(2);
        switch (e) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            case 'b': value += '\b'; break;
            case 'f': value += '\f'; break;
            case 'v': value += '\v'; break;
            case 'a': value += '\a'; break;
            case '0': value += '\0'; break;
            case '\\': value += '\\'; break;
            case '\'': value += '\''; break;
            case '"': value += '"'; break;
            case '\n': break;  // a line continuation
            case 'x':
            case 'u':
            case 'U': {
                size_t width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                std::string hex(src_.substr(pos_, width));
                char* end = nullptr;
                unsigned long cp = std::strtoul(hex.c_str(), &end, 16);
                if (hex.size() != width || end != hex.c_str() + width)
                    return tl::unexpected(error(line, std::string("malformed \\") + e + " escape in a string"));
                utf8::append(value, static_cast<char32_t>(cp));
                advance(width);
                break;
            }
            default:  // Python keeps an unknown escape as it is
                value += '\\';
                value += e;
        }
    }
    emit(TokenType::string, std::move(value), line);
    return {};
}

Expected<void> Lexer::lex_number(int line) {
    size_t start = pos_;
    auto digits = [&] {
        while (pos_ < src_.size() && (is_digit(src_[pos_]) || src_[pos_] == '_')) advance(1);
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
        is_float = true;
        advance(1);
        digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
        size_t save = pos_;
        advance(1);
        if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) advance(1);
        if (pos_ < src_.size() && is_digit(src_[pos_])) {
            is_float = true;
            digits();
        } else {
            pos_ = save;
        }
    }
    std::string text;
    for (char c : src_.substr(start, pos_ - start))
        if (c != '_') text += c;
    Token t;
    t.line = line;
    t.text = text;
    if (is_float) {
        t.type = TokenType::floating;
        t.floating = std::strtod(text.c_str(), nullptr);
    } else {
        t.type = TokenType::integer;
        errno = 0;
        t.integer = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return tl::unexpected(error(line, "integer literal " + text + " is beyond 64 bits"));
    }
    tokens_.push_back(std::move(t));
    return {};
}

// The inside of {{ }} or {% %}: expression tokens up to the closing delimiter (not inside
// brackets, so a dict literal's "}}" does not end a print tag).
Expected<void> Lexer::lex_tag(char kind, int open_line) {
    bool is_block = kind == '%';
    emit(is_block ? TokenType::block_begin : TokenType::print_begin, "", open_line);
    const std::string_view close = is_block ? "%}" : "}}";
    int bracket_depth = 0;
    while (true) {
        skip_whitespace();
        if (pos_ >= src_.size())
            return tl::unexpected(error(open_line, std::string("unclosed tag '") + "{" + kind + "'"));
        int line = line_;
        if (bracket_depth == 0) {
            bool strip = at("-") && src_.substr(pos_ + 1, 2) == close;
            bool plus = at("+") && src_.substr(pos_ + 1, 2) == close;
            if (strip || plus || at(close)) {
                advance(strip || plus ? 3 : 2);
                emit(is_block ? TokenType::block_end : TokenType::print_end, "", line);
                after_tag_end(strip, is_block && !plus);
                return {};
            }
        }
        char c = src_[pos_];
        if (is_name_start(c)) {
            size_t start = pos_;
            while (pos_ < src_.size() && is_name_char(src_[pos_])) advance(1);
            emit(TokenType::name, std::string(src_.substr(start, pos_ - start)), line);
        } else if (is_digit(c)) {
            STORMO_TRY(lex_number(line));
        } else if (c == '\'' || c == '"') {
            STORMO_TRY(lex_string(line));
        } else {
            static constexpr std::string_view two_char_ops[] = {"//", "**", "==", "!=", "<=", ">="};
            std::string op;
            for (std::string_view candidate : two_char_ops)
                if (at(candidate)) op = std::string(candidate);
            if (op.empty() && std::string_view("+-*/%~<>=()[]{},.:|").find(c) != std::string_view::npos) op = c;
            if (op.empty()) return tl::unexpected(error(line, std::string("unexpected character '") + c + "'"));
            if (op == "(" || op == "[" || op == "{") ++bracket_depth;
            if ((op == ")" || op == "]" || op == "}") && bracket_depth > 0) --bracket_depth;
            advance(op.size());
            emit(TokenType::op, std::move(op), line);
        }
    }
}

Expected<std::vector<Token>> Lexer::run() {
    while (pos_ < src_.size()) {
        size_t open = pos_;
        while (true) {
            open = src_.find('{', open);
            if (open == std::string_view::npos || open + 1 >= src_.size()) {
                open = std::string_view::npos;
                break;
            }
            char k = src_[open + 1];
            if (k == '{' || k == '%' || k == '#') break;
            ++open;
        }
        int data_line = line_;
        if (open == std::string_view::npos) {
            emit_data(std::string(src_.substr(pos_)), 0, 0, data_line);
            break;
        }
        char kind = src_[open + 1];
        char sign = open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+') ? src_[open + 2] : 0;
        emit_data(std::string(src_.substr(pos_, open - pos_)), kind, sign, data_line);
        advance(open - pos_);
        int open_line = line_;
        advance(sign ? 3 : 2);
        line_starting_ = false;
        if (kind == '#') {
            STORMO_TRY(lex_comment(open_line));
            continue;
        }
        if (kind == '%') {
            Expected<void> raw_result;
            if (try_lex_raw(open_line, raw_result)) {
                STORMO_TRY(raw_result);
                continue;
            }
        }
        STORMO_TRY(lex_tag(kind, open_line));
    }
    emit(TokenType::end, "", line_);
    return std::move(tokens_);
}

// Jinja reads "\r\n" and "\r" as "\n" and drops one trailing newline of the template.
std::string normalize_newlines(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t k = 0; k < text.size(); ++k) {
        if (text[k] == '\r') {
            out += '\n';
            if (k + 1 < text.size() && text[k + 1] == '\n') ++k;
        } else {
            out += text[k];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

}  // namespace

Expected<std::vector<Token>> tokenize(std::string_view text, const std::string& source) {
    std::string normalized = normalize_newlines(text);
    Lexer lexer(normalized, source);
    return lexer.run();
}

}  // namespace stormo::text::jinja
