// open_gguf_source: see gguf_source.hpp.
#include "model/gguf_source.hpp"

#include <algorithm>
#include <cstring>

#include "model/gguf_mapping.hpp"
#include "util/file.hpp"
#include "util/quote.hpp"

namespace stormo {
namespace {

using gguf_mapping::FamilyTensor;

// The family's tensors: byte ranges of the GGUF file, or float32 values the mapping made, held in
// RAM. The file's bytes are read with pread, not copied out of the mapping the header was parsed
// from: pages of a mapping count in the process's resident set as long as it lives, pages read
// into the page cache do not, so a model loaded into RAM does not count twice.
class GgufSource final : public ModelSource {
public:
    GgufSource(GgufModel model, std::vector<FileDescriptor> parts, ModelConfig config, std::optional<ModelConfig> generation,
               std::vector<FamilyTensor> tensors)
        : model_(std::move(model)), parts_(std::move(parts)), path_(model_.parts().front()->path()), config_(std::move(config)),
          generation_(std::move(generation)), tensors_(std::move(tensors)) {
        std::sort(tensors_.begin(), tensors_.end(), [](const FamilyTensor& a, const FamilyTensor& b) { return a.name < b.name; });
        // An in-memory tensor's TensorInfo::file names no file the bytes could be read from, so
        // nothing that opens files (the streaming store) can mistake it for a range of the file.
        const std::string origin = path_ + " (dequantized in memory)";
        for (const FamilyTensor& t : tensors_) {
            if (t.in_file)
                infos_.push_back(TensorInfo{t.name, t.dtype, t.shape, t.in_file->file->path(), t.in_file->info->offset + t.slice_offset,
                                            t.slice_bytes});
            else
                infos_.push_back(TensorInfo{t.name, DType::F32, t.shape, origin, 0, t.values.size() * sizeof(float)});
        }
    }

    const std::string& directory() const override { return path_; }
    const ModelConfig& config() const override { return config_; }
    const std::optional<ModelConfig>& generation_config() const override { return generation_; }
    const std::vector<TensorInfo>& tensors() const override { return infos_; }

    const GgufHeader* gguf_metadata() const override { return &model_.metadata(); }

    bool in_memory(const TensorInfo& t) const override {
        const TensorInfo* own = find(t.name);
        return own != nullptr && !tensors_[static_cast<size_t>(own - infos_.data())].in_file;
    }

    const TensorInfo* find(std::string_view name) const override {
        auto it = std::lower_bound(infos_.begin(), infos_.end(), name,
                                   [](const TensorInfo& t, std::string_view n) { return t.name < n; });
        return it != infos_.end() && it->name == name ? &*it : nullptr;
    }

    Expected<void> read(const TensorInfo& t, uint64_t offset, uint64_t size, void* dst) const override {
        // By name, and bounded by this source's own record of the tensor, whatever `t` says.
        const TensorInfo* own = find(t.name);
        const std::string what = path_ + ": tensor " + in_quotes(t.name);
        if (own == nullptr) return fail(ErrorKind::invalid_argument, what + ": not a tensor of this model");
        if (offset > own->nbytes || size > own->nbytes - offset)
            return fail(ErrorKind::invalid_argument, what + ": read of " + std::to_string(size) + " bytes at offset " +
                                                         std::to_string(offset) + " runs past the tensor's " +
                                                         std::to_string(own->nbytes) + " bytes");
        const FamilyTensor& held = tensors_[static_cast<size_t>(own - infos_.data())];
        if (held.in_file) {
            const auto& files = model_.parts();
            size_t part = 0;
            while (part < files.size() && files[part].get() != held.in_file->file) ++part;
            if (part == files.size()) return fail(ErrorKind::internal, what + ": its file is not a part of the model");
            return pread_exact(parts_[part].get(), dst, size, own->offset + offset, what);
        }
        std::memcpy(dst, reinterpret_cast<const std::byte*>(held.values.data()) + offset, size);
        return {};
    }

private:
    GgufModel model_;  // the parsed headers; in-file tensors refer to its parts
    std::vector<FileDescriptor> parts_;  // one per part of model_, in its order
    std::string path_;
    ModelConfig config_;
    std::optional<ModelConfig> generation_;
    std::vector<FamilyTensor> tensors_;  // sorted by name, parallel to infos_
    std::vector<TensorInfo> infos_;
};

}  // namespace

Expected<std::unique_ptr<ModelSource>> open_gguf_source(const std::string& path) {
    STORMO_TRY_ASSIGN(auto model, GgufModel::open(path));
    const GgufHeader& h = model.metadata();
    gguf_mapping::Keys general(h, "general");
    STORMO_TRY_ASSIGN(const std::string arch, general.text("general.architecture"));
    gguf_mapping::Keys keys(h, arch);
    gguf_mapping::MappedModel mapped;
    if (arch == "gpt-oss") {
        STORMO_TRY_ASSIGN(mapped, gguf_mapping::map_gpt_oss(model, keys));
    } else if (arch == "qwen3moe") {
        STORMO_TRY_ASSIGN(mapped, gguf_mapping::map_qwen3_moe(model, keys));
    } else if (arch == "glm-dsa") {
        STORMO_TRY_ASSIGN(mapped, gguf_mapping::map_glm_dsa(model, keys));
    } else {
        return fail(ErrorKind::unsupported, h.path + ": general.architecture " + in_quotes(arch) +
                                                " has no mapping onto a stormo family yet (gpt-oss, qwen3moe and glm-dsa have)");
    }
    // The synthesized texts are named after the file, so a family's error about a field points
    // at the GGUF file it came from.
    STORMO_TRY_ASSIGN(auto config, ModelConfig::parse(mapped.config_json, h.path + " (metadata as config.json)"));
    std::optional<ModelConfig> generation;
    if (mapped.generation_config_json) {
        STORMO_TRY_ASSIGN(generation, ModelConfig::parse(*mapped.generation_config_json,
                                                         h.path + " (metadata as generation_config.json)"));
    }
    std::vector<FileDescriptor> parts;
    for (const auto& part : model.parts()) {
        STORMO_TRY_ASSIGN(auto fd, FileDescriptor::open_read(part->path()));
        parts.push_back(std::move(fd));
    }
    return std::make_unique<GgufSource>(std::move(model), std::move(parts), std::move(config), std::move(generation),
                                        std::move(mapped.tensors));
}

}  // namespace stormo
