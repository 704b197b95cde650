#pragma once
// The values chat templates work on: JSON-shaped (null, bool, integer, float, string, list,
// object), with objects keeping their keys in insertion order as Python dicts do, since templates
// print them (tools' JSON schemas through tojson) in that order.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "stormo/error.hpp"

namespace stormo::text {

class Value;
using ValueList = std::vector<Value>;
using ValueObject = std::vector<std::pair<std::string, Value>>;  // insertion order

class Value {
public:
    Value() = default;  // null (Python None)
    Value(bool b);
    Value(int64_t i);
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(double d);
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    static Value list(ValueList items = {});
    static Value object(ValueObject members = {});
    // A Python tuple (a template's (a, b) literal, dict.items() pairs): a list that prints as
    // (a, b) and is not equal to a list. JSON has none; to_json writes it as a list.
    static Value tuple(ValueList items = {});

    bool is_null() const;
    bool is_bool() const;
    bool is_int() const;
    bool is_float() const;
    bool is_string() const;
    bool is_list() const;
    bool is_object() const;
    bool is_tuple() const { return is_tuple_; }  // also is_list()
    // Lists and dicts nested in this value (0 for a scalar), and its size: 1 for each scalar,
    // the bytes of every string and key, and 8 for each item or member (about what printing it
    // takes, and a sixth of what holding it takes). Both saturate, and both are set when a list
    // or dict is built or set() adds to it (editing through as_list() or as_object() does not
    // update them), so the template engine can bound what a template builds without walking it.
    uint32_t depth() const { return depth_; }
    uint32_t weight() const { return weight_; }

    bool as_bool() const;  // only for a bool
    int64_t as_int() const;
    double as_double() const;  // ints and floats
    const std::string& as_string() const;
    const ValueList& as_list() const;
    ValueList& as_list();
    const ValueObject& as_object() const;
    ValueObject& as_object();

    // Object member lookup; nullptr when absent or not an object.
    const Value* find(std::string_view key) const;
    // Sets (or replaces, keeping its place) an object member.
    void set(std::string key, Value v);

private:
    std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<ValueList>,
                 std::shared_ptr<ValueObject>>
        v_;
    bool is_tuple_ = false;
    uint16_t depth_ = 0;
    uint32_t weight_ = 1;
    void measure();  // depth_ and weight_ of a new list or dict from its items
};

// JSON text to a Value (simdjson, keys in file order); errors name `source`.
Expected<Value> parse_json_value(std::string_view text, const std::string& source);
// Python's json.dumps(v, ensure_ascii=False) with its default separators (", " and ": "), as the
// templates' tojson prints; indent > 0 gives the indented form.
std::string to_json(const Value& v, int indent = 0);

// json.dumps' other arguments, as transformers' tojson filter passes them through.
struct JsonStyle {
    std::optional<std::string> indent;  // None: one line; else the text one level indents by
    std::string item_separator = ", ";  // json.dumps uses "," when indenting
    std::string key_separator = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;
};
std::string to_json(const Value& v, const JsonStyle& style);
// The same, or nullopt as soon as the text would pass max_bytes: an indent or separator a
// template chose multiplies with the number of items, and this stops before that is built.
std::optional<std::string> to_json_within(const Value& v, const JsonStyle& style, size_t max_bytes);

}  // namespace stormo::text
