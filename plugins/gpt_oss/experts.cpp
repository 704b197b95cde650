// GPT-OSS routed experts: the parts each expert is made of, in the three forms checkpoints store
// them (transformers' BF16 [in, out] matrices, transformers' MXFP4 blocks + scales [out, in/32],
// or a GGUF file's stacked nn.Linear matrices in any matrix type), and one expert's FFN over the
// rows that chose it:
//   gate, up = x W_g + b_g, x W_u + b_u; act = clamped SwiGLU(gate, up); out = act W_down + b_down.
// transformers interleaves gate and up in one matrix (gate at even outputs); llama.cpp keeps them
// apart. Each output is the same dot product either way, so the forms give the same values.
#include <algorithm>
#include <limits>

#include "gpt_oss_model.hpp"
#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/swiglu.hpp"
#include "tensor_names.hpp"

namespace stormo::gpt_oss {
namespace {

// The constant transformers uses in the gate's sigmoid (GptOssExperts.alpha).
constexpr float kSwigluAlpha = 1.702f;

// Non-quantized expert tensors are BF16 in every transformers GPT-OSS checkpoint; a GGUF file's
// are F32, F16, BF16 or a block type.
const std::vector<DType> kDenseDtypes = {DType::BF16, DType::F32};
const std::vector<DType> kBiasDtypes = {DType::BF16, DType::F32};
const std::vector<DType> kLinearDtypes = toolkit::with_gguf_blocks({DType::BF16, DType::F32, DType::F16});
constexpr int64_t kMxfp4Block = 32;  // values per E8M0 scale
constexpr int64_t kMxfp4Bytes = 16;  // bytes per block (two E2M1 nibbles a byte)

// Part order of expert_part_decls, which is the order ExpertView.parts arrives in.
enum DensePart : size_t { dense_gate_up, dense_gate_up_bias, dense_down, dense_down_bias, dense_count };
enum Mxfp4Part : size_t {
    mx_gate_up_blocks,
    mx_gate_up_scales,
    mx_gate_up_bias,
    mx_down_blocks,
    mx_down_scales,
    mx_down_bias,
    mx_count
};
enum LinearPart : size_t { lin_gate, lin_gate_bias, lin_up, lin_up_bias, lin_down, lin_down_bias, lin_count };

// One expert's matrices and biases, as views over its resolved parts: `gate_up` is gate and up
// interleaved, or, when `up` is set, the gate alone.
struct ExpertMatrices {
    WeightView gate_up;
    std::optional<WeightView> up;
    WeightView down;
    const ExpertPart* gate_up_bias = nullptr;
    const ExpertPart* up_bias = nullptr;
    const ExpertPart* down_bias = nullptr;
};

bool has_dtype(const ExpertPart& p, const std::vector<DType>& allowed) {
    return std::find(allowed.begin(), allowed.end(), p.dtype) != allowed.end() && p.data != nullptr;
}

bool linear_matrices(const ExpertView& e, size_t hidden, size_t inter, ExpertMatrices& m) {
    const auto& p = e.parts;
    if (p.size() != lin_count) return false;
    for (size_t i : {size_t{lin_gate}, size_t{lin_up}, size_t{lin_down}})
        if (!has_dtype(p[i], kLinearDtypes)) return false;
    for (size_t i : {size_t{lin_gate_bias}, size_t{lin_up_bias}, size_t{lin_down_bias}})
        if (!has_dtype(p[i], kBiasDtypes)) return false;
    const auto view = [](const ExpertPart& part, size_t rows, size_t cols) -> std::optional<WeightView> {
        auto format = toolkit::matrix_format(part.dtype, "an expert part");
        if (!format) return std::nullopt;
        return WeightView{*format, Layout::out_in, part.data, nullptr, rows, cols};
    };
    const auto gate = view(p[lin_gate], inter, hidden), up = view(p[lin_up], inter, hidden), down = view(p[lin_down], hidden, inter);
    if (!gate || !up || !down) return false;
    m.gate_up = *gate;
    m.up = *up;
    m.down = *down;
    m.gate_up_bias = &p[lin_gate_bias];
    m.up_bias = &p[lin_up_bias];
    m.down_bias = &p[lin_down_bias];
    return true;
}

// Reads the views out of the parts; false when the host handed parts that break the declaration.
bool expert_matrices(const ExpertView& e, ExpertForm form, size_t hidden, size_t inter, ExpertMatrices& m) {
    const auto& p = e.parts;
    if (form == ExpertForm::linear) return linear_matrices(e, hidden, inter, m);
    if (form == ExpertForm::mxfp4) {
        if (p.size() != mx_count) return false;
        for (size_t i : {size_t{mx_gate_up_blocks}, size_t{mx_gate_up_scales}, size_t{mx_down_blocks},
                         size_t{mx_down_scales}})
            if (!has_dtype(p[i], {DType::U8})) return false;
        if (!has_dtype(p[mx_gate_up_bias], kBiasDtypes) || !has_dtype(p[mx_down_bias], kBiasDtypes)) return false;
        m.gate_up = WeightView{WeightFormat::MXFP4, Layout::out_in, p[mx_gate_up_blocks].data,
                               reinterpret_cast<const uint8_t*>(p[mx_gate_up_scales].data), 2 * inter, hidden};
        m.down = WeightView{WeightFormat::MXFP4, Layout::out_in, p[mx_down_blocks].data,
                            reinterpret_cast<const uint8_t*>(p[mx_down_scales].data), hidden, inter};
        m.gate_up_bias = &p[mx_gate_up_bias];
        m.down_bias = &p[mx_down_bias];
        return true;
    }
    if (p.size() != dense_count) return false;
    if (!has_dtype(p[dense_gate_up], kDenseDtypes) || !has_dtype(p[dense_down], kDenseDtypes)) return false;
    if (!has_dtype(p[dense_gate_up_bias], kBiasDtypes) || !has_dtype(p[dense_down_bias], kBiasDtypes)) return false;
    // transformers stores these [in, out]: row i holds input i's weight for every output.
    const auto format = [](const ExpertPart& part) { return part.dtype == DType::F32 ? WeightFormat::F32 : WeightFormat::BF16; };
    m.gate_up = WeightView{format(p[dense_gate_up]), Layout::in_out, p[dense_gate_up].data, nullptr,
                           2 * inter, hidden};
    m.down = WeightView{format(p[dense_down]), Layout::in_out, p[dense_down].data, nullptr, hidden, inter};
    m.gate_up_bias = &p[dense_gate_up_bias];
    m.down_bias = &p[dense_down_bias];
    return true;
}

void add_bias_rows(float* rows, size_t n, size_t width, const ExpertPart& bias) {
    const std::vector<float> b = to_f32(bias.dtype, bias.data, width);
    for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < width; ++i) rows[r * width + i] += b[i];
}

}  // namespace

std::vector<ExpertPartDecl> expert_part_decls(const GptOssConfig& cfg, int layer, ExpertForm form) {
    const int64_t hidden = cfg.hidden_size, inter = cfg.intermediate_size;
    auto part = [layer](const char* name, std::vector<DType> dtypes, Shape shape) {
        return ExpertPartDecl{name, names::experts(layer, name), true, std::move(dtypes), std::move(shape)};
    };
    switch (form) {
        case ExpertForm::mxfp4:
            return {part("gate_up_proj_blocks", {DType::U8}, {2 * inter, hidden / kMxfp4Block, kMxfp4Bytes}),
                    part("gate_up_proj_scales", {DType::U8}, {2 * inter, hidden / kMxfp4Block}),
                    part("gate_up_proj_bias", kBiasDtypes, {2 * inter}),
                    part("down_proj_blocks", {DType::U8}, {hidden, inter / kMxfp4Block, kMxfp4Bytes}),
                    part("down_proj_scales", {DType::U8}, {hidden, inter / kMxfp4Block}),
                    part("down_proj_bias", kBiasDtypes, {hidden})};
        case ExpertForm::linear:
            return {part("gate_proj.weight", kLinearDtypes, {inter, hidden}), part("gate_proj.bias", kBiasDtypes, {inter}),
                    part("up_proj.weight", kLinearDtypes, {inter, hidden}), part("up_proj.bias", kBiasDtypes, {inter}),
                    part("down_proj.weight", kLinearDtypes, {hidden, inter}), part("down_proj.bias", kBiasDtypes, {hidden})};
        case ExpertForm::dense: break;
    }
    return {part("gate_up_proj", kDenseDtypes, {hidden, 2 * inter}), part("gate_up_proj_bias", kBiasDtypes, {2 * inter}),
            part("down_proj", kDenseDtypes, {inter, hidden}), part("down_proj_bias", kBiasDtypes, {hidden})};
}

Expected<ExpertForm> layer_expert_form(const GptOssConfig& cfg, const LoadContext& ctx, int layer) {
    const std::string module = names::experts_module(layer);
    const std::string blocks = names::experts(layer, "gate_up_proj_blocks");
    const std::string dense = names::experts(layer, "gate_up_proj");
    const std::string linear = names::experts(layer, "gate_proj.weight");
    const bool quantized = cfg.mxfp4 && !module_not_converted(cfg, module);
    if (ctx.has_tensor(linear)) {
        if (ctx.has_tensor(dense) || ctx.has_tensor(blocks))
            return fail(ErrorKind::mismatch, "tensors \"" + linear + "\" and \"" + (ctx.has_tensor(dense) ? dense : blocks) +
                                                 "\" both hold " + module + ": one checkpoint stores experts one way");
        return ExpertForm::linear;
    }
    if (quantized) {
        if (!ctx.has_tensor(blocks) && ctx.has_tensor(dense))
            return fail(ErrorKind::mismatch, "tensor \"" + blocks + "\" is missing: quantization_config says mxfp4 for " +
                                                 module + " but the checkpoint holds \"" + dense + "\"");
        return ExpertForm::mxfp4;
    }
    if (ctx.has_tensor(blocks))
        return fail(ErrorKind::mismatch,
                    "tensor \"" + blocks + "\" is MXFP4 but " +
                        (cfg.mxfp4 ? module + " is listed in quantization_config.modules_to_not_convert"
                                   : std::string("config.json has no quantization_config with quant_method mxfp4")));
    return ExpertForm::dense;
}

Expected<void> GptOssModel::expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const {
    const size_t n = in.n;
    const size_t hidden = static_cast<size_t>(cfg_.hidden_size), inter = static_cast<size_t>(cfg_.intermediate_size);
    ExpertMatrices m;
    if (!expert_matrices(expert, layers_.at(static_cast<size_t>(layer)).experts, hidden, inter, m))
        return fail(ErrorKind::internal, "gpt_oss layer " + std::to_string(layer) + " expert " +
                                             std::to_string(expert.expert) + ": the parts do not match their declaration");
    std::vector<float> act(n * inter);
    const float limit = static_cast<float>(cfg_.swiglu_limit);
    if (m.up) {
        std::vector<float> gate(n * inter), up(n * inter);
        matmul(compute_, m.gate_up, in.data, n, gate.data());
        add_bias_rows(gate.data(), n, inter, *m.gate_up_bias);
        matmul(compute_, *m.up, in.data, n, up.data());
        add_bias_rows(up.data(), n, inter, *m.up_bias);
        for (size_t r = 0; r < n; ++r)
            toolkit::clamped_swiglu_split(gate.data() + r * inter, up.data() + r * inter, inter, limit, kSwigluAlpha,
                                          act.data() + r * inter);
    } else {
        std::vector<float> gate_up(n * 2 * inter);
        matmul(compute_, m.gate_up, in.data, n, gate_up.data());
        add_bias_rows(gate_up.data(), n, 2 * inter, *m.gate_up_bias);
        for (size_t r = 0; r < n; ++r)
            toolkit::clamped_swiglu_interleaved(gate_up.data() + r * 2 * inter, inter, limit, kSwigluAlpha,
                                                act.data() + r * inter);
    }

    matmul(compute_, m.down, act.data(), n, out.data);
    add_bias_rows(out.data, n, hidden, *m.down_bias);
    return {};
}

}  // namespace stormo::gpt_oss
