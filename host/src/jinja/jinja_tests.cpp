// Jinja's tests: `x is defined`, `x is string`, `x is divisibleby 3`, ...
#include <algorithm>
#include <array>

#include "jinja/jinja_builtins.hpp"

namespace stormo::text::jinja {
namespace {

constexpr std::array known_tests = {
    "defined", "undefined", "none",  "string",   "number",  "integer",     "float", "mapping", "iterable",
    "sequence", "boolean", "true",  "false",    "odd",     "even",        "divisibleby", "sameas", "equalto",
    "eq",      "==",        "ne",    "!=",       "lt",      "<",           "le",    "<=",      "gt",
    ">",       "ge",        ">=",    "in",       "callable", "lower",      "upper", "greaterthan", "lessthan"};

Error type_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

Expected<const Object*> required_arg(const CallArgs& args, std::string_view test) {
    const Object* a = args.get(0, "other");
    if (!a) return tl::unexpected(type_error("test '" + std::string(test) + "' needs an argument"));
    return a;
}

Expected<bool> ordering_test(std::string_view name, const Object& subject, const Object& other) {
    STORMO_TRY_ASSIGN(Value a, require_data(subject, "comparison"));
    STORMO_TRY_ASSIGN(Value b, require_data(other, "comparison"));
    if (name == "lt" || name == "<" || name == "lessthan") return less_than(a, b);
    if (name == "gt" || name == ">" || name == "greaterthan") return less_than(b, a);
    if (name == "le" || name == "<=") {
        STORMO_TRY_ASSIGN(bool greater, less_than(b, a));
        return !greater;
    }
    STORMO_TRY_ASSIGN(bool smaller, less_than(a, b));
    return !smaller;
}

// Python `is`: the same object; for the immutable data a template compares this way (None,
// True, False, small numbers, strings) that is equality of the same type.
bool same_object(const Object& a, const Object& b) {
    if (a.is_data() && b.is_data()) {
        const Value& x = a.data;
        const Value& y = b.data;
        if (x.is_list() || x.is_object()) return false;
        return type_name(a) == type_name(b) && equals(x, y);
    }
    return equals(a, b);
}

Expected<bool> integer_parity(const Object& subject, int64_t divisor, int64_t remainder) {
    STORMO_TRY_ASSIGN(Value v, require_data(subject, "test"));
    if (!v.is_int() && !v.is_bool()) return tl::unexpected(type_error("parity test needs an integer, not " + type_name(subject)));
    int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
    if (divisor == 0) return tl::unexpected(type_error("integer division or modulo by zero"));
    if (divisor == -1) return remainder == 0;  // INT64_MIN % -1 traps in C++
    int64_t m = i % divisor;
    if (m != 0 && ((m < 0) != (divisor < 0))) m += divisor;
    return m == remainder;
}

}  // namespace

bool is_known_test(std::string_view name) {
    return std::any_of(known_tests.begin(), known_tests.end(), [&](const char* n) { return name == n; });
}

Expected<bool> apply_test(std::string_view name, const Object& subject, const CallArgs& args) {
    const Value& v = subject.data;
    bool data = subject.is_data();
    if (name == "defined") return !subject.is_undefined();
    if (name == "undefined") return subject.is_undefined();
    if (name == "none") return data && v.is_null();
    if (name == "string") return data && v.is_string();
    if (name == "number") return data && (v.is_int() || v.is_float() || v.is_bool());
    if (name == "integer") return data && v.is_int();
    if (name == "float") return data && v.is_float();
    if (name == "boolean") return data && v.is_bool();
    if (name == "true") return data && v.is_bool() && v.as_bool();
    if (name == "false") return data && v.is_bool() && !v.as_bool();
    if (name == "mapping") return data && v.is_object();
    if (name == "iterable") return subject.is_undefined() || (data && (v.is_string() || v.is_list() || v.is_object()));
    if (name == "sequence") return subject.is_undefined() || (data && (v.is_string() || v.is_list() || v.is_object()));
    if (name == "callable") return subject.kind == Object::Kind::callable;
    if (name == "lower" || name == "upper") {
        if (!data || !v.is_string()) return false;
        const std::string& s = v.as_string();
        bool has_cased = std::any_of(s.begin(), s.end(), [](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
        bool wrong_case = std::any_of(s.begin(), s.end(), [&](char c) {
            return name == "lower" ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z');
        });
        return has_cased && !wrong_case;
    }
    if (name == "odd") return integer_parity(subject, 2, 1);
    if (name == "even") return integer_parity(subject, 2, 0);
    STORMO_TRY_ASSIGN(const Object* other, required_arg(args, name));
    if (name == "divisibleby") {
        if (!other->is_data() || !other->data.is_int()) return tl::unexpected(type_error("divisibleby needs an integer"));
        return integer_parity(subject, other->data.as_int(), 0);
    }
    if (name == "sameas") return same_object(subject, *other);
    if (name == "equalto" || name == "eq" || name == "==") return equals(subject, *other);
    if (name == "ne" || name == "!=") return !equals(subject, *other);
    if (name == "in") return contains(*other, subject);
    return ordering_test(name, subject, *other);
}

}  // namespace stormo::text::jinja
