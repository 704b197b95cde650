#pragma once
// The parsed template: expressions and statements as the parser builds them and the evaluator
// walks them. Every node keeps its template line for error messages.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/chat_value.hpp"

namespace stormo::text::jinja {

enum class ExprKind {
    literal,      // value
    name,         // name
    list,         // items
    tuple,        // items (a Python tuple; held as a list)
    dict,         // items: key, value, key, value, ...
    attribute,    // a.name
    subscript,    // a[b]
    slice,        // a[b:c:d], each bound optional
    call,         // a(items, kwargs)
    filter,       // a | name(items, kwargs)
    test,         // a is [not] name(items)
    logical_not,  // not a
    negate,       // -a
    plus,         // +a
    binary,       // a name b: + - * / // % ** ~
    compare,      // a ops[0] ops[1] ...: == != < > <= >= in, not in
    logical_and,  // a and b
    logical_or,   // a or b
    conditional,  // a if b else c (c optional)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    ExprKind kind = ExprKind::literal;
    int line = 0;
    int depth = 1;  // levels of operands below and including this node
    Value value;
    std::string name;
    bool negated = false;
    ExprPtr a, b, c, d;
    std::vector<ExprPtr> items;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::pair<std::string, ExprPtr>> ops;  // compare: operator and right operand
};

enum class NodeKind {
    text,        // text
    print,       // {{ expr }}
    if_chain,    // branches: condition (null for else) and body
    for_loop,    // for targets in expr [if filter]: body [else else_body]
    set,         // set targets = expr
    set_block,   // set targets[0]: body captured
    set_member,  // set targets[0].attribute = expr (namespace members)
    macro,       // macro name(params = defaults): body
    loop_break,
    loop_continue,
    generation,  // transformers' {% generation %} marker: renders its body
    call_block,  // {% call macro(args) %}body{% endcall %}: the macro's caller() renders body
};

struct Node;
using NodeList = std::vector<std::unique_ptr<Node>>;

struct Node {
    NodeKind kind = NodeKind::text;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr filter;
    std::vector<std::pair<ExprPtr, NodeList>> branches;
    std::vector<std::string> targets;
    std::string attribute;
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // per parameter; null when it has none
    NodeList body;
    NodeList else_body;
};

}  // namespace stormo::text::jinja
