// Python's str, dict and list methods on template data. Case mapping and whitespace are
// Unicode's (simple case mappings); isdigit() and the other letter classes are ASCII's; positions
// and lengths count code points, as Python does.
#include "jinja/jinja_methods.hpp"

#include <algorithm>
#include <array>

#include "jinja/unicode_text.hpp"

namespace stormo::text::jinja {
namespace {

constexpr std::array string_methods = {
    "startswith", "endswith", "strip",   "lstrip",  "rstrip",  "split",       "rsplit",      "replace",
    "upper",      "lower",    "title",   "capitalize", "find", "rfind",       "count",       "join",
    "isdigit",    "isalpha",  "isalnum", "isspace", "isupper", "islower",     "removeprefix", "removesuffix",
    "splitlines", "index"};
constexpr std::array unimplemented_string_methods = {
    "format", "format_map", "encode", "zfill", "center", "ljust", "rjust", "partition", "rpartition",
    "expandtabs", "swapcase", "casefold", "translate", "maketrans", "isnumeric", "isdecimal", "istitle",
    "isidentifier", "isprintable", "isascii"};
constexpr std::array dict_methods = {"items", "keys", "values", "get"};
constexpr std::array list_methods = {"index", "count"};
constexpr std::array modifying_list_methods = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
constexpr std::array modifying_dict_methods = {"pop", "popitem", "update", "clear", "setdefault"};

template <size_t N>
bool listed(const std::array<const char*, N>& names, std::string_view name) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

Error type_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

Expected<std::string> string_arg(const CallArgs& args, size_t index, std::string_view name, std::string_view method) {
    const Object* a = args.get(index, name);
    if (!a || !a->is_data() || !a->data.is_string())
        return tl::unexpected(type_error(std::string(method) + "() needs a string argument '" + std::string(name) + "'"));
    return a->data.as_string();
}

// The optional characters argument of strip(): None strips whitespace.
Expected<std::vector<std::string>> strip_set(const CallArgs& args, std::string_view method) {
    const Object* a = args.get(0, "chars");
    if (!a || (a->is_data() && a->data.is_null())) return std::vector<std::string>{};
    if (!a->is_data() || !a->data.is_string())
        return tl::unexpected(type_error(std::string(method) + " arg must be None or str"));
    return code_points(a->data.as_string());
}

std::string strip_text(const std::string& s, const std::vector<std::string>& chars, bool left, bool right) {
    std::vector<std::string> cps = code_points(s);
    auto strippable = [&](const std::string& c) {
        if (chars.empty()) return is_python_space(c);
        return std::find(chars.begin(), chars.end(), c) != chars.end();
    };
    size_t begin = 0, end = cps.size();
    while (left && begin < end && strippable(cps[begin])) ++begin;
    while (right && end > begin && strippable(cps[end - 1])) --end;
    std::string out;
    for (size_t k = begin; k < end; ++k) out += cps[k];
    return out;
}

ValueList split_whitespace(const std::string& s, int64_t maxsplit) {
    std::vector<std::string> cps = code_points(s);
    auto join = [&](size_t from, size_t to) {
        std::string out;
        for (size_t k = from; k < to; ++k) out += cps[k];
        return out;
    };
    ValueList parts;
    size_t i = 0;
    while (i < cps.size()) {
        while (i < cps.size() && is_python_space(cps[i])) ++i;
        if (i >= cps.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
            parts.emplace_back(join(i, cps.size()));  // Python keeps the rest as it is, trailing spaces too
            break;
        }
        size_t j = i;
        while (j < cps.size() && !is_python_space(cps[j])) ++j;
        parts.emplace_back(join(i, j));
        i = j;
    }
    return parts;
}

ValueList split_on(const std::string& s, const std::string& sep, int64_t maxsplit) {
    ValueList parts;
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        size_t at = s.find(sep, start);
        if (at == std::string::npos) break;
        parts.emplace_back(s.substr(start, at - start));
        start = at + sep.size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
}

ValueList rsplit_on(const std::string& s, const std::string& sep, int64_t maxsplit) {
    ValueList reversed;
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(reversed.size()) < maxsplit) {
        if (end < sep.size()) break;
        size_t at = s.rfind(sep, end - sep.size());
        if (at == std::string::npos) break;
        reversed.emplace_back(s.substr(at + sep.size(), end - at - sep.size()));
        end = at;
    }
    reversed.emplace_back(s.substr(0, end));
    return ValueList(reversed.rbegin(), reversed.rend());
}

Expected<Object> split_method(const std::string& s, std::string_view method, const CallArgs& args) {
    int64_t maxsplit = -1;
    if (const Object* m = args.get(1, "maxsplit"); m && m->is_data() && m->data.is_int()) maxsplit = m->data.as_int();
    const Object* sep = args.get(0, "sep");
    if (!sep || (sep->is_data() && sep->data.is_null())) {
        if (method == "rsplit" && maxsplit >= 0) {
            // rsplit(None, n) keeps the leftmost words together.
            ValueList words = split_whitespace(s, -1);
            if (static_cast<int64_t>(words.size()) <= maxsplit + 1) return Object::of(Value::list(std::move(words)));
            return fail(ErrorKind::unsupported, "rsplit() on whitespace with maxsplit is not supported");
        }
        return Object::of(Value::list(split_whitespace(s, maxsplit)));
    }
    if (!sep->is_data() || !sep->data.is_string()) return tl::unexpected(type_error("must be str or None, not " + type_name(*sep)));
    const std::string& separator = sep->data.as_string();
    if (separator.empty()) return tl::unexpected(type_error("empty separator"));
    return Object::of(Value::list(method == "split" ? split_on(s, separator, maxsplit) : rsplit_on(s, separator, maxsplit)));
}

Expected<std::string> replace_all(const std::string& s, const std::string& old, const std::string& replacement, int64_t count,
                                  size_t max_bytes) {
    std::string out;
    if (old.empty()) {  // Python inserts the replacement around every character
        std::vector<std::string> cps = code_points(s);
        int64_t done = 0;
        for (const std::string& c : cps) {
            if (count < 0 || done < count) {
                STORMO_TRY(append_within(out, replacement, max_bytes));
                ++done;
            }
            STORMO_TRY(append_within(out, c, max_bytes));
        }
        if (count < 0 || done < count) STORMO_TRY(append_within(out, replacement, max_bytes));
        return out;
    }
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t at = s.find(old, start);
        if (at == std::string::npos) break;
        STORMO_TRY(append_within(out, std::string_view(s).substr(start, at - start), max_bytes));
        STORMO_TRY(append_within(out, replacement, max_bytes));
        start = at + old.size();
        ++done;
    }
    STORMO_TRY(append_within(out, std::string_view(s).substr(start), max_bytes));
    return out;
}

// A byte offset in `s` as Python's character index.
int64_t char_index(const std::string& s, size_t byte_offset) {
    return static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, byte_offset)));
}

Expected<bool> affix_matches(const std::string& s, const Object& affix, bool at_start) {
    auto one = [&](const Value& v) -> Expected<bool> {
        if (!v.is_string()) return tl::unexpected(type_error("startswith/endswith first arg must be str or a tuple of str"));
        const std::string& a = v.as_string();
        if (a.size() > s.size()) return false;
        return at_start ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.is_data() && affix.data.is_list()) {
        for (const Value& v : affix.data.as_list()) {
            STORMO_TRY_ASSIGN(bool hit, one(v));
            if (hit) return true;
        }
        return false;
    }
    if (!affix.is_data()) return tl::unexpected(type_error("startswith/endswith first arg must be str or a tuple of str"));
    return one(affix.data);
}

template <class Predicate>
Object all_chars(const std::string& s, Predicate p) {
    return Object::of(Value(!s.empty() && std::all_of(s.begin(), s.end(), p)));
}

Expected<Object> call_string_method(const std::string& s, std::string_view name, const CallArgs& args, size_t max_bytes) {
    if (name == "startswith" || name == "endswith") {
        const Object* affix = args.get(0, "prefix");
        if (!affix) return tl::unexpected(type_error(std::string(name) + "() takes at least 1 argument (0 given)"));
        STORMO_TRY_ASSIGN(bool hit, affix_matches(s, *affix, name == "startswith"));
        return Object::of(Value(hit));
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        STORMO_TRY_ASSIGN(auto chars, strip_set(args, name));
        return Object::of(Value(strip_text(s, chars, name != "rstrip", name != "lstrip")));
    }
    if (name == "split" || name == "rsplit") return split_method(s, name, args);
    if (name == "splitlines") return Object::of(Value::list(s.empty() ? ValueList{} : split_on(s.back() == '\n' ? s.substr(0, s.size() - 1) : s, "\n", -1)));
    if (name == "replace") {
        STORMO_TRY_ASSIGN(std::string old, string_arg(args, 0, "old", name));
        STORMO_TRY_ASSIGN(std::string replacement, string_arg(args, 1, "new", name));
        int64_t count = -1;
        if (const Object* c = args.get(2, "count"); c && c->is_data() && c->data.is_int()) count = c->data.as_int();
        STORMO_TRY_ASSIGN(std::string replaced, replace_all(s, old, replacement, count, max_bytes));
        return Object::of(Value(std::move(replaced)));
    }
    if (name == "upper") return Object::of(Value(utf8_upper(s)));
    if (name == "lower") return Object::of(Value(utf8_lower(s)));
    if (name == "title") return Object::of(Value(utf8_python_title(s)));
    if (name == "capitalize") return Object::of(Value(utf8_capitalize(s)));
    if (name == "find" || name == "rfind" || name == "index") {
        STORMO_TRY_ASSIGN(std::string sub, string_arg(args, 0, "sub", name));
        size_t at = name == "rfind" ? s.rfind(sub) : s.find(sub);
        if (at == std::string::npos && name == "index") return tl::unexpected(type_error("substring not found"));
        return Object::of(Value(at == std::string::npos ? int64_t{-1} : char_index(s, at)));
    }
    if (name == "count") {
        STORMO_TRY_ASSIGN(std::string sub, string_arg(args, 0, "sub", name));
        if (sub.empty()) return Object::of(Value(static_cast<int64_t>(code_point_count(s) + 1)));
        int64_t n = 0;
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Object::of(Value(n));
    }
    if (name == "join") {
        const Object* items = args.get(0, "iterable");
        if (!items) return tl::unexpected(type_error("join() takes exactly one argument (0 given)"));
        STORMO_TRY_ASSIGN(ValueList parts, iterate(*items));
        std::string out;
        for (size_t k = 0; k < parts.size(); ++k) {
            if (!parts[k].is_string())
                return tl::unexpected(type_error("sequence item " + std::to_string(k) + ": expected str instance, " +
                                                 type_name(Object::of(parts[k])) + " found"));
            if (k > 0) STORMO_TRY(append_within(out, s, max_bytes));
            STORMO_TRY(append_within(out, parts[k].as_string(), max_bytes));
        }
        return Object::of(Value(std::move(out)));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        STORMO_TRY_ASSIGN(std::string affix, string_arg(args, 0, "affix", name));
        bool prefix = name == "removeprefix";
        bool hit = affix.size() <= s.size() &&
                   (prefix ? s.compare(0, affix.size(), affix) == 0 : s.compare(s.size() - affix.size(), affix.size(), affix) == 0);
        if (!hit) return Object::of(Value(s));
        return Object::of(Value(prefix ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size())));
    }
    if (name == "isdigit") return all_chars(s, is_digit);
    if (name == "isalpha") return all_chars(s, is_alpha);
    if (name == "isalnum") return all_chars(s, [](char c) { return is_alpha(c) || is_digit(c); });
    if (name == "isspace") {
        std::vector<std::string> cps = code_points(s);
        return Object::of(Value(!cps.empty() && std::all_of(cps.begin(), cps.end(), [](const std::string& c) { return is_python_space(c); })));
    }
    bool has_cased = std::any_of(s.begin(), s.end(), is_alpha);
    if (name == "isupper")
        return Object::of(Value(has_cased && std::none_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; })));
    return Object::of(Value(has_cased && std::none_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; })));
}

Expected<Object> call_dict_method(const Value& self, std::string_view name, const CallArgs& args) {
    if (name == "get") {
        const Object* key = args.get(0, "key");
        if (!key) return tl::unexpected(type_error("get expected at least 1 argument, got 0"));
        if (key->is_data() && key->data.is_string())
            if (const Value* member = self.find(key->data.as_string())) return Object::of(*member);
        const Object* fallback = args.get(1, "default");
        return fallback ? *fallback : Object::of(Value());
    }
    ValueList out;
    for (const auto& [key, value] : self.as_object()) {
        if (name == "items") out.push_back(Value::tuple({Value(key), value}));
        else if (name == "keys") out.emplace_back(key);
        else out.push_back(value);
    }
    return Object::of(Value::list(std::move(out)));
}

Expected<Object> call_list_method(const ValueList& items, std::string_view name, const CallArgs& args) {
    const Object* needle = args.get(0, "value");
    if (!needle) return tl::unexpected(type_error(std::string(name) + "() takes exactly one argument (0 given)"));
    int64_t count = 0;
    for (size_t k = 0; k < items.size(); ++k) {
        if (!equals(Object::of(items[k]), *needle)) continue;
        if (name == "index") return Object::of(Value(static_cast<int64_t>(k)));
        ++count;
    }
    if (name == "index") return tl::unexpected(type_error(to_text(*needle) + " is not in list"));
    return Object::of(Value(count));
}

}  // namespace

bool has_method(const Value& self, std::string_view name) {
    if (self.is_string()) return listed(string_methods, name);
    if (self.is_object()) return listed(dict_methods, name);
    if (self.is_list()) return listed(list_methods, name);
    return false;
}

bool is_unimplemented_method(const Value& self, std::string_view name) {
    return self.is_string() && listed(unimplemented_string_methods, name);
}

bool is_modifying_method(const Value& self, std::string_view name) {
    if (self.is_list()) return listed(modifying_list_methods, name);
    if (self.is_object()) return listed(modifying_dict_methods, name);
    return false;
}

Expected<Object> call_method(const Value& self, std::string_view name, const CallArgs& args, size_t max_bytes) {
    if (self.is_string()) return call_string_method(self.as_string(), name, args, max_bytes);
    if (self.is_object()) return call_dict_method(self, name, args);
    return call_list_method(self.as_list(), name, args);
}

}  // namespace stormo::text::jinja
