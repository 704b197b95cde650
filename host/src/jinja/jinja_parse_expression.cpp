// Expressions, by Jinja2's precedence, lowest first: conditional (a if b else c), or, and, not,
// comparisons and `in`, + and -, ~, * / // %, **, unary - and +, then postfix (.name, [key],
// [a:b:c], calls) and filters and tests (| name, is name), which bind tightest.
#include "jinja/jinja_builtins.hpp"
#include "jinja/jinja_parser_state.hpp"

namespace stormo::text::jinja::parsing {

Expected<ExprPtr> Parser::built(ExprPtr node) const {
    int deepest = 0;
    for (const Expr* child : {node->a.get(), node->b.get(), node->c.get(), node->d.get()})
        if (child) deepest = std::max(deepest, child->depth);
    for (const auto& item : node->items) deepest = std::max(deepest, item->depth);
    for (const auto& [key, value] : node->kwargs) deepest = std::max(deepest, value->depth);
    for (const auto& [op, value] : node->ops) deepest = std::max(deepest, value->depth);
    node->depth = deepest + 1;
    if (node->depth > max_nesting) return tl::unexpected(error(node->line, "blocks and expressions nested deeper than 200 levels"));
    return node;
}

Expected<ExprPtr> Parser::parse_expression() {
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "blocks and expressions nested deeper than 200 levels"));
    STORMO_TRY_ASSIGN(ExprPtr value, parse_or());
    while (is_name("if")) {
        int line = next().line;
        auto cond = make(ExprKind::conditional, line);
        cond->a = std::move(value);
        STORMO_TRY_ASSIGN(cond->b, parse_or());
        if (skip_name("else")) {
            STORMO_TRY_ASSIGN(cond->c, parse_expression());
        }
        STORMO_TRY_ASSIGN(value, built(std::move(cond)));
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
    return built(std::move(tuple));
}

Expected<ExprPtr> Parser::parse_or() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_and());
    while (is_name("or")) {
        auto node = make(ExprKind::logical_or, next().line);
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_and());
        STORMO_TRY_ASSIGN(left, built(std::move(node)));
    }
    return left;
}

Expected<ExprPtr> Parser::parse_and() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_not());
    while (is_name("and")) {
        auto node = make(ExprKind::logical_and, next().line);
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_not());
        STORMO_TRY_ASSIGN(left, built(std::move(node)));
    }
    return left;
}

Expected<ExprPtr> Parser::parse_not() {
    if (!is_name("not")) return parse_compare();
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "blocks and expressions nested deeper than 200 levels"));
    auto node = make(ExprKind::logical_not, next().line);
    STORMO_TRY_ASSIGN(node->a, parse_not());
    return built(std::move(node));
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
    if (!chain) return left;
    return built(std::move(chain));
}

Expected<ExprPtr> Parser::parse_sum() {
    STORMO_TRY_ASSIGN(ExprPtr left, parse_concat());
    while (is_op("+") || is_op("-")) {
        auto node = make(ExprKind::binary, peek().line);
        node->name = next().text;
        node->a = std::move(left);
        STORMO_TRY_ASSIGN(node->b, parse_concat());
        STORMO_TRY_ASSIGN(left, built(std::move(node)));
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
        STORMO_TRY_ASSIGN(left, built(std::move(node)));
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
        STORMO_TRY_ASSIGN(left, built(std::move(node)));
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
        STORMO_TRY_ASSIGN(left, built(std::move(node)));
    }
    return left;
}

// Jinja2 applies filters after a unary minus: `-x|abs` is abs(-x).
Expected<ExprPtr> Parser::parse_unary(bool with_filters) {
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "blocks and expressions nested deeper than 200 levels"));
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
    return built(std::move(node));
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
    return built(std::move(tuple));
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
    return built(std::move(list));
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
    return built(std::move(dict));
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
            STORMO_TRY_ASSIGN(subject, built(std::move(node)));
        } else if (is_op("[")) {
            next();
            STORMO_TRY_ASSIGN(subject, parse_subscript(std::move(subject), line));
        } else if (is_op("(")) {
            next();
            auto call = make(ExprKind::call, line);
            call->a = std::move(subject);
            STORMO_TRY(parse_call_arguments(*call));
            STORMO_TRY_ASSIGN(subject, built(std::move(call)));
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
        return built(std::move(node));
    }
    auto node = make(ExprKind::slice, line);
    node->a = std::move(subject);
    node->b = std::move(bounds[0]);
    node->c = std::move(bounds[1]);
    node->d = std::move(bounds[2]);
    return built(std::move(node));
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
            STORMO_TRY_ASSIGN(subject, built(std::move(node)));
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
            STORMO_TRY_ASSIGN(subject, built(std::move(node)));
        } else {
            return subject;
        }
    }
}

}  // namespace stormo::text::jinja::parsing
