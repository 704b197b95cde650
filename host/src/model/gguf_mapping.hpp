#pragma once
// What maps one GGUF architecture onto a family (host-internal): metadata reads that name the
// file and key when they fail, tensor dequantization with a shape check, and the result every
// architecture's mapping returns (a config.json text and the family's tensors as float32).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf_split.hpp"
#include "stormo/error.hpp"
#include "stormo/tensor.hpp"

namespace stormo::gguf_mapping {

// A tensor as the family will read it: its checkpoint name and shape (row-major, PyTorch's order),
// float32 values.
struct FamilyTensor {
    std::string name;
    Shape shape;
    std::vector<float> values;
};

struct MappedModel {
    std::string config_json;        // what config.json would say
    std::optional<std::string> generation_config_json;
    std::vector<FamilyTensor> tensors;
};

// Typed reads of "<arch>.<key>" (or of a full key) from the model's metadata; errors name the file
// and the key.
class Keys {
public:
    Keys(const GgufHeader& h, std::string arch) : h_(h), arch_(std::move(arch)) {}
    std::string arch_key(std::string_view key) const { return arch_ + "." + std::string(key); }
    const GgufValue* find(std::string_view full_key) const { return h_.find(full_key); }
    // Non-negative integer of any integer type.
    Expected<uint64_t> count(std::string_view full_key) const;
    Expected<double> number(std::string_view full_key) const;
    Expected<std::string> text(std::string_view full_key) const;
    const std::string& path() const { return h_.path; }

private:
    const GgufHeader& h_;
    std::string arch_;
};

// The tensor's values as float32, after checking that it exists with exactly `ne` (ggml's order,
// fastest dimension first); errors name the file and the tensor.
Expected<std::vector<float>> dequantized(const GgufModel& model, const std::string& name, std::vector<uint64_t> ne);

// A JSON number that reads back as the same double.
std::string json_number(double v);

// The mapping of llama.cpp's "gpt-oss" architecture onto the gpt_oss family (gguf_gpt_oss.cpp).
Expected<MappedModel> map_gpt_oss(const GgufModel& model, const Keys& keys);

}  // namespace stormo::gguf_mapping
