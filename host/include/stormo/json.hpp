#pragma once
// A parsed JSON value (config.json, generation_config.json, safetensors headers). Parsed with
// simdjson into an owned tree, so plugins can hold and copy it without the parser's lifetime.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

class STORMO_API Json {
public:
    enum class Type { null, boolean, integer, number, string, array, object };

    Json() = default;  // null
    static Expected<Json> parse(std::string_view text, const std::string& source_name);

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::null; }
    bool is_number() const { return type_ == Type::integer || type_ == Type::number; }

    std::optional<bool> as_bool() const;
    std::optional<int64_t> as_int() const;       // integers, and numbers with no fraction
    std::optional<double> as_double() const;     // integers and numbers
    std::optional<std::string> as_string() const;
    const std::vector<Json>* as_array() const;
    const std::map<std::string, Json, std::less<>>* as_object() const;

    // Member lookup on an object; nullptr when absent or when this is not an object.
    const Json* find(std::string_view key) const;

    static Json make_null() { return Json(); }
    static Json make_bool(bool v);
    static Json make_int(int64_t v);
    static Json make_double(double v);
    static Json make_string(std::string v);
    static Json make_array(std::vector<Json> v);
    static Json make_object(std::map<std::string, Json, std::less<>> v);

private:
    Type type_ = Type::null;
    bool bool_ = false;
    int64_t int_ = 0;
    double double_ = 0.0;
    std::string string_;
    std::shared_ptr<const std::vector<Json>> array_;
    std::shared_ptr<const std::map<std::string, Json, std::less<>>> object_;
};

STORMO_API const char* json_type_name(Json::Type t);

// config.json with typed accessors whose errors name the file and the field. Fields a family needs
// are read through these; a missing mandatory field is an error, never a silent default.
class STORMO_API ModelConfig {
public:
    ModelConfig() = default;
    ModelConfig(Json root, std::string source) : root_(std::move(root)), source_(std::move(source)) {}
    static Expected<ModelConfig> parse(std::string_view text, const std::string& source_name);

    const Json& root() const { return root_; }
    const std::string& source() const { return source_; }
    bool has(std::string_view key) const;  // present and not null

    Expected<int64_t> integer(std::string_view key) const;
    Expected<double> number(std::string_view key) const;
    Expected<bool> boolean(std::string_view key) const;
    Expected<std::string> string(std::string_view key) const;
    Expected<std::vector<int64_t>> integers(std::string_view key) const;  // a list, or one integer
    Expected<std::vector<std::string>> strings(std::string_view key) const;
    Expected<ModelConfig> object(std::string_view key) const;  // a nested object, same source name

    // The first present of several spellings of one field (hub and transformers-5 dialects).
    Expected<int64_t> integer_any(std::initializer_list<std::string_view> keys) const;

    Error missing(std::string_view key) const;
    Error wrong_type(std::string_view key, const char* wanted) const;

private:
    Json root_;
    std::string source_;
};

}  // namespace stormo
