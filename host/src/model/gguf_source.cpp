// open_gguf_source: see gguf_source.hpp.
#include "model/gguf_source.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "model/gguf_model_view.hpp"
#include "stormo/family.hpp"
#include "stormo/quote.hpp"
#include "util/file.hpp"
#include "util/quoted_list.hpp"

namespace stormo {
namespace {

// A tensor the family mapped, and for bytes of the file the part (of the model's) they lie in.
struct FamilyTensor {
    GgufMappedTensor mapped;
    size_t part = 0;
};

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
        std::sort(tensors_.begin(), tensors_.end(),
                  [](const FamilyTensor& a, const FamilyTensor& b) { return a.mapped.name < b.mapped.name; });
        // An in-memory tensor's TensorInfo::file names no file the bytes could be read from, so
        // nothing that opens files (the streaming store) can mistake it for a range of the file.
        const std::string origin = path_ + " (dequantized in memory)";
        for (const FamilyTensor& held : tensors_) {
            const GgufMappedTensor& t = held.mapped;
            if (t.in_file)
                infos_.push_back(TensorInfo{t.name, t.dtype, t.shape, model_.parts()[held.part]->path(),
                                            t.in_file->offset + t.slice_offset, t.slice_bytes});
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
        return own != nullptr && !tensors_[static_cast<size_t>(own - infos_.data())].mapped.in_file;
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
        if (held.mapped.in_file) return pread_exact(parts_[held.part].get(), dst, size, own->offset + offset, what);
        std::memcpy(dst, reinterpret_cast<const std::byte*>(held.mapped.values.data()) + offset, size);
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

// general.architecture, a string; errors name the file and the key.
Expected<std::string> architecture_of(const GgufHeader& h) {
    const std::string key = "general.architecture";
    const GgufValue* v = h.find(key);
    if (v == nullptr) return fail(ErrorKind::missing, h.path + ": key " + in_quotes(key) + " is missing");
    const std::optional<std::string_view> arch = v->as_string();
    if (!arch) return fail(ErrorKind::format, h.path + ": key " + in_quotes(key) + " must be a string, found " + v->type_name());
    return std::string(*arch);
}

// The first family that claims `arch`, or an error naming the file, the architecture and what
// the loaded families claim.
Expected<const Family*> claiming_family(const GgufHeader& h, const std::string& arch, std::span<const Family* const> families) {
    std::vector<std::string> claimed;
    for (const Family* family : families) {
        for (const std::string& a : family->gguf_architectures()) {
            if (a == arch) return family;
            if (std::find(claimed.begin(), claimed.end(), a) == claimed.end()) claimed.push_back(a);
        }
    }
    std::string list;
    for (const std::string& a : claimed) list += (list.empty() ? "" : ", ") + a;
    return fail(ErrorKind::unsupported, h.path + ": general.architecture " + in_quotes(arch) + " has no mapping onto a loaded family (" +
                                            (claimed.empty() ? std::string("no loaded family maps a GGUF architecture")
                                                             : "the loaded families map " + list) + ")");
}

// The family's tensors checked against the model before the host reads a byte through them: an
// in-file tensor must be one of the model's, its range inside that tensor; values must fill the
// shape. Errors name the file and the tensor (a fault of the family's mapping, not of the file).
Expected<std::vector<FamilyTensor>> checked_tensors(const GgufModelView& view, std::vector<GgufMappedTensor> mapped) {
    std::vector<FamilyTensor> out;
    out.reserve(mapped.size());
    for (GgufMappedTensor& t : mapped) {
        const std::string what = view.path() + ": the " + view.architecture() + " mapping's tensor " + in_quotes(t.name);
        size_t part = 0;
        if (t.in_file) {
            const GgufTensorRef* ref = view.ref(t.in_file);
            if (ref == nullptr) return fail(ErrorKind::internal, what + " refers to a tensor that is not the file's");
            if (t.slice_offset > ref->info->nbytes || t.slice_bytes > ref->info->nbytes - t.slice_offset)
                return fail(ErrorKind::internal, what + " runs past the bytes of " + in_quotes(ref->info->name));
            const auto& files = view.model().parts();
            while (part < files.size() && files[part].get() != ref->file) ++part;
        } else if (static_cast<int64_t>(t.values.size()) != element_count(t.shape)) {
            return fail(ErrorKind::internal, what + " has " + std::to_string(t.values.size()) + " values for its shape");
        }
        out.push_back({std::move(t), part});
    }
    return out;
}

// Every tensor of the file is the mapping's: handed on as bytes, read to be decoded, or left out on
// purpose (GgufMappedModel::left_out). Any other (a block past the metadata's block count, a part
// the metadata turns off) means metadata and tensors disagree, and the model would answer from
// part of its weights with exit 0.
using NameSet = std::set<std::string, std::less<>>;

NameSet mapped_names(const GgufModelView& view, const GgufMappedModel& mapped) {
    NameSet used = view.read_tensors();
    for (const GgufMappedTensor& t : mapped.tensors)
        if (t.in_file != nullptr) used.insert(t.in_file->name);
    used.insert(mapped.left_out.begin(), mapped.left_out.end());
    return used;
}

Expected<void> check_every_tensor_mapped(const GgufModelView& view, const NameSet& used) {
    std::vector<std::string> unused;
    for (const GgufTensorInfo* t : view.tensors())
        if (!used.contains(t->name)) unused.push_back(t->name);
    if (unused.empty()) return {};
    return fail(ErrorKind::format, view.path() + ": " + std::to_string(unused.size()) + " of the file's " +
                                       std::to_string(view.tensors().size()) + " tensors are not part of the " +
                                       view.architecture() + " model its metadata describes (" +
                                       quoted_list(unused) + "): the metadata (block count, expert counts) and the "
                                       "tensors disagree");
}

}  // namespace

Expected<std::unique_ptr<ModelSource>> open_gguf_source(const std::string& path, std::span<const Family* const> families) {
    STORMO_TRY_ASSIGN(auto model, GgufModel::open(path));
    const GgufHeader& h = model.metadata();
    STORMO_TRY_ASSIGN(const std::string arch, architecture_of(h));
    STORMO_TRY_ASSIGN(const Family* family, claiming_family(h, arch, families));
    const GgufModelView view(model, arch);
    STORMO_TRY_ASSIGN(GgufMappedModel mapped, family->map_gguf(view));
    // The mapping's own faults first (an internal error), then the file's.
    const NameSet used = mapped_names(view, mapped);
    STORMO_TRY_ASSIGN(std::vector<FamilyTensor> tensors, checked_tensors(view, std::move(mapped.tensors)));
    STORMO_TRY(check_every_tensor_mapped(view, used));
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
                                        std::move(tensors));
}

}  // namespace stormo
