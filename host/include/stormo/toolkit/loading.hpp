#pragma once
// Loading a family's resident tensors: each is declared to the host with its exact shape and the
// dtypes the family accepts (a mismatch fails the load, naming the tensor), and its bytes are kept
// for the model's life. Matrices stay in their checkpoint format; small vectors (norm weights,
// biases, sinks) are widened to float32.
#include <cstdint>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/fp8.hpp"

namespace stormo::toolkit {

// The matrix format of a checkpoint dtype (F32, BF16, F16, or a GGUF block type run in place),
// or an error naming the tensor.
Expected<WeightFormat> matrix_format(DType dtype, const std::string& tensor);

// The GGUF block types (DType::GGUF_*) a matrix may come in from a GGUF file, whatever the
// family's own checkpoints use: no safetensors file holds them, so accepting them costs nothing,
// and every matrix kernel runs them (WeightFormat::GGUF_*).
const std::vector<DType>& gguf_block_dtypes();
// `dtypes` and the block types.
std::vector<DType> with_gguf_blocks(std::vector<DType> dtypes);

class TensorLoader;

// The token embedding and the output head [vocab, hidden]; with tie_word_embeddings the embedding
// matrix is the head and `head_name` is not read.
struct EmbeddingAndHead {
    WeightView embedding;
    WeightView head;
};
Expected<EmbeddingAndHead> load_embedding_and_head(TensorLoader& load, const std::string& embedding_name,
                                                   const std::string& head_name, int64_t vocab, int64_t hidden,
                                                   bool tied);

// The q/k/v/o projections of a GQA attention module ("<module>.q_proj.weight", ... with ".bias"
// when `bias`), the checkpoint names transformers gives every family here.
Expected<void> load_gqa_projections(TensorLoader& load, const std::string& module, const GqaShape& shape,
                                    int64_t hidden, bool bias, GqaWeights& w);
// A pre-norm decoder layer's two norms ("<layer>input_layernorm.weight" and
// "<layer>post_attention_layernorm.weight") into `norms` at `layer`.
Expected<void> load_layer_norms(TensorLoader& load, const std::string& layer_prefix, int layer, int64_t hidden,
                                DecoderNorms& norms);

// num_hidden_layers bounded by the checkpoint before anything is sized by it: the last layer's
// `last_layer_tensor` must be there, else the field is refused naming that tensor.
Expected<void> require_last_layer(const LoadContext& ctx, int64_t n_layers, const std::string& last_layer_tensor);

class TensorLoader {
public:
    // `keep` owns the loaded bytes: the model holds it as long as its weight views live.
    // A matrix may also come in a GGUF block type (gguf_block_dtypes). With `fp8` enabled, a matrix may also be F8_E4M3 with its weight_scale_inv beside it.
    TensorLoader(LoadContext& ctx, std::vector<Tensor>& keep, std::vector<DType> matrix_dtypes,
                 std::vector<DType> vector_dtypes, Fp8Blocks fp8 = {})
        : ctx_(ctx),
          keep_(keep),
          matrix_dtypes_(with_gguf_blocks(std::move(matrix_dtypes))),
          vector_dtypes_(std::move(vector_dtypes)),
          fp8_(fp8) {
        if (fp8_.enabled()) matrix_dtypes_.push_back(DType::F8_E4M3);
    }

    // An nn.Linear-shaped matrix [rows (outputs), cols (inputs)]; an FP8 one brings its scales,
    // whose grid must be exactly the block grid of its shape (a missing or misshapen
    // weight_scale_inv fails naming it).
    // A dense BF16 one may come back packed (WeightFormat::BF16_PACKED) when the host packs such
    // matrices (LoadContext::pack_bf16): the same values, read by every kernel.
    Expected<WeightView> matrix(const std::string& name, TensorRole role, int64_t rows, int64_t cols);
    // As matrix(), but held exactly as the checkpoint stores it, never packed: for a matrix whose
    // bytes the family addresses itself (slices of rows, transposed views of them).
    Expected<WeightView> matrix_as_stored(const std::string& name, TensorRole role, int64_t rows, int64_t cols);
    Expected<std::vector<float>> vector(const std::string& name, TensorRole role, int64_t n);
    // "<base>.weight" [rows, cols] and, when with_bias, "<base>.bias" [rows].
    Expected<Linear> linear(const std::string& base, TensorRole role, int64_t rows, int64_t cols, bool with_bias);

private:
    Expected<WeightView> load_matrix(const std::string& name, TensorRole role, int64_t rows, int64_t cols, bool may_pack);

    LoadContext& ctx_;
    std::vector<Tensor>& keep_;
    std::vector<DType> matrix_dtypes_;
    std::vector<DType> vector_dtypes_;
    Fp8Blocks fp8_;
};

}  // namespace stormo::toolkit
