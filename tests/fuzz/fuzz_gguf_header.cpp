// Fuzzes the GGUF reader: the input is a whole GGUF file (header, metadata, tensor infos, data).
// What parses is then used as the model mapping uses it: every metadata value read through each
// accessor, and every tensor of a type stormo decodes dequantized from its validated byte range
// (a range the reader let through that lies outside the input would show here under ASan).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/gguf.hpp"
#include "stormo/gguf_types.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    auto h = stormo::parse_gguf(bytes, "fuzz.gguf");
    if (!h) return 0;
    size_t sink = 0;
    for (const auto& [key, v] : h->metadata) {
        sink += v.as_int().has_value() + v.as_uint().has_value() + v.as_float().has_value() + v.as_bool().has_value();
        if (auto s = v.as_string()) sink += s->size();
        for (std::string_view s : v.strings) sink += s.size();
        for (uint64_t i = 0; i < v.count && i < 4096; ++i) sink += v.int_at(i).has_value() + v.float_at(i).has_value();
    }
    std::vector<float> out;
    for (const auto& t : h->tensors) {
        const auto info = stormo::gguf_type_info(static_cast<uint32_t>(t.type));
        if (!info || !info->dequantizable || t.elements > (uint64_t{1} << 20)) continue;
        out.resize(static_cast<size_t>(t.elements));
        (void)stormo::dequantize_gguf(t.type, bytes.data() + t.offset, out.size(), out.data());
    }
    return static_cast<int>(sink & 0);
}
