// open_model_directory: a Hugging Face model directory (config.json, generation_config.json, one
// model.safetensors or shards listed by model.safetensors.index.json) as a validated ModelSource.
// One descriptor per shard stays open for the source's lifetime; reads are pread calls, so any
// number of threads may read at once.
#include <algorithm>
#include <filesystem>
#include <system_error>
#include <unordered_map>

#include "model/model_source.hpp"
#include "model/safetensors.hpp"
#include "model/safetensors_index.hpp"
#include "stormo/quote.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

constexpr const char* kConfigFile = "config.json";
constexpr const char* kGenerationConfigFile = "generation_config.json";
constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

struct Shard {
    std::string path;
    FileDescriptor fd;
    uint64_t size = 0;
};

struct OpenedShard {
    Shard shard;
    SafetensorsFile header;
};

class DirectorySource final : public ModelSource {
public:
    DirectorySource(std::string dir, ModelConfig config, std::optional<ModelConfig> generation,
                    std::vector<Shard> shards, std::vector<TensorInfo> tensors)
        : dir_(std::move(dir)),
          config_(std::move(config)),
          generation_(std::move(generation)),
          shards_(std::move(shards)),
          tensors_(std::move(tensors)) {
        for (size_t i = 0; i < shards_.size(); ++i) shard_by_path_.emplace(shards_[i].path, i);
    }

    const std::string& directory() const override { return dir_; }
    const ModelConfig& config() const override { return config_; }
    const std::optional<ModelConfig>& generation_config() const override { return generation_; }
    const std::vector<TensorInfo>& tensors() const override { return tensors_; }

    const TensorInfo* find(std::string_view name) const override {
        auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                                   [](const TensorInfo& t, std::string_view n) { return t.name < n; });
        return it != tensors_.end() && it->name == name ? &*it : nullptr;
    }

    Expected<void> read(const TensorInfo& t, uint64_t offset, uint64_t size, void* dst) const override {
        const std::string what = t.file + ": tensor " + in_quotes(t.name);
        auto it = shard_by_path_.find(t.file);
        if (it == shard_by_path_.end())
            return fail(ErrorKind::invalid_argument, what + ": file is not a shard of model directory " + dir_);
        if (offset > t.nbytes || size > t.nbytes - offset)
            return fail(ErrorKind::invalid_argument, what + ": read of " + std::to_string(size) + " bytes at offset " +
                                                         std::to_string(offset) + " runs past the tensor's " +
                                                         std::to_string(t.nbytes) + " bytes");
        const Shard& shard = shards_[it->second];
        if (t.offset > shard.size || t.nbytes > shard.size - t.offset)
            return fail(ErrorKind::invalid_argument, what + ": byte range lies outside the file");
        return pread_exact(shard.fd.get(), dst, size, t.offset + offset, what);
    }

private:
    std::string dir_;
    ModelConfig config_;
    std::optional<ModelConfig> generation_;
    std::vector<Shard> shards_;
    std::vector<TensorInfo> tensors_;  // sorted by name
    std::unordered_map<std::string, size_t> shard_by_path_;
};

// The directory as an absolute path without a trailing separator; it must exist.
Expected<fs::path> checked_directory(const std::string& dir) {
    if (dir.empty()) return fail(ErrorKind::invalid_argument, "model directory path is empty");
    std::error_code ec;
    fs::path path = fs::absolute(fs::path(dir), ec).lexically_normal();
    if (ec) return fail(ErrorKind::io, dir + ": cannot resolve path: " + ec.message());
    if (!path.has_filename() && path.has_parent_path() && path != path.root_path()) path = path.parent_path();
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) return fail(ErrorKind::missing, "model directory " + path.string() + " does not exist");
    if (!fs::is_directory(status)) return fail(ErrorKind::invalid_argument, path.string() + " is not a directory");
    return path;
}

bool is_file(const fs::path& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

// Present in any form: what is there but not a regular file (a FIFO, a directory) is then refused
// by the reader, instead of being silently taken as absent.
bool present(const fs::path& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

Expected<ModelConfig> read_config(const fs::path& path) {
    auto text = read_file(path.string(), kConfigReadCap, "a model configuration");
    if (!text) {
        if (text.error().kind == ErrorKind::missing)
            return fail(ErrorKind::missing, path.string() + ": not found (a model directory needs it)");
        return tl::unexpected(text.error());
    }
    return ModelConfig::parse(*text, path.string());
}

Expected<OpenedShard> open_shard(const std::string& path) {
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::open_read(path));
    STORMO_TRY_ASSIGN(auto header, read_safetensors_header(fd.get(), path));
    const uint64_t size = header.file_size;
    return OpenedShard{Shard{path, std::move(fd), size}, std::move(header)};
}

bool holds(const std::vector<TensorInfo>& sorted, std::string_view name) {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), name,
                               [](const TensorInfo& t, std::string_view n) { return t.name < n; });
    return it != sorted.end() && it->name == name;
}

// The tensor an index lists first for a shard, to say which part of the model a missing shard holds.
std::string first_tensor_of(const SafetensorsIndex& index, const std::string& shard) {
    for (const auto& [tensor, name] : index.weight_map)
        if (name == shard) return tensor;
    return {};
}

Expected<std::vector<OpenedShard>> open_sharded(const fs::path& dir, const fs::path& index_path) {
    const std::string index_name = index_path.string();
    STORMO_TRY_ASSIGN(auto text, read_file(index_name, kIndexReadCap, "a safetensors index"));
    auto index = parse_safetensors_index(text, index_name);
    if (!index) return tl::unexpected(index.error());

    std::vector<OpenedShard> shards;
    shards.reserve(index->shards.size());
    for (const std::string& name : index->shards) {
        const std::string path = (dir / name).lexically_normal().string();
        if (!is_file(path))
            return fail(ErrorKind::missing, index_name + ": shard " + in_quotes(name) + " (holding tensor " +
                                                in_quotes(first_tensor_of(*index, name)) + ") not found in " + dir.string());
        STORMO_TRY_ASSIGN(auto shard, open_shard(path));
        shards.push_back(std::move(shard));
    }

    // Every tensor the index lists must be in the shard it names. Shards hold it sorted by name.
    for (const auto& [tensor, name] : index->weight_map) {
        const size_t s = static_cast<size_t>(
            std::lower_bound(index->shards.begin(), index->shards.end(), name) - index->shards.begin());
        const bool found = holds(shards[s].header.tensors, tensor);
        if (!found)
            return fail(ErrorKind::missing, index_name + ": tensor " + in_quotes(tensor) + " is listed in shard " +
                                                in_quotes(name) + " but that shard has no such tensor");
    }
    return shards;
}

// All tensors of all shards sorted by name; a name in two shards is an error naming both.
Expected<std::vector<TensorInfo>> merge_tensors(const std::vector<OpenedShard>& shards) {
    std::vector<TensorInfo> tensors;
    for (const OpenedShard& s : shards)
        tensors.insert(tensors.end(), s.header.tensors.begin(), s.header.tensors.end());
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
    for (size_t i = 1; i < tensors.size(); ++i)
        if (tensors[i].name == tensors[i - 1].name)
            return fail(ErrorKind::format, "tensor " + in_quotes(tensors[i].name) + " appears in both " +
                                               tensors[i - 1].file + " and " + tensors[i].file);
    return tensors;
}

}  // namespace

Expected<std::unique_ptr<ModelSource>> open_model_directory(const std::string& dir) {
    STORMO_TRY_ASSIGN(auto root, checked_directory(dir));

    STORMO_TRY_ASSIGN(auto config, read_config(root / kConfigFile));
    std::optional<ModelConfig> generation;
    if (const fs::path path = root / kGenerationConfigFile; present(path)) {
        STORMO_TRY_ASSIGN(auto parsed, read_config(path));
        generation = std::move(parsed);
    }

    // transformers prefers the single file when both forms are present; so do we.
    std::vector<OpenedShard> opened;
    if (const fs::path single = root / kSingleFile; present(single)) {
        STORMO_TRY_ASSIGN(auto shard, open_shard(single.string()));
        opened.push_back(std::move(shard));
    } else if (const fs::path index = root / kIndexFile; present(index)) {
        STORMO_TRY_ASSIGN(auto shards, open_sharded(root, index));
        opened = std::move(shards);
    } else {
        return fail(ErrorKind::missing, root.string() + ": no " + kSingleFile + " or " + kIndexFile + " found");
    }

    STORMO_TRY_ASSIGN(auto tensors, merge_tensors(opened));
    std::vector<Shard> shards;
    shards.reserve(opened.size());
    for (OpenedShard& s : opened) shards.push_back(std::move(s.shard));
    return std::make_unique<DirectorySource>(root.string(), std::move(config), std::move(generation),
                                             std::move(shards), std::move(tensors));
}

}  // namespace stormo
