// Resident tensor loading (see stormo/toolkit/loading.hpp).
#include "stormo/toolkit/loading.hpp"

#include <algorithm>
#include <cstring>

#include "stormo/gguf_types.hpp"

namespace stormo::toolkit {

const std::vector<DType>& gguf_block_dtypes() {
    static const std::vector<DType> kBlocks = [] {
        std::vector<DType> blocks;
        for (int t = 0; t <= static_cast<int>(kLastDType); ++t)
            if (is_block_dtype(static_cast<DType>(t)) && gguf_type_of(static_cast<DType>(t))) blocks.push_back(static_cast<DType>(t));
        return blocks;
    }();
    return kBlocks;
}

std::vector<DType> with_gguf_blocks(std::vector<DType> dtypes) {
    for (DType d : gguf_block_dtypes())
        if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end()) dtypes.push_back(d);
    return dtypes;
}

Expected<WeightFormat> matrix_format(DType dtype, const std::string& tensor) {
    switch (dtype) {
        case DType::F32: return WeightFormat::F32;
        case DType::BF16: return WeightFormat::BF16;
        case DType::F16: return WeightFormat::F16;
        default: break;
    }
    if (const std::optional<GgufType> gguf = gguf_type_of(dtype); gguf && is_block_dtype(dtype))
        if (const std::optional<WeightFormat> f = gguf_weight_format(*gguf)) return *f;
    return fail(ErrorKind::unsupported, "tensor \"" + tensor + "\": dtype " + std::string(dtype_name(dtype)) +
                                            " is not a matrix format stormo computes with");
}

Expected<WeightView> TensorLoader::matrix(const std::string& name, TensorRole role, int64_t rows, int64_t cols) {
    return load_matrix(name, role, rows, cols, true);
}

Expected<WeightView> TensorLoader::matrix_as_stored(const std::string& name, TensorRole role, int64_t rows,
                                                    int64_t cols) {
    return load_matrix(name, role, rows, cols, false);
}

Expected<WeightView> TensorLoader::load_matrix(const std::string& name, TensorRole role, int64_t rows, int64_t cols,
                                               bool may_pack) {
    STORMO_TRY_ASSIGN(Tensor t, ctx_.load(TensorDecl{name, role, matrix_dtypes_, Shape{rows, cols}}));
    if (t.dtype == DType::F8_E4M3) {
        const std::string scale_name = fp8_scale_name(name);
        STORMO_TRY_ASSIGN(const Tensor scale, ctx_.load(TensorDecl{scale_name, role, fp8_scale_dtypes(),
                                                                   fp8_scale_grid(rows, cols, fp8_)}));
        const std::vector<float> floats = to_f32(scale);
        Tensor widened{scale_name, DType::F32, scale.shape, std::make_shared<AlignedBuffer>(floats.size() * sizeof(float))};
        std::memcpy(widened.buffer->data(), floats.data(), floats.size() * sizeof(float));
        const WeightView view = fp8_view(t.bytes(), widened.as<float>(), static_cast<size_t>(rows),
                                         static_cast<size_t>(cols), fp8_);
        keep_.push_back(std::move(t));
        keep_.push_back(std::move(widened));
        return view;
    }
    WeightView view;
    STORMO_TRY_ASSIGN(view.format, matrix_format(t.dtype, name));
    view.layout = Layout::out_in;
    view.data = t.bytes();
    view.rows = static_cast<size_t>(rows);
    view.cols = static_cast<size_t>(cols);
    if (may_pack && view.format == WeightFormat::BF16)
        if (std::optional<packed_bf16::Packed> packed = ctx_.pack_bf16(name, view)) {
            // The BF16 bytes go with t; the packed buffer is kept under the tensor's name.
            const auto size = static_cast<int64_t>(packed->storage->size());
            keep_.push_back(Tensor{name, DType::U8, Shape{size}, std::move(packed->storage)});
            return packed->view;
        }
    keep_.push_back(std::move(t));
    return view;
}

Expected<std::vector<float>> TensorLoader::vector(const std::string& name, TensorRole role, int64_t n) {
    STORMO_TRY_ASSIGN(const Tensor t, ctx_.load(TensorDecl{name, role, vector_dtypes_, Shape{n}}));
    return to_f32(t);
}

Expected<Linear> TensorLoader::linear(const std::string& base, TensorRole role, int64_t rows, int64_t cols,
                                      bool with_bias) {
    Linear l;
    STORMO_TRY_ASSIGN(l.weight, matrix(base + ".weight", role, rows, cols));
    if (with_bias) {
        STORMO_TRY_ASSIGN(l.bias, vector(base + ".bias", role, rows));
    }
    return l;
}

Expected<void> load_gqa_projections(TensorLoader& load, const std::string& module, const GqaShape& shape,
                                    int64_t hidden, bool bias, GqaWeights& w) {
    const auto q = static_cast<int64_t>(shape.q_width()), kv = static_cast<int64_t>(shape.kv_width());
    STORMO_TRY_ASSIGN(w.q, load.linear(module + ".q_proj", TensorRole::attention, q, hidden, bias));
    STORMO_TRY_ASSIGN(w.k, load.linear(module + ".k_proj", TensorRole::attention, kv, hidden, bias));
    STORMO_TRY_ASSIGN(w.v, load.linear(module + ".v_proj", TensorRole::attention, kv, hidden, bias));
    STORMO_TRY_ASSIGN(w.o, load.linear(module + ".o_proj", TensorRole::attention, hidden, q, bias));
    return {};
}

Expected<void> load_layer_norms(TensorLoader& load, const std::string& layer_prefix, int layer, int64_t hidden,
                                DecoderNorms& norms) {
    const size_t l = static_cast<size_t>(layer);
    if (norms.input.size() <= l) norms.input.resize(l + 1);
    if (norms.post_attention.size() <= l) norms.post_attention.resize(l + 1);
    STORMO_TRY_ASSIGN(norms.input[l], load.vector(layer_prefix + "input_layernorm.weight", TensorRole::norm, hidden));
    STORMO_TRY_ASSIGN(norms.post_attention[l],
                      load.vector(layer_prefix + "post_attention_layernorm.weight", TensorRole::norm, hidden));
    return {};
}

Expected<void> require_last_layer(const LoadContext& ctx, int64_t n_layers, const std::string& last_layer_tensor) {
    if (ctx.has_tensor(last_layer_tensor)) return {};
    return fail(ErrorKind::mismatch, ctx.config().source() + ": field \"num_hidden_layers\" is " + std::to_string(n_layers) +
                                         ", but the checkpoint has no tensor \"" + last_layer_tensor + "\"");
}

Expected<EmbeddingAndHead> load_embedding_and_head(TensorLoader& load, const std::string& embedding_name,
                                                   const std::string& head_name, int64_t vocab, int64_t hidden,
                                                   bool tied) {
    EmbeddingAndHead out;
    STORMO_TRY_ASSIGN(out.embedding, load.matrix(embedding_name, TensorRole::embedding, vocab, hidden));
    if (tied) {
        out.head = out.embedding;
        return out;
    }
    STORMO_TRY_ASSIGN(out.head, load.matrix(head_name, TensorRole::head, vocab, hidden));
    return out;
}

}  // namespace stormo::toolkit
