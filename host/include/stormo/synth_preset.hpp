#pragma once
// Synthetic checkpoints a family describes for `stormo synth`: a preset names a real model (or a
// toy of its structure), and for a depth and expert count the family writes its config.json,
// generation_config.json and its tensor list (names, dtypes, shapes, and how each tensor's values
// are drawn). The host plans the shards, writes the headers and draws the values (seeded,
// counter-based), so a family states shapes and ranges, never bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "stormo/dtype.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

// How the host draws a tensor's values.
enum class SynthFill : uint8_t {
    uniform,       // BF16 (or F32 from BF16 draws), uniform in [center - half_width, center + half_width)
    random_bytes,  // U8, every byte uniform (MXFP4 blocks: two uniform E2M1 codes per byte)
    byte_range,    // U8, uniform in [byte_lo, byte_hi] (MXFP4 E8M0 scales)
    e4m3_codes,    // F8_E4M3, the codes of normal weights scaled to a block's amax (stormo/fp8_codes.hpp)
};

struct SynthFillSpec {
    SynthFill kind = SynthFill::uniform;
    float center = 0.0f;
    float half_width = 0.0f;
    uint8_t byte_lo = 0;
    uint8_t byte_hi = 0;
};

struct SynthTensor {
    std::string name;
    DType dtype = DType::BF16;
    Shape shape;
    SynthFillSpec fill;
};

// One preset as `stormo synth --list` shows it, with the bounds the host checks a request against.
struct SynthPreset {
    std::string name;         // "gpt-oss-20b": unique among the loaded families
    std::string description;  // one line
    int layers = 0;           // num_hidden_layers of the model (the default depth)
    int experts = 0;          // routed experts per MoE layer (the default and the most --experts takes)
    int experts_per_token = 0;  // the fewest --experts takes
};

// A preset at a depth and an expert count within its bounds (the model's own unless --layers /
// --experts asked otherwise).
struct SynthRequest {
    std::string preset;
    int layers = 0;
    int experts = 0;
};

struct SynthCheckpoint {
    std::string config_json;
    std::string generation_config_json;
    std::vector<SynthTensor> tensors;  // in file order: embedding, layer 0, 1, ..., norm, head
};

}  // namespace stormo
