// GGUF parsing and validation; see gguf.hpp.
#include "model/gguf.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "stormo/quote.hpp"

namespace stormo {

static_assert(std::endian::native == std::endian::little, "GGUF values are read in place as little-endian");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

template <class T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::f64); }

// Reads the file front to back; every read checks the bytes left first, so a count or length
// the file cannot hold is refused before it sizes anything.
class Reader {
public:
    Reader(std::span<const std::byte> bytes, const std::string& path) : bytes_(bytes), path_(path) {}

    uint64_t position() const { return pos_; }
    uint64_t left() const { return bytes_.size() - pos_; }

    Expected<std::span<const std::byte>> take(uint64_t n, const std::string& what) {
        if (n > left())
            return fail(ErrorKind::format, path_ + ": " + what + " (" + std::to_string(n) + " bytes at byte " +
                                               std::to_string(pos_) + ") runs past the end of the file (" +
                                               std::to_string(bytes_.size()) + " bytes)");
        auto out = bytes_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
        pos_ += n;
        return out;
    }

    template <class T>
    Expected<T> scalar(const std::string& what) {
        STORMO_TRY_ASSIGN(auto b, take(sizeof(T), what));
        return load<T>(b.data());
    }

    Expected<std::string_view> string(const std::string& what) {
        STORMO_TRY_ASSIGN(const uint64_t n, scalar<uint64_t>(what + " length"));
        if (n > left())
            return fail(ErrorKind::format, path_ + ": " + what + " length " + std::to_string(n) + " at byte " +
                                               std::to_string(pos_ - 8) + " exceeds the " + std::to_string(left()) +
                                               " bytes left in the file");
        STORMO_TRY_ASSIGN(auto b, take(n, what));
        return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
    }

private:
    std::span<const std::byte> bytes_;
    const std::string& path_;
    uint64_t pos_ = 0;
};

Expected<GgufValueType> value_type(Reader& r, const std::string& where, const std::string& what) {
    STORMO_TRY_ASSIGN(const uint32_t t, r.scalar<uint32_t>(where + ": " + what));
    if (!known_value_type(t))
        return fail(ErrorKind::format, where + ": unknown " + what + " " + std::to_string(t) + " (0-12 are defined)");
    return static_cast<GgufValueType>(t);
}

Expected<GgufValue> read_value(Reader& r, const std::string& where) {
    GgufValue v;
    STORMO_TRY_ASSIGN(v.type, value_type(r, where, "value type"));
    if (v.type == GgufValueType::string) {
        STORMO_TRY_ASSIGN(v.text, r.string(where + ": string"));
        return v;
    }
    if (v.type != GgufValueType::array) {
        STORMO_TRY_ASSIGN(v.raw, r.take(gguf_scalar_size(v.type), where + ": value"));
        if (v.type == GgufValueType::boolean && static_cast<uint8_t>(v.raw[0]) > 1)
            return fail(ErrorKind::format, where + ": bool value " + std::to_string(static_cast<unsigned>(v.raw[0])) +
                                               " is neither 0 nor 1");
        return v;
    }
    STORMO_TRY_ASSIGN(v.element_type, value_type(r, where, "array element type"));
    if (v.element_type == GgufValueType::array)
        return fail(ErrorKind::unsupported, where + ": arrays of arrays are not supported (llama.cpp writes none)");
    STORMO_TRY_ASSIGN(v.count, r.scalar<uint64_t>(where + ": array length"));
    // The smallest encoding of each element (a string is at least its 8-byte length) bounds the
    // count by the bytes left, before anything is reserved.
    const uint64_t min_size = v.element_type == GgufValueType::string ? 8 : gguf_scalar_size(v.element_type);
    if (v.count > r.left() / min_size)
        return fail(ErrorKind::format, where + ": array of " + std::to_string(v.count) + " " +
                                           std::string(gguf_value_type_name(v.element_type)) + " values needs at least " +
                                           (v.count > UINT64_MAX / min_size ? std::string("more")
                                                                            : std::to_string(v.count * min_size)) +
                                           " bytes but the file has " + std::to_string(r.left()) + " left");
    if (v.element_type == GgufValueType::string) {
        v.strings.reserve(static_cast<size_t>(v.count));
        for (uint64_t i = 0; i < v.count; ++i) {
            STORMO_TRY_ASSIGN(auto s, r.string(where + ": string " + std::to_string(i)));
            v.strings.push_back(s);
        }
        return v;
    }
    STORMO_TRY_ASSIGN(v.raw, r.take(v.count * min_size, where + ": array"));
    if (v.element_type == GgufValueType::boolean)
        for (uint64_t i = 0; i < v.count; ++i)
            if (static_cast<uint8_t>(v.raw[i]) > 1)
                return fail(ErrorKind::format, where + ": bool element " + std::to_string(i) + " is " +
                                                   std::to_string(static_cast<unsigned>(v.raw[i])) + ", neither 0 nor 1");
    return v;
}

std::string tensor_where(const std::string& path, std::string_view name) {
    return path + ": tensor " + in_quotes(name);
}

// Reads one tensor info; its offset stays relative to the data section until that is known.
Expected<GgufTensorInfo> read_tensor_info(Reader& r, const std::string& path, uint64_t index) {
    GgufTensorInfo t;
    STORMO_TRY_ASSIGN(auto name, r.string(path + ": tensor " + std::to_string(index) + " name"));
    if (name.empty()) return fail(ErrorKind::format, path + ": tensor " + std::to_string(index) + " has an empty name");
    if (name.size() > kGgufMaxTensorName)
        return fail(ErrorKind::format, path + ": tensor " + std::to_string(index) + " name " + quoted_printable(name) +
                                           " is " + std::to_string(name.size()) + " bytes, more than ggml's " +
                                           std::to_string(kGgufMaxTensorName));
    t.name = std::string(name);
    const std::string where = tensor_where(path, t.name);
    STORMO_TRY_ASSIGN(t.n_dims, r.scalar<uint32_t>(where + ": n_dims"));
    if (t.n_dims == 0 || t.n_dims > kGgufMaxDims)
        return fail(ErrorKind::format, where + ": n_dims " + std::to_string(t.n_dims) + " is not in 1.." +
                                           std::to_string(kGgufMaxDims));
    for (uint32_t d = 0; d < t.n_dims; ++d) {
        STORMO_TRY_ASSIGN(t.ne[d], r.scalar<uint64_t>(where + ": ne[" + std::to_string(d) + "]"));
        if (t.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            return fail(ErrorKind::format, where + ": ne[" + std::to_string(d) + "] " + std::to_string(t.ne[d]) +
                                               " is larger than int64");
    }
    STORMO_TRY_ASSIGN(const uint32_t type_id, r.scalar<uint32_t>(where + ": type"));
    const auto info = gguf_type_info(type_id);
    if (!info) return fail(ErrorKind::format, where + ": unknown ggml type " + std::to_string(type_id));
    t.type = info->type;
    STORMO_TRY_ASSIGN(t.offset, r.scalar<uint64_t>(where + ": offset"));

    std::string shape = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) shape += (d ? ", " : "") + std::to_string(t.ne[d]);
    shape += ']';
    bool overflow = false;
    uint64_t elements = 1;
    for (uint64_t n : t.ne) overflow |= __builtin_mul_overflow(elements, n, &elements);
    if (overflow || elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail(ErrorKind::format, where + ": shape " + shape + " has more elements than int64 holds");
    if (t.ne[0] % info->block_values != 0)
        return fail(ErrorKind::format, where + ": ne[0] " + std::to_string(t.ne[0]) + " is not a multiple of " +
                                           std::string(info->name) + "'s block of " + std::to_string(info->block_values) +
                                           " values");
    uint64_t nbytes = 0;
    overflow = __builtin_mul_overflow(elements / info->block_values, uint64_t{info->block_bytes}, &nbytes);
    if (overflow) return fail(ErrorKind::format, where + ": shape " + shape + " of " + std::string(info->name) + " is too large");
    t.elements = elements;
    t.nbytes = nbytes;
    return t;
}

// Every tensor inside the data section, aligned, and no two non-empty ones sharing a byte.
Expected<void> check_tensor_ranges(GgufHeader& h) {
    const uint64_t data_size = h.file_size - h.data_offset;
    for (GgufTensorInfo& t : h.tensors) {
        const std::string where = tensor_where(h.path, t.name);
        if (t.offset % h.alignment != 0)
            return fail(ErrorKind::format, where + ": offset " + std::to_string(t.offset) + " not aligned to " +
                                               std::to_string(h.alignment));
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            return fail(ErrorKind::format, where + ": " + std::to_string(t.nbytes) + " bytes at offset " +
                                               std::to_string(t.offset) + " run past the end of the data section (" +
                                               std::to_string(data_size) + " bytes from byte " +
                                               std::to_string(h.data_offset) + ")");
    }
    std::vector<const GgufTensorInfo*> by_offset;
    for (const GgufTensorInfo& t : h.tensors)
        if (t.nbytes > 0) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
        return a->offset != b->offset ? a->offset < b->offset : a->nbytes < b->nbytes;
    });
    const GgufTensorInfo* furthest = nullptr;  // the range reaching furthest so far
    for (const GgufTensorInfo* t : by_offset) {
        if (furthest != nullptr && t->offset < furthest->offset + furthest->nbytes)
            return fail(ErrorKind::format, h.path + ": tensors " + in_quotes(furthest->name) + " (bytes " +
                                               std::to_string(furthest->offset) + "+" + std::to_string(furthest->nbytes) +
                                               ") and " + in_quotes(t->name) + " (bytes " + std::to_string(t->offset) +
                                               "+" + std::to_string(t->nbytes) + ") overlap");
        if (furthest == nullptr || t->offset + t->nbytes > furthest->offset + furthest->nbytes) furthest = t;
    }
    for (GgufTensorInfo& t : h.tensors) t.offset += h.data_offset;
    return {};
}

}  // namespace

const GgufValue* GgufHeader::find(std::string_view key) const {
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufHeader::tensor(std::string_view name) const {
    auto it = tensor_index.find(name);
    return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

Expected<GgufHeader> parse_gguf(std::span<const std::byte> bytes, const std::string& path) {
    GgufHeader h;
    h.path = path;
    h.file_size = bytes.size();
    Reader r(bytes, path);
    if (bytes.size() < 4 || load<uint32_t>(bytes.data()) != kMagic)
        return fail(ErrorKind::format, path + ": not a GGUF file (it does not start with the magic \"GGUF\")");
    (void)r.take(4, "magic");
    STORMO_TRY_ASSIGN(h.version, r.scalar<uint32_t>("version"));
    if (h.version != 2 && h.version != 3) {
        if (std::byteswap(h.version) == 2 || std::byteswap(h.version) == 3)
            return fail(ErrorKind::unsupported, path + ": a big-endian GGUF file (only little-endian files are supported)");
        if (h.version == 1)
            return fail(ErrorKind::unsupported, path + ": GGUF version 1 (32-bit counts) is not supported; versions 2 and 3 are");
        return fail(ErrorKind::format, path + ": unknown GGUF version " + std::to_string(h.version) + " (2 and 3 are supported)");
    }
    STORMO_TRY_ASSIGN(const uint64_t n_tensors, r.scalar<uint64_t>("tensor count"));
    STORMO_TRY_ASSIGN(const uint64_t n_kv, r.scalar<uint64_t>("key-value count"));
    // A key-value pair takes at least 13 bytes (key length, value type, a u8), a tensor info at
    // least 29 (name length and one byte, n_dims, one dimension, type, offset): counts the file
    // cannot hold are refused before any allocation.
    constexpr uint64_t kMinKv = 8 + 4 + 1, kMinTensor = 8 + 1 + 4 + 8 + 4 + 8;
    if (n_kv > r.left() / kMinKv)
        return fail(ErrorKind::format, path + ": key-value count " + std::to_string(n_kv) + " cannot fit in the " +
                                           std::to_string(r.left()) + " bytes left in the file");
    if (n_tensors > r.left() / kMinTensor)
        return fail(ErrorKind::format, path + ": tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                                           std::to_string(r.left()) + " bytes left in the file");

    for (uint64_t i = 0; i < n_kv; ++i) {
        STORMO_TRY_ASSIGN(auto key, r.string(path + ": key " + std::to_string(i)));
        if (key.empty()) return fail(ErrorKind::format, path + ": key " + std::to_string(i) + " is empty");
        const std::string where = path + ": key " + in_quotes(key);
        STORMO_TRY_ASSIGN(auto value, read_value(r, where));
        if (!h.metadata.emplace(std::string(key), std::move(value)).second)
            return fail(ErrorKind::format, where + " appears twice");
    }

    if (const GgufValue* a = h.find("general.alignment")) {
        if (a->type != GgufValueType::u32)
            return fail(ErrorKind::format, path + ": key \"general.alignment\" must be u32, found " + a->type_name());
        const uint64_t alignment = *a->as_uint();
        if (alignment == 0 || !std::has_single_bit(alignment))
            return fail(ErrorKind::format, path + ": general.alignment " + std::to_string(alignment) + " is not a power of two");
        h.alignment = alignment;
    }

    h.tensors.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        STORMO_TRY_ASSIGN(auto t, read_tensor_info(r, path, i));
        if (!h.tensor_index.emplace(t.name, h.tensors.size()).second)
            return fail(ErrorKind::format, tensor_where(path, t.name) + " appears twice");
        h.tensors.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment (it may be absent in a file
    // without tensors, which ends right after its metadata).
    const uint64_t end = r.position();
    const uint64_t padded = end + (h.alignment - end % h.alignment) % h.alignment;
    if (padded < end || padded > h.file_size) {
        if (!h.tensors.empty())
            return fail(ErrorKind::format, path + ": the data section would start at byte " + std::to_string(padded) +
                                               " (the header ends at " + std::to_string(end) + ", aligned to " +
                                               std::to_string(h.alignment) + "), past the end of the file (" +
                                               std::to_string(h.file_size) + " bytes)");
        h.data_offset = h.file_size;
    } else {
        h.data_offset = padded;
    }
    STORMO_TRY(check_tensor_ranges(h));
    return h;
}

Expected<GgufFile> GgufFile::open(const std::string& path) {
    GgufFile f;
    STORMO_TRY_ASSIGN(f.file_, MappedFile::open(path));
    STORMO_TRY_ASSIGN(f.header_, parse_gguf(f.file_.bytes(), path));
    return f;
}

}  // namespace stormo
