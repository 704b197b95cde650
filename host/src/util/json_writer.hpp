#pragma once
// A small JSON writer (the CLI's --json outputs, manifests): indented, keys in insertion order, strings
// escaped per RFC 8259 (control characters as \u00XX), non-finite numbers written as null.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace stormo {

class JsonWriter {
public:
    JsonWriter& begin_object() { return open('{'); }
    JsonWriter& end_object() { return close('}'); }
    JsonWriter& begin_array() { return open('['); }
    JsonWriter& end_array() { return close(']'); }

    JsonWriter& key(std::string_view k) {
        separate();
        append_string(k);
        out_ += ": ";
        after_key_ = true;
        return *this;
    }

    JsonWriter& value(std::string_view s) {
        separate();
        append_string(s);
        return *this;
    }
    JsonWriter& value(const char* s) { return s == nullptr ? null() : value(std::string_view(s)); }
    JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
    JsonWriter& value(bool b) {
        separate();
        out_ += b ? "true" : "false";
        return *this;
    }
    template <class T>
        requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
    JsonWriter& value(T v) {
        separate();
        out_ += std::to_string(v);
        return *this;
    }
    JsonWriter& value(double v) {
        if (!std::isfinite(v)) return null();
        separate();
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", v);
        out_ += buf;
        return *this;
    }
    JsonWriter& null() {
        separate();
        out_ += "null";
        return *this;
    }

    template <class T>
    JsonWriter& field(std::string_view k, const T& v) {
        key(k);
        return value(v);
    }

    const std::string& str() const { return out_; }

private:
    JsonWriter& open(char c) {
        separate();
        out_ += c;
        first_.push_back(true);
        return *this;
    }
    JsonWriter& close(char c) {
        const bool empty = first_.back();
        first_.pop_back();
        if (!empty) newline();
        out_ += c;
        return *this;
    }
    // Before a value: a comma unless it is the first of its container, and the indentation;
    // nothing right after a key.
    void separate() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (first_.empty()) return;
        if (!first_.back()) out_ += ',';
        first_.back() = false;
        newline();
    }
    void newline() {
        out_ += '\n';
        out_.append(2 * first_.size(), ' ');
    }
    void append_string(std::string_view s) {
        out_ += '"';
        for (char ch : s) {
            const auto c = static_cast<unsigned char>(ch);
            switch (ch) {
                case '"': out_ += "\\\""; break;
                case '\\': out_ += "\\\\"; break;
                case '\n': out_ += "\\n"; break;
                case '\r': out_ += "\\r"; break;
                case '\t': out_ += "\\t"; break;
                case '\b': out_ += "\\b"; break;
                case '\f': out_ += "\\f"; break;
                default:
                    if (c < 0x20) {
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                        out_ += buf;
                    } else {
                        out_ += ch;
                    }
            }
        }
        out_ += '"';
    }

    std::string out_;
    std::vector<bool> first_;
    bool after_key_ = false;
};

}  // namespace stormo
