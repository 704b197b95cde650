#pragma once
// Test helper: builds GGUF files byte by byte, valid or deliberately broken, so the reader's every
// check can be reached. Values are written as the format lays them out (little-endian).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stormo::test {

// GGUF value type ids.
enum GgufTypeId : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

inline void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
inline void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void put_str(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}
template <class T>
void put_raw(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

struct GgufTestTensor {
    GgufTestTensor(std::string n, uint32_t t, std::vector<uint64_t> dims, std::string bytes,
                   std::optional<uint64_t> at = std::nullopt)
        : name(std::move(n)), type(t), ne(std::move(dims)), data(std::move(bytes)), offset(at) {}
    std::string name;
    uint32_t type = 0;                // ggml type id
    std::vector<uint64_t> ne;         // ggml order
    std::string data;                 // raw bytes
    std::optional<uint64_t> offset;   // default: packed after the previous one, aligned
};

// A GGUF file under construction. kv() appends a pre-encoded key-value pair (key, type, value).
class GgufBuilder {
public:
    uint32_t version = 3;
    uint64_t alignment = 32;  // the padding used; write general.alignment with kv_u32 to change it
    std::optional<uint64_t> tensor_count_override, kv_count_override;

    GgufBuilder& kv_raw(std::string_view key, uint32_t type, std::string_view encoded_value) {
        std::string e;
        put_str(e, key);
        put_u32(e, type);
        e.append(encoded_value);
        kvs_.push_back(std::move(e));
        return *this;
    }
    GgufBuilder& kv_u32(std::string_view key, uint32_t v) { std::string e; put_raw(e, v); return kv_raw(key, kU32, e); }
    GgufBuilder& kv_u16(std::string_view key, uint16_t v) { std::string e; put_raw(e, v); return kv_raw(key, kU16, e); }
    GgufBuilder& kv_i32(std::string_view key, int32_t v) { std::string e; put_raw(e, v); return kv_raw(key, kI32, e); }
    GgufBuilder& kv_u64(std::string_view key, uint64_t v) { std::string e; put_raw(e, v); return kv_raw(key, kU64, e); }
    GgufBuilder& kv_f32(std::string_view key, float v) { std::string e; put_raw(e, v); return kv_raw(key, kF32, e); }
    GgufBuilder& kv_bool(std::string_view key, bool v) { std::string e(1, v ? '\1' : '\0'); return kv_raw(key, kBool, e); }
    GgufBuilder& kv_str(std::string_view key, std::string_view v) { std::string e; put_str(e, v); return kv_raw(key, kString, e); }
    GgufBuilder& kv_strs(std::string_view key, const std::vector<std::string>& v) {
        std::string e;
        put_u32(e, kString);
        put_u64(e, v.size());
        for (const auto& s : v) put_str(e, s);
        return kv_raw(key, kArray, e);
    }
    template <class T>
    GgufBuilder& kv_array(std::string_view key, uint32_t element_type, const std::vector<T>& v) {
        std::string e;
        put_u32(e, element_type);
        put_u64(e, v.size());
        for (T x : v) put_raw(e, x);
        return kv_raw(key, kArray, e);
    }
    GgufBuilder& tensor(GgufTestTensor t) {
        tensors_.push_back(std::move(t));
        return *this;
    }

    std::string bytes() const {
        std::string out = "GGUF";
        put_u32(out, version);
        put_u64(out, tensor_count_override.value_or(tensors_.size()));
        put_u64(out, kv_count_override.value_or(kvs_.size()));
        for (const auto& e : kvs_) out += e;
        std::vector<uint64_t> offsets;
        uint64_t next = 0;
        for (const auto& t : tensors_) {
            const uint64_t off = t.offset.value_or(next);
            offsets.push_back(off);
            next = pad(std::min<uint64_t>(off, uint64_t{1} << 30) + t.data.size());
            put_str(out, t.name);
            put_u32(out, static_cast<uint32_t>(t.ne.size()));
            for (uint64_t n : t.ne) put_u64(out, n);
            put_u32(out, t.type);
            put_u64(out, off);
        }
        if (tensors_.empty()) return out;
        out.resize(pad(out.size()), '\0');
        const size_t data_start = out.size();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            if (offsets[i] > (uint64_t{1} << 30)) continue;  // a lying offset: its data is not written
            const size_t at = data_start + offsets[i];
            if (out.size() < at + tensors_[i].data.size()) out.resize(at + tensors_[i].data.size(), '\0');
            std::memcpy(out.data() + at, tensors_[i].data.data(), tensors_[i].data.size());
        }
        out.resize(data_start + pad(out.size() - data_start), '\0');
        return out;
    }

    void write(const std::string& path) const {
        std::ofstream f(path, std::ios::binary);
        const std::string b = bytes();
        f.write(b.data(), static_cast<std::streamsize>(b.size()));
        if (!f) throw std::runtime_error("cannot write " + path);
    }

private:
    uint64_t pad(uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }
    std::vector<std::string> kvs_;
    std::vector<GgufTestTensor> tensors_;
};

}  // namespace stormo::test
