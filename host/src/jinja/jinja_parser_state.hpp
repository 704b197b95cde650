#pragma once
// The parser's state and grammar functions, shared by jinja_parser.cpp (statements) and
// jinja_parse_expression.cpp (expressions). Internal to the parser: nothing else includes this.
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/jinja_ast.hpp"
#include "jinja/jinja_lexer.hpp"
#include "jinja/jinja_object.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja::parsing {

inline constexpr int max_nesting = 200;  // keeps a hostile template from exhausting the stack

// One parse over a template's tokens: a cursor, error helpers and one function per grammar rule.
class Parser {
public:
    Parser(const std::vector<Token>& tokens, const std::string& source) : tokens_(tokens), source_(source) {}

    Expected<NodeList> parse_all() {
        std::string end_tag;
        STORMO_TRY_ASSIGN(NodeList nodes, parse_nodes({}, end_tag, "", 0));
        return nodes;
    }

private:
    // ---- token helpers
    const Token& peek(size_t ahead = 0) const {
        size_t k = std::min(pos_ + ahead, tokens_.size() - 1);
        return tokens_[k];
    }
    const Token& next() {
        const Token& t = peek();
        if (pos_ < tokens_.size() - 1) ++pos_;
        return t;
    }
    bool is_op(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).type == TokenType::op && peek(ahead).text == op;
    }
    bool is_name(std::string_view name, size_t ahead = 0) const {
        return peek(ahead).type == TokenType::name && peek(ahead).text == name;
    }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    Error error(int line, const std::string& message, ErrorKind kind = ErrorKind::format) const {
        return Error{kind, source_ + ":" + std::to_string(line) + ": " + message};
    }
    static std::string describe(const Token& t) {
        switch (t.type) {
            case TokenType::text: return "template text";
            case TokenType::print_begin: return "'{{'";
            case TokenType::print_end: return "'}}'";
            case TokenType::block_begin: return "'{%'";
            case TokenType::block_end: return "'%}'";
            case TokenType::end: return "the end of the template";
            case TokenType::string: return "a string";
            case TokenType::integer:
            case TokenType::floating: return "a number";
            default: return single_quoted(t.text);
        }
    }
    Error unexpected(const std::string& wanted) const {
        return error(peek().line, "expected " + wanted + ", found " + describe(peek()));
    }
    Expected<void> expect_op(std::string_view op) {
        if (!skip_op(op)) return tl::unexpected(unexpected(single_quoted(std::string(op))));
        return {};
    }
    Expected<std::string> expect_name() {
        if (peek().type != TokenType::name) return tl::unexpected(unexpected("a name"));
        return next().text;
    }
    Expected<void> expect_block_end() {
        if (peek().type != TokenType::block_end) return tl::unexpected(unexpected("'%}'"));
        next();
        return {};
    }
    static ExprPtr make(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // ---- statements
    Expected<NodeList> parse_nodes(std::initializer_list<std::string_view> end_tags, std::string& found,
                                   const std::string& opener, int opener_line);
    Expected<std::unique_ptr<Node>> parse_statement(const std::string& tag, int line);
    Expected<std::unique_ptr<Node>> parse_if(int line);
    Expected<std::unique_ptr<Node>> parse_for(int line);
    Expected<std::unique_ptr<Node>> parse_set(int line);
    Expected<std::unique_ptr<Node>> parse_macro(int line);
    Expected<std::unique_ptr<Node>> parse_simple_block(NodeKind kind, const std::string& tag, int line);
    Expected<std::unique_ptr<Node>> parse_call_block(int line);

    // ---- expressions
    Expected<ExprPtr> parse_expression();               // with conditional
    Expected<ExprPtr> parse_tuple_or_expression(bool with_conditional);
    Expected<ExprPtr> parse_or();
    Expected<ExprPtr> parse_and();
    Expected<ExprPtr> parse_not();
    Expected<ExprPtr> parse_compare();
    Expected<ExprPtr> parse_sum();
    Expected<ExprPtr> parse_concat();
    Expected<ExprPtr> parse_product();
    Expected<ExprPtr> parse_power();
    Expected<ExprPtr> parse_unary(bool with_filters);
    Expected<ExprPtr> parse_primary();
    Expected<ExprPtr> parse_postfix(ExprPtr subject);
    Expected<ExprPtr> parse_filters_and_tests(ExprPtr subject);
    Expected<ExprPtr> parse_subscript(ExprPtr subject, int line);
    Expected<void> parse_call_arguments(Expr& call);
    Expected<ExprPtr> parse_bracketed(int line);
    Expected<ExprPtr> parse_list(int line);
    Expected<ExprPtr> parse_dict(int line);
    // Records how deep `node` reaches (one more than its deepest operand) and refuses a tree
    // deeper than max_nesting: chains such as a.b.c... or x|f|f... grow without recursion here,
    // but evaluating and destroying them recurse.
    Expected<ExprPtr> built(ExprPtr node) const;

    const std::vector<Token>& tokens_;
    const std::string& source_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;  // for loops around the current position, for break and continue
};

// RAII depth counter for recursion through nested expressions and blocks.
class NestingGuard {
public:
    explicit NestingGuard(int& depth) : depth_(depth) { ++depth_; }
    ~NestingGuard() { --depth_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
    bool too_deep() const { return depth_ > max_nesting; }

private:
    int& depth_;
};

}  // namespace stormo::text::jinja::parsing
