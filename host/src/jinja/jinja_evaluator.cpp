// The template walk: statements write to the output, expressions evaluate to Objects.
#include "jinja/jinja_evaluator.hpp"

#include <utility>
#include <vector>

#include "jinja/jinja_builtins.hpp"
#include "jinja/jinja_globals.hpp"
#include "jinja/jinja_methods.hpp"
#include "jinja/jinja_object.hpp"

namespace stormo::text::jinja {
namespace {

// Variables of one scope; lookups fall back to the enclosing scope.
class Scope {
public:
    explicit Scope(const Scope* parent) : parent_(parent) {}

    const Object* find(std::string_view name) const {
        for (const Scope* s = this; s; s = s->parent_)
            for (const auto& [key, value] : s->vars_)
                if (key == name) return &value;
        return nullptr;
    }
    void set(const std::string& name, Object value) {
        for (auto& [key, existing] : vars_)
            if (key == name) {
                existing = std::move(value);
                return;
            }
        vars_.emplace_back(name, std::move(value));
    }

private:
    const Scope* parent_;
    std::vector<std::pair<std::string, Object>> vars_;
};

enum class Flow { normal, break_loop, continue_loop };

// Counts the statements and expressions being evaluated at once: through macro calls they nest
// as deep as a template likes, and each level is C++ stack.
class NestingCount {
public:
    explicit NestingCount(int& open) : open_(open) { ++open_; }
    ~NestingCount() { --open_; }
    NestingCount(const NestingCount&) = delete;
    NestingCount& operator=(const NestingCount&) = delete;

private:
    int& open_;
};

class Evaluator {
public:
    explicit Evaluator(const RenderContext& context) : context_(context) {}

    Expected<std::string> run(const NodeList& nodes) {
        Scope root(nullptr);
        for (const auto& [name, value] : context_.variables) root.set(name, Object::of(value));
        root_ = &root;
        STORMO_TRY(exec_nodes(nodes, root));
        return std::move(out_);
    }

private:
    Error located(int line, const Error& e) const {
        return Error{e.kind, context_.source + ":" + std::to_string(line) + ": " + e.message};
    }
    template <class T>
    Expected<T> at_line(int line, Expected<T> result) const {
        if (!result) return tl::unexpected(located(line, result.error()));
        return result;
    }
    Expected<void> step(int line);
    Expected<void> check_nesting(int line) const;
    Expected<void> emit(std::string_view text, int line);

    Expected<Flow> exec_nodes(const NodeList& nodes, Scope& scope);
    Expected<Flow> exec(const Node& node, Scope& scope);
    Expected<Flow> exec_if(const Node& node, Scope& scope);
    Expected<Flow> exec_for(const Node& node, Scope& scope);
    Expected<void> exec_set(const Node& node, Scope& scope);
    Expected<void> exec_set_member(const Node& node, Scope& scope);
    Expected<std::string> capture(const NodeList& body, Scope& scope);
    Expected<void> bind_targets(const std::vector<std::string>& targets, const Object& value, Scope& scope, int line);

    Expected<Object> eval(const Expr& e, Scope& scope);
    Expected<Object> eval_expr(const Expr& e, Scope& scope);
    Expected<void> check_value(const Object& value, int line) const;
    Expected<Object> charged(int line, Expected<Object> result);
    size_t max_bytes() const { return context_.limits.max_output_bytes; }
    Expected<Object> eval_name(const Expr& e, Scope& scope);
    Expected<Value> eval_data(const Expr& e, Scope& scope, const char* container);
    Expected<Object> eval_list(const Expr& e, Scope& scope);
    Expected<Object> eval_dict(const Expr& e, Scope& scope);
    Expected<Object> eval_slice(const Expr& e, Scope& scope);
    Expected<CallArgs> eval_args(const Expr& e, Scope& scope);
    Expected<Object> eval_call(const Expr& e, Scope& scope);
    Expected<Object> call_macro(const Node& macro, const CallArgs& args, int line, const Object* caller = nullptr);
    Expected<void> exec_call_block(const Node& node, Scope& scope);
    Expected<Object> call_caller(const Callable& caller, int line);
    Expected<Object> eval_filter(const Expr& e, Scope& scope);
    Expected<Object> eval_test(const Expr& e, Scope& scope);
    Expected<Object> eval_unary(const Expr& e, Scope& scope);
    Expected<Object> eval_binary(const Expr& e, Scope& scope);
    Expected<Object> eval_compare(const Expr& e, Scope& scope);
    Expected<bool> compare_once(const std::string& op, const Object& a, const Object& b);
    Expected<Object> eval_logical(const Expr& e, Scope& scope);
    Expected<Object> eval_conditional(const Expr& e, Scope& scope);

    const RenderContext& context_;
    const Scope* root_ = nullptr;
    std::string out_;
    size_t produced_ = 0;
    uint64_t steps_ = 0;
    int macro_depth_ = 0;
    int open_ = 0;  // statements and expressions under evaluation
};

Expected<void> Evaluator::check_nesting(int line) const {
    if (open_ <= context_.limits.max_nesting) return {};
    return fail(ErrorKind::resource, context_.source + ":" + std::to_string(line) + ": statements and expressions nested more than " +
                                         std::to_string(context_.limits.max_nesting) + " deep (through macro calls)");
}

Expected<void> Evaluator::step(int line) {
    if (++steps_ <= context_.limits.max_steps) return {};
    return fail(ErrorKind::resource, context_.source + ":" + std::to_string(line) + ": template ran more than " +
                                         std::to_string(context_.limits.max_steps) + " steps (a runaway loop?)");
}

Expected<void> Evaluator::emit(std::string_view text, int line) {
    produced_ += text.size();
    if (produced_ > context_.limits.max_output_bytes)
        return fail(ErrorKind::resource, context_.source + ":" + std::to_string(line) + ": rendered output exceeds " +
                                             std::to_string(context_.limits.max_output_bytes) + " bytes (a runaway template?)");
    out_ += text;
    return {};
}

// ---- statements

Expected<Flow> Evaluator::exec_nodes(const NodeList& nodes, Scope& scope) {
    for (const auto& node : nodes) {
        STORMO_TRY_ASSIGN(Flow flow, exec(*node, scope));
        if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
}

Expected<Flow> Evaluator::exec(const Node& node, Scope& scope) {
    NestingCount nesting(open_);
    STORMO_TRY(check_nesting(node.line));
    STORMO_TRY(step(node.line));
    switch (node.kind) {
        case NodeKind::text: STORMO_TRY(emit(node.text, node.line)); break;
        case NodeKind::print: {
            STORMO_TRY_ASSIGN(Object value, eval(*node.expr, scope));
            STORMO_TRY(emit(to_text(value), node.line));
            break;
        }
        case NodeKind::if_chain: return exec_if(node, scope);
        case NodeKind::for_loop: return exec_for(node, scope);
        case NodeKind::set: STORMO_TRY(exec_set(node, scope)); break;
        case NodeKind::set_member: STORMO_TRY(exec_set_member(node, scope)); break;
        case NodeKind::set_block: {
            STORMO_TRY_ASSIGN(std::string text, capture(node.body, scope));
            scope.set(node.targets[0], Object::of(Value(std::move(text))));
            break;
        }
        case NodeKind::macro: {
            auto macro = std::make_shared<Callable>();
            macro->kind = Callable::Kind::macro;
            macro->macro = &node;
            macro->name = node.name;
            Object o;
            o.kind = Object::Kind::callable;
            o.fn = std::move(macro);
            scope.set(node.name, std::move(o));
            break;
        }
        case NodeKind::loop_break: return Flow::break_loop;
        case NodeKind::loop_continue: return Flow::continue_loop;
        case NodeKind::generation: return exec_nodes(node.body, scope);
        case NodeKind::call_block: STORMO_TRY(exec_call_block(node, scope)); break;
    }
    return Flow::normal;
}

Expected<Flow> Evaluator::exec_if(const Node& node, Scope& scope) {
    for (const auto& [condition, body] : node.branches) {
        if (condition) {
            STORMO_TRY_ASSIGN(Object test, eval(*condition, scope));
            if (!truthy(test)) continue;
        }
        return exec_nodes(body, scope);
    }
    return Flow::normal;
}

// The `loop` variable of one iteration.
Value loop_info(const ValueList& items, size_t k) {
    auto n = static_cast<int64_t>(items.size());
    auto i = static_cast<int64_t>(k);
    Value loop = Value::object({{"index", Value(i + 1)},
                                {"index0", Value(i)},
                                {"revindex", Value(n - i)},
                                {"revindex0", Value(n - i - 1)},
                                {"first", Value(k == 0)},
                                {"last", Value(i == n - 1)},
                                {"length", Value(n)},
                                {"depth", Value(int64_t{1})},
                                {"depth0", Value(int64_t{0})}});
    if (k > 0) loop.set("previtem", items[k - 1]);
    if (i + 1 < n) loop.set("nextitem", items[k + 1]);
    return loop;
}

Expected<Flow> Evaluator::exec_for(const Node& node, Scope& scope) {
    STORMO_TRY_ASSIGN(Object iterable, eval(*node.expr, scope));
    STORMO_TRY_ASSIGN(ValueList items, at_line(node.line, iterate(iterable)));
    if (node.filter) {  // `for x in xs if cond`: loop.index and length count the kept items
        ValueList kept;
        for (const Value& item : items) {
            STORMO_TRY(step(node.line));
            Scope probe(&scope);
            STORMO_TRY(bind_targets(node.targets, Object::of(item), probe, node.line));
            STORMO_TRY_ASSIGN(Object keep, eval(*node.filter, probe));
            if (truthy(keep)) kept.push_back(item);
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        Scope else_scope(&scope);
        STORMO_TRY(exec_nodes(node.else_body, else_scope));
        return Flow::normal;
    }
    for (size_t k = 0; k < items.size(); ++k) {
        STORMO_TRY(step(node.line));
        Scope iteration(&scope);  // fresh each time: a `set` in the body lasts one iteration
        STORMO_TRY(bind_targets(node.targets, Object::of(items[k]), iteration, node.line));
        iteration.set("loop", Object::of(loop_info(items, k)));
        STORMO_TRY_ASSIGN(Flow flow, exec_nodes(node.body, iteration));
        if (flow == Flow::break_loop) break;
    }
    return Flow::normal;
}

Expected<void> Evaluator::bind_targets(const std::vector<std::string>& targets, const Object& value, Scope& scope, int line) {
    if (targets.size() == 1) {
        scope.set(targets[0], value);
        return {};
    }
    STORMO_TRY_ASSIGN(ValueList parts, at_line(line, iterate(value)));
    if (parts.size() != targets.size())
        return fail(ErrorKind::invalid_argument, context_.source + ":" + std::to_string(line) + ": cannot unpack " +
                                                     std::to_string(parts.size()) + " values into " +
                                                     std::to_string(targets.size()) + " names");
    for (size_t k = 0; k < targets.size(); ++k) scope.set(targets[k], Object::of(parts[k]));
    return {};
}

Expected<void> Evaluator::exec_set(const Node& node, Scope& scope) {
    STORMO_TRY_ASSIGN(Object value, eval(*node.expr, scope));
    return bind_targets(node.targets, value, scope, node.line);
}

Expected<void> Evaluator::exec_set_member(const Node& node, Scope& scope) {
    const Object* target = scope.find(node.targets[0]);
    if (!target || target->kind != Object::Kind::namespace_object)
        return fail(ErrorKind::invalid_argument, context_.source + ":" + std::to_string(node.line) +
                                                     ": cannot assign attribute on non-namespace object '" +
                                                     node.targets[0] + "'");
    std::shared_ptr<Namespace> ns = target->ns;
    STORMO_TRY_ASSIGN(Object value, eval(*node.expr, scope));
    if (value.kind == Object::Kind::namespace_object)  // two namespaces holding each other would never be freed
        return fail(ErrorKind::unsupported, context_.source + ":" + std::to_string(node.line) +
                                                ": a namespace member cannot be another namespace");
    ns->set(node.attribute, std::move(value));
    return {};
}

// Renders `body` into a string of its own (set blocks, macro calls).
Expected<std::string> Evaluator::capture(const NodeList& body, Scope& scope) {
    std::string outer = std::exchange(out_, std::string());
    auto result = exec_nodes(body, scope);
    std::string captured = std::exchange(out_, std::move(outer));
    STORMO_TRY(result);
    return captured;
}

// ---- expressions

// Every value an expression gives is checked here, so no value a template builds is nested or
// sized past the limits: each operation adds at most a level or two to its operands.
Expected<Object> Evaluator::eval(const Expr& e, Scope& scope) {
    NestingCount nesting(open_);
    STORMO_TRY(check_nesting(e.line));
    STORMO_TRY_ASSIGN(Object value, eval_expr(e, scope));
    STORMO_TRY(check_value(value, e.line));
    return value;
}

Expected<void> Evaluator::check_value(const Object& value, int line) const {
    if (!value.is_data()) return {};
    if (value.data.depth() > static_cast<uint32_t>(context_.limits.max_value_depth))
        return fail(ErrorKind::resource, context_.source + ":" + std::to_string(line) + ": a value nested more than " +
                                             std::to_string(context_.limits.max_value_depth) + " lists or dicts deep");
    if (value.data.weight() > max_bytes()) return tl::unexpected(located(line, too_large("a value", max_bytes())));
    return {};
}

// Building a string or list copies it: the copy counts as work, so a loop that grows one
// quadratically stops at the step limit instead of running for hours.
Expected<Object> Evaluator::charged(int line, Expected<Object> result) {
    if (!result) return tl::unexpected(located(line, result.error()));
    const Object& value = *result;
    if (value.is_data() && (value.data.is_string() || value.data.is_list())) {
        size_t size = value.data.is_string() ? value.data.as_string().size() : value.data.as_list().size() * 8;
        steps_ += size / 8;
        STORMO_TRY(step(line));
    }
    return result;
}

Expected<Object> Evaluator::eval_expr(const Expr& e, Scope& scope) {
    switch (e.kind) {
        case ExprKind::literal: return Object::of(e.value);
        case ExprKind::name: return eval_name(e, scope);
        case ExprKind::list:
        case ExprKind::tuple: return eval_list(e, scope);
        case ExprKind::dict: return eval_dict(e, scope);
        case ExprKind::attribute: {
            STORMO_TRY_ASSIGN(Object subject, eval(*e.a, scope));
            return at_line(e.line, get_attribute(subject, e.name));
        }
        case ExprKind::subscript: {
            STORMO_TRY_ASSIGN(Object subject, eval(*e.a, scope));
            STORMO_TRY_ASSIGN(Object key, eval(*e.b, scope));
            return at_line(e.line, get_item(subject, key));
        }
        case ExprKind::slice: return eval_slice(e, scope);
        case ExprKind::call: return eval_call(e, scope);
        case ExprKind::filter: return eval_filter(e, scope);
        case ExprKind::test: return eval_test(e, scope);
        case ExprKind::logical_not: {
            STORMO_TRY_ASSIGN(Object value, eval(*e.a, scope));
            return Object::of(Value(!truthy(value)));
        }
        case ExprKind::negate:
        case ExprKind::plus: return eval_unary(e, scope);
        case ExprKind::binary: return eval_binary(e, scope);
        case ExprKind::compare: return eval_compare(e, scope);
        case ExprKind::logical_and:
        case ExprKind::logical_or: return eval_logical(e, scope);
        case ExprKind::conditional: return eval_conditional(e, scope);
    }
    return fail(ErrorKind::internal, "unknown expression kind");
}

Expected<Object> Evaluator::eval_name(const Expr& e, Scope& scope) {
    if (const Object* value = scope.find(e.name)) return *value;
    if (is_global_function(e.name)) {
        auto global = std::make_shared<Callable>();
        global->kind = Callable::Kind::global;
        global->name = e.name;
        Object o;
        o.kind = Object::Kind::callable;
        o.fn = std::move(global);
        return o;
    }
    return Object::undefined(single_quoted(e.name) + " is undefined");
}

// Lists and dicts hold data only: a namespace, macro or Undefined inside one is an error here.
Expected<Value> Evaluator::eval_data(const Expr& e, Scope& scope, const char* container) {
    STORMO_TRY_ASSIGN(Object value, eval(e, scope));
    if (value.is_data()) return value.data;
    std::string why = value.is_undefined() ? value.hint : "a " + type_name(value);
    return fail(ErrorKind::unsupported, context_.source + ":" + std::to_string(e.line) + ": a " + container +
                                            " here can hold only data, not " + why);
}

Expected<Object> Evaluator::eval_list(const Expr& e, Scope& scope) {
    ValueList items;
    for (const auto& item : e.items) {
        STORMO_TRY_ASSIGN(Value v, eval_data(*item, scope, "list"));
        items.push_back(std::move(v));
    }
    return Object::of(e.kind == ExprKind::tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items)));
}

Expected<Object> Evaluator::eval_dict(const Expr& e, Scope& scope) {
    Value out = Value::object();
    for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
        STORMO_TRY_ASSIGN(Value key, eval_data(*e.items[k], scope, "dict"));
        STORMO_TRY_ASSIGN(Value value, eval_data(*e.items[k + 1], scope, "dict"));
        out.set(key.is_string() ? key.as_string() : to_text(Object::of(key)), std::move(value));
    }
    return Object::of(std::move(out));
}

Expected<Object> Evaluator::eval_slice(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object subject, eval(*e.a, scope));
    Object bounds[3] = {Object::of(Value()), Object::of(Value()), Object::of(Value())};
    const Expr* exprs[3] = {e.b.get(), e.c.get(), e.d.get()};
    for (int k = 0; k < 3; ++k)
        if (exprs[k]) {
            STORMO_TRY_ASSIGN(bounds[k], eval(*exprs[k], scope));
        }
    return at_line(e.line, get_slice(subject, bounds[0], bounds[1], bounds[2]));
}

Expected<CallArgs> Evaluator::eval_args(const Expr& e, Scope& scope) {
    CallArgs args;
    for (const auto& item : e.items) {
        STORMO_TRY_ASSIGN(Object value, eval(*item, scope));
        args.positional.push_back(std::move(value));
    }
    for (const auto& [key, item] : e.kwargs) {
        STORMO_TRY_ASSIGN(Object value, eval(*item, scope));
        args.keyword.emplace_back(key, std::move(value));
    }
    return args;
}

Expected<Object> Evaluator::eval_call(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object callee, eval(*e.a, scope));
    STORMO_TRY_ASSIGN(CallArgs args, eval_args(e, scope));
    if (callee.is_undefined()) return tl::unexpected(located(e.line, Error{ErrorKind::invalid_argument, callee.hint}));
    if (callee.kind != Object::Kind::callable)
    {
        std::string message = type_name(callee);
        message.insert(0, 1, '\'');
        return tl::unexpected(located(e.line, Error{ErrorKind::invalid_argument, message + "' object is not callable"}));
    }
    const Callable& fn = *callee.fn;
    switch (fn.kind) {
        case Callable::Kind::macro: return call_macro(*fn.macro, args, e.line);
        case Callable::Kind::method: return charged(e.line, call_method(fn.self, fn.name, args, max_bytes()));
        case Callable::Kind::global: return charged(e.line, call_global(fn.name, args, context_.strftime_text, max_bytes()));
        case Callable::Kind::caller: return call_caller(fn, e.line);
    }
    return fail(ErrorKind::internal, "unknown callable kind");
}

// {% call m(args) %}body{% endcall %}: m runs with a caller() that renders body where it stands.
Expected<void> Evaluator::exec_call_block(const Node& node, Scope& scope) {
    const Expr& call = *node.expr;
    STORMO_TRY_ASSIGN(Object callee, eval(*call.a, scope));
    STORMO_TRY_ASSIGN(CallArgs args, eval_args(call, scope));
    if (callee.kind != Object::Kind::callable || callee.fn->kind != Callable::Kind::macro)
        return fail(ErrorKind::invalid_argument, context_.source + ":" + std::to_string(node.line) +
                                                     ": a call block needs a macro, not " +
                                                     (callee.is_undefined() ? callee.hint : type_name(callee)));
    auto caller_fn = std::make_shared<Callable>();
    caller_fn->kind = Callable::Kind::caller;
    caller_fn->name = "caller";
    caller_fn->macro = &node;
    caller_fn->scope = &scope;
    Object caller;
    caller.kind = Object::Kind::callable;
    caller.fn = caller_fn;
    auto result = call_macro(*callee.fn->macro, args, node.line, &caller);
    caller_fn->scope = nullptr;  // the macro may have stored caller somewhere; this scope ends here
    STORMO_TRY(result);
    return emit(to_text(*result), node.line);
}

Expected<Object> Evaluator::call_caller(const Callable& caller, int line) {
    if (!caller.scope)
        return fail(ErrorKind::invalid_argument, context_.source + ":" + std::to_string(line) +
                                                     ": caller() called after its call block ended");
    Scope body_scope(static_cast<const Scope*>(caller.scope));
    STORMO_TRY_ASSIGN(std::string text, capture(caller.macro->body, body_scope));
    return Object::of(Value(std::move(text)));
}

// A macro runs in its own scope over the template's top level; its output is its value.
Expected<Object> Evaluator::call_macro(const Node& macro, const CallArgs& args, int line, const Object* caller) {
    auto error_at = [&](ErrorKind kind, const std::string& message) {
        return tl::unexpected(Error{kind, context_.source + ":" + std::to_string(line) + ": " + message});
    };
    if (macro_depth_ >= context_.limits.max_macro_depth)
        return error_at(ErrorKind::resource, "macro '" + macro.name + "' nested more than " +
                                                 std::to_string(context_.limits.max_macro_depth) + " calls deep (runaway recursion?)");
    if (args.positional.size() > macro.params.size())
        return error_at(ErrorKind::invalid_argument, "macro '" + macro.name + "' takes not more than " +
                                                         std::to_string(macro.params.size()) + " argument(s)");
    for (const auto& [key, value] : args.keyword) {
        bool known = false;
        for (const std::string& p : macro.params) known = known || p == key;
        if (!known) return error_at(ErrorKind::invalid_argument, "macro '" + macro.name + "' takes no keyword argument '" + key + "'");
    }
    Scope frame(root_);
    if (caller) frame.set("caller", *caller);
    for (size_t k = 0; k < macro.params.size(); ++k) {
        const std::string& param = macro.params[k];
        if (const Object* given = args.get(k, param)) {
            frame.set(param, *given);
        } else if (macro.defaults[k]) {
            STORMO_TRY_ASSIGN(Object fallback, eval(*macro.defaults[k], frame));
            frame.set(param, std::move(fallback));
        } else {
            frame.set(param, Object::undefined("parameter '" + param + "' was not provided"));
        }
    }
    ++macro_depth_;
    auto text = capture(macro.body, frame);
    --macro_depth_;
    STORMO_TRY(text);
    return Object::of(Value(std::move(*text)));
}

Expected<Object> Evaluator::eval_filter(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object input, eval(*e.a, scope));
    STORMO_TRY_ASSIGN(CallArgs args, eval_args(e, scope));
    return charged(e.line, apply_filter(e.name, input, args, max_bytes()));
}

Expected<Object> Evaluator::eval_test(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object subject, eval(*e.a, scope));
    STORMO_TRY_ASSIGN(CallArgs args, eval_args(e, scope));
    STORMO_TRY_ASSIGN(bool passed, at_line(e.line, apply_test(e.name, subject, args)));
    return Object::of(Value(passed != e.negated));
}

Expected<Object> Evaluator::eval_unary(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object operand, eval(*e.a, scope));
    bool negate = e.kind == ExprKind::negate;
    if (operand.is_undefined()) return tl::unexpected(located(e.line, Error{ErrorKind::invalid_argument, operand.hint}));
    if (operand.is_data() && is_number(operand.data)) {
        const Value& v = operand.data;
        if (v.is_float()) return Object::of(Value(negate ? -v.as_double() : v.as_double()));
        int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
        int64_t negated = 0;
        if (negate && __builtin_sub_overflow(int64_t{0}, i, &negated))
            return tl::unexpected(located(e.line, Error{ErrorKind::unsupported, "integer overflow in unary - (integers here are 64-bit)"}));
        return Object::of(Value(negate ? negated : i));
    }
    return tl::unexpected(located(e.line, Error{ErrorKind::invalid_argument, std::string("bad operand type for unary ") +
                                                                                 (negate ? "-" : "+") + ": '" +
                                                                                 type_name(operand) + "'"}));
}

Expected<Object> Evaluator::eval_binary(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object a, eval(*e.a, scope));
    STORMO_TRY_ASSIGN(Object b, eval(*e.b, scope));
    return charged(e.line, binary_operation(e.name, a, b, max_bytes()));
}

Expected<bool> Evaluator::compare_once(const std::string& op, const Object& a, const Object& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "in") return contains(b, a);
    if (op == "not in") {
        STORMO_TRY_ASSIGN(bool found, contains(b, a));
        return !found;
    }
    STORMO_TRY_ASSIGN(Value x, require_data(a, "comparison"));
    STORMO_TRY_ASSIGN(Value y, require_data(b, "comparison"));
    if (op == "<") return less_than(x, y);
    if (op == ">") return less_than(y, x);
    STORMO_TRY_ASSIGN(bool reversed, op == "<=" ? less_than(y, x) : less_than(x, y));
    return !reversed;
}

// a < b < c is (a < b) and (b < c), each operand evaluated once, as in Python.
Expected<Object> Evaluator::eval_compare(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object left, eval(*e.a, scope));
    for (const auto& [op, right_expr] : e.ops) {
        STORMO_TRY_ASSIGN(Object right, eval(*right_expr, scope));
        STORMO_TRY_ASSIGN(bool holds, at_line(e.line, compare_once(op, left, right)));
        if (!holds) return Object::of(Value(false));
        left = std::move(right);
    }
    return Object::of(Value(true));
}

// Python's and/or give back an operand, not a bool: `x or []` is x when x is truthy.
Expected<Object> Evaluator::eval_logical(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object left, eval(*e.a, scope));
    bool left_true = truthy(left);
    if (e.kind == ExprKind::logical_and ? !left_true : left_true) return left;
    return eval(*e.b, scope);
}

Expected<Object> Evaluator::eval_conditional(const Expr& e, Scope& scope) {
    STORMO_TRY_ASSIGN(Object test, eval(*e.b, scope));
    if (truthy(test)) return eval(*e.a, scope);
    if (e.c) return eval(*e.c, scope);
    return Object::undefined("the inline if-expression on line " + std::to_string(e.line) +
                             " evaluated to false and no else section was defined");
}

}  // namespace

Expected<std::string> render_nodes(const NodeList& nodes, const RenderContext& context) {
    Evaluator evaluator(context);
    return evaluator.run(nodes);
}

}  // namespace stormo::text::jinja
