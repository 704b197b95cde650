#pragma once
// What a template expression evaluates to: JSON-shaped data, Jinja's Undefined, a namespace()
// or something callable (a macro, a global such as raise_exception, a bound method such as
// message.content.startswith). The operations here follow Python and Jinja2's defaults; their
// errors are plain messages that the evaluator prefixes with the template line.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/chat_value.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja {

struct Node;
struct Namespace;
struct Callable;

struct Object {
    enum class Kind { data, undefined, namespace_object, callable };
    Kind kind = Kind::undefined;
    Value data;
    std::string hint;  // undefined: the error any use that Jinja forbids reports ("'x' is undefined")
    std::shared_ptr<Namespace> ns;
    std::shared_ptr<const Callable> fn;

    static Object of(Value v) {
        Object o;
        o.kind = Kind::data;
        o.data = std::move(v);
        return o;
    }
    static Object undefined(std::string why) {
        Object o;
        o.hint = std::move(why);
        return o;
    }
    bool is_data() const { return kind == Kind::data; }
    bool is_undefined() const { return kind == Kind::undefined; }
};

// namespace(): the one object a template may change, so state can leave a loop.
struct Namespace {
    std::vector<std::pair<std::string, Object>> members;
    const Object* find(std::string_view key) const;
    void set(const std::string& key, Object value);
};

struct Callable {
    enum class Kind { macro, global, method, caller };
    Kind kind = Kind::global;
    const Node* macro = nullptr;  // macro: its definition; caller: the call block (both owned by the parsed template)
    const void* scope = nullptr;  // caller: the evaluator's scope around the call block; null once it ended
    std::string name;             // the macro's, global's or method's name
    Value self;                   // method: the string, dict or list it is bound to
};

struct CallArgs {
    std::vector<Object> positional;
    std::vector<std::pair<std::string, Object>> keyword;
    // The argument at `index`, or the keyword `name`; nullptr when neither was given.
    const Object* get(size_t index, std::string_view name) const;
    // The keyword argument `name` only; nullptr when not given.
    const Object* keyword_arg(std::string_view name) const;
};

// Python's truth value; Undefined is false.
bool truthy(const Object& o);
// Python's str(); Undefined prints as nothing.
std::string to_text(const Object& o);
// Python's type name: 'str', 'int', 'float', 'bool', 'NoneType', 'list', 'dict', 'Undefined', ...
std::string type_name(const Object& o);
// The Undefined error, or the data of a defined value; `what` names the use in messages.
Expected<Value> require_data(const Object& o, std::string_view what);

// x.name: attributes (methods) first, then members; Undefined when neither exists, except on an
// Undefined value, which is an error.
Expected<Object> get_attribute(const Object& subject, const std::string& name);
// x[key]: members and indexes (negative from the end) first, then attributes.
Expected<Object> get_item(const Object& subject, const Object& key);
// x[start:stop:step] with Python's slice rules, on lists and strings.
Expected<Object> get_slice(const Object& subject, const Object& start, const Object& stop, const Object& step);
// The items a for loop or filter walks: list items, dict keys, string characters; none for Undefined.
Expected<ValueList> iterate(const Object& o);
// The UTF-8 text split into code points (Python's characters).
std::vector<std::string> code_points(std::string_view s);
size_t code_point_count(std::string_view s);

// Python ==: 1 == 1.0 == True, lists element-wise, dicts regardless of order.
bool equals(const Value& a, const Value& b);
bool equals(const Object& a, const Object& b);
// Python <: numbers, strings (by code point), lists; else a TypeError message.
Expected<bool> less_than(const Value& a, const Value& b);
// Python `needle in haystack`.
Expected<bool> contains(const Object& haystack, const Object& needle);

// + - * / // % ** and ~ (Jinja's string concatenation). A string or list result that would be
// larger than `max_bytes` (the render's output limit) is refused before it is built; integer
// overflow, which Python would answer with a larger integer, is an error.
Expected<Object> binary_operation(std::string_view op, const Object& a, const Object& b, size_t max_bytes);

// The error for a string or value larger than the output limit; `what` names it.
Error too_large(std::string_view what, size_t max_bytes);
// Appends `piece` to `out` unless `out` would then hold more than max_bytes: text-building
// filters and methods grow their result through this, so none allocates past the output limit.
Expected<void> append_within(std::string& out, std::string_view piece, size_t max_bytes);

bool is_number(const Value& v);

// 'text', built by appending (g++ 12 warns falsely on "'" + std::string).
inline std::string single_quoted(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '\'';
    out += s;
    out += '\'';
    return out;
}  // int, float or bool (a Python int)

}  // namespace stormo::text::jinja
