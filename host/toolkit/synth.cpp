// The shared pieces of the families' synthetic checkpoints (stormo/toolkit/synth.hpp).
#include "stormo/toolkit/synth.hpp"

#include <cmath>

#include "stormo/fp8_codes.hpp"

namespace stormo::toolkit {

SynthFillSpec matrix_fill(int64_t fan_in, double gain) {
    return {SynthFill::uniform, 0.0f, static_cast<float>(gain * std::sqrt(3.0 / static_cast<double>(fan_in))), 0, 0};
}
SynthFillSpec norm_fill() { return {SynthFill::uniform, 1.0f, 0.1f, 0, 0}; }
SynthFillSpec bias_fill() { return {SynthFill::uniform, 0.0f, 0.02f, 0, 0}; }
SynthFillSpec embedding_fill() { return {SynthFill::uniform, 0.0f, 1.0f, 0, 0}; }

SynthFillSpec e4m3_fill() { return {SynthFill::e4m3_codes, 0.0f, 0.0f, 0, 0}; }
SynthFillSpec fp8_scale_fill(int64_t fan_in, double gain) {
    const double codes_rms = e4m3_gaussian_codes().rms;
    const auto centre = static_cast<float>(gain / std::sqrt(static_cast<double>(fan_in)) / codes_rms);
    return {SynthFill::uniform, centre, 0.1f * centre, 0, 0};
}

void add_tensor(std::vector<SynthTensor>& out, std::string name, DType dtype, Shape shape, SynthFillSpec fill) {
    out.push_back({std::move(name), dtype, std::move(shape), fill});
}

void add_linear(std::vector<SynthTensor>& out, const std::string& name, int64_t rows, int64_t cols, bool fp8,
                double gain, DType scale_dtype) {
    if (!fp8) {
        add_tensor(out, name, DType::BF16, {rows, cols}, matrix_fill(cols, gain));
        return;
    }
    add_tensor(out, name, DType::F8_E4M3, {rows, cols}, e4m3_fill());
    constexpr int64_t b = kFp8CheckpointBlock;
    add_tensor(out, name + "_scale_inv", scale_dtype, {(rows + b - 1) / b, (cols + b - 1) / b},
               fp8_scale_fill(cols, gain));
}

std::string int_list(const std::vector<int64_t>& values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(values[i]);
    }
    return s + "]";
}

std::string fp8_quantization_config_json() {
    const std::string block = std::to_string(kFp8CheckpointBlock);
    return "  \"quantization_config\": {\n    \"activation_scheme\": \"dynamic\",\n    \"fmt\": \"e4m3\",\n"
           "    \"quant_method\": \"fp8\",\n    \"weight_block_size\": [\n      " + block + ",\n      " + block +
           "\n    ]\n  },\n";
}

}  // namespace stormo::toolkit
