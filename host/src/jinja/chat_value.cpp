// Value: the JSON-shaped data chat templates read. Lists and objects are shared on copy, as
// Python shares them; nothing in a render modifies a list or object it was given.
#include "jinja/chat_value.hpp"

#include <algorithm>
#include <limits>

namespace stormo::text {
namespace {

uint32_t saturated(uint64_t n) { return static_cast<uint32_t>(std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max())); }

}  // namespace

Value::Value(bool b) : v_(b) {}
Value::Value(int64_t i) : v_(i) {}
Value::Value(double d) : v_(d) {}
Value::Value(std::string s) : v_(std::move(s)) { weight_ = saturated(uint64_t{1} + as_string().size()); }

constexpr uint64_t item_weight = 8;

void Value::measure() {
    uint64_t depth = 0, weight = 1;
    auto add = [&](const Value& item, size_t key_bytes) {
        depth = std::max<uint64_t>(depth, item.depth_);
        weight += item_weight + item.weight_ + key_bytes;
    };
    if (is_list())
        for (const Value& item : as_list()) add(item, 0);
    else
        for (const auto& [key, member] : as_object()) add(member, key.size());
    depth_ = static_cast<uint16_t>(std::min<uint64_t>(depth + 1, std::numeric_limits<uint16_t>::max()));
    weight_ = saturated(weight);
}

Value Value::list(ValueList items) {
    Value v;
    v.v_ = std::make_shared<ValueList>(std::move(items));
    v.measure();
    return v;
}

Value Value::tuple(ValueList items) {
    Value v = list(std::move(items));
    v.is_tuple_ = true;
    return v;
}

Value Value::object(ValueObject members) {
    Value v;
    v.v_ = std::make_shared<ValueObject>(std::move(members));
    v.measure();
    return v;
}

bool Value::is_null() const { return std::holds_alternative<std::monostate>(v_); }
bool Value::is_bool() const { return std::holds_alternative<bool>(v_); }
bool Value::is_int() const { return std::holds_alternative<int64_t>(v_); }
bool Value::is_float() const { return std::holds_alternative<double>(v_); }
bool Value::is_string() const { return std::holds_alternative<std::string>(v_); }
bool Value::is_list() const { return std::holds_alternative<std::shared_ptr<ValueList>>(v_); }
bool Value::is_object() const { return std::holds_alternative<std::shared_ptr<ValueObject>>(v_); }

bool Value::as_bool() const { return std::get<bool>(v_); }
int64_t Value::as_int() const { return std::get<int64_t>(v_); }
double Value::as_double() const {
    return is_int() ? static_cast<double>(std::get<int64_t>(v_)) : std::get<double>(v_);
}
const std::string& Value::as_string() const { return std::get<std::string>(v_); }
const ValueList& Value::as_list() const { return *std::get<std::shared_ptr<ValueList>>(v_); }
ValueList& Value::as_list() { return *std::get<std::shared_ptr<ValueList>>(v_); }
const ValueObject& Value::as_object() const { return *std::get<std::shared_ptr<ValueObject>>(v_); }
ValueObject& Value::as_object() { return *std::get<std::shared_ptr<ValueObject>>(v_); }

const Value* Value::find(std::string_view key) const {
    if (!is_object()) return nullptr;
    for (const auto& [name, member] : as_object())
        if (name == key) return &member;
    return nullptr;
}

void Value::set(std::string key, Value v) {
    if (!is_object()) *this = object();
    for (auto& [name, member] : as_object())
        if (name == key) {
            member = std::move(v);
            measure();
            return;
        }
    depth_ = std::max<uint16_t>(depth_, static_cast<uint16_t>(std::min<uint32_t>(v.depth_ + 1u, std::numeric_limits<uint16_t>::max())));
    weight_ = saturated(uint64_t{weight_} + item_weight + v.weight_ + key.size());
    as_object().emplace_back(std::move(key), std::move(v));
}

}  // namespace stormo::text
