// A recursive-descent parser with Jinja2's precedence, lowest first: conditional (a if b else c),
// or, and, not, comparisons and `in`, + and -, ~, * / // %, **, unary - and +, then postfix
// (.name, [key], [a:b:c], calls) and filters and tests (| name, is name), which bind tightest.
#include "text/jinja_parser.hpp"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "text/jinja_builtins.hpp"
#include "text/jinja_object.hpp"

namespace stormo::text::jinja {
namespace {

constexpr int max_nesting = 200;  // keeps a hostile template from exhausting the stack

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

Expected<NodeList> Parser::parse_nodes(std::initializer_list<std::string_view> end_tags, std::string& found,
                                       const std::string& opener, int opener_line) {
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "blocks nested deeper than 200 levels"));
    NodeList nodes;
    while (true) {
        const Token& t = peek();
        if (t.type == TokenType::end) {
            if (end_tags.size() == 0) return nodes;
            return tl::unexpected(error(opener_line, "unclosed '" + opener + "' block (no 'end" + opener +
                                                         "' before the end of the template)"));
        }
        if (t.type == TokenType::text) {
            auto node = std::make_unique<Node>();
            node->kind = NodeKind::text;
            node->line = t.line;
            node->text = next().text;
            nodes.push_back(std::move(node));
            continue;
        }
        if (t.type == TokenType::print_begin) {
            auto node = std::make_unique<Node>();
            node->kind = NodeKind::print;
            node->line = next().line;
            STORMO_TRY_ASSIGN(node->expr, parse_tuple_or_expression(true));
            if (peek().type != TokenType::print_end) return tl::unexpected(unexpected("'}}'"));
            next();
            nodes.push_back(std::move(node));
            continue;
        }
        if (t.type != TokenType::block_begin) return tl::unexpected(unexpected("template text or a tag"));
        next();
        int line = peek().line;
        STORMO_TRY_ASSIGN(std::string tag, expect_name());
        if (std::find(end_tags.begin(), end_tags.end(), tag) != end_tags.end()) {
            found = tag;
            return nodes;
        }
        STORMO_TRY_ASSIGN(auto node, parse_statement(tag, line));
        nodes.push_back(std::move(node));
    }
}

Expected<std::unique_ptr<Node>> Parser::parse_statement(const std::string& tag, int line) {
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "generation") return parse_simple_block(NodeKind::generation, tag, line);
    if (tag == "call") return parse_call_block(line);
    if (tag == "break" || tag == "continue") {
        if (loop_depth_ == 0) return tl::unexpected(error(line, single_quoted(tag) + " outside a for loop"));
        auto node = std::make_unique<Node>();
        node->kind = tag == "break" ? NodeKind::loop_break : NodeKind::loop_continue;
        node->line = line;
        STORMO_TRY(expect_block_end());
        return node;
    }
    static constexpr std::string_view closers[] = {"endif", "elif", "else", "endfor", "endset", "endmacro",
                                                   "endgeneration", "endraw", "endcall"};
    if (std::find(std::begin(closers), std::end(closers), tag) != std::end(closers))
        return tl::unexpected(error(line, "unexpected '" + tag + "' (no open block it closes)"));
    return tl::unexpected(error(line, "unsupported tag '" + tag + "'", ErrorKind::unsupported));
}

Expected<std::unique_ptr<Node>> Parser::parse_if(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::if_chain;
    node->line = line;
    STORMO_TRY_ASSIGN(ExprPtr condition, parse_tuple_or_expression(false));
    while (true) {
        STORMO_TRY(expect_block_end());
        std::string found;
        STORMO_TRY_ASSIGN(NodeList body, parse_nodes({"elif", "else", "endif"}, found, "if", line));
        node->branches.emplace_back(std::move(condition), std::move(body));
        if (found == "elif") {
            STORMO_TRY_ASSIGN(condition, parse_tuple_or_expression(false));
            continue;
        }
        if (found == "else") {
            STORMO_TRY(expect_block_end());
            STORMO_TRY_ASSIGN(NodeList else_body, parse_nodes({"endif"}, found, "if", line));
            node->branches.emplace_back(nullptr, std::move(else_body));
        }
        STORMO_TRY(expect_block_end());
        return node;
    }
}

Expected<std::unique_ptr<Node>> Parser::parse_for(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::for_loop;
    node->line = line;
    do {
        STORMO_TRY_ASSIGN(std::string target, expect_name());
        node->targets.push_back(std::move(target));
    } while (skip_op(","));
    if (!skip_name("in")) return tl::unexpected(unexpected("'in'"));
    STORMO_TRY_ASSIGN(node->expr, parse_tuple_or_expression(false));
    if (skip_name("if")) {
        STORMO_TRY_ASSIGN(node->filter, parse_tuple_or_expression(false));
    }
    if (is_name("recursive"))
        return tl::unexpected(error(peek().line, "unsupported construct 'recursive' loop", ErrorKind::unsupported));
    STORMO_TRY(expect_block_end());
    std::string found;
    ++loop_depth_;
    auto body = parse_nodes({"else", "endfor"}, found, "for", line);
    --loop_depth_;
    STORMO_TRY_ASSIGN(node->body, std::move(body));
    if (found == "else") {
        STORMO_TRY(expect_block_end());
        STORMO_TRY_ASSIGN(node->else_body, parse_nodes({"endfor"}, found, "for", line));
    }
    STORMO_TRY(expect_block_end());
    return node;
}

Expected<std::unique_ptr<Node>> Parser::parse_set(int line) {
    auto node = std::make_unique<Node>();
    node->line = line;
    STORMO_TRY_ASSIGN(std::string first, expect_name());
    node->targets.push_back(first);
    if (skip_op(".")) {
        node->kind = NodeKind::set_member;
        STORMO_TRY_ASSIGN(node->attribute, expect_name());
    } else {
        node->kind = NodeKind::set;
        while (skip_op(",")) {
            STORMO_TRY_ASSIGN(std::string target, expect_name());
            node->targets.push_back(std::move(target));
        }
    }
    if (skip_op("=")) {
        STORMO_TRY_ASSIGN(node->expr, parse_tuple_or_expression(true));
        STORMO_TRY(expect_block_end());
        return node;
    }
    if (node->kind != NodeKind::set || node->targets.size() != 1) return tl::unexpected(unexpected("'='"));
    if (is_op("|"))
        return tl::unexpected(error(line, "unsupported construct 'set' block with a filter", ErrorKind::unsupported));
    node->kind = NodeKind::set_block;
    STORMO_TRY(expect_block_end());
    std::string found;
    STORMO_TRY_ASSIGN(node->body, parse_nodes({"endset"}, found, "set", line));
    STORMO_TRY(expect_block_end());
    return node;
}

Expected<std::unique_ptr<Node>> Parser::parse_macro(int line) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::macro;
    node->line = line;
    STORMO_TRY_ASSIGN(node->name, expect_name());
    STORMO_TRY(expect_op("("));
    while (!is_op(")")) {
        STORMO_TRY_ASSIGN(std::string param, expect_name());
        ExprPtr fallback;
        if (skip_op("=")) {
            STORMO_TRY_ASSIGN(fallback, parse_expression());
        } else if (!node->defaults.empty() && node->defaults.back()) {
            return tl::unexpected(error(line, "macro parameter '" + param + "' without a default follows one with a default"));
        }
        node->params.push_back(std::move(param));
        node->defaults.push_back(std::move(fallback));
        if (!skip_op(",")) break;
    }
    STORMO_TRY(expect_op(")"));
    STORMO_TRY(expect_block_end());
    std::string found;
    int enclosing_loops = std::exchange(loop_depth_, 0);  // a macro body is not inside the caller's loop
    auto body = parse_nodes({"endmacro"}, found, "macro", line);
    loop_depth_ = enclosing_loops;
    STORMO_TRY_ASSIGN(node->body, std::move(body));
    if (peek().type == TokenType::name && peek().text == node->name) next();
    STORMO_TRY(expect_block_end());
    return node;
}

Expected<std::unique_ptr<Node>> Parser::parse_simple_block(NodeKind kind, const std::string& tag, int line) {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->line = line;
    STORMO_TRY(expect_block_end());
    std::string found;
    std::string end_tag = "end" + tag;
    STORMO_TRY_ASSIGN(node->body, parse_nodes({end_tag}, found, tag, line));
    STORMO_TRY(expect_block_end());
    return node;
}

Expected<std::unique_ptr<Node>> Parser::parse_call_block(int line) {
    if (is_op("("))
        return tl::unexpected(error(line, "unsupported construct 'call' block with caller arguments", ErrorKind::unsupported));
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::call_block;
    node->line = line;
    STORMO_TRY_ASSIGN(node->expr, parse_expression());
    if (node->expr->kind != ExprKind::call) return tl::unexpected(error(line, "a call block needs a macro call"));
    STORMO_TRY(expect_block_end());
    std::string found;
    int enclosing_loops = std::exchange(loop_depth_, 0);  // the body runs inside the macro, not the loop
    auto body = parse_nodes({"endcall"}, found, "call", line);
    loop_depth_ = enclosing_loops;
    STORMO_TRY_ASSIGN(node->body, std::move(body));
    STORMO_TRY(expect_block_end());
    return node;
}

// ---- expressions

Expected<ExprPtr> Parser::parse_expression() {
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "expression nested deeper than 200 levels"));
    STORMO_TRY_ASSIGN(ExprPtr value, parse_or());
    while (is_name("if")) {
        int line = next().line;
        auto cond = make(ExprKind::conditional, line);
        cond->a = std::move(value);
        STORMO_TRY_ASSIGN(cond->b, parse_or());
        if (skip_name("else")) {
            STORMO_TRY_ASSIGN(cond->c, parse_expression());
        }
        value = std::move(cond);
    }
    return value;
}

// An expression, or a bare tuple `a, b` as in `{% set a = 1, 2 %}`.
Expected<ExprPtr> Parser::parse_tuple_or_expression(bool with_conditional) {
    int line = peek().line;
    auto one = [&]() { return with_conditional ? parse_expression() : parse_or(); };
    STORMO_TRY_ASSIGN(ExprPtr first, one());
    if (!is_op(",")) return first;
    auto tuple = make(ExprKind::tuple, line);
    tuple->items.push_back(std::move(first));
    while (skip_op(",")) {
        if (peek().type == TokenType::block_end || peek().type == TokenType::print_end) break;
        STORMO_TRY_ASSIGN(ExprPtr item, one());
        tuple->items.push_back(std::move(item));
    }
    return tuple;
}

Expected<ExprPtr> Parser::parse_or() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_and());
    while (is_name("or")) {
        auto node = make(ExprKind::logical_or, next().line);
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_and());
        left = std::move(node);
    }
    return left;
}

Expected<ExprPtr> Parser::parse_and() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_not());
    while (is_name("and")) {
        auto node = make(ExprKind::logical_and, next().line);
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_not());
        left = std::move(node);
    }
    return left;
}

Expected<ExprPtr> Parser::parse_not() {
    if (!is_name("not")) return parse_compare();
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "expression nested deeper than 200 levels"));
    auto node = make(ExprKind::logical_not, next().line);
    STORMO_TRY_ASSIGN(node->a, parse_not());
    return node;
}

Expected<ExprPtr> Parser::parse_compare() {
    int line = peek().line;
    STORMO_TRY_ASSIGN(ExprPtr left, parse_sum());
    ExprPtr chain;
    while (true) {
        std::string op;
        if (peek().type == TokenType::op &&
            (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
             peek().text == "<=" || peek().text == ">=")) {
            op = next().text;
        } else if (is_name("in")) {
            next();
            op = "in";
        } else if (is_name("not") && is_name("in", 1)) {
            next();
            next();
            op = "not in";
        } else {
            break;
        }
        if (!chain) {
            chain = make(ExprKind::compare, line);
            chain->a = std::move(left);
        }
        STORMO_TRY_ASSIGN(ExprPtr right, parse_sum());
        chain->ops.emplace_back(std::move(op), std::move(right));
    }
    return chain ? std::move(chain) : std::move(left);
}

Expected<ExprPtr> Parser::parse_sum() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_concat());
    while (is_op("+") || is_op("-")) {
        auto node = make(ExprKind::binary, peek().line);
        node->name = next().text;
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_concat());
        left = std::move(node);
    }
    return left;
}

Expected<ExprPtr> Parser::parse_concat() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_product());
    while (is_op("~")) {
        auto node = make(ExprKind::binary, peek().line);
        node->name = next().text;
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_product());
        left = std::move(node);
    }
    return left;
}

Expected<ExprPtr> Parser::parse_product() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_power());
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
        auto node = make(ExprKind::binary, peek().line);
        node->name = next().text;
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_power());
        left = std::move(node);
    }
    return left;
}

Expected<ExprPtr> Parser::parse_power() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
        auto node = make(ExprKind::binary, peek().line);
        node->name = next().text;
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_unary(true));
        left = std::move(node);
    }
    return left;
}

// Jinja2 applies filters after a unary minus: `-x|abs` is abs(-x).
Expected<ExprPtr> Parser::parse_unary(bool with_filters) {
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "expression nested deeper than 200 levels"));
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
        const Token& sign = next();
        node = make(sign.text == "-" ? ExprKind::negate : ExprKind::plus, sign.line);
        STORMO_TRY_ASSIGN(node->a, parse_unary(false));
    } else {
        STORMO_TRY_ASSIGN(node, parse_primary());
    }
    STORMO_TRY_ASSIGN(node, parse_postfix(std::move(node)));
    if (with_filters) {
        STORMO_TRY_ASSIGN(node, parse_filters_and_tests(std::move(node)));
    }
    return node;
}

Expected<ExprPtr> Parser::parse_primary() {
    const Token& t = peek();
    int line = t.line;
    switch (t.type) {
        case TokenType::name: {
            std::string name = next().text;
            auto node = make(ExprKind::literal, line);
            if (name == "true" || name == "True") node->value = Value(true);
            else if (name == "false" || name == "False") node->value = Value(false);
            else if (name == "none" || name == "None") node->value = Value();
            else {
                node->kind = ExprKind::name;
                node->name = std::move(name);
            }
            return node;
        }
        case TokenType::string: {
            std::string text = next().text;
            while (peek().type == TokenType::string) text += next().text;  // adjacent literals join
            auto node = make(ExprKind::literal, line);
            node->value = Value(std::move(text));
            return node;
        }
        case TokenType::integer: {
            auto node = make(ExprKind::literal, line);
            node->value = Value(next().integer);
            return node;
        }
        case TokenType::floating: {
            auto node = make(ExprKind::literal, line);
            node->value = Value(next().floating);
            return node;
        }
        case TokenType::op:
            if (t.text == "(") return parse_bracketed(line);
            if (t.text == "[") return parse_list(line);
            if (t.text == "{") return parse_dict(line);
            break;
        default: break;
    }
    return tl::unexpected(unexpected("an expression"));
}

// ( expression ) or a tuple: (), (a,), (a, b)
Expected<ExprPtr> Parser::parse_bracketed(int line) {
    next();
    if (skip_op(")")) return make(ExprKind::tuple, line);
    STORMO_TRY_ASSIGN(ExprPtr first, parse_expression());
    if (skip_op(")")) return first;
    auto tuple = make(ExprKind::tuple, line);
    tuple->items.push_back(std::move(first));
    while (skip_op(",")) {
        if (is_op(")")) break;
        STORMO_TRY_ASSIGN(ExprPtr item, parse_expression());
        tuple->items.push_back(std::move(item));
    }
    STORMO_TRY(expect_op(")"));
    return tuple;
}

Expected<ExprPtr> Parser::parse_list(int line) {
    next();
    auto list = make(ExprKind::list, line);
    while (!is_op("]")) {
        STORMO_TRY_ASSIGN(ExprPtr item, parse_expression());
        list->items.push_back(std::move(item));
        if (!skip_op(",")) break;
    }
    STORMO_TRY(expect_op("]"));
    return list;
}

Expected<ExprPtr> Parser::parse_dict(int line) {
    next();
    auto dict = make(ExprKind::dict, line);
    while (!is_op("}")) {
        STORMO_TRY_ASSIGN(ExprPtr key, parse_expression());
        STORMO_TRY(expect_op(":"));
        STORMO_TRY_ASSIGN(ExprPtr value, parse_expression());
        dict->items.push_back(std::move(key));
        dict->items.push_back(std::move(value));
        if (!skip_op(",")) break;
    }
    STORMO_TRY(expect_op("}"));
    return dict;
}

Expected<ExprPtr> Parser::parse_postfix(ExprPtr subject) {
    while (true) {
        int line = peek().line;
        if (skip_op(".")) {
            auto node = make(ExprKind::attribute, line);
            node->a = std::move(subject);
            if (peek().type == TokenType::integer) {  // x.0 is x[0] in Jinja
                node->kind = ExprKind::subscript;
                node->b = make(ExprKind::literal, line);
                node->b->value = Value(next().integer);
            } else {
                STORMO_TRY_ASSIGN(node->name, expect_name());
            }
            subject = std::move(node);
        } else if (is_op("[")) {
            next();
            STORMO_TRY_ASSIGN(subject, parse_subscript(std::move(subject), line));
        } else if (is_op("(")) {
            next();
            auto call = make(ExprKind::call, line);
            call->a = std::move(subject);
            STORMO_TRY(parse_call_arguments(*call));
            subject = std::move(call);
        } else {
            return subject;
        }
    }
}

Expected<ExprPtr> Parser::parse_subscript(ExprPtr subject, int line) {
    ExprPtr bounds[3];
    int colons = 0;
    while (true) {
        if (is_op(":")) {
            next();
            if (++colons > 2) return tl::unexpected(unexpected("']'"));
            continue;
        }
        if (is_op("]")) break;
        if (bounds[colons]) return tl::unexpected(unexpected("':' or ']'"));
        STORMO_TRY_ASSIGN(bounds[colons], parse_expression());
    }
    next();
    if (colons == 0) {
        if (!bounds[0]) return tl::unexpected(error(line, "empty subscript"));
        auto node = make(ExprKind::subscript, line);
        node->a = std::move(subject);
        node->b = std::move(bounds[0]);
        return node;
    }
    auto node = make(ExprKind::slice, line);
    node->a = std::move(subject);
    node->b = std::move(bounds[0]);
    node->c = std::move(bounds[1]);
    node->d = std::move(bounds[2]);
    return node;
}

// (a, b, key=c); the opening parenthesis is already read.
Expected<void> Parser::parse_call_arguments(Expr& call) {
    while (!is_op(")")) {
        if (is_op("*") || is_op("**"))
            return tl::unexpected(error(peek().line, "unsupported construct '*' or '**' arguments", ErrorKind::unsupported));
        if (peek().type == TokenType::name && is_op("=", 1)) {
            std::string key = next().text;
            next();
            STORMO_TRY_ASSIGN(ExprPtr value, parse_expression());
            call.kwargs.emplace_back(std::move(key), std::move(value));
        } else {
            if (!call.kwargs.empty()) return tl::unexpected(error(peek().line, "a positional argument follows a keyword argument"));
            STORMO_TRY_ASSIGN(ExprPtr value, parse_expression());
            call.items.push_back(std::move(value));
        }
        if (!skip_op(",")) break;
    }
    return expect_op(")");
}

Expected<ExprPtr> Parser::parse_filters_and_tests(ExprPtr subject) {
    while (true) {
        int line = peek().line;
        if (skip_op("|")) {
            auto node = make(ExprKind::filter, line);
            node->a = std::move(subject);
            STORMO_TRY_ASSIGN(node->name, expect_name());
            while (skip_op(".")) {
                STORMO_TRY_ASSIGN(std::string part, expect_name());
                node->name += "." + part;
            }
            if (!is_known_filter(node->name))
                return tl::unexpected(error(line, "unsupported filter '" + node->name + "'", ErrorKind::unsupported));
            if (skip_op("(")) STORMO_TRY(parse_call_arguments(*node));
            subject = std::move(node);
        } else if (is_name("is")) {
            next();
            auto node = make(ExprKind::test, line);
            node->a = std::move(subject);
            node->negated = skip_name("not");
            if (peek().type == TokenType::name) {
                node->name = next().text;
            } else if (peek().type == TokenType::op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                                        peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
                node->name = next().text;
            } else {
                return tl::unexpected(unexpected("a test name"));
            }
            if (!is_known_test(node->name))
                return tl::unexpected(error(line, "unsupported test '" + node->name + "'", ErrorKind::unsupported));
            if (skip_op("(")) {
                STORMO_TRY(parse_call_arguments(*node));
            } else {
                const Token& t = peek();
                bool starts_argument = t.type == TokenType::string || t.type == TokenType::integer ||
                                       t.type == TokenType::floating ||
                                       (t.type == TokenType::op && (t.text == "[" || t.text == "{")) ||
                                       (t.type == TokenType::name && t.text != "else" && t.text != "or" &&
                                        t.text != "and" && t.text != "is" && t.text != "if" && t.text != "in" &&
                                        t.text != "not");
                if (starts_argument) {
                    STORMO_TRY_ASSIGN(ExprPtr argument, parse_primary());
                    STORMO_TRY_ASSIGN(argument, parse_postfix(std::move(argument)));
                    node->items.push_back(std::move(argument));
                }
            }
            subject = std::move(node);
        } else {
            return subject;
        }
    }
}

}  // namespace

Expected<NodeList> parse_template(const std::vector<Token>& tokens, const std::string& source) {
    Parser parser(tokens, source);
    return parser.parse_all();
}

}  // namespace stormo::text::jinja
