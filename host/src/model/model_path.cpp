// recognise_model_path: see model_path.hpp.
#include "model/model_path.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <vector>

#include "model/container_manifest.hpp"
#include "model/gguf_split.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

constexpr std::array<char, 4> kGgufMagic{'G', 'G', 'U', 'F'};

// The GGUF models in a directory without config.json: one file, or the parts of one split (the
// first part by name is given; the split reader finds the others). Several models are refused.
Expected<ModelPath> gguf_in_directory(const fs::path& dir) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
        if (starts_with_gguf_magic(entry.path().string())) found.push_back(entry.path().string());
    if (ec) return fail(ErrorKind::io, dir.string() + ": cannot list the directory: " + ec.message());
    if (found.empty())
        return fail(ErrorKind::missing, "not a model directory: no config.json or .gguf in " + dir.string());
    std::sort(found.begin(), found.end());
    const auto prefix = gguf_split_prefix(found.front());
    const bool one_model = found.size() == 1 || (prefix && std::all_of(found.begin(), found.end(), [&](const std::string& f) {
                                                     return gguf_split_prefix(f) == prefix;
                                                 }));
    if (!one_model) {
        std::string names;
        for (const std::string& f : found) names += (names.empty() ? "" : ", ") + fs::path(f).filename().string();
        return fail(ErrorKind::invalid_argument, dir.string() + " holds " + std::to_string(found.size()) +
                                                     " GGUF models (" + names + "): pass the one to run");
    }
    return ModelPath{ModelPathKind::gguf, found.front()};
}

// A safetensors file starts with its header's length (8 bytes, little-endian) and the header's "{".
bool looks_like_safetensors(const std::string& file) {
    auto fd = FileDescriptor::open_read(file);
    if (!fd) return false;
    std::array<unsigned char, 9> head{};
    if (!pread_exact(fd->get(), head.data(), head.size(), 0, file)) return false;
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = header << 8 | head[static_cast<size_t>(i)];
    const auto size = fd->size(file);
    return head[8] == '{' && size && header >= 2 && header <= *size - 8;
}

// True when `message` holds `path` as a word of its own, not inside another one ("w" in "with").
bool names_path(const std::string& message, const std::string& path) {
    if (path.empty()) return false;
    const auto boundary = [](char c) { return c == ' ' || c == ':' || c == '\'' || c == '"' || c == '(' || c == ')' || c == ','; };
    for (size_t at = message.find(path); at != std::string::npos; at = message.find(path, at + 1)) {
        const size_t end = at + path.size();
        if ((at == 0 || boundary(message[at - 1])) && (end == message.size() || boundary(message[end]))) return true;
    }
    return false;
}

}  // namespace

Error with_model_context(Error error, const std::string& origin, const std::string& path) {
    const bool named = names_path(error.message, path);
    return with_context(std::move(error), named ? origin : origin + " " + path);
}

bool starts_with_gguf_magic(const std::string& file) {
    auto fd = FileDescriptor::open_read(file);
    if (!fd) return false;
    std::array<char, 4> head{};
    return pread_exact(fd->get(), head.data(), head.size(), 0, file) && head == kGgufMagic;
}

Expected<ModelPath> recognise_model_path(const std::string& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    // A path that is not there (or empty) is left to the directory reader, whose errors say so.
    if (path.empty() || !fs::exists(status)) return ModelPath{ModelPathKind::directory, path};
    if (fs::is_directory(status)) {
        if (holds_container_manifest(path)) return ModelPath{ModelPathKind::container, path};
        if (fs::exists(fs::path(path) / "config.json", ec)) return ModelPath{ModelPathKind::directory, path};
        return gguf_in_directory(fs::path(path));
    }
    if (starts_with_gguf_magic(path)) return ModelPath{ModelPathKind::gguf, path};
    // A file of a model directory (its config.json, a shard, the tokenizer) given for the directory.
    const fs::path parent = fs::absolute(fs::path(path), ec).lexically_normal().parent_path();
    if (fs::exists(parent / "config.json", ec))
        return fail(ErrorKind::invalid_argument, path + " is a file of a model directory, not a model: pass the directory that holds it: " +
                                                     parent.string());
    if (!fs::is_regular_file(status))
        return fail(ErrorKind::invalid_argument, path + " is not a model: neither a directory nor a regular file");
    if (looks_like_safetensors(path))
        return fail(ErrorKind::invalid_argument, path + " is a safetensors file without the model's config.json beside it: pass "
                                                        "the directory that holds both");
    return fail(ErrorKind::invalid_argument, path + " is not a model: not a directory, and not a GGUF file (it does not start with \"GGUF\")");
}

}  // namespace stormo
