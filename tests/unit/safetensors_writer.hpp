#pragma once
// Test helper: writes synthetic, and deliberately malformed, safetensors files and model
// directories into a temporary directory that is removed afterwards.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stormo::test {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "stormo-test-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

private:
    std::string path_;
};

// A tensor to write: the dtype is the header's text, so a test can write an invalid one.
struct SyntheticTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::string data;  // raw bytes
};

// Deterministic, position-dependent bytes, so a read from the wrong offset cannot pass.
inline std::string pattern_bytes(size_t n, unsigned seed) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 131u + seed * 29u + (i >> 8)) & 0xFFu);
    return bytes;
}

inline std::string shape_json(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// One header entry with explicit offsets (which may be wrong on purpose).
inline std::string header_entry(std::string_view name, std::string_view dtype, const std::vector<int64_t>& shape,
                                uint64_t begin, uint64_t end) {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict, its bug 105651) on "..." + string&&.
    std::string entry = "\"";
    entry += name;
    entry += "\":{\"dtype\":\"";
    entry += dtype;
    entry += "\",\"shape\":" + shape_json(shape) + ",\"data_offsets\":[" + std::to_string(begin) + "," +
             std::to_string(end) + "]}";
    return entry;
}

// A header laying the tensors out back to back in the given order, optionally with __metadata__.
inline std::string header_for(const std::vector<SyntheticTensor>& tensors, std::string_view metadata_json = {}) {
    std::string header = "{";
    if (!metadata_json.empty()) header += "\"__metadata__\":" + std::string(metadata_json);
    uint64_t offset = 0;
    for (const SyntheticTensor& t : tensors) {
        if (header.size() > 1) header += ",";
        header += header_entry(t.name, t.dtype, t.shape, offset, offset + t.data.size());
        offset += t.data.size();
    }
    return header + "}";
}

inline std::string data_for(const std::vector<SyntheticTensor>& tensors) {
    std::string data;
    for (const SyntheticTensor& t : tensors) data += t.data;
    return data;
}

// The 8-byte little-endian length, the header, then the data.
inline std::string safetensors_bytes(std::string_view header, std::string_view data) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFFu);
    out += header;
    out += data;
    return out;
}

inline void write_bytes(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

inline void write_safetensors(const std::string& path, const std::vector<SyntheticTensor>& tensors,
                              std::string_view metadata_json = {}) {
    write_bytes(path, safetensors_bytes(header_for(tensors, metadata_json), data_for(tensors)));
}

// The smallest config.json a model directory needs to open.
inline void write_config(const TempDir& dir) {
    write_bytes(dir.file("config.json"), R"({"model_type": "synthetic", "hidden_size": 4})");
}

}  // namespace stormo::test
