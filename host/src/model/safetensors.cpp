// Safetensors header reading and validation; see safetensors.hpp.
#include "model/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "stormo/json.hpp"
#include "stormo/quote.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

constexpr uint64_t kLengthPrefix = 8;

// A tensor entry as written in the header, before its offsets are made absolute.
struct Entry {
    TensorInfo info;
    uint64_t begin = 0;
    uint64_t end = 0;
};

std::string range_string(const Entry& e) {
    std::string out = "[";
    out += std::to_string(e.begin);
    out += ", ";
    out += std::to_string(e.end);
    out += ']';
    return out;
}

// A non-negative JSON integer, or nothing.
std::optional<uint64_t> non_negative(const Json& v) {
    if (v.type() != Json::Type::integer) return std::nullopt;
    const int64_t i = *v.as_int();
    if (i < 0) return std::nullopt;
    return static_cast<uint64_t>(i);
}

Expected<Entry> parse_entry(const std::string& name, const Json& value, const std::string& path) {
    const std::string where = path + ": tensor " + in_quotes(name);
    if (value.type() != Json::Type::object)
        return fail(ErrorKind::format, where + ": header entry must be an object, found " + json_type_name(value.type()));
    Entry e;
    e.info.name = name;
    e.info.file = path;

    const Json* dtype = value.find("dtype");
    if (dtype == nullptr) return fail(ErrorKind::format, where + ": \"dtype\" is missing");
    auto dtype_text = dtype->as_string();
    if (!dtype_text) return fail(ErrorKind::format, where + ": \"dtype\" must be a string");
    auto parsed_dtype = dtype_from_name(*dtype_text);
    if (!parsed_dtype)
        return fail(ErrorKind::unsupported, path + ": unknown dtype " + in_quotes(*dtype_text) + " for tensor " + in_quotes(name));
    e.info.dtype = *parsed_dtype;

    const Json* shape = value.find("shape");
    if (shape == nullptr) return fail(ErrorKind::format, where + ": \"shape\" is missing");
    const auto* dims = shape->as_array();
    if (dims == nullptr) return fail(ErrorKind::format, where + ": \"shape\" must be a list of non-negative integers");
    for (const Json& d : *dims) {
        auto dim = non_negative(d);
        if (!dim || *dim > static_cast<uint64_t>(INT64_MAX))
            return fail(ErrorKind::format, where + ": \"shape\" must be a list of non-negative integers");
        e.info.shape.push_back(static_cast<int64_t>(*dim));
    }

    const Json* offsets = value.find("data_offsets");
    if (offsets == nullptr) return fail(ErrorKind::format, where + ": \"data_offsets\" is missing");
    const auto* pair = offsets->as_array();
    std::optional<uint64_t> begin, end;
    if (pair != nullptr && pair->size() == 2) {
        begin = non_negative((*pair)[0]);
        end = non_negative((*pair)[1]);
    }
    if (!begin || !end)
        return fail(ErrorKind::format, where + ": \"data_offsets\" must be a list of two non-negative integers");
    e.begin = *begin;
    e.end = *end;
    if (e.begin > e.end)
        return fail(ErrorKind::format, where + ": data_offsets " + range_string(e) + " begin after they end");

    uint64_t count = 1;
    uint64_t nbytes = 0;
    bool overflow = false;
    for (int64_t d : e.info.shape) overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count);
    overflow |= __builtin_mul_overflow(count, dtype_size(e.info.dtype), &nbytes);
    if (overflow) return fail(ErrorKind::format, where + ": shape " + shape_string(e.info.shape) + " is too large");
    if (nbytes != e.end - e.begin)
        return fail(ErrorKind::format, where + ": shape " + shape_string(e.info.shape) + " of " +
                                           std::string(dtype_name(e.info.dtype)) + " needs " + std::to_string(nbytes) +
                                           " bytes but data_offsets " + range_string(e) + " span " +
                                           std::to_string(e.end - e.begin) + " bytes");
    e.info.nbytes = nbytes;
    return e;
}

Expected<std::map<std::string, std::string>> parse_metadata(const Json& value, const std::string& path) {
    const auto* object = value.as_object();
    if (object == nullptr)
        return fail(ErrorKind::format, path + ": \"__metadata__\" must be an object of strings");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : *object) {
        auto text = item.as_string();
        if (!text)
            return fail(ErrorKind::format, path + ": \"__metadata__\" value " + in_quotes(key) + " must be a string, found " +
                                               json_type_name(item.type()));
        metadata.emplace(key, std::move(*text));
    }
    return metadata;
}

// Every range inside the data section, and no two non-empty ranges sharing a byte.
Expected<void> check_ranges(std::vector<Entry>& entries, uint64_t data_size, const std::string& path) {
    for (const Entry& e : entries)
        if (e.end > data_size)
            return fail(ErrorKind::format, path + ": tensor " + in_quotes(e.info.name) + ": data_offsets " + range_string(e) +
                                               " run past the end of the data section (" + std::to_string(data_size) +
                                               " bytes)");
    std::vector<const Entry*> by_begin;
    for (const Entry& e : entries)
        if (e.begin != e.end) by_begin.push_back(&e);
    std::sort(by_begin.begin(), by_begin.end(), [](const Entry* a, const Entry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    const Entry* furthest = nullptr;  // the range reaching furthest among those seen so far
    for (const Entry* e : by_begin) {
        if (furthest != nullptr && e->begin < furthest->end)
            return fail(ErrorKind::format, path + ": tensors " + in_quotes(furthest->info.name) + " " + range_string(*furthest) +
                                               " and " + in_quotes(e->info.name) + " " + range_string(*e) +
                                               " overlap");
        if (furthest == nullptr || e->end > furthest->end) furthest = e;
    }
    return {};
}

}  // namespace

Expected<SafetensorsFile> parse_safetensors_header(std::string_view header, uint64_t file_size,
                                                   const std::string& path) {
    STORMO_TRY_ASSIGN(auto root, Json::parse(header, path + " (safetensors header)"));
    const auto* members = root.as_object();
    if (members == nullptr)
        return fail(ErrorKind::format, path + ": safetensors header must be a JSON object, found " +
                                           json_type_name(root.type()));

    SafetensorsFile file;
    file.path = path;
    file.file_size = file_size;
    file.data_begin = kLengthPrefix + header.size();
    if (file.data_begin > file_size)
        return fail(ErrorKind::internal, path + ": header is longer than the file");

    std::vector<Entry> entries;
    entries.reserve(members->size());
    for (const auto& [name, value] : *members) {
        if (name == "__metadata__") {
            auto metadata = parse_metadata(value, path);
            if (!metadata) return tl::unexpected(metadata.error());
            file.metadata = std::move(*metadata);
            continue;
        }
        STORMO_TRY_ASSIGN(auto entry, parse_entry(name, value, path));
        entries.push_back(std::move(entry));
    }
    STORMO_TRY(check_ranges(entries, file_size - file.data_begin, path));

    // The map iterates in name order, so the tensors come out sorted by name.
    file.tensors.reserve(entries.size());
    for (Entry& e : entries) {
        e.info.offset = file.data_begin + e.begin;
        file.tensors.push_back(std::move(e.info));
    }
    return file;
}

Expected<SafetensorsFile> read_safetensors_header(int fd, const std::string& path) {
    STORMO_TRY_ASSIGN(auto size, file_size(fd, path));
    if (size < kLengthPrefix)
        return fail(ErrorKind::format, path + ": file is " + std::to_string(size) +
                                           " bytes, too short for a safetensors file (it starts with an 8-byte header length)");
    unsigned char prefix[kLengthPrefix];
    STORMO_TRY(pread_exact(fd, prefix, kLengthPrefix, 0, path));
    uint64_t header_size = 0;
    for (size_t i = 0; i < kLengthPrefix; ++i) header_size |= static_cast<uint64_t>(prefix[i]) << (8 * i);
    if (header_size > size - kLengthPrefix)
        return fail(ErrorKind::format, path + ": safetensors header length " + std::to_string(header_size) +
                                           " runs past the end of the file (" + std::to_string(size) + " bytes)");
    if (header_size > kMaxSafetensorsHeader)
        return fail(ErrorKind::format, path + ": safetensors header length " + std::to_string(header_size) +
                                           " exceeds the limit of " + std::to_string(kMaxSafetensorsHeader) + " bytes");
    std::string header(header_size, '\0');
    STORMO_TRY(pread_exact(fd, header.data(), header_size, kLengthPrefix, path));
    return parse_safetensors_header(header, size, path);
}

}  // namespace stormo
