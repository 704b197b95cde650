// Values at run time: truth, text, attribute and item access, iteration, comparison, operators,
// each as Python and Jinja2's default Undefined define them.
#include "jinja/jinja_object.hpp"

#include <algorithm>
#include <cmath>
#include <compare>
#include <limits>
#include <optional>

#include "jinja/jinja_methods.hpp"
#include "jinja/python_format.hpp"
#include "jinja/python_text.hpp"

namespace stormo::text::jinja {
namespace {

// Jinja2's object_type_repr: how an Undefined's message names the object it came from.
std::string object_description(const Value& v) {
    if (v.is_null()) return "'None'";
    std::string description = type_name(Object::of(v));
    description.insert(0, 1, '\'');
    return description + " object'";
}

Error type_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t integral(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
double numeric(const Value& v) { return v.is_float() ? v.as_double() : static_cast<double>(integral(v)); }

// i <=> d exactly, as Python compares an int with a float (2**53 + 1 != 2.0**53, though both
// convert to the same double); nullopt when d is nan.
std::optional<std::partial_ordering> compare_int_float(int64_t i, double d) {
    if (std::isnan(d)) return std::nullopt;
    constexpr double two_63 = 9223372036854775808.0;
    if (d >= two_63) return std::partial_ordering::less;
    if (d < -two_63) return std::partial_ordering::greater;
    double whole = std::trunc(d);
    auto w = static_cast<int64_t>(whole);  // in range: -2^63 <= whole < 2^63
    if (i != w) return i < w ? std::partial_ordering::less : std::partial_ordering::greater;
    if (d == whole) return std::partial_ordering::equivalent;
    return d > whole ? std::partial_ordering::less : std::partial_ordering::greater;
}

// a <=> b for two numbers (bools are ints); unordered when either is nan.
std::partial_ordering compare_numbers(const Value& a, const Value& b) {
    if (is_integral(a) && is_integral(b)) return integral(a) <=> integral(b);
    if (a.is_float() && b.is_float()) return a.as_double() <=> b.as_double();
    if (a.is_float()) {
        auto r = compare_int_float(integral(b), a.as_double());
        if (!r) return std::partial_ordering::unordered;
        return 0 <=> *r;  // reversed
    }
    return compare_int_float(integral(a), b.as_double()).value_or(std::partial_ordering::unordered);
}

Expected<Object> index_sequence(const Value& seq, int64_t index) {
    if (seq.is_list()) {
        auto size = static_cast<int64_t>(seq.as_list().size());
        int64_t k = index < 0 ? index + size : index;
        if (k < 0 || k >= size) return Object::undefined("'list object' has no element " + std::to_string(index));
        return Object::of(seq.as_list()[static_cast<size_t>(k)]);
    }
    std::vector<std::string> chars = code_points(seq.as_string());
    auto size = static_cast<int64_t>(chars.size());
    int64_t k = index < 0 ? index + size : index;
    if (k < 0 || k >= size) return Object::undefined("'str object' has no element " + std::to_string(index));
    return Object::of(Value(chars[static_cast<size_t>(k)]));
}

Expected<int64_t> slice_bound(const Object& bound, const char* which) {
    if (bound.is_data() && is_integral(bound.data)) return integral(bound.data);
    return tl::unexpected(type_error(std::string("slice ") + which +
                                     " must be an integer or None, not " + type_name(bound)));
}

bool is_absent_bound(const Object& bound) { return bound.is_data() && bound.data.is_null(); }

// Python's PySlice_AdjustIndices: the positions a slice visits in a sequence of `size`.
Expected<std::vector<size_t>> slice_positions(int64_t size, const Object& start_obj, const Object& stop_obj,
                                              const Object& step_obj) {
    int64_t step = 1;
    if (!is_absent_bound(step_obj)) {
        STORMO_TRY_ASSIGN(step, slice_bound(step_obj, "step"));
    }
    if (step == 0) return tl::unexpected(type_error("slice step cannot be zero"));
    int64_t lower = step < 0 ? -1 : 0;
    int64_t upper = step < 0 ? size - 1 : size;
    auto clamp = [&](int64_t v) {
        if (v < 0) return std::max(v + size, lower);
        return std::min(v, upper);
    };
    int64_t start = step < 0 ? upper : lower;
    int64_t stop = step < 0 ? lower : upper;
    if (!is_absent_bound(start_obj)) {
        STORMO_TRY_ASSIGN(int64_t s, slice_bound(start_obj, "start"));
        start = clamp(s);
    }
    if (!is_absent_bound(stop_obj)) {
        STORMO_TRY_ASSIGN(int64_t s, slice_bound(stop_obj, "stop"));
        stop = clamp(s);
    }
    std::vector<size_t> positions;
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
        positions.push_back(static_cast<size_t>(k));
        if (__builtin_add_overflow(k, step, &k)) break;  // a step near 2^63 leaves the sequence at once
    }
    return positions;
}

// "x" * n and [..] * n; the size is checked before anything is built, without overflowing.
Expected<Object> repeat(const Value& seq, int64_t times, size_t max_bytes) {
    times = std::max<int64_t>(times, 0);
    uint64_t total = 0;
    uint64_t unit = seq.is_string() ? seq.as_string().size() : seq.weight();
    if (__builtin_mul_overflow(unit, static_cast<uint64_t>(times), &total) || total > max_bytes)
        return tl::unexpected(too_large(seq.is_string() ? "string repetition result" : "list repetition result", max_bytes));
    if (seq.is_string()) {
        std::string out;
        for (int64_t k = 0; k < times; ++k) out += seq.as_string();
        return Object::of(Value(std::move(out)));
    }
    ValueList out;
    for (int64_t k = 0; k < times; ++k) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    return Object::of(Value::list(std::move(out)));
}

Error overflow(std::string_view op) {
    return Error{ErrorKind::unsupported, "integer overflow in " + std::string(op) + " (integers here are 64-bit)"};
}

// x ** y for y >= 0 by squaring: no loop of y steps, and an overflow anywhere is the result's.
Expected<int64_t> integer_power(int64_t x, int64_t y) {
    int64_t result = 1, base = x;
    while (y > 0) {
        if ((y & 1) && __builtin_mul_overflow(result, base, &result)) return tl::unexpected(overflow("**"));
        y >>= 1;
        if (y > 0 && __builtin_mul_overflow(base, base, &base)) return tl::unexpected(overflow("**"));
    }
    return result;
}

// Python's int arithmetic where it fits in 64 bits; INT64_MIN // -1 (which C++ traps on) and
// any other result beyond int64 is an error.
Expected<Object> integer_arithmetic(std::string_view op, int64_t x, int64_t y) {
    int64_t r = 0;
    if (op == "+") return __builtin_add_overflow(x, y, &r) ? tl::unexpected(overflow(op)) : Expected<Object>(Object::of(Value(r)));
    if (op == "-") return __builtin_sub_overflow(x, y, &r) ? tl::unexpected(overflow(op)) : Expected<Object>(Object::of(Value(r)));
    if (op == "*") return __builtin_mul_overflow(x, y, &r) ? tl::unexpected(overflow(op)) : Expected<Object>(Object::of(Value(r)));
    if (op == "**") {
        STORMO_TRY_ASSIGN(int64_t p, integer_power(x, y));
        return Object::of(Value(p));
    }
    if (y == 0) return tl::unexpected(type_error("integer division or modulo by zero"));
    if (y == -1) {
        if (op == "%") return Object::of(Value(int64_t{0}));
        if (__builtin_sub_overflow(int64_t{0}, x, &r)) return tl::unexpected(overflow(op));
        return Object::of(Value(r));
    }
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors
        --q;
        m += y;
    }
    return Object::of(Value(op == "//" ? q : m));
}

// Python's float ** : its errors where C's pow answers inf or nan instead.
Expected<Object> float_power(double x, double y) {
    if (x == 0 && y < 0) return tl::unexpected(type_error("0.0 cannot be raised to a negative power"));
    if (x < 0 && std::isfinite(y) && y != std::floor(y))
        return fail(ErrorKind::unsupported, "a negative number to a fractional power is complex (not supported)");
    double p = std::pow(x, y);
    if (std::isinf(p) && std::isfinite(x) && std::isfinite(y))
        return fail(ErrorKind::invalid_argument, "float ** overflows (Numerical result out of range)");
    return Object::of(Value(p));
}

// Python's float divmod: the quotient from fmod's exact remainder, rounded as CPython does
// (1 // 0.1 is 9.0, where floor(1 / 0.1) would be 10.0), and a zero remainder takes y's sign.
Object float_floor_division(std::string_view op, double x, double y) {
    double m = std::fmod(x, y);
    double q = (x - m) / y;
    if (m != 0) {
        if ((y < 0) != (m < 0)) {
            m += y;
            q -= 1.0;
        }
    } else {
        m = std::copysign(0.0, y);
    }
    if (op == "%") return Object::of(Value(m));
    double floored = 0;
    if (q != 0) {
        floored = std::floor(q);
        if (q - floored > 0.5) floored += 1.0;
    } else {
        floored = std::copysign(0.0, x / y);
    }
    return Object::of(Value(floored));
}

Expected<Object> arithmetic(std::string_view op, const Value& a, const Value& b) {
    if (is_integral(a) && is_integral(b) && !(op == "**" && integral(b) < 0) && op != "/")
        return integer_arithmetic(op, integral(a), integral(b));
    double x = numeric(a), y = numeric(b);
    if (op == "+") return Object::of(Value(x + y));
    if (op == "-") return Object::of(Value(x - y));
    if (op == "*") return Object::of(Value(x * y));
    if (op == "**") return float_power(x, y);
    if (y == 0) return tl::unexpected(type_error(op == "/" ? "division by zero" : "float modulo or floor division by zero"));
    if (op == "/") return Object::of(Value(x / y));
    return float_floor_division(op, x, y);
}

}  // namespace

const Object* Namespace::find(std::string_view key) const {
    for (const auto& [name, value] : members)
        if (name == key) return &value;
    return nullptr;
}

void Namespace::set(const std::string& key, Object value) {
    for (auto& [name, member] : members)
        if (name == key) {
            member = std::move(value);
            return;
        }
    members.emplace_back(key, std::move(value));
}

const Object* CallArgs::get(size_t index, std::string_view name) const {
    if (index < positional.size()) return &positional[index];
    for (const auto& [key, value] : keyword)
        if (key == name) return &value;
    return nullptr;
}

const Object* CallArgs::keyword_arg(std::string_view name) const {
    for (const auto& [key, value] : keyword)
        if (key == name) return &value;
    return nullptr;
}

bool is_number(const Value& v) { return v.is_int() || v.is_float() || v.is_bool(); }

bool truthy(const Object& o) {
    if (o.is_undefined()) return false;
    if (!o.is_data()) return true;
    const Value& v = o.data;
    if (v.is_null()) return false;
    if (v.is_bool()) return v.as_bool();
    if (v.is_int()) return v.as_int() != 0;
    if (v.is_float()) return v.as_double() != 0.0;
    if (v.is_string()) return !v.as_string().empty();
    if (v.is_list()) return !v.as_list().empty();
    return !v.as_object().empty();
}

std::string to_text(const Object& o) {
    switch (o.kind) {
        case Object::Kind::data: return python_str(o.data);
        case Object::Kind::undefined: return "";
        case Object::Kind::namespace_object: {
            std::string out = "<Namespace {";
            const char* sep = "";
            for (const auto& [name, value] : o.ns->members) {
                // A member namespace is named, not printed: a namespace may hold itself.
                (out += sep) += python_string_repr(name) + ": " +
                                (value.is_data()                                      ? python_repr(value.data)
                                 : value.kind == Object::Kind::namespace_object ? std::string("<Namespace>")
                                                                                : to_text(value));
                sep = ", ";
            }
            return out + "}>";
        }
        case Object::Kind::callable:
            return o.fn->kind == Callable::Kind::macro ? "<Macro '" + o.fn->name + "'>"
                                                       : "<built-in function " + o.fn->name + ">";
    }
    return "";
}

std::string type_name(const Object& o) {
    switch (o.kind) {
        case Object::Kind::undefined: return "Undefined";
        case Object::Kind::namespace_object: return "Namespace";
        case Object::Kind::callable: return o.fn->kind == Callable::Kind::macro ? "Macro" : "builtin_function_or_method";
        case Object::Kind::data: break;
    }
    const Value& v = o.data;
    if (v.is_null()) return "NoneType";
    if (v.is_bool()) return "bool";
    if (v.is_int()) return "int";
    if (v.is_float()) return "float";
    if (v.is_string()) return "str";
    if (v.is_list()) return "list";
    return "dict";
}

Expected<Value> require_data(const Object& o, std::string_view what) {
    if (o.is_data()) return o.data;
    if (o.is_undefined()) return tl::unexpected(type_error(o.hint));
    return tl::unexpected(type_error(std::string(what) + " needs data, not a " + type_name(o)));
}

Expected<Object> get_attribute(const Object& subject, const std::string& name) {
    if (subject.is_undefined()) return tl::unexpected(type_error(subject.hint));
    if (subject.kind == Object::Kind::namespace_object) {
        if (const Object* member = subject.ns->find(name)) return *member;
        return Object::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    if (!subject.is_data()) return Object::undefined(single_quoted(type_name(subject)) + " object has no attribute '" + name + "'");
    const Value& v = subject.data;
    if (is_modifying_method(v, name))
        return Object::undefined("access to attribute '" + name + "' of '" + type_name(subject) + "' object is unsafe");
    if (is_unimplemented_method(v, name))
        return Object::undefined("unsupported method str." + name + "() (not implemented by this template engine)");
    if (has_method(v, name)) {
        auto method = std::make_shared<Callable>();
        method->kind = Callable::Kind::method;
        method->name = name;
        method->self = v;
        Object o;
        o.kind = Object::Kind::callable;
        o.fn = std::move(method);
        return o;
    }
    if (const Value* member = v.find(name)) return Object::of(*member);
    return Object::undefined(object_description(v) + " has no attribute '" + name + "'");
}

Expected<Object> get_item(const Object& subject, const Object& key) {
    if (subject.is_undefined()) return tl::unexpected(type_error(subject.hint));
    if (subject.is_data() && key.is_data()) {
        const Value& v = subject.data;
        if (v.is_object() && key.data.is_string()) {
            if (const Value* member = v.find(key.data.as_string())) return Object::of(*member);
        }
        if ((v.is_list() || v.is_string()) && is_integral(key.data)) return index_sequence(v, integral(key.data));
    }
    if (key.is_data() && key.data.is_string()) {
        STORMO_TRY_ASSIGN(Object attribute, get_attribute(subject, key.data.as_string()));
        return attribute;
    }
    if (subject.is_data())
        return Object::undefined(object_description(subject.data) + " has no element " + to_text(key));
    return Object::undefined(single_quoted(type_name(subject)) + " object has no element " + to_text(key));
}

Expected<Object> get_slice(const Object& subject, const Object& start, const Object& stop, const Object& step) {
    if (subject.is_undefined()) return tl::unexpected(type_error(subject.hint));
    if (!subject.is_data() || !(subject.data.is_list() || subject.data.is_string()))
        return tl::unexpected(type_error(single_quoted(type_name(subject)) + " object is not subscriptable"));
    if (subject.data.is_list()) {
        const ValueList& items = subject.data.as_list();
        STORMO_TRY_ASSIGN(auto positions, slice_positions(static_cast<int64_t>(items.size()), start, stop, step));
        ValueList out;
        for (size_t k : positions) out.push_back(items[k]);
        return Object::of(Value::list(std::move(out)));
    }
    std::vector<std::string> chars = code_points(subject.data.as_string());
    STORMO_TRY_ASSIGN(auto positions, slice_positions(static_cast<int64_t>(chars.size()), start, stop, step));
    std::string out;
    for (size_t k : positions) out += chars[k];
    return Object::of(Value(std::move(out)));
}

std::vector<std::string> code_points(std::string_view s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        len = std::min(len, s.size() - i);
        out.emplace_back(s.substr(i, len));
        i += len;
    }
    return out;
}

size_t code_point_count(std::string_view s) {
    size_t n = 0;
    for (char c : s)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

Expected<ValueList> iterate(const Object& o) {
    if (o.is_undefined()) return ValueList{};
    if (!o.is_data()) return tl::unexpected(type_error(single_quoted(type_name(o)) + " object is not iterable"));
    const Value& v = o.data;
    if (v.is_list()) return v.as_list();
    if (v.is_object()) {
        ValueList keys;
        for (const auto& member : v.as_object()) keys.emplace_back(member.first);
        return keys;
    }
    if (v.is_string()) {
        ValueList chars;
        for (std::string& c : code_points(v.as_string())) chars.emplace_back(std::move(c));
        return chars;
    }
    return tl::unexpected(type_error(single_quoted(type_name(o)) + " object is not iterable"));
}

bool equals(const Value& a, const Value& b) {
    if (is_number(a) && is_number(b)) return compare_numbers(a, b) == 0;
    if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
    if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
    if (a.is_list() && b.is_list()) {
        const ValueList& x = a.as_list();
        const ValueList& y = b.as_list();
        if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
        for (size_t k = 0; k < x.size(); ++k)
            if (!equals(x[k], y[k])) return false;
        return true;
    }
    if (a.is_object() && b.is_object()) {
        if (a.as_object().size() != b.as_object().size()) return false;
        for (const auto& [key, value] : a.as_object()) {
            const Value* other = b.find(key);
            if (!other || !equals(value, *other)) return false;
        }
        return true;
    }
    return false;
}

bool equals(const Object& a, const Object& b) {
    if (a.is_data() && b.is_data()) return equals(a.data, b.data);
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (a.kind == Object::Kind::namespace_object && b.kind == Object::Kind::namespace_object) return a.ns == b.ns;
    return a.kind == Object::Kind::callable && b.kind == Object::Kind::callable && a.fn == b.fn;
}

Expected<bool> less_than(const Value& a, const Value& b) {
    if (is_number(a) && is_number(b)) return compare_numbers(a, b) < 0;
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    if (a.is_list() && b.is_list()) {
        const ValueList& x = a.as_list();
        const ValueList& y = b.as_list();
        for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
            if (equals(x[k], y[k])) continue;
            return less_than(x[k], y[k]);
        }
        return x.size() < y.size();
    }
    return tl::unexpected(type_error("'<' not supported between instances of '" + type_name(Object::of(a)) +
                                     "' and '" + type_name(Object::of(b)) + "'"));
}

Expected<bool> contains(const Object& haystack, const Object& needle) {
    if (haystack.is_undefined()) return false;
    if (!haystack.is_data())
        return tl::unexpected(type_error("argument of type '" + type_name(haystack) + "' is not iterable"));
    const Value& h = haystack.data;
    if (h.is_string()) {
        if (!needle.is_data() || !needle.data.is_string())
            return tl::unexpected(type_error("'in <string>' requires string as left operand, not " + type_name(needle)));
        return h.as_string().find(needle.data.as_string()) != std::string::npos;
    }
    if (h.is_list()) {
        for (const Value& item : h.as_list())
            if (equals(Object::of(item), needle)) return true;
        return false;
    }
    if (h.is_object()) return needle.is_data() && needle.data.is_string() && h.find(needle.data.as_string()) != nullptr;
    return tl::unexpected(type_error("argument of type '" + type_name(haystack) + "' is not iterable"));
}

Error too_large(std::string_view what, size_t max_bytes) {
    return Error{ErrorKind::resource, std::string(what) + " larger than " + std::to_string(max_bytes) +
                                          " bytes (the rendered output's limit)"};
}

Expected<void> append_within(std::string& out, std::string_view piece, size_t max_bytes) {
    if (piece.size() > max_bytes || out.size() > max_bytes - piece.size()) return tl::unexpected(too_large("string result", max_bytes));
    out += piece;
    return {};
}

namespace {

// a + b for two strings, refused before the sum is allocated when it would pass the limit: a
// template doubling a string in a loop could exhaust memory without printing anything.
Expected<Object> concatenated(std::string_view a, std::string_view b, size_t max_bytes) {
    std::string out;
    STORMO_TRY(append_within(out, a, max_bytes));
    STORMO_TRY(append_within(out, b, max_bytes));
    return Object::of(Value(std::move(out)));
}

}  // namespace

Expected<Object> binary_operation(std::string_view op, const Object& a, const Object& b, size_t max_bytes) {
    if (op == "~") return concatenated(to_text(a), to_text(b), max_bytes);
    // str % Undefined formats the Undefined's text, which is empty.
    if (op == "%" && a.is_data() && a.data.is_string() && b.is_undefined())
        return binary_operation(op, a, Object::of(Value(std::string())), max_bytes);
    if (a.is_undefined()) return tl::unexpected(type_error(a.hint));
    if (b.is_undefined()) return tl::unexpected(type_error(b.hint));
    auto unsupported = [&]() {
        return tl::unexpected(type_error("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) +
                                         "' and '" + type_name(b) + "'"));
    };
    if (!a.is_data() || !b.is_data()) return unsupported();
    const Value& x = a.data;
    const Value& y = b.data;
    if (is_number(x) && is_number(y)) return arithmetic(op, x, y);
    if (op == "+") {
        if (x.is_string() && y.is_string()) return concatenated(x.as_string(), y.as_string(), max_bytes);
        if (x.is_list() && y.is_list()) {
            if (uint64_t{x.weight()} + y.weight() > max_bytes) return tl::unexpected(too_large("list concatenation result", max_bytes));
            ValueList out = x.as_list();
            out.insert(out.end(), y.as_list().begin(), y.as_list().end());
            return Object::of(Value::list(std::move(out)));
        }
        if (x.is_string())
            return tl::unexpected(type_error("can only concatenate str (not \"" + type_name(b) + "\") to str"));
        if (x.is_list())
            return tl::unexpected(type_error("can only concatenate list (not \"" + type_name(b) + "\") to list"));
    }
    if (op == "*") {
        if ((x.is_string() || x.is_list()) && is_integral(y)) return repeat(x, integral(y), max_bytes);
        if ((y.is_string() || y.is_list()) && is_integral(x)) return repeat(y, integral(x), max_bytes);
    }
    if (op == "%" && x.is_string()) {
        STORMO_TRY_ASSIGN(std::string text, percent_format(x.as_string(), y, max_bytes));
        return Object::of(Value(std::move(text)));
    }
    return unsupported();
}

}  // namespace stormo::text::jinja
