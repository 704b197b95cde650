// Filters over sequences: sort, unique, min, max, sum, select and reject (by attribute or not),
// map, first, last, list, reverse, join, items, dictsort.
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "jinja/jinja_builtins.hpp"
#include "jinja/jinja_filter_parts.hpp"
#include "jinja/jinja_methods.hpp"

namespace stormo::text::jinja::filter_parts {
namespace {

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

// A hash equal values share (1, 1.0 and True alike), so unique() compares an item only with the
// kept ones that may equal it: comparing it with every kept one made a million items take hours.
size_t equality_hash(const Value& v) {
    constexpr size_t mix = 0x9e3779b97f4a7c15ull;
    if (v.is_bool() || v.is_int()) return std::hash<int64_t>{}(v.is_bool() ? int64_t{v.as_bool()} : v.as_int());
    if (v.is_float()) {
        double d = v.as_double();
        if (d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            return std::hash<int64_t>{}(static_cast<int64_t>(d));
        return std::hash<double>{}(d);
    }
    if (v.is_string()) return std::hash<std::string>{}(v.as_string());
    if (v.is_null()) return mix;
    size_t h = v.is_tuple() ? 7 : v.is_list() ? 3 : 5;
    if (v.is_list())
        for (const Value& item : v.as_list()) h = h * 31 + equality_hash(item);
    else  // a dict: equal regardless of order
        for (const auto& [key, member] : v.as_object()) h += std::hash<std::string>{}(key) ^ (equality_hash(member) * mix);
    return h;
}

// The values of (sort key, value) pairs as a list, stably sorted by key (sort and dictsort); the
// first comparison that fails is the error.
Expected<Object> sorted_values(std::vector<std::pair<Value, Value>> keyed, bool reverse) {
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

}  // namespace

Expected<Object> sort_filter(const Object& input, const CallArgs& args) {
    bool reverse = flag_arg(args, 0, "reverse", false);
    STORMO_TRY_ASSIGN(auto keyed, keyed_items(input, args, 1, 2));
    return sorted_values(std::move(keyed), reverse);
}

Expected<Object> unique_filter(const Object& input, const CallArgs& args) {
    STORMO_TRY_ASSIGN(auto keyed, keyed_items(input, args, 0, 1));
    ValueList out;
    std::unordered_map<size_t, std::vector<Value>> seen;  // kept keys by equality_hash
    for (auto& entry : keyed) {
        const Value& key = entry.first;  // a lambda may not capture a structured binding before clang 16
        std::vector<Value>& bucket = seen[equality_hash(key)];
        if (std::any_of(bucket.begin(), bucket.end(), [&](const Value& s) { return equals(s, key); })) continue;
        bucket.push_back(key);
        out.push_back(entry.second);
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

Expected<Object> sum_filter(const Object& input, const CallArgs& args, size_t max_bytes) {
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
        STORMO_TRY_ASSIGN(total, binary_operation("+", total, term, max_bytes));
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

Expected<Object> map_filter(const Object& input, const CallArgs& args, size_t max_bytes) {
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
        STORMO_TRY_ASSIGN(Object mapped, apply_filter(filter, Object::of(item), filter_args, max_bytes));
        STORMO_TRY_ASSIGN(Value v, require_data(mapped, "map"));
        out.push_back(std::move(v));
    }
    return Object::of(Value::list(std::move(out)));
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

Expected<Object> join_filter(const Object& input, const CallArgs& args, size_t max_bytes) {
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
        if (k > 0) STORMO_TRY(append_within(out, separator, max_bytes));
        STORMO_TRY(append_within(out, to_text(item), max_bytes));
    }
    return Object::of(Value(std::move(out)));
}

Expected<Object> items_filter(const Object& input) {
    if (input.is_undefined()) return Object::of(Value::list());
    if (!input.is_data() || !input.data.is_object()) return tl::unexpected(type_error("Can only get item pairs from a mapping."));
    return call_method(input.data, "items", CallArgs{}, 0);  // builds no string
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
    return sorted_values(std::move(keyed), reverse);
}

// "%s, %s"|format(a, b) is "%s, %s" % (a, b); keywords fill %(key)s.

}  // namespace stormo::text::jinja::filter_parts
