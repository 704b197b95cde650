// Synthetic checkpoints of whatever a family plugin describes: the shards planned from its tensor
// list, safetensors headers, and counter-based random values so any byte range of a tensor can be
// generated on its own.
#include "tools/synth.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "stormo/fp8_codes.hpp"
#include "util/file.hpp"

namespace stormo::synth {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---- tensors and shards -----------------------------------------------------------------------

constexpr int kMaxLayers = 1024;

uint64_t bytes_of(DType dtype, const Shape& shape) {
    return static_cast<uint64_t>(element_count(shape)) * dtype_size(dtype);
}

// Consecutive tensors into shards of at most `limit` bytes (a tensor larger than the limit alone).
std::vector<PlannedShard> pack_shards(const std::vector<PlannedTensor>& tensors, uint64_t limit) {
    std::vector<PlannedShard> shards(1);
    for (size_t i = 0; i < tensors.size(); ++i) {
        PlannedShard* s = &shards.back();
        if (!s->tensors.empty() && s->data_bytes + tensors[i].nbytes > limit) {
            shards.emplace_back();
            s = &shards.back();
        }
        s->tensors.push_back(i);
        s->data_bytes += tensors[i].nbytes;
    }
    return shards;
}

// As few shards as the size limit allows, balanced: the smallest per-shard limit between the
// even split and `max_shard` that packs into ceil(total / max_shard) shards (or max_shard when
// none does), never splitting a tensor.
std::vector<PlannedShard> plan_shards(const std::vector<PlannedTensor>& tensors, uint64_t max_shard) {
    uint64_t total = 0;
    for (const auto& t : tensors) total += t.nbytes;
    const uint64_t count = std::max<uint64_t>(1, (total + max_shard - 1) / max_shard);
    uint64_t limit = std::min(max_shard, (total + count - 1) / count);
    std::vector<PlannedShard> shards = pack_shards(tensors, limit);
    const uint64_t step = std::max<uint64_t>(1, max_shard / 256);
    while (shards.size() > count && limit < max_shard) {
        limit = std::min(max_shard, limit + step);
        shards = pack_shards(tensors, limit);
    }
    if (shards.size() == 1) {
        shards[0].file_name = "model.safetensors";
    } else {
        for (size_t k = 0; k < shards.size(); ++k) {
            char name[64];
            std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
            shards[k].file_name = name;
        }
    }
    return shards;
}

std::string shape_json(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// The safetensors header of a shard, padded with spaces to a multiple of 8 bytes as the
// reference writer does, so the data section starts aligned.
std::string shard_header(const SynthPlan& plan, const PlannedShard& shard) {
    std::string h = "{\"__metadata__\":{\"format\":\"pt\"}";
    uint64_t at = 0;
    for (size_t i : shard.tensors) {
        const PlannedTensor& t = plan.tensors[i];
        h += ",\"" + t.name + "\":{\"dtype\":\"" + std::string(dtype_name(t.dtype)) + "\",\"shape\":" +
             shape_json(t.shape) + ",\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + t.nbytes) +
             "]}";
        at += t.nbytes;
    }
    h += "}";
    h.append((8 - h.size() % 8) % 8, ' ');
    return h;
}

std::string index_json(const SynthPlan& plan) {
    std::vector<std::pair<std::string, std::string>> map;
    for (const PlannedShard& s : plan.shards)
        for (size_t i : s.tensors) map.emplace_back(plan.tensors[i].name, s.file_name);
    std::sort(map.begin(), map.end());
    std::string j = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(plan.total_bytes()) +
                    "\n  },\n  \"weight_map\": {";
    for (size_t i = 0; i < map.size(); ++i)
        j += (i ? ",\n    \"" : "\n    \"") + map[i].first + "\": \"" + map[i].second + "\"";
    return j + "\n  }\n}\n";
}

// ---- values -----------------------------------------------------------------------------------

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

// splitmix64's output function: a bijective mix of a 64-bit counter.
uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// One key per (seed, tensor name): a tensor's values do not depend on which others exist.
uint64_t tensor_key(uint64_t seed, const std::string& name) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
    for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
    return mix64(seed * kGamma ^ h);
}

uint16_t f32_to_bf16(float f) {
    uint32_t bits = std::bit_cast<uint32_t>(f);
    bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(bits >> 16);
}

static_assert(std::endian::native == std::endian::little, "synth writes little-endian words as they are in memory");

uint64_t word_random(uint64_t key, uint64_t w) { return mix64(key + (w + 1) * kGamma); }

// Words [first, first + n) of a tensor's stream into out (8 bytes each). Word w is a pure function
// of (key, w), so any range can be produced alone; one loop per kind keeps the hot loop simple.
void fill_words(const FillSpec& fill, uint64_t key, uint64_t first, size_t n, std::byte* out) {
    switch (fill.kind) {
        case Fill::random_bytes:
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r = word_random(key, first + i);
                std::memcpy(out + 8 * i, &r, 8);
            }
            return;
        case Fill::e4m3_codes: {
            // Eight codes a word, from 16 random bits each (two random words).
            const E4m3GaussianCodes& codes = e4m3_gaussian_codes();
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r[2] = {word_random(key, 2 * (first + i)), word_random(key, 2 * (first + i) + 1)};
                uint64_t v = 0;
                for (int b = 0; b < 8; ++b)
                    v |= static_cast<uint64_t>(codes.pick(static_cast<uint16_t>(r[b / 4] >> (16 * (b % 4))))) << (8 * b);
                std::memcpy(out + 8 * i, &v, 8);
            }
            return;
        }
        case Fill::byte_range: {
            const uint32_t span = static_cast<uint32_t>(fill.byte_hi - fill.byte_lo) + 1;
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r = word_random(key, first + i);
                uint64_t v = 0;
                for (int b = 0; b < 8; ++b) {
                    const uint32_t byte = static_cast<uint32_t>((r >> (8 * b)) & 0xFF);
                    v |= static_cast<uint64_t>(fill.byte_lo + ((byte * span) >> 8)) << (8 * b);
                }
                std::memcpy(out + 8 * i, &v, 8);
            }
            return;
        }
        case Fill::uniform: {
            // Four values per word from 16 random bits each: u = (bits + 0.5) / 32768 - 1 in (-1, 1).
            const float a = fill.half_width * (2.0f / 65536.0f);
            const float b = fill.center + fill.half_width * (1.0f / 65536.0f - 1.0f);
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r = word_random(key, first + i);
                uint64_t v = 0;
                for (int k = 0; k < 4; ++k) {
                    const auto bits = static_cast<int32_t>((r >> (16 * k)) & 0xFFFF);  // signed: a cheap conversion
                    const float x = a * static_cast<float>(bits) + b;
                    v |= static_cast<uint64_t>(f32_to_bf16(x)) << (16 * k);
                }
                std::memcpy(out + 8 * i, &v, 8);
            }
            return;
        }
    }
}

// ---- writing ----------------------------------------------------------------------------------

// Removes what a previous synth (or hub download) left: an index naming other shards, stale
// shards, and config.json first, so the directory never looks like a model mid-write.
Expected<void> clear_checkpoint(const fs::path& dir) {
    std::error_code ec;
    fs::remove(dir / "config.json", ec);
    if (ec) return fail(ErrorKind::io, (dir / "config.json").string() + ": cannot remove: " + ec.message());
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool ours = name == "generation_config.json" || name == "model.safetensors.index.json" ||
                          (name.rfind("model", 0) == 0 && name.size() > 12 &&
                           name.compare(name.size() - 12, 12, ".safetensors") == 0);
        if (!ours || !entry.is_regular_file()) continue;
        fs::remove(entry.path(), ec);
        if (ec) return fail(ErrorKind::io, entry.path().string() + ": cannot remove: " + ec.message());
    }
    if (ec) return fail(ErrorKind::io, dir.string() + ": cannot list: " + ec.message());
    return {};
}

Expected<void> prepare_directory(const std::string& out_dir, bool force) {
    const fs::path dir(out_dir);
    std::error_code ec;
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec)) return fail(ErrorKind::invalid_argument, out_dir + ": exists and is not a directory");
        const bool empty = fs::is_empty(dir, ec);
        if (ec) return fail(ErrorKind::io, out_dir + ": cannot list: " + ec.message());
        if (!empty && !force)
            return fail(ErrorKind::invalid_argument, out_dir + ": exists and is not empty (--force writes into it)");
        if (!empty) return clear_checkpoint(dir);
        return {};
    }
    // A directory is not created through a symlink (mkdir -p refuses too): say so, not "File exists".
    if (fs::is_symlink(fs::symlink_status(dir, ec)))
        return fail(ErrorKind::invalid_argument, out_dir + ": a symlink to " + symlink_end(out_dir) + ", which does not exist");
    fs::create_directories(dir, ec);
    if (ec) return fail(ErrorKind::io, out_dir + ": cannot create: " + ec.message());
    return {};
}

// Writes a shard's bytes behind the writer and drops them from the page cache, one window behind:
// a 100 GB checkpoint must not push everything else out of RAM, and the progress rate is then
// the disk's, not the page cache's.
class WritebackWindow {
public:
    WritebackWindow(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

    Expected<void> wrote_up_to(uint64_t end) {
        if (end - started_ < kWindow) return {};
        if (::sync_file_range(fd_, static_cast<off_t>(started_), static_cast<off_t>(end - started_),
                              SYNC_FILE_RANGE_WRITE) != 0)
            return fail(ErrorKind::io, path_ + ": write-back failed: " + std::strerror(errno));
        if (auto d = drop(started_); !d) return d;
        started_ = end;
        return {};
    }

private:
    static constexpr uint64_t kWindow = uint64_t{64} << 20;

    // Waits for [dropped_, upto) to reach the disk, then releases those pages.
    Expected<void> drop(uint64_t upto) {
        if (upto <= dropped_) return {};
        if (::sync_file_range(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(upto - dropped_),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
            return fail(ErrorKind::io, path_ + ": write-back failed: " + std::strerror(errno));
        ::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(upto - dropped_), POSIX_FADV_DONTNEED);
        dropped_ = upto;
        return {};
    }

    int fd_;
    std::string path_;
    uint64_t started_ = 0;  // write-back started for [0, started_)
    uint64_t dropped_ = 0;  // on disk and out of the page cache for [0, dropped_)
};

struct WriteState {
    const SynthPlan& plan;
    const WriteOptions& options;
    std::vector<std::byte> buffer;
    uint64_t written = 0;
    Clock::time_point start = Clock::now();
};

Expected<void> write_shard(WriteState& st, const PlannedShard& shard, const std::string& path) {
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::create(path));
    const std::string header = shard_header(st.plan, shard);
    std::byte prefix[8];
    const uint64_t header_len = header.size();
    for (int b = 0; b < 8; ++b) prefix[b] = static_cast<std::byte>(header_len >> (8 * b));
    if (auto w = write_all(fd.get(), prefix, sizeof prefix, path); !w) return w;
    if (auto w = write_all(fd.get(), header.data(), header.size(), path); !w) return w;
    uint64_t file_at = sizeof prefix + header.size();
    WritebackWindow window(fd.get(), path);
    for (size_t i : shard.tensors) {
        const PlannedTensor& t = st.plan.tensors[i];
        for (uint64_t at = 0; at < t.nbytes; at += st.buffer.size()) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(st.buffer.size(), t.nbytes - at));
            fill_tensor_bytes(st.plan, i, at, st.buffer.data(), n);
            if (auto w = write_all(fd.get(), st.buffer.data(), n, path + " (tensor " + t.name + ")"); !w) return w;
            file_at += n;
            st.written += n;
            if (auto wb = window.wrote_up_to(file_at); !wb) return wb;
            if (st.options.progress)
                st.options.progress({st.written, st.plan.total_bytes(),
                                     std::chrono::duration<double>(Clock::now() - st.start).count(), path});
        }
    }
    if (::fdatasync(fd.get()) != 0) return fail(ErrorKind::io, path + ": fdatasync failed: " + std::strerror(errno));
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    return fd.close(path);
}

// ---- presets ----------------------------------------------------------------------------------

struct PresetOwner {
    SynthPreset preset;
    std::string plugin;
    const FamilyPlugin* family = nullptr;
};

// The family that describes `name`: exactly one may, or the request is refused naming two of them.
Expected<PresetOwner> find_preset(const PluginRegistry& registry, const std::string& name) {
    std::vector<PresetOwner> owners;
    for (const LoadedPlugin* plugin : registry.of_kind(PluginKind::model))
        if (plugin->family)
            for (const SynthPreset& p : plugin->family->synth_presets())
                if (p.name == name) owners.push_back({p, plugin->name, plugin->family.get()});
    if (owners.size() == 1) return owners.front();
    if (owners.size() > 1)
        return fail(ErrorKind::invalid_argument, "--preset \"" + name + "\" is described by two family plugins (" +
                                                     owners[0].plugin + ", " + owners[1].plugin + ")");
    std::string known;
    for (const auto& p : synth_presets(registry)) known += (known.empty() ? "" : ", ") + p.name;
    if (known.empty()) known = "no loaded family plugin describes one";
    return fail(ErrorKind::invalid_argument, "--preset \"" + name + "\" is not a known preset (" + known + ")");
}

// The family's tensor list as the writer plans it, after the checks a plugin's mistake would
// otherwise turn into a broken file: a name given twice, an empty name, a dimension below 1.
Expected<std::vector<PlannedTensor>> planned_tensors(const std::string& plugin, const std::string& preset,
                                                     std::vector<SynthTensor> tensors) {
    const std::string who = plugin + " synth preset \"" + preset + "\"";
    if (tensors.empty()) return fail(ErrorKind::invalid_argument, who + ": no tensors");
    std::vector<PlannedTensor> out;
    out.reserve(tensors.size());
    std::vector<std::string_view> names;
    names.reserve(tensors.size());
    for (SynthTensor& t : tensors) {
        if (t.name.empty()) return fail(ErrorKind::invalid_argument, who + ": a tensor without a name");
        for (int64_t d : t.shape)
            if (d < 1) return fail(ErrorKind::invalid_argument, who + ": tensor " + t.name + " has a dimension below 1");
        const uint64_t n = bytes_of(t.dtype, t.shape);
        out.push_back({std::move(t.name), t.dtype, std::move(t.shape), n, t.fill});
    }
    for (const PlannedTensor& t : out) names.push_back(t.name);
    std::sort(names.begin(), names.end());
    if (auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end())
        return fail(ErrorKind::invalid_argument, who + ": tensor " + std::string(*twice) + " is listed twice");
    return out;
}

}  // namespace

uint64_t SynthPlan::total_bytes() const {
    uint64_t n = 0;
    for (const auto& t : tensors) n += t.nbytes;
    return n;
}

std::vector<SynthPresetInfo> synth_presets(const PluginRegistry& registry) {
    std::vector<SynthPresetInfo> out;
    for (const LoadedPlugin* plugin : registry.of_kind(PluginKind::model))
        if (plugin->family)
            for (const SynthPreset& p : plugin->family->synth_presets()) out.push_back({p.name, p.description, plugin->name});
    return out;
}

Expected<std::vector<SynthPresetInfo>> synth_presets(const PluginSearch& search) {
    STORMO_TRY_ASSIGN(auto registry, PluginRegistry::discover(search));
    return synth_presets(registry);
}

Expected<SynthPlan> plan_synth(const SynthOptions& options) {
    STORMO_TRY_ASSIGN(auto registry, PluginRegistry::discover(options.search));
    return plan_synth(registry, options);
}

Expected<SynthPlan> plan_synth(const PluginRegistry& registry, const SynthOptions& options) {
    STORMO_TRY_ASSIGN(const PresetOwner owner, find_preset(registry, options.preset));
    const SynthPreset& preset = owner.preset;
    const int64_t layers = options.layers.value_or(preset.layers);
    const int64_t experts = options.experts.value_or(preset.experts);
    if (experts < preset.experts_per_token || experts > preset.experts)
        return fail(ErrorKind::invalid_argument, "--experts must be between the experts per token (" +
                                                     std::to_string(preset.experts_per_token) + ") and the model's " +
                                                     std::to_string(preset.experts) + ", got " + std::to_string(experts));
    if (layers < 1 || layers > kMaxLayers)
        return fail(ErrorKind::invalid_argument, "--layers must be between 1 and " + std::to_string(kMaxLayers) +
                                                     ", got " + std::to_string(layers));
    if (options.max_shard_bytes < (uint64_t{1} << 20))
        return fail(ErrorKind::invalid_argument, "the shard size limit must be at least 1 MiB");
    STORMO_TRY_ASSIGN(SynthCheckpoint checkpoint,
                      owner.family->synth_checkpoint({preset.name, static_cast<int>(layers), static_cast<int>(experts)}));
    SynthPlan plan;
    plan.preset = options.preset;
    plan.family = owner.plugin;
    plan.seed = options.seed;
    plan.layers = static_cast<int>(layers);
    plan.config_json = std::move(checkpoint.config_json);
    plan.generation_config_json = std::move(checkpoint.generation_config_json);
    STORMO_TRY_ASSIGN(plan.tensors, planned_tensors(owner.plugin, preset.name, std::move(checkpoint.tensors)));
    // A family's config.json that does not parse would make a checkpoint nothing can open.
    for (const std::string* json : {&plan.config_json, &plan.generation_config_json})
        STORMO_TRY(ModelConfig::parse(*json, owner.plugin + " synth preset \"" + preset.name + "\""));
    plan.shards = plan_shards(plan.tensors, options.max_shard_bytes);
    return plan;
}

void fill_tensor_bytes(const SynthPlan& plan, size_t index, uint64_t offset, std::byte* out, size_t size) {
    const PlannedTensor& t = plan.tensors.at(index);
    const uint64_t key = tensor_key(plan.seed, t.name);
    std::byte word[8];
    uint64_t at = offset;
    const uint64_t end = offset + size;
    // A leading partial word, whole words straight into the output, a trailing partial word.
    if (at % 8 != 0) {
        fill_words(t.fill, key, at / 8, 1, word);
        const uint64_t take = std::min<uint64_t>(8 - at % 8, end - at);
        std::memcpy(out, word + at % 8, static_cast<size_t>(take));
        at += take;
    }
    const size_t whole = static_cast<size_t>((end - at) / 8);
    fill_words(t.fill, key, at / 8, whole, out + (at - offset));
    at += 8 * static_cast<uint64_t>(whole);
    if (at < end) {
        fill_words(t.fill, key, at / 8, 1, word);
        std::memcpy(out + (at - offset), word, static_cast<size_t>(end - at));
    }
}

Expected<void> write_synth(const SynthPlan& plan, const std::string& out_dir, const WriteOptions& options) {
    if (options.chunk_bytes < 8 || options.chunk_bytes % 8 != 0)
        return fail(ErrorKind::invalid_argument, "synth: the chunk size must be a positive multiple of 8 bytes");
    if (auto d = prepare_directory(out_dir, options.force); !d) return d;
    WriteState st{plan, options, {}, 0, Clock::now()};
    try {
        st.buffer.resize(static_cast<size_t>(options.chunk_bytes));
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::resource, "synth: cannot allocate a write buffer of " + std::to_string(options.chunk_bytes) + " bytes");
    }
    const fs::path dir(out_dir);
    for (const PlannedShard& shard : plan.shards)
        if (auto w = write_shard(st, shard, (dir / shard.file_name).string()); !w) return w;
    if (plan.shards.size() > 1)
        if (auto w = write_file((dir / "model.safetensors.index.json").string(), index_json(plan)); !w) return w;
    if (auto w = write_file((dir / "generation_config.json").string(), plan.generation_config_json); !w) return w;
    return write_file((dir / "config.json").string(), plan.config_json);
}

}  // namespace stormo::synth
