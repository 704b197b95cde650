// open_container_source: see container_source.hpp.
#include "model/container_source.hpp"

#include <algorithm>
#include <filesystem>

#include "model/gguf.hpp"
#include "stormo/quote.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

class ContainerSource final : public ModelSource {
public:
    ContainerSource(std::string dir, ModelConfig config, std::optional<ModelConfig> generation, ContainerManifest manifest,
                    FileDescriptor data, std::string data_path, std::optional<GgufFile> metadata)
        : dir_(std::move(dir)), config_(std::move(config)), generation_(std::move(generation)), manifest_(std::move(manifest)),
          data_(std::move(data)), data_path_(std::move(data_path)), metadata_(std::move(metadata)) {
        std::sort(manifest_.tensors.begin(), manifest_.tensors.end(),
                  [](const ContainerTensor& a, const ContainerTensor& b) { return a.name < b.name; });
        for (const ContainerTensor& t : manifest_.tensors)
            infos_.push_back(TensorInfo{t.name, t.dtype, t.shape, data_path_, t.pieces.front().offset, t.nbytes()});
    }

    const std::string& directory() const override { return dir_; }
    const ModelConfig& config() const override { return config_; }
    const std::optional<ModelConfig>& generation_config() const override { return generation_; }
    const std::vector<TensorInfo>& tensors() const override { return infos_; }
    const GgufHeader* gguf_metadata() const override { return metadata_ ? &metadata_->header() : nullptr; }

    const TensorInfo* find(std::string_view name) const override {
        auto it = std::lower_bound(infos_.begin(), infos_.end(), name, [](const TensorInfo& t, std::string_view n) { return t.name < n; });
        return it != infos_.end() && it->name == name ? &*it : nullptr;
    }

    Expected<uint64_t> file_offset(const TensorInfo& t, uint64_t offset, uint64_t size) const override {
        STORMO_TRY_ASSIGN(const ContainerTensor* own, own_tensor(t, offset, size));
        uint64_t start = 0;
        for (const ContainerPiece& p : own->pieces) {
            if (offset >= start && offset - start < std::max<uint64_t>(p.nbytes, 1)) {
                if (size > p.nbytes - (offset - start))
                    return fail(ErrorKind::internal, what(t) + ": bytes " + std::to_string(offset) + "+" + std::to_string(size) +
                                                         " span two of its pieces");
                return p.offset + (offset - start);
            }
            start += p.nbytes;
        }
        return t.offset + offset;  // an empty range at the end
    }

    Expected<void> read(const TensorInfo& t, uint64_t offset, uint64_t size, void* dst) const override {
        STORMO_TRY_ASSIGN(const ContainerTensor* own, own_tensor(t, offset, size));
        auto* out = static_cast<std::byte*>(dst);
        uint64_t start = 0;
        for (const ContainerPiece& p : own->pieces) {
            const uint64_t end = start + p.nbytes;
            if (size > 0 && offset < end && offset + size > start) {
                const uint64_t from = std::max(offset, start);
                const uint64_t to = std::min(offset + size, end);
                STORMO_TRY(pread_exact(data_.get(), out + (from - offset), to - from, p.offset + (from - start), what(t)));
            }
            start = end;
        }
        return {};
    }

private:
    std::string what(const TensorInfo& t) const { return data_path_ + ": tensor " + in_quotes(t.name); }

    Expected<const ContainerTensor*> own_tensor(const TensorInfo& t, uint64_t offset, uint64_t size) const {
        const TensorInfo* own = find(t.name);
        if (own == nullptr) return fail(ErrorKind::invalid_argument, what(t) + ": not a tensor of this container");
        if (offset > own->nbytes || size > own->nbytes - offset)
            return fail(ErrorKind::invalid_argument, what(t) + ": read of " + std::to_string(size) + " bytes at offset " +
                                                         std::to_string(offset) + " runs past the tensor's " + std::to_string(own->nbytes) +
                                                         " bytes");
        return &manifest_.tensors[static_cast<size_t>(own - infos_.data())];
    }

    std::string dir_;
    ModelConfig config_;
    std::optional<ModelConfig> generation_;
    ContainerManifest manifest_;  // tensors sorted by name, parallel to infos_
    FileDescriptor data_;
    std::string data_path_;
    std::optional<GgufFile> metadata_;
    std::vector<TensorInfo> infos_;
};

Expected<ModelConfig> read_json_file(const fs::path& path) {
    auto text = read_file(path.string(), kConfigReadCap, "a model configuration");
    if (!text) {
        if (text.error().kind == ErrorKind::missing)
            return fail(ErrorKind::missing, path.string() + ": not found (the container's manifest lists it)");
        return tl::unexpected(text.error());
    }
    return ModelConfig::parse(*text, path.string());
}

bool lists(const ContainerManifest& m, std::string_view name) {
    return std::any_of(m.files.begin(), m.files.end(), [&](const ContainerFile& f) { return f.name == name; });
}

// The first tensor (by offset) whose bytes lie past `size`, for the error about a short data file.
std::string first_tensor_past(const ContainerManifest& m, uint64_t size) {
    const ContainerTensor* first = nullptr;
    uint64_t at = UINT64_MAX;
    for (const ContainerTensor& t : m.tensors)
        for (const ContainerPiece& p : t.pieces)
            if (p.offset + p.nbytes > size && p.offset < at) {
                at = p.offset;
                first = &t;
            }
    return first ? "tensor " + in_quotes(first->name) + " at offset " + std::to_string(at) : "its padding";
}

}  // namespace

Expected<std::unique_ptr<ModelSource>> open_container_source(const std::string& dir) {
    std::error_code ec;
    const std::string root = fs::absolute(fs::path(dir), ec).lexically_normal().string();
    const fs::path base(root);
    STORMO_TRY_ASSIGN(ContainerManifest manifest, read_container_manifest(root));
    const std::string manifest_path = (base / kContainerManifestFile).string();

    for (const ContainerFile& f : manifest.files)
        if (!fs::exists(base / f.name, ec))
            return fail(ErrorKind::missing, (base / f.name).string() + ": not found (" + manifest_path + " lists it)");
    if (!lists(manifest, "config.json")) return fail(ErrorKind::format, manifest_path + ": lists no config.json");
    STORMO_TRY_ASSIGN(auto config, read_json_file(base / "config.json"));
    std::optional<ModelConfig> generation;
    if (lists(manifest, "generation_config.json")) {
        STORMO_TRY_ASSIGN(generation, read_json_file(base / "generation_config.json"));
    }

    const std::string data_path = (base / manifest.data_file).string();
    auto data = FileDescriptor::open_read(data_path);
    if (!data) {
        if (data.error().kind == ErrorKind::missing)
            return fail(ErrorKind::missing, data_path + ": the container's data file is missing (" + manifest_path + " names it)");
        return tl::unexpected(data.error());
    }
    STORMO_TRY_ASSIGN(const uint64_t size, data->size(data_path));
    if (size != manifest.data_bytes)
        return fail(ErrorKind::format, data_path + ": " + std::to_string(size) + " bytes, the manifest says " +
                                           std::to_string(manifest.data_bytes) +
                                           (size < manifest.data_bytes ? ": truncated, " + first_tensor_past(manifest, size) + " is cut off"
                                                                       : ": not the file the manifest describes"));
    std::optional<GgufFile> metadata;
    if (manifest.gguf_metadata) {
        STORMO_TRY_ASSIGN(metadata, GgufFile::open((base / *manifest.gguf_metadata).string()));
    }
    return std::make_unique<ContainerSource>(root, std::move(config), std::move(generation), std::move(manifest), std::move(*data),
                                             data_path, std::move(metadata));
}

}  // namespace stormo
