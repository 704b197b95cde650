// A recursive-descent parser: the statements (tags and their blocks) here, the expressions in
// jinja_parse_expression.cpp.
#include "jinja/jinja_parser.hpp"

#include <utility>

#include "jinja/jinja_parser_state.hpp"

namespace stormo::text::jinja {
namespace parsing {

Expected<NodeList> Parser::parse_nodes(std::initializer_list<std::string_view> end_tags, std::string& found,
                                       const std::string& opener, int opener_line) {
    NestingGuard guard(depth_);
    if (guard.too_deep()) return tl::unexpected(error(peek().line, "blocks and expressions nested deeper than 200 levels"));
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

}  // namespace parsing

Expected<NodeList> parse_template(const std::vector<Token>& tokens, const std::string& source) {
    parsing::Parser parser(tokens, source);
    return parser.parse_all();
}

}  // namespace stormo::text::jinja
