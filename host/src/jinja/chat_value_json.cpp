// JSON text to Value and back. Parsing keeps members in file order (simdjson on-demand walks the
// text in order); printing follows Python's json.dumps, the reference tojson calls.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "jinja/chat_value.hpp"
#include "jinja/python_text.hpp"

namespace stormo::text {
namespace {

Error json_error(const std::string& source, simdjson::error_code code) {
    return Error{ErrorKind::format, source + ": malformed JSON (" + simdjson::error_message(code) + ")"};
}

// Works on a document (the top level, where scalars need the document's own getters) and on a
// nested value alike.
template <class Node>
Expected<Value> convert_node(Node& node, const std::string& source, int depth);

template <class Node>
Expected<Value> convert_number(Node& node, const std::string& source) {
    simdjson::ondemand::number_type type;
    if (auto e = node.get_number_type().get(type)) return tl::unexpected(json_error(source, e));
    if (type == simdjson::ondemand::number_type::signed_integer) {
        int64_t i = 0;
        if (auto e = node.get_int64().get(i)) return tl::unexpected(json_error(source, e));
        return Value(i);
    }
    if (type == simdjson::ondemand::number_type::floating_point_number) {
        double d = 0;
        if (auto e = node.get_double().get(d)) return tl::unexpected(json_error(source, e));
        return Value(d);
    }
    // Integers beyond int64 (tokenizer_config's model_max_length): kept as the nearest double,
    // as no template does arithmetic on them.
    std::string_view raw;
    if constexpr (std::is_same_v<Node, simdjson::ondemand::value>) {
        raw = node.raw_json_token();
    } else if (auto e = node.raw_json_token().get(raw)) {
        return tl::unexpected(json_error(source, e));
    }
    return Value(std::strtod(std::string(raw).c_str(), nullptr));
}

Expected<Value> convert_array(simdjson::ondemand::array array, const std::string& source, int depth) {
    ValueList items;
    for (auto element : array) {
        simdjson::ondemand::value child;
        if (auto e = element.get(child)) return tl::unexpected(json_error(source, e));
        STORMO_TRY_ASSIGN(Value item, convert_node(child, source, depth + 1));
        items.push_back(std::move(item));
    }
    return Value::list(std::move(items));
}

Expected<Value> convert_object(simdjson::ondemand::object object, const std::string& source, int depth) {
    Value out = Value::object();
    for (auto field : object) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return tl::unexpected(json_error(source, e));
        std::string name(key);
        simdjson::ondemand::value child;
        if (auto e = field.value().get(child)) return tl::unexpected(json_error(source, e));
        STORMO_TRY_ASSIGN(Value member, convert_node(child, source, depth + 1));
        out.set(std::move(name), std::move(member));  // a repeated key keeps its first place, as in Python
    }
    return out;
}

template <class Node>
Expected<Value> convert_node(Node& node, const std::string& source, int depth) {
    constexpr int max_depth = 512;
    if (depth > max_depth) return fail(ErrorKind::format, source + ": JSON nested deeper than 512 levels");
    simdjson::ondemand::json_type type;
    if (auto e = node.type().get(type)) return tl::unexpected(json_error(source, e));
    switch (type) {
        case simdjson::ondemand::json_type::array: {
            simdjson::ondemand::array array;
            if (auto e = node.get_array().get(array)) return tl::unexpected(json_error(source, e));
            return convert_array(array, source, depth);
        }
        case simdjson::ondemand::json_type::object: {
            simdjson::ondemand::object object;
            if (auto e = node.get_object().get(object)) return tl::unexpected(json_error(source, e));
            return convert_object(object, source, depth);
        }
        case simdjson::ondemand::json_type::number: return convert_number(node, source);
        case simdjson::ondemand::json_type::string: {
            std::string_view s;
            if (auto e = node.get_string().get(s)) return tl::unexpected(json_error(source, e));
            return Value(std::string(s));
        }
        case simdjson::ondemand::json_type::boolean: {
            bool b = false;
            if (auto e = node.get_bool().get(b)) return tl::unexpected(json_error(source, e));
            return Value(b);
        }
        case simdjson::ondemand::json_type::null: {
            bool is_null = false;
            if (auto e = node.is_null().get(is_null); e || !is_null)
                return tl::unexpected(json_error(source, e ? e : simdjson::N_ATOM_ERROR));
            return Value();
        }
    }
    return fail(ErrorKind::format, source + ": malformed JSON (unknown value type)");
}

// Decodes one UTF-8 sequence at s[i] (advancing i); invalid bytes decode as themselves.
uint32_t next_code_point(std::string_view s, size_t& i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (i + static_cast<size_t>(extra) >= s.size()) extra = 0;  // truncated: the byte alone
    uint32_t cp = extra == 0 ? c : (c & (0x3F >> extra));
    for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (byte(i + static_cast<size_t>(k)) & 0x3F);
    i += 1 + static_cast<size_t>(extra);
    return cp;
}

void append_u_escape(std::string& out, uint32_t unit) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        char ch = s[i];
        auto c = static_cast<unsigned char>(ch);
        if (c >= 0x80 && ensure_ascii) {
            uint32_t cp = next_code_point(s, i);
            if (cp >= 0x10000) {  // a surrogate pair, as Python writes it
                cp -= 0x10000;
                append_u_escape(out, 0xD800 + (cp >> 10));
                append_u_escape(out, 0xDC00 + (cp & 0x3FF));
            } else {
                append_u_escape(out, cp);
            }
            continue;
        }
        ++i;
        switch (ch) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) append_u_escape(out, c);
                else out += ch;
        }
    }
    out += '"';
}

// json.dumps' float: repr, with its own names for the non-finite values.
std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return python_float_repr(d);
}

// The text so far, the style, and the size it may reach: past max_bytes `over` is set and
// nothing more is appended.
struct JsonWriter {
    std::string out;
    const JsonStyle& style;
    size_t max_bytes;
    bool over = false;

    bool room(size_t more) {
        over = over || more > max_bytes || out.size() > max_bytes - more;
        return !over;
    }
    void add(std::string_view text) {
        if (room(text.size())) out += text;
    }
};

void append_json(JsonWriter& w, const Value& v, int level);

void append_newline_indent(JsonWriter& w, int level) {
    const std::string& indent = *w.style.indent;
    if (!w.room(1 + static_cast<uint64_t>(level) * indent.size())) return;
    w.out += '\n';
    for (int k = 0; k < level; ++k) w.out += indent;
}

void append_json_list(JsonWriter& w, const ValueList& items, int level) {
    if (items.empty()) {
        w.add("[]");
        return;
    }
    w.add("[");
    for (size_t k = 0; k < items.size() && !w.over; ++k) {
        if (k > 0) w.add(w.style.item_separator);
        if (w.style.indent) append_newline_indent(w, level + 1);
        append_json(w, items[k], level + 1);
    }
    if (w.style.indent) append_newline_indent(w, level);
    w.add("]");
}

void append_json_object(JsonWriter& w, const ValueObject& members, int level) {
    const JsonStyle& style = w.style;
    if (members.empty()) {
        w.add("{}");
        return;
    }
    std::vector<const std::pair<std::string, Value>*> order;
    for (const auto& member : members) order.push_back(&member);
    if (style.sort_keys)
        std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
    w.add("{");
    for (size_t k = 0; k < order.size() && !w.over; ++k) {
        if (k > 0) w.add(style.item_separator);
        if (style.indent) append_newline_indent(w, level + 1);
        std::string key;
        append_json_string(key, order[k]->first, style.ensure_ascii);
        w.add(key);
        w.add(style.key_separator);
        append_json(w, order[k]->second, level + 1);
    }
    if (style.indent) append_newline_indent(w, level);
    w.add("}");
}

void append_json(JsonWriter& w, const Value& v, int level) {
    if (w.over) return;
    if (v.is_null()) w.add("null");
    else if (v.is_bool()) w.add(v.as_bool() ? "true" : "false");
    else if (v.is_int()) w.add(std::to_string(v.as_int()));
    else if (v.is_float()) w.add(json_float(v.as_double()));
    else if (v.is_list()) append_json_list(w, v.as_list(), level);
    else if (v.is_object()) append_json_object(w, v.as_object(), level);
    else {
        std::string text;  // at most 6 bytes for each of the string's
        append_json_string(text, v.as_string(), w.style.ensure_ascii);
        w.add(text);
    }
}

}  // namespace

Expected<Value> parse_json_value(std::string_view text, const std::string& source) {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(text);
    simdjson::ondemand::document doc;
    if (auto e = parser.iterate(padded).get(doc)) return tl::unexpected(json_error(source, e));
    STORMO_TRY_ASSIGN(Value value, convert_node(doc, source, 0));
    bool at_end = doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
    if (!at_end) return fail(ErrorKind::format, source + ": malformed JSON (text after the value)");
    return value;
}

std::string to_json(const Value& v, int indent) {
    JsonStyle style;
    if (indent > 0) {
        style.indent = std::string(static_cast<size_t>(indent), ' ');
        style.item_separator.assign(1, ',');
    }
    return to_json(v, style);
}

std::string to_json(const Value& v, const JsonStyle& style) {
    return *to_json_within(v, style, std::numeric_limits<size_t>::max());
}

std::optional<std::string> to_json_within(const Value& v, const JsonStyle& style, size_t max_bytes) {
    JsonWriter w{std::string(), style, max_bytes};
    append_json(w, v, 0);
    if (w.over) return std::nullopt;
    return std::move(w.out);
}

}  // namespace stormo::text
