// convert_model: see convert.hpp and docs/convert.md.
#include "tools/convert.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "util/json_writer.hpp"
#include "model/container_manifest.hpp"
#include "model/container_source.hpp"
#include "model/gguf.hpp"
#include "model/gguf_metadata_file.hpp"
#include "model/model_path.hpp"
#include "store/expert_reads.hpp"
#include "stormo/quote.hpp"
#include "tools/expert_layout_probe.hpp"
#include "util/atomic_file.hpp"
#include "util/direct_appender.hpp"
#include "util/file.hpp"
#include "util/sha256.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".stormo-convert-";

// The tokenizer's and the template's files of a Hugging Face directory, copied when present.
constexpr const char* kTextFiles[] = {"tokenizer.json",   "tokenizer_config.json", "chat_template.jinja", "chat_template.json",
                                      "special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt"};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// A config as JSON text (a GGUF source's config exists only as what the family's mapping made).
void write_json(JsonWriter& w, const Json& v) {
    switch (v.type()) {
        case Json::Type::null: w.null(); break;
        case Json::Type::boolean: w.value(*v.as_bool()); break;
        case Json::Type::integer: w.value(*v.as_int()); break;
        case Json::Type::number: w.value(*v.as_double()); break;
        case Json::Type::string: w.value(*v.as_string()); break;
        case Json::Type::array:
            w.begin_array();
            for (const Json& e : *v.as_array()) write_json(w, e);
            w.end_array();
            break;
        case Json::Type::object:
            w.begin_object();
            for (const auto& [k, e] : *v.as_object()) {
                w.key(k);
                write_json(w, e);
            }
            w.end_object();
            break;
    }
}

std::string json_text(const Json& v) {
    JsonWriter w;
    write_json(w, v);
    return w.str() + "\n";
}

// The temporary directory the container is built in, beside DIR; removed unless kept.
class BuildDirectory {
public:
    explicit BuildDirectory(std::string path) : path_(std::move(path)) {}
    ~BuildDirectory() {
        if (path_.empty()) return;
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    BuildDirectory(const BuildDirectory&) = delete;
    BuildDirectory& operator=(const BuildDirectory&) = delete;
    const std::string& path() const { return path_; }
    void keep() { path_.clear(); }

private:
    std::string path_;
};

// Temporary directories of conversions into `out` whose process is gone (killed, crashed).
void remove_stale_builds(const fs::path& out) {
    const std::string prefix = "." + out.filename().string() + std::string(kTempMarker);
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(out.parent_path(), ec)) {
        const std::string name = e.path().filename().string();
        if (!name.starts_with(prefix)) continue;
        const std::string pid_text = name.substr(prefix.size());
        if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
        const long pid = std::stol(pid_text);
        if (pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) fs::remove_all(e.path(), ec);
    }
}

// Writes one file of the container whole (AtomicFileWriter: a full disk is an error saying so).
Expected<std::string> write_whole(const fs::path& path, std::string_view bytes) {
    STORMO_TRY_ASSIGN(auto out, AtomicFileWriter::create(path.string(), path.string()));
    STORMO_TRY(out.write(bytes.data(), bytes.size()));
    STORMO_TRY(out.commit());
    return sha256_hex(bytes.data(), bytes.size());
}

// The data file: tensors appended at aligned offsets, chunk by chunk through one buffer.
class DataWriter {
public:
    static Expected<DataWriter> open(const std::string& path, const ConvertRequest& request, uint64_t to_write) {
        STORMO_TRY_ASSIGN(auto file, AtomicFileWriter::create(path, "the container's data file " + path));
        DataWriter w(std::move(file), request, to_write);
        w.direct_ = DirectAppender::open(w.file_.temp_path());
        return w;
    }

    uint64_t position() const { return at_; }

    Expected<void> align() {
        static const std::string zeros(kContainerAlignment, '\0');
        const uint64_t pad = align_up(at_, kContainerAlignment) - at_;
        if (pad > 0) STORMO_TRY(put(zeros.data(), pad));
        return {};
    }

    // Copies bytes [offset, offset + size) of a tensor of `source` here, hashing them into `hash`.
    Expected<void> copy(const ModelSource& source, const TensorInfo& t, uint64_t offset, uint64_t size, Sha256& hash) {
        last_tensor_ = t.name;
        for (uint64_t done = 0; done < size;) {
            const uint64_t n = std::min<uint64_t>(buffer_.size(), size - done);
            STORMO_TRY(source.read(t, offset + done, n, buffer_.data()));
            STORMO_TRY(hash.update(buffer_.data(), n));
            STORMO_TRY(put(buffer_.data(), n).map_error([&](Error e) {
                return with_context(std::move(e), "tensor " + in_quotes(t.name));
            }));
            done += n;
            meter_.add(n);
            if (on_chunk_) STORMO_TRY(on_chunk_(ConvertChunk{t.name, n, buffer_.size()}).map_error([&](Error e) {
                return with_context(std::move(e), "tensor " + in_quotes(t.name));
            }));
        }
        return {};
    }

    // A write past the page cache fails when its window reaches the disk, after the tensor that
    // filled it: the error names the last tensor copied.
    Expected<uint64_t> commit() {
        const auto at_the_end = [&](Error e) { return with_context(std::move(e), "the data up to tensor " + in_quotes(last_tensor_)); };
        if (direct_) STORMO_TRY(direct_->finish().map_error(at_the_end));
        direct_.reset();
        STORMO_TRY(file_.commit().map_error(at_the_end));
        meter_.finish();
        return at_;
    }

private:
    DataWriter(AtomicFileWriter file, const ConvertRequest& request, uint64_t to_write)
        : file_(std::move(file)),
          buffer_(static_cast<size_t>(std::max<uint64_t>(request.chunk_bytes, 1)), kContainerAlignment),
          meter_(request.progress, to_write),
          on_chunk_(request.on_chunk) {}

    Expected<void> put(const void* data, uint64_t size) {
        STORMO_TRY(direct_ ? direct_->append(data, size) : file_.write(data, size));
        at_ += size;
        return {};
    }

    AtomicFileWriter file_;
    std::unique_ptr<DirectAppender> direct_;
    AlignedBuffer buffer_;
    LoadMeter meter_;
    std::function<Expected<void>(const ConvertChunk&)> on_chunk_;
    uint64_t at_ = 0;
    std::string last_tensor_;
};

// What goes where: the dense tensors first (by name), then every layer's experts, each expert's
// parts together, then what the engine does not load (draft layers, tensors no family reads).
struct Plan {
    std::vector<const TensorInfo*> dense;
    std::vector<ExpertLayerLayout> layouts;
    std::vector<const TensorInfo*> rest;
    std::map<std::string, std::string, std::less<>> role;  // tensor name -> manifest role
};

Plan plan_layout(const ModelSource& source, const Family& family, const ModelSummary& summary, std::vector<ExpertLayerLayout> layouts) {
    Plan plan;
    std::set<std::string, std::less<>> in_experts;
    for (const auto& layout : layouts)
        for (const auto& expert : layout.locations)
            for (const auto& part : expert) in_experts.insert(part.tensor->name);
    for (const TensorInfo& t : source.tensors()) {
        if (in_experts.contains(t.name)) {
            plan.role[t.name] = "experts";
            continue;
        }
        const TensorRole role = tensor_role(family, summary, t.name);
        if (role == TensorRole::draft || role == TensorRole::experts) {
            plan.rest.push_back(&t);
            plan.role[t.name] = role == TensorRole::draft ? "draft" : "experts";
        } else {
            plan.dense.push_back(&t);
            plan.role[t.name] = "dense";
        }
    }
    std::sort(layouts.begin(), layouts.end(), [](const auto& a, const auto& b) { return a.layer < b.layer; });
    plan.layouts = std::move(layouts);
    return plan;
}

// Copies a whole tensor as one piece at the next aligned offset.
Expected<ContainerTensor> copy_whole(DataWriter& out, const ModelSource& source, const TensorInfo& t, const std::string& role) {
    STORMO_TRY(out.align());
    STORMO_TRY_ASSIGN(auto hash, Sha256::create());
    ContainerTensor c{t.name, t.dtype, t.shape, role, {}, {{out.position(), t.nbytes}}};
    STORMO_TRY(out.copy(source, t, 0, t.nbytes, hash));
    STORMO_TRY_ASSIGN(c.sha256, hash.finish());
    return c;
}

// One layer's experts: for each expert, each part at the next aligned offset, so the expert is one
// aligned range. A tensor stacking every expert becomes one piece per expert; its hash runs over
// the pieces in expert order, which is the tensor's byte order.
Expected<void> copy_layer(DataWriter& out, const ModelSource& source, const ExpertLayerLayout& layout, ContainerManifest& m) {
    struct Held {
        ContainerTensor tensor;
        Sha256 hash;
    };
    std::map<const TensorInfo*, Held> tensors;
    std::vector<const TensorInfo*> order;
    for (size_t e = 0; e < layout.locations.size(); ++e) {
        STORMO_TRY(out.align());
        ContainerExpert expert{layout.layer, static_cast<int>(e), out.position(), 0};
        for (const ExpertPartLocation& part : layout.locations[e]) {
            const TensorInfo& t = *part.tensor;
            auto it = tensors.find(&t);
            if (it == tensors.end()) {
                STORMO_TRY_ASSIGN(auto hash, Sha256::create());
                it = tensors.emplace(&t, Held{ContainerTensor{t.name, t.dtype, t.shape, "experts", {}, {}}, std::move(hash)}).first;
                order.push_back(&t);
            }
            STORMO_TRY(out.align());
            it->second.tensor.pieces.push_back({out.position(), part.nbytes});
            STORMO_TRY(out.copy(source, t, part.offset, part.nbytes, it->second.hash));
        }
        STORMO_TRY(out.align());
        expert.nbytes = out.position() - expert.offset;
        m.experts.push_back(expert);
    }
    for (const TensorInfo* t : order) {
        Held& held = tensors.at(t);
        if (held.tensor.nbytes() != t->nbytes)
            return fail(ErrorKind::internal, "tensor " + in_quotes(t->name) + ": the experts of layer " + std::to_string(layout.layer) +
                                                 " cover " + std::to_string(held.tensor.nbytes()) + " of its " + std::to_string(t->nbytes) +
                                                 " bytes");
        STORMO_TRY_ASSIGN(held.tensor.sha256, held.hash.finish());
        m.tensors.push_back(std::move(held.tensor));
    }
    return {};
}

// config.json and generation_config.json as the source has them (a GGUF source: as its mapping
// made them), the tokenizer's files, or a GGUF source's metadata; each recorded with its hash.
Expected<void> write_text_files(const ModelSource& source, const fs::path& build, ContainerManifest& m) {
    const fs::path from(source.directory());
    std::error_code ec;
    const bool directory = fs::is_directory(from, ec);
    const auto copy_or_make = [&](const char* name, const std::optional<ModelConfig>& config) -> Expected<void> {
        if (!config) return {};
        std::string bytes;
        if (directory && fs::exists(from / name, ec)) {
            STORMO_TRY_ASSIGN(bytes, read_file((from / name).string(), kConfigReadCap, "a model configuration"));
        } else {
            bytes = json_text(config->root());
        }
        STORMO_TRY_ASSIGN(auto sha, write_whole(build / name, bytes));
        m.files.push_back({name, sha});
        return {};
    };
    STORMO_TRY(copy_or_make("config.json", source.config()));
    STORMO_TRY(copy_or_make("generation_config.json", source.generation_config()));
    if (const GgufHeader* header = source.gguf_metadata()) {
        STORMO_TRY_ASSIGN(auto sha, write_whole(build / kContainerGgufMetadataFile, gguf_metadata_file(*header)));
        m.files.push_back({kContainerGgufMetadataFile, sha});
        m.gguf_metadata = kContainerGgufMetadataFile;
        return {};
    }
    if (!directory) return {};
    for (const char* name : kTextFiles) {
        if (!fs::is_regular_file(from / name, ec)) continue;
        STORMO_TRY_ASSIGN(auto bytes, read_file((from / name).string(), kDefaultReadCap, "a tokenizer file"));
        STORMO_TRY_ASSIGN(auto sha, write_whole(build / name, bytes));
        m.files.push_back({name, sha});
    }
    return {};
}

std::string source_kind(const ModelPath& path) {
    switch (path.kind) {
        case ModelPathKind::gguf: return "gguf";
        case ModelPathKind::container: return "stormo-container";
        case ModelPathKind::directory: break;
    }
    return "safetensors";
}

Expected<void> check_out(const ConvertRequest& request, const fs::path& out, const ModelSource& source) {
    std::error_code ec;
    if (request.out.empty()) return fail(ErrorKind::invalid_argument, "--out: the path is empty");
    if (!fs::is_directory(out.parent_path(), ec))
        return fail(ErrorKind::missing, "--out " + request.out + ": its directory " + out.parent_path().string() + " does not exist");
    const fs::path src = fs::weakly_canonical(fs::absolute(source.directory()), ec);
    const fs::path src_dir = fs::is_directory(src, ec) ? src : src.parent_path();
    if (fs::weakly_canonical(out, ec) == src_dir)
        return fail(ErrorKind::invalid_argument, "--out " + request.out + " is the source's own directory: choose another");
    if (fs::exists(fs::symlink_status(out, ec)) && !request.force)
        return fail(ErrorKind::invalid_argument, "--out " + request.out + " exists: pass --force to replace it");
    return {};
}

// Puts the finished build at `out`, replacing what is there (checked earlier against --force).
Expected<void> install(BuildDirectory& build, const fs::path& out) {
    std::error_code ec;
    const fs::path old = out.parent_path() / ("." + out.filename().string() + ".stormo-replaced-" + std::to_string(::getpid()));
    const bool replacing = fs::exists(fs::symlink_status(out, ec));
    if (replacing) {
        fs::rename(out, old, ec);
        if (ec) return fail(ErrorKind::io, "--out " + out.string() + ": cannot move the old one aside: " + ec.message());
    }
    fs::rename(build.path(), out, ec);
    if (ec) return fail(ErrorKind::io, "--out " + out.string() + ": cannot rename " + build.path() + " to it: " + ec.message());
    build.keep();
    STORMO_TRY(fsync_directory(out.string(), "--out " + out.string()));
    if (replacing) fs::remove_all(old, ec);
    return {};
}

}  // namespace

Expected<ConvertResult> convert_model(const ConvertRequest& request) {
    const std::string& model = request.setup.model_dir;
    STORMO_TRY_ASSIGN(const ModelPath recognised, recognise_model_path(model).map_error([&](Error e) {
        return with_model_context(std::move(e), request.setup.model_origin, model);
    }));
    ModelSetup setup;
    STORMO_TRY(open_model_setup(request.setup, setup));
    const ModelSource& source = *setup.source;
    const Family& family = *setup.family.plugin->family;

    std::error_code ec;
    const fs::path out = fs::absolute(fs::path(request.out), ec).lexically_normal();
    const fs::path out_path = out.has_filename() ? out : out.parent_path();
    STORMO_TRY(check_out(request, out_path, source));

    STORMO_TRY_ASSIGN(ExpertLayoutProbe probe, probe_expert_layouts(source, family, setup.kernels).map_error([&](Error e) {
        return with_model_context(std::move(e), request.setup.model_origin, model);
    }));
    STORMO_TRY_ASSIGN(const ModelSummary summary, family.summarize(source.config()));
    ConvertResult result;
    result.source_reads_per_expert = reads_per_expert(probe.layouts, kContainerAlignment);
    Plan plan = plan_layout(source, family, summary, std::move(probe.layouts));

    remove_stale_builds(out_path);
    BuildDirectory build((out_path.parent_path() / ("." + out_path.filename().string() + std::string(kTempMarker) + std::to_string(::getpid())))
                             .string());
    fs::remove_all(build.path(), ec);
    if (!fs::create_directory(build.path(), ec))
        return fail(ErrorKind::io, build.path() + ": cannot create the directory to build the container in: " + ec.message());
    const fs::path dir(build.path());

    ContainerManifest m;
    m.source_path = fs::absolute(model, ec).lexically_normal().string();
    m.source_kind = source_kind(recognised);
    m.family = setup.family.plugin->name;
    for (const std::string& f : source.streamable_files()) {
        const auto size = fs::file_size(f, ec);
        m.source_files.push_back({fs::path(f).filename().string(), ec ? 0 : size});
    }

    uint64_t to_write = 0;
    for (const TensorInfo& t : source.tensors()) to_write += t.nbytes;
    STORMO_TRY_ASSIGN(DataWriter data, DataWriter::open((dir / kContainerDataFile).string(), request, to_write));
    for (const TensorInfo* t : plan.dense) {
        STORMO_TRY_ASSIGN(auto c, copy_whole(data, source, *t, plan.role.at(t->name)));
        m.tensors.push_back(std::move(c));
    }
    for (const ExpertLayerLayout& layout : plan.layouts) STORMO_TRY(copy_layer(data, source, layout, m));
    for (const TensorInfo* t : plan.rest) {
        STORMO_TRY_ASSIGN(auto c, copy_whole(data, source, *t, plan.role.at(t->name)));
        m.tensors.push_back(std::move(c));
    }
    STORMO_TRY(data.align());
    STORMO_TRY_ASSIGN(m.data_bytes, data.commit());
    STORMO_TRY(write_text_files(source, dir, m));
    // Last: a directory without the manifest is no container.
    STORMO_TRY(write_whole(dir / kContainerManifestFile, encode_container_manifest(m)));
    STORMO_TRY(fsync_directory((dir / kContainerManifestFile).string(), build.path()));
    STORMO_TRY(install(build, out_path));

    result.dir = out_path.string();
    result.tensors = m.tensors.size();
    result.experts = m.experts.size();
    result.data_bytes = m.data_bytes;
    // Counted on the container as the engine opens it, not taken on faith from the layout.
    STORMO_TRY_ASSIGN(auto container, open_container_source(result.dir));
    STORMO_TRY_ASSIGN(ExpertLayoutProbe written, probe_expert_layouts(*container, family, setup.kernels));
    result.container_reads_per_expert = reads_per_expert(written.layouts, kContainerAlignment);
    return result;
}

}  // namespace stormo
