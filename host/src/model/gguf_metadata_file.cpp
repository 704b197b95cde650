// gguf_metadata_file: see gguf_metadata_file.hpp.
#include "model/gguf_metadata_file.hpp"

namespace stormo {
namespace {

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}
void put_string(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}

// The reader refuses arrays of arrays (llama.cpp writes none), so every parsed value fits here.
void put_value(std::string& out, const GgufValue& v) {
    put_u32(out, static_cast<uint32_t>(v.type));
    if (v.type == GgufValueType::string) {
        put_string(out, v.text);
        return;
    }
    if (!v.is_array()) {
        out.append(reinterpret_cast<const char*>(v.raw.data()), v.raw.size());
        return;
    }
    put_u32(out, static_cast<uint32_t>(v.element_type));
    put_u64(out, v.count);
    if (v.element_type == GgufValueType::string) {
        for (std::string_view s : v.strings) put_string(out, s);
        return;
    }
    out.append(reinterpret_cast<const char*>(v.raw.data()), v.raw.size());
}

}  // namespace

std::string gguf_metadata_file(const GgufHeader& header) {
    std::string kvs;
    uint64_t n_kv = 0;
    for (const auto& [key, value] : header.metadata) {
        if (key.starts_with("split.")) continue;
        put_string(kvs, key);
        put_value(kvs, value);
        ++n_kv;
    }
    std::string out = "GGUF";
    put_u32(out, 3);
    put_u64(out, 0);  // tensors
    put_u64(out, n_kv);
    out += kvs;
    return out;
}

}  // namespace stormo
