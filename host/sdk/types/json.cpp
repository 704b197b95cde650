// Json: simdjson's DOM parse copied into an owned, immutable tree that outlives the parser.
#include "stormo/json.hpp"

#include <cmath>
#include <limits>

#include <simdjson.h>

namespace stormo {
namespace {

using Object = std::map<std::string, Json, std::less<>>;

// Converts one DOM element; fails only on a duplicate key (the tree is a map, and silently
// keeping one of two values would hide a broken file).
Expected<Json> convert(simdjson::dom::element el, const std::string& source_name) {
    using simdjson::dom::element_type;
    // Each accessor is checked, though the type switch makes failure impossible; the values are
    // taken into named locals so nothing refers into a destroyed simdjson_result temporary.
    const auto broken = [&] { return fail(ErrorKind::internal, source_name + ": simdjson type mismatch"); };
    switch (el.type()) {
        case element_type::NULL_VALUE: return Json::make_null();
        case element_type::BOOL: {
            bool v = false;
            if (el.get(v)) return broken();
            return Json::make_bool(v);
        }
        case element_type::INT64: {
            int64_t v = 0;
            if (el.get(v)) return broken();
            return Json::make_int(v);
        }
        case element_type::UINT64: {
            // simdjson uses UINT64 only above INT64_MAX; those stay exact only as doubles.
            uint64_t v = 0;
            if (el.get(v)) return broken();
            if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return Json::make_int(static_cast<int64_t>(v));
            return Json::make_double(static_cast<double>(v));
        }
        case element_type::DOUBLE: {
            double v = 0;
            if (el.get(v)) return broken();
            return Json::make_double(v);
        }
        case element_type::STRING: {
            std::string_view v;
            if (el.get(v)) return broken();
            return Json::make_string(std::string(v));
        }
        case element_type::ARRAY: {
            simdjson::dom::array array;
            if (el.get(array)) return broken();
            std::vector<Json> items;
            items.reserve(array.size());
            for (simdjson::dom::element child : array) {
                auto item = convert(child, source_name);
                if (!item) return item;
                items.push_back(std::move(*item));
            }
            return Json::make_array(std::move(items));
        }
        case element_type::OBJECT: {
            simdjson::dom::object object;
            if (el.get(object)) return broken();
            Object members;
            for (simdjson::dom::key_value_pair field : object) {
                auto value = convert(field.value, source_name);
                if (!value) return value;
                auto [it, inserted] = members.emplace(std::string(field.key), std::move(*value));
                if (!inserted)
                    return fail(ErrorKind::format,
                                source_name + ": invalid JSON: duplicate key \"" + it->first + "\"");
            }
            return Json::make_object(std::move(members));
        }
    }
    return fail(ErrorKind::internal, source_name + ": unknown simdjson element type");
}

}  // namespace

Expected<Json> Json::parse(std::string_view text, const std::string& source_name) {
    simdjson::dom::parser parser;
    const simdjson::padded_string padded(text.data(), text.size());
    simdjson::dom::element root;
    if (const auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS)
        return fail(ErrorKind::format, source_name + ": invalid JSON: " + simdjson::error_message(error));
    return convert(root, source_name);
}

std::optional<bool> Json::as_bool() const {
    if (type_ != Type::boolean) return std::nullopt;
    return bool_;
}

std::optional<int64_t> Json::as_int() const {
    if (type_ == Type::integer) return int_;
    if (type_ != Type::number || !std::isfinite(double_) || std::trunc(double_) != double_)
        return std::nullopt;
    // 2^63 itself is not representable; everything strictly inside the range converts exactly.
    constexpr double kLimit = 9223372036854775808.0;
    if (double_ >= kLimit || double_ < -kLimit) return std::nullopt;
    return static_cast<int64_t>(double_);
}

std::optional<double> Json::as_double() const {
    if (type_ == Type::integer) return static_cast<double>(int_);
    if (type_ == Type::number) return double_;
    return std::nullopt;
}

std::optional<std::string> Json::as_string() const {
    if (type_ != Type::string) return std::nullopt;
    return string_;
}

const std::vector<Json>* Json::as_array() const {
    return type_ == Type::array ? array_.get() : nullptr;
}

const std::map<std::string, Json, std::less<>>* Json::as_object() const {
    return type_ == Type::object ? object_.get() : nullptr;
}

const Json* Json::find(std::string_view key) const {
    if (type_ != Type::object) return nullptr;
    auto it = object_->find(key);
    return it == object_->end() ? nullptr : &it->second;
}

Json Json::make_bool(bool v) {
    Json j;
    j.type_ = Type::boolean;
    j.bool_ = v;
    return j;
}

Json Json::make_int(int64_t v) {
    Json j;
    j.type_ = Type::integer;
    j.int_ = v;
    return j;
}

Json Json::make_double(double v) {
    Json j;
    j.type_ = Type::number;
    j.double_ = v;
    return j;
}

Json Json::make_string(std::string v) {
    Json j;
    j.type_ = Type::string;
    j.string_ = std::move(v);
    return j;
}

Json Json::make_array(std::vector<Json> v) {
    Json j;
    j.type_ = Type::array;
    j.array_ = std::make_shared<const std::vector<Json>>(std::move(v));
    return j;
}

Json Json::make_object(std::map<std::string, Json, std::less<>> v) {
    Json j;
    j.type_ = Type::object;
    j.object_ = std::make_shared<const Object>(std::move(v));
    return j;
}

const char* json_type_name(Json::Type t) {
    switch (t) {
        case Json::Type::null: return "null";
        case Json::Type::boolean: return "boolean";
        case Json::Type::integer: return "integer";
        case Json::Type::number: return "number";
        case Json::Type::string: return "string";
        case Json::Type::array: return "array";
        case Json::Type::object: return "object";
    }
    return "unknown";
}

}  // namespace stormo
