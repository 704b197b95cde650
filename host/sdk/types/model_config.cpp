// ModelConfig: typed reads of config.json fields whose errors name the file and the field.
#include <cstdio>
#include <string>

#include "stormo/json.hpp"
#include "stormo/quote.hpp"

namespace stormo {
namespace {

// "string", or "number 1.5" when the type alone would not explain why an integer was refused.
std::string describe(const Json& value) {
    if (value.type() != Json::Type::number) return json_type_name(value.type());
    char text[32];
    std::snprintf(text, sizeof text, "%g", *value.as_double());
    return std::string("number ") + text;
}

}  // namespace

Expected<ModelConfig> ModelConfig::parse(std::string_view text, const std::string& source_name) {
    STORMO_TRY_ASSIGN(auto root, Json::parse(text, source_name));
    if (root.type() != Json::Type::object)
        return fail(ErrorKind::format, source_name + ": expected a JSON object at the top level, found " +
                                           json_type_name(root.type()));
    return ModelConfig(std::move(root), source_name);
}

bool ModelConfig::has(std::string_view key) const {
    const Json* value = root_.find(key);
    return value != nullptr && !value->is_null();
}

Error ModelConfig::missing(std::string_view key) const {
    const Json* value = root_.find(key);
    const char* what = value == nullptr ? "is missing" : "is null";
    return Error{ErrorKind::missing, source_ + ": field " + in_quotes(key) + " " + what};
}

Error ModelConfig::wrong_type(std::string_view key, const char* wanted) const {
    const Json* value = root_.find(key);
    const std::string found = value ? describe(*value) : std::string("nothing");
    return Error{ErrorKind::mismatch,
                 source_ + ": field " + in_quotes(key) + " must be " + wanted + ", found " + found};
}

Expected<int64_t> ModelConfig::integer(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    if (auto v = root_.find(key)->as_int()) return *v;
    return tl::unexpected(wrong_type(key, "an integer"));
}

Expected<double> ModelConfig::number(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    if (auto v = root_.find(key)->as_double()) return *v;
    return tl::unexpected(wrong_type(key, "a number"));
}

Expected<bool> ModelConfig::boolean(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    if (auto v = root_.find(key)->as_bool()) return *v;
    return tl::unexpected(wrong_type(key, "a boolean"));
}

Expected<std::string> ModelConfig::string(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    if (auto v = root_.find(key)->as_string()) return *v;
    return tl::unexpected(wrong_type(key, "a string"));
}

Expected<std::vector<int64_t>> ModelConfig::integers(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    const Json& value = *root_.find(key);
    if (auto single = value.as_int()) return std::vector<int64_t>{*single};
    const auto* items = value.as_array();
    if (items == nullptr) return tl::unexpected(wrong_type(key, "an integer or a list of integers"));
    std::vector<int64_t> out;
    out.reserve(items->size());
    for (size_t i = 0; i < items->size(); ++i) {
        auto v = (*items)[i].as_int();
        if (!v)
            return fail(ErrorKind::mismatch, source_ + ": field " + in_quotes(key) + " item " + std::to_string(i) +
                                                 " must be an integer, found " + describe((*items)[i]));
        out.push_back(*v);
    }
    return out;
}

Expected<std::vector<std::string>> ModelConfig::strings(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    const auto* items = root_.find(key)->as_array();
    if (items == nullptr) return tl::unexpected(wrong_type(key, "a list of strings"));
    std::vector<std::string> out;
    out.reserve(items->size());
    for (size_t i = 0; i < items->size(); ++i) {
        auto v = (*items)[i].as_string();
        if (!v)
            return fail(ErrorKind::mismatch, source_ + ": field " + in_quotes(key) + " item " + std::to_string(i) +
                                                 " must be a string, found " + describe((*items)[i]));
        out.push_back(std::move(*v));
    }
    return out;
}

Expected<ModelConfig> ModelConfig::object(std::string_view key) const {
    if (!has(key)) return tl::unexpected(missing(key));
    const Json& value = *root_.find(key);
    if (value.type() != Json::Type::object) return tl::unexpected(wrong_type(key, "an object"));
    // Errors inside the nested object then read "config.json: rope_parameters: field ...".
    return ModelConfig(value, source_ + ": " + std::string(key));
}

Expected<int64_t> ModelConfig::integer_any(std::initializer_list<std::string_view> keys) const {
    if (keys.size() == 0) return fail(ErrorKind::internal, source_ + ": integer_any called without field names");
    for (std::string_view key : keys)
        if (has(key)) return integer(key);
    std::string names;
    for (std::string_view key : keys) names += (names.empty() ? "" : ", ") + in_quotes(key);
    if (keys.size() == 1) return tl::unexpected(missing(*keys.begin()));
    return fail(ErrorKind::missing, source_ + ": none of the fields " + names + " is present");
}

}  // namespace stormo
