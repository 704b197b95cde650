// GGUF metadata values as a family's mapping reads them, and GgufView's key function: see
// stormo/gguf_view.hpp. The values are views into bytes the host parsed (host/src/model/gguf.cpp).
#include "stormo/gguf_view.hpp"

#include <bit>
#include <cstring>
#include <limits>

namespace stormo {

static_assert(std::endian::native == std::endian::little, "GGUF values are read in place as little-endian");
namespace {

template <class T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// An integer of any integer value type at p, widened; nothing for non-integers or for u64 values
// above INT64_MAX (callers wanting those use the unsigned path).
std::optional<int64_t> integer_at(GgufValueType t, const std::byte* p) {
    switch (t) {
        case GgufValueType::u8: return load<uint8_t>(p);
        case GgufValueType::i8: return load<int8_t>(p);
        case GgufValueType::u16: return load<uint16_t>(p);
        case GgufValueType::i16: return load<int16_t>(p);
        case GgufValueType::u32: return load<uint32_t>(p);
        case GgufValueType::i32: return load<int32_t>(p);
        case GgufValueType::i64: return load<int64_t>(p);
        case GgufValueType::u64: {
            const auto v = load<uint64_t>(p);
            if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
            return static_cast<int64_t>(v);
        }
        default: return std::nullopt;
    }
}

std::optional<double> floating_at(GgufValueType t, const std::byte* p) {
    if (t == GgufValueType::f32) return load<float>(p);
    if (t == GgufValueType::f64) return load<double>(p);
    if (auto i = integer_at(t, p)) {
        // Only integers a double holds exactly. Near INT64_MAX the double rounds up to 2^63, which
        // int64 cannot hold: casting it back would be undefined, so the range is checked first.
        const auto d = static_cast<double>(*i);
        if (d < 0x1p63 && static_cast<int64_t>(d) == *i) return d;
    }
    return std::nullopt;
}

}  // namespace

GgufView::~GgufView() = default;

size_t gguf_scalar_size(GgufValueType t) {
    switch (t) {
        case GgufValueType::u8: case GgufValueType::i8: case GgufValueType::boolean: return 1;
        case GgufValueType::u16: case GgufValueType::i16: return 2;
        case GgufValueType::u32: case GgufValueType::i32: case GgufValueType::f32: return 4;
        case GgufValueType::u64: case GgufValueType::i64: case GgufValueType::f64: return 8;
        case GgufValueType::string: case GgufValueType::array: return 0;
    }
    return 0;
}

std::string_view gguf_value_type_name(GgufValueType t) {
    switch (t) {
        case GgufValueType::u8: return "u8";
        case GgufValueType::i8: return "i8";
        case GgufValueType::u16: return "u16";
        case GgufValueType::i16: return "i16";
        case GgufValueType::u32: return "u32";
        case GgufValueType::i32: return "i32";
        case GgufValueType::f32: return "f32";
        case GgufValueType::boolean: return "bool";
        case GgufValueType::string: return "string";
        case GgufValueType::array: return "array";
        case GgufValueType::u64: return "u64";
        case GgufValueType::i64: return "i64";
        case GgufValueType::f64: return "f64";
    }
    return "unknown";
}

std::optional<int64_t> GgufValue::as_int() const {
    if (is_array() || raw.empty()) return std::nullopt;
    return integer_at(type, raw.data());
}

std::optional<uint64_t> GgufValue::as_uint() const {
    if (type == GgufValueType::u64) return load<uint64_t>(raw.data());
    auto i = as_int();
    if (!i || *i < 0) return std::nullopt;
    return static_cast<uint64_t>(*i);
}

std::optional<double> GgufValue::as_float() const {
    if (is_array() || raw.empty()) return std::nullopt;
    return floating_at(type, raw.data());
}

std::optional<bool> GgufValue::as_bool() const {
    if (type != GgufValueType::boolean) return std::nullopt;
    return static_cast<uint8_t>(raw[0]) != 0;
}

std::optional<std::string_view> GgufValue::as_string() const {
    if (type != GgufValueType::string) return std::nullopt;
    return text;
}

std::optional<int64_t> GgufValue::int_at(uint64_t i) const {
    if (!is_array() || i >= count || element_type == GgufValueType::string) return std::nullopt;
    return integer_at(element_type, raw.data() + i * gguf_scalar_size(element_type));
}

std::optional<double> GgufValue::float_at(uint64_t i) const {
    if (!is_array() || i >= count || element_type == GgufValueType::string) return std::nullopt;
    return floating_at(element_type, raw.data() + i * gguf_scalar_size(element_type));
}

std::string GgufValue::type_name() const {
    if (!is_array()) return std::string(gguf_value_type_name(type));
    return "array of " + std::string(gguf_value_type_name(element_type));
}

}  // namespace stormo
