#pragma once
// What families share in describing their synthetic checkpoints (stormo/synth_preset.hpp): the
// value ranges that keep a random model's forward pass finite, the tensor list's bookkeeping, the
// JSON pieces of a config.json, and the preset table lookup.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/synth_preset.hpp"

namespace stormo::toolkit {

// Dense matrices: uniform +-gain * sqrt(3 / fan_in), so a unit-variance input gives outputs of
// variance gain^2; norms around 1; biases small. Every layer's output then stays of unit order
// and the logits of the random model are finite and spread over a few units.
SynthFillSpec matrix_fill(int64_t fan_in, double gain = 1.0);
SynthFillSpec norm_fill();       // 1 +- 0.1
SynthFillSpec bias_fill();       // +-0.02
SynthFillSpec embedding_fill();  // +-1

// Random attention averages the values of the context, so at full gain every layer adds nearly
// the same vector to every position: by layer 24 of gpt-oss-20b that shared part dominated the
// residual and the routers sent most tokens to the same few experts (the top 8 of 32 took 80-90%
// of the choices), which would flatter every expert cache. At a quarter gain on o_proj the
// positions stay distinct and routing stays balanced at every depth (top 8 of 32: ~40% over 64
// random tokens, near what uniform choices give), as a trained router with load balancing aims for.
inline constexpr double kAttentionOutputGain = 0.25;

// FP8 E4M3 codes as a checkpoint holds them (normal weights scaled to a block's amax and rounded,
// stormo/fp8_codes.hpp); their block scales (weight_scale_inv, +-10% around their centre)
// give the weights an RMS of gain / sqrt(fan_in), as matrix_fill does.
SynthFillSpec e4m3_fill();
SynthFillSpec fp8_scale_fill(int64_t fan_in, double gain);

// Appends a tensor to a checkpoint's list.
void add_tensor(std::vector<SynthTensor>& out, std::string name, DType dtype, Shape shape, SynthFillSpec fill);
// A linear layer's weight [out, in]: BF16, or with `fp8` E4M3 codes and their
// `<name>_scale_inv` per block of kFp8CheckpointBlock x kFp8CheckpointBlock, in `scale_dtype`
// (BF16 as Qwen3's -FP8 checkpoints hold them, F32 as DeepSeek-V3's and Kimi-K2's).
void add_linear(std::vector<SynthTensor>& out, const std::string& name, int64_t rows, int64_t cols, bool fp8,
                double gain = 1.0, DType scale_dtype = DType::BF16);

// "[1, 2, 3]", as the hub's JSON writes a list of integers on one line.
std::string int_list(const std::vector<int64_t>& values);
// The quantization_config of the hub's block-scaled FP8 checkpoints, indented as a top-level key
// of config.json (ends with ",\n").
std::string fp8_quantization_config_json();

// The preset of `presets` (each with a `name`) called `name`, or nullptr.
template <class Preset>
const Preset* find_synth_preset(const std::vector<Preset>& presets, std::string_view name) {
    for (const Preset& p : presets)
        if (name == p.name) return &p;
    return nullptr;
}

// The preset `request` names, its routed experts cut to request.experts; an unknown name is an
// error naming the family.
template <class Preset>
Expected<Preset> requested_preset(const std::vector<Preset>& presets, const SynthRequest& request, std::string_view family) {
    const Preset* preset = find_synth_preset(presets, request.preset);
    if (preset == nullptr)
        return fail(ErrorKind::invalid_argument, std::string(family) + ": no synth preset \"" + request.preset + "\"");
    Preset cut = *preset;
    cut.experts = request.experts;
    return cut;
}

// What `stormo synth --list` shows of a family's presets (each with a name, a description and its
// layers, experts and top_k).
template <class Preset>
std::vector<SynthPreset> synth_preset_list(const std::vector<Preset>& presets) {
    std::vector<SynthPreset> out;
    for (const Preset& p : presets)
        out.push_back({p.name, p.description, static_cast<int>(p.layers), static_cast<int>(p.experts),
                       static_cast<int>(p.top_k)});
    return out;
}

}  // namespace stormo::toolkit
