// Value: the JSON-shaped data chat templates read. Lists and objects are shared on copy, as
// Python shares them; nothing in a render modifies a list or object it was given.
#include "text/chat_value.hpp"

namespace stormo::text {

Value::Value(bool b) : v_(b) {}
Value::Value(int64_t i) : v_(i) {}
Value::Value(double d) : v_(d) {}
Value::Value(std::string s) : v_(std::move(s)) {}

Value Value::list(ValueList items) {
    Value v;
    v.v_ = std::make_shared<ValueList>(std::move(items));
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
            return;
        }
    as_object().emplace_back(std::move(key), std::move(v));
}

}  // namespace stormo::text
