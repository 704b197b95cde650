#pragma once
// Synthetic checkpoints for benchmarks and tests: a real model's config.json, tensor names,
// shapes and dtypes (as the Hugging Face hub stores them), with seeded random values in ranges
// that keep the forward pass finite. The family plugins describe the presets (Family::synth_presets,
// stormo/synth_preset.hpp); this is the machinery that writes any of them. Written streaming: the
// headers first (every tensor's size is known up front), then each tensor generated in small
// chunks, so memory stays a few MiB whatever the model's size.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plugin_loading/plugin_registry.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/synth_preset.hpp"
#include "stormo/tensor.hpp"

namespace stormo::synth {

// How a tensor's values are drawn: a family states it in its preset (stormo/synth_preset.hpp).
using Fill = SynthFill;
using FillSpec = SynthFillSpec;

struct PlannedTensor {
    std::string name;
    DType dtype = DType::BF16;
    Shape shape;
    uint64_t nbytes = 0;
    FillSpec fill;
};

struct PlannedShard {
    std::string file_name;          // model-0000K-of-0000N.safetensors, or model.safetensors
    std::vector<size_t> tensors;    // indexes into SynthPlan::tensors, in file order
    uint64_t data_bytes = 0;
};

struct SynthPlan {
    std::string preset;
    std::string family;  // the plugin that described it
    uint64_t seed = 0;
    int layers = 0;
    std::string config_json;
    std::string generation_config_json;
    std::vector<PlannedTensor> tensors;  // in file order: embedding, layer 0, 1, ..., norm, head
    std::vector<PlannedShard> shards;
    uint64_t total_bytes() const;        // tensor data over every shard
};

struct SynthOptions {
    std::string preset;
    uint64_t seed = 0;
    std::optional<int> layers;                      // overrides num_hidden_layers
    std::optional<int> experts;                     // overrides the routed expert count (a cut that fits)
    uint64_t max_shard_bytes = uint64_t{4} << 30;   // shards are balanced below this
    PluginSearch search;                            // where the families that describe presets are found
};

struct SynthPresetInfo {
    std::string name;
    std::string description;
    std::string family;  // the plugin that describes it
};
// The presets of every family plugin the search loads, grouped by family in load order.
STORMO_API Expected<std::vector<SynthPresetInfo>> synth_presets(const PluginSearch& search = {});
STORMO_API std::vector<SynthPresetInfo> synth_presets(const PluginRegistry& registry);

// Everything about the checkpoint except the values: config, tensors, shards, as the family whose
// preset it is describes them. An unknown preset is an error listing the known ones.
STORMO_API Expected<SynthPlan> plan_synth(const SynthOptions& options);
STORMO_API Expected<SynthPlan> plan_synth(const PluginRegistry& registry, const SynthOptions& options);

// The bytes of tensor `index` in [offset, offset + size): deterministic in (seed, tensor name),
// independent of chunking, sharding and the other tensors. offset and size are multiples of 8
// except at the tensor's end.
STORMO_API void fill_tensor_bytes(const SynthPlan& plan, size_t index, uint64_t offset, std::byte* out, size_t size);

struct SynthProgress {
    uint64_t bytes_written = 0;
    uint64_t total_bytes = 0;
    double seconds = 0.0;
    std::string file;  // the shard being written
};

struct WriteOptions {
    bool force = false;                   // write into a non-empty directory (replacing a checkpoint)
    uint64_t chunk_bytes = uint64_t{8} << 20;
    std::function<void(const SynthProgress&)> progress;  // called every chunk
};

// Writes the plan into `out_dir` (created if missing). A non-empty directory is refused unless
// force. config.json is written last, so an interrupted write never looks like a model.
STORMO_API Expected<void> write_synth(const SynthPlan& plan, const std::string& out_dir, const WriteOptions& options);

}  // namespace stormo::synth
