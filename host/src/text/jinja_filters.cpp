// Jinja's filters, as Jinja2 3.1 defines them, except tojson: transformers replaces Jinja's
// HTML-safe tojson with plain json.dumps(x, ensure_ascii=False, indent, separators, sort_keys).
#include <algorithm>
#include <array>
#include <cstdlib>

#include "text/jinja_builtins.hpp"
#include "text/jinja_methods.hpp"
#include "text/python_format.hpp"
#include "text/unicode_case.hpp"

namespace stormo::text::jinja {
namespace {

constexpr std::array known_filters = {
    "trim",    "length",  "count",    "default", "d",       "tojson",     "string",     "upper",  "lower",
    "title",   "capitalize", "replace", "join",  "first",   "last",       "list",       "items",  "selectattr",
    "rejectattr", "select", "reject", "map",     "unique",  "reverse",    "sort",       "int",    "float",
    "abs",     "indent",  "safe",     "e",       "escape",  "wordcount",  "min",        "max",    "sum",
    "dictsort", "format"};

Error type_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

bool flag_arg(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
    const Object* a = args.get(index, name);
    return a ? truthy(*a) : fallback;
}

const Object* optional_arg(const CallArgs& args, size_t index, std::string_view name) {
    const Object* a = args.get(index, name);
    if (a && a->is_data() && a->data.is_null()) return nullptr;
    return a;
}

// Jinja's attribute getter: "a.b.0" looks up a, then b, then index 0, each as x[part].
Expected<Object> lookup_path(const Object& item, const std::string& path) {
    Object current = item;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        Object key = digits ? Object::of(Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                            : Object::of(Value(part));
        STORMO_TRY_ASSIGN(current, get_item(current, key));
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

Expected<std::string> attribute_arg(const CallArgs& args, size_t index, std::string_view filter) {
    const Object* a = args.get(index, "attribute");
    if (!a || !a->is_data() || !a->data.is_string())
        return tl::unexpected(type_error(std::string(filter) + " needs an attribute name"));
    return a->data.as_string();
}

// The value a sort, unique, min or max compares: the item or its attribute, lower-cased
// unless case_sensitive.
Expected<Value> sort_key(const Value& item, const std::string& attribute, bool case_sensitive) {
    Object key = Object::of(item);
    if (!attribute.empty()) {
        STORMO_TRY_ASSIGN(key, lookup_path(key, attribute));
    }
    STORMO_TRY_ASSIGN(Value v, require_data(key, "sort key"));
    if (!case_sensitive && v.is_string()) {
        std::string lowered = v.as_string();
        for (char& c : lowered)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        return Value(std::move(lowered));
    }
    return v;
}

Expected<std::vector<std::pair<Value, Value>>> keyed_items(const Object& input, const CallArgs& args, size_t case_index,
                                                           size_t attribute_index) {
    bool case_sensitive = flag_arg(args, case_index, "case_sensitive", false);
    std::string attribute;
    if (const Object* a = optional_arg(args, attribute_index, "attribute")) {
        if (!a->is_data() || !a->data.is_string()) return tl::unexpected(type_error("attribute must be a string"));
        attribute = a->data.as_string();
    }
    STORMO_TRY_ASSIGN(ValueList items, iterate(input));
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) {
        STORMO_TRY_ASSIGN(Value key, sort_key(item, attribute, case_sensitive));
        keyed.emplace_back(std::move(key), std::move(item));
    }
    return keyed;
}

Expected<Object> sort_filter(const Object& input, const CallArgs& args) {
    bool reverse = flag_arg(args, 0, "reverse", false);
    STORMO_TRY_ASSIGN(auto keyed, keyed_items(input, args, 1, 2));
    Expected<void> failure;
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        if (!failure) return false;
        auto r = reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
        if (!r) {
            failure = tl::unexpected(r.error());
            return false;
        }
        return *r;
    });
    STORMO_TRY(failure);
    ValueList out;
    for (auto& entry : keyed) out.push_back(std::move(entry.second));
    return Object::of(Value::list(std::move(out)));
}

Expected<Object> unique_filter(const Object& input, const CallArgs& args) {
    STORMO_TRY_ASSIGN(auto keyed, keyed_items(input, args, 0, 1));
    ValueList out;
    std::vector<Value> seen;
    for (auto& [key, item] : keyed) {
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Object::of(Value::list(std::move(out)));
}

Expected<Object> extreme_filter(const Object& input, const CallArgs& args, bool want_max) {
    STORMO_TRY_ASSIGN(auto keyed, keyed_items(input, args, 0, 1));
    if (keyed.empty()) return Object::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t k = 1; k < keyed.size(); ++k) {
        STORMO_TRY_ASSIGN(bool better, want_max ? less_than(keyed[best].first, keyed[k].first)
                                                : less_than(keyed[k].first, keyed[best].first));
        if (better) best = k;
    }
    return Object::of(keyed[best].second);
}

Expected<Object> sum_filter(const Object& input, const CallArgs& args) {
    Object total = Object::of(Value(int64_t{0}));
    if (const Object* start = args.get(1, "start")) total = *start;
    std::string attribute;
    if (const Object* a = optional_arg(args, 0, "attribute")) attribute = to_text(*a);
    STORMO_TRY_ASSIGN(ValueList items, iterate(input));
    for (const Value& item : items) {
        Object term = Object::of(item);
        if (!attribute.empty()) {
            STORMO_TRY_ASSIGN(term, lookup_path(term, attribute));
        }
        STORMO_TRY_ASSIGN(total, binary_operation("+", total, term));
    }
    return total;
}

// selectattr / rejectattr / select / reject: keep the items whose (attribute's) test result is
// `keep`; with no test, the truth of the value decides.
Expected<Object> select_filter(const Object& input, const CallArgs& args, bool by_attribute, bool keep) {
    size_t first_test_arg = by_attribute ? 1 : 0;
    std::string attribute;
    if (by_attribute) {
        STORMO_TRY_ASSIGN(attribute, attribute_arg(args, 0, "selectattr"));
    }
    std::string test;
    CallArgs test_args;
    if (args.positional.size() > first_test_arg) {
        const Object& t = args.positional[first_test_arg];
        if (!t.is_data() || !t.data.is_string()) return tl::unexpected(type_error("the test to select by must be a name"));
        test = t.data.as_string();
        if (!is_known_test(test)) return fail(ErrorKind::unsupported, "unsupported test '" + test + "'");
        test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first_test_arg) + 1, args.positional.end());
    }
    STORMO_TRY_ASSIGN(ValueList items, iterate(input));
    ValueList out;
    for (const Value& item : items) {
        Object subject = Object::of(item);
        if (by_attribute) {
            STORMO_TRY_ASSIGN(subject, lookup_path(subject, attribute));
        }
        bool passed = false;
        if (test.empty()) {
            passed = truthy(subject);
        } else {
            STORMO_TRY_ASSIGN(passed, apply_test(test, subject, test_args));
        }
        if (passed == keep) out.push_back(item);
    }
    return Object::of(Value::list(std::move(out)));
}

Expected<Object> map_filter(const Object& input, const CallArgs& args) {
    STORMO_TRY_ASSIGN(ValueList items, iterate(input));
    ValueList out;
    if (const Object* attribute = args.keyword_arg("attribute"); attribute && args.positional.empty()) {
        const Object* fallback = args.keyword_arg("default");
        for (const Value& item : items) {
            STORMO_TRY_ASSIGN(Object mapped, lookup_path(Object::of(item), to_text(*attribute)));
            if (mapped.is_undefined() && fallback) mapped = *fallback;
            STORMO_TRY_ASSIGN(Value v, require_data(mapped, "map"));
            out.push_back(std::move(v));
        }
        return Object::of(Value::list(std::move(out)));
    }
    if (args.positional.empty() || !args.positional[0].is_data() || !args.positional[0].data.is_string())
        return tl::unexpected(type_error("map needs a filter name or attribute="));
    std::string filter = args.positional[0].data.as_string();
    if (!is_known_filter(filter)) return fail(ErrorKind::unsupported, "unsupported filter '" + filter + "'");
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keyword = args.keyword;
    for (const Value& item : items) {
        STORMO_TRY_ASSIGN(Object mapped, apply_filter(filter, Object::of(item), filter_args));
        STORMO_TRY_ASSIGN(Value v, require_data(mapped, "map"));
        out.push_back(std::move(v));
    }
    return Object::of(Value::list(std::move(out)));
}

Expected<Object> tojson_filter(const Object& input, const CallArgs& args) {
    if (!input.is_data())
        return tl::unexpected(type_error("Object of type " + type_name(input) + " is not JSON serializable"));
    JsonStyle style;
    style.ensure_ascii = flag_arg(args, 0, "ensure_ascii", false);
    if (const Object* indent = optional_arg(args, 1, "indent")) {
        if (indent->is_data() && indent->data.is_int()) style.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent->data.as_int(), 0)), ' ');
        else if (indent->is_data() && indent->data.is_string()) style.indent = indent->data.as_string();
        else return tl::unexpected(type_error("tojson indent must be an integer or a string"));
        style.item_separator.assign(1, ',');
    }
    if (const Object* separators = optional_arg(args, 2, "separators")) {
        if (!separators->is_data() || !separators->data.is_list() || separators->data.as_list().size() != 2 ||
            !separators->data.as_list()[0].is_string() || !separators->data.as_list()[1].is_string())
            return tl::unexpected(type_error("tojson separators must be two strings"));
        style.item_separator = separators->data.as_list()[0].as_string();
        style.key_separator = separators->data.as_list()[1].as_string();
    }
    style.sort_keys = flag_arg(args, 3, "sort_keys", false);
    return Object::of(Value(to_json(input.data, style)));
}

// Jinja's indent: every line but the first (and blank lines unless `blank`) gets the prefix.
Expected<Object> indent_filter(const Object& input, const CallArgs& args) {
    std::string prefix = "    ";
    if (const Object* width = args.get(0, "width")) {
        if (width->is_data() && width->data.is_string()) prefix = width->data.as_string();
        else if (width->is_data() && width->data.is_int()) prefix = std::string(static_cast<size_t>(std::max<int64_t>(width->data.as_int(), 0)), ' ');
        else return tl::unexpected(type_error("indent width must be an integer or a string"));
    }
    bool first = flag_arg(args, 1, "first", false);
    bool blank = flag_arg(args, 2, "blank", false);
    std::string text = to_text(input) + "\n";  // Jinja's own trick so splitlines sees the last line
    std::vector<std::string> lines;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
        if (k > 0) out += '\n';
        if (k > 0 && (blank || !lines[k].empty())) out += prefix;
        out += lines[k];
    }
    if (first) out = prefix + out;
    return Object::of(Value(std::move(out)));
}

Expected<Object> int_filter(const Object& input, const CallArgs& args) {
    Object fallback = Object::of(Value(int64_t{0}));
    if (const Object* d = args.get(0, "default")) fallback = *d;
    if (!input.is_data()) return fallback;
    const Value& v = input.data;
    if (v.is_int()) return input;
    if (v.is_bool()) return Object::of(Value(static_cast<int64_t>(v.as_bool())));
    if (v.is_float()) return Object::of(Value(static_cast<int64_t>(v.as_double())));
    if (!v.is_string()) return fallback;
    int base = 10;
    if (const Object* b = args.get(1, "base"); b && b->is_data() && b->data.is_int()) base = static_cast<int>(b->data.as_int());
    const std::string& s = v.as_string();
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, base);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && end != s.c_str() && *end == '\0') return Object::of(Value(static_cast<int64_t>(i)));
    double d = std::strtod(s.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && end != s.c_str() && *end == '\0') return Object::of(Value(static_cast<int64_t>(d)));
    return fallback;
}

Expected<Object> float_filter(const Object& input, const CallArgs& args) {
    Object fallback = Object::of(Value(0.0));
    if (const Object* d = args.get(0, "default")) fallback = *d;
    if (!input.is_data()) return fallback;
    const Value& v = input.data;
    if (is_number(v)) return Object::of(Value(v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_double()));
    if (!v.is_string()) return fallback;
    char* end = nullptr;
    double d = std::strtod(v.as_string().c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && end != v.as_string().c_str() && *end == '\0') return Object::of(Value(d));
    return fallback;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

int64_t word_count(const std::string& s) {
    int64_t n = 0;
    bool in_word = false;
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        bool word_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
        if (word_char && !in_word) ++n;
        in_word = word_char;
    }
    return n;
}

Expected<Object> length_filter(const Object& input) {
    if (input.is_undefined()) return Object::of(Value(int64_t{0}));
    const Value& v = input.data;
    if (input.is_data() && v.is_string()) return Object::of(Value(static_cast<int64_t>(code_point_count(v.as_string()))));
    if (input.is_data() && v.is_list()) return Object::of(Value(static_cast<int64_t>(v.as_list().size())));
    if (input.is_data() && v.is_object()) return Object::of(Value(static_cast<int64_t>(v.as_object().size())));
    return tl::unexpected(type_error("object of type '" + type_name(input) + "' has no len()"));
}

Expected<Object> string_method_filter(std::string_view method, const Object& input, const CallArgs& args) {
    return call_method(Value(to_text(input)), method, args);
}

Expected<Object> sequence_filter(std::string_view name, const Object& input) {
    STORMO_TRY_ASSIGN(ValueList items, iterate(input));
    if (name == "list") return Object::of(Value::list(std::move(items)));
    if (name == "reverse") {
        if (input.is_data() && input.data.is_string()) {
            std::string out;
            for (auto it = items.rbegin(); it != items.rend(); ++it) out += it->as_string();
            return Object::of(Value(std::move(out)));
        }
        std::reverse(items.begin(), items.end());
        return Object::of(Value::list(std::move(items)));
    }
    if (items.empty()) return Object::undefined("No " + std::string(name) + " item, sequence was empty.");
    return Object::of(name == "first" ? items.front() : items.back());
}

Expected<Object> join_filter(const Object& input, const CallArgs& args) {
    std::string separator;
    if (const Object* d = args.get(0, "d")) separator = to_text(*d);
    std::string attribute;
    if (const Object* a = optional_arg(args, 1, "attribute")) attribute = to_text(*a);
    STORMO_TRY_ASSIGN(ValueList items, iterate(input));
    std::string out;
    for (size_t k = 0; k < items.size(); ++k) {
        Object item = Object::of(items[k]);
        if (!attribute.empty()) {
            STORMO_TRY_ASSIGN(item, lookup_path(item, attribute));
        }
        if (k > 0) out += separator;
        out += to_text(item);
    }
    return Object::of(Value(std::move(out)));
}

Expected<Object> items_filter(const Object& input) {
    if (input.is_undefined()) return Object::of(Value::list());
    if (!input.is_data() || !input.data.is_object()) return tl::unexpected(type_error("Can only get item pairs from a mapping."));
    return call_method(input.data, "items", CallArgs{});
}

// dictsort(case_sensitive=False, by='key', reverse=False): the (key, value) pairs in order.
Expected<Object> dictsort_filter(const Object& input, const CallArgs& args) {
    if (!input.is_data() || !input.data.is_object()) return tl::unexpected(type_error("dictsort needs a mapping"));
    bool case_sensitive = flag_arg(args, 0, "case_sensitive", false);
    std::string by = "key";
    if (const Object* b = args.get(1, "by")) by = to_text(*b);
    if (by != "key" && by != "value") return tl::unexpected(type_error("You can only sort by either \"key\" or \"value\""));
    bool reverse = flag_arg(args, 2, "reverse", false);
    std::vector<std::pair<Value, Value>> keyed;
    for (const auto& [key, value] : input.data.as_object()) {
        STORMO_TRY_ASSIGN(Value sort_by, sort_key(by == "key" ? Value(key) : value, "", case_sensitive));
        keyed.emplace_back(std::move(sort_by), Value::tuple({Value(key), value}));
    }
    Expected<void> failure;
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        if (!failure) return false;
        auto r = reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
        if (!r) {
            failure = tl::unexpected(r.error());
            return false;
        }
        return *r;
    });
    STORMO_TRY(failure);
    ValueList out;
    for (auto& entry : keyed) out.push_back(std::move(entry.second));
    return Object::of(Value::list(std::move(out)));
}

// "%s, %s"|format(a, b) is "%s, %s" % (a, b); keywords fill %(key)s.
Expected<Object> format_filter(const Object& input, const CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty())
        return tl::unexpected(type_error("format can't handle positional and keyword arguments at the same time"));
    Value values;
    if (!args.keyword.empty()) {
        values = Value::object();
        for (const auto& [key, value] : args.keyword) {
            STORMO_TRY_ASSIGN(Value v, require_data(value, "format"));
            values.set(key, std::move(v));
        }
    } else {
        ValueList items;
        for (const Object& value : args.positional) {
            STORMO_TRY_ASSIGN(Value v, require_data(value, "format"));
            items.push_back(std::move(v));
        }
        values = Value::tuple(std::move(items));
    }
    STORMO_TRY_ASSIGN(std::string text, percent_format(to_text(input), values));
    return Object::of(Value(std::move(text)));
}

Expected<Object> abs_filter(const Object& input) {
    STORMO_TRY_ASSIGN(Value v, require_data(input, "abs"));
    if (v.is_int()) return Object::of(Value(v.as_int() < 0 ? -v.as_int() : v.as_int()));
    if (v.is_bool()) return Object::of(Value(static_cast<int64_t>(v.as_bool())));
    if (v.is_float()) return Object::of(Value(v.as_double() < 0 ? -v.as_double() : v.as_double()));
    return tl::unexpected(type_error("bad operand type for abs(): '" + type_name(input) + "'"));
}

}  // namespace

bool is_known_filter(std::string_view name) {
    return std::any_of(known_filters.begin(), known_filters.end(), [&](const char* n) { return name == n; });
}

Expected<Object> apply_filter(std::string_view name, const Object& input, const CallArgs& args) {
    if (name == "default" || name == "d") {
        bool use_default = input.is_undefined() || (flag_arg(args, 1, "boolean", false) && !truthy(input));
        if (!use_default) return input;
        const Object* fallback = args.get(0, "default_value");
        return fallback ? *fallback : Object::of(Value(std::string()));
    }
    if (name == "length" || name == "count") return length_filter(input);
    if (name == "tojson") return tojson_filter(input, args);
    if (name == "string" || name == "safe") return input.is_data() && input.data.is_string() ? input : Object::of(Value(to_text(input)));
    if (name == "trim") return string_method_filter("strip", input, args);
    if (name == "upper" || name == "lower" || name == "capitalize") return string_method_filter(name, input, CallArgs{});
    if (name == "title") return Object::of(Value(utf8_jinja_title(to_text(input))));
    if (name == "replace") return string_method_filter("replace", input, args);
    if (name == "e" || name == "escape") return Object::of(Value(html_escape(to_text(input))));
    if (name == "wordcount") return Object::of(Value(word_count(to_text(input))));
    if (name == "join") return join_filter(input, args);
    if (name == "first" || name == "last" || name == "list" || name == "reverse") return sequence_filter(name, input);
    if (name == "items") return items_filter(input);
    if (name == "selectattr" || name == "rejectattr") return select_filter(input, args, true, name == "selectattr");
    if (name == "select" || name == "reject") return select_filter(input, args, false, name == "select");
    if (name == "map") return map_filter(input, args);
    if (name == "unique") return unique_filter(input, args);
    if (name == "sort") return sort_filter(input, args);
    if (name == "min" || name == "max") return extreme_filter(input, args, name == "max");
    if (name == "sum") return sum_filter(input, args);
    if (name == "int") return int_filter(input, args);
    if (name == "float") return float_filter(input, args);
    if (name == "abs") return abs_filter(input);
    if (name == "dictsort") return dictsort_filter(input, args);
    if (name == "format") return format_filter(input, args);
    if (name == "indent") return indent_filter(input, args);
    return fail(ErrorKind::unsupported, "unsupported filter '" + std::string(name) + "'");
}

}  // namespace stormo::text::jinja
