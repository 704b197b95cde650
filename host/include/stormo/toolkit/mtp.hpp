#pragma once
// The multi-token-prediction layer DeepSeek-V3 and GLM-5 share (docs/speculation-mtp.md,
// docs/family_deepseek_v3.md "MTP layer"), as a DraftModel: the layer's own tensors (enorm,
// hnorm, eh_proj, shared_head.norm, and embed_tokens / shared_head.head when the checkpoint
// stores them) here, its decoder layer a body the family loads with its own per-layer loaders at
// layer num_hidden_layers + index (no second copy of the layer code).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/fp8.hpp"
#include "stormo/toolkit/loading.hpp"

namespace stormo::toolkit {

struct MtpSpec {
    std::string prefix;        // the layer's names: "model.layers.61."
    int layer = 0;             // num_hidden_layers + index
    int64_t hidden = 0;
    int64_t vocab = 0;
    float rms_norm_eps = 0.0f; // enorm, hnorm and shared_head.norm
    bool carries_normed = false;  // GLM-5: shared_head.norm(g) is carried; DeepSeek-V3: the raw g
    std::string who;           // the family, in errors
    // How the family's loader takes matrices and vectors (TensorLoader's arguments).
    std::vector<DType> matrix_dtypes;
    std::vector<DType> vector_dtypes;
    Fp8Blocks fp8;
};

// `index` names one of the checkpoint's num_nextn_predict_layers (`mtp_layers`), else an error
// naming the family `who`.
Expected<void> check_mtp_index(int index, int64_t mtp_layers, const std::string& who);

// The draft model over `body` (the family's model with layer spec.layer loaded and the layers
// before it empty) and `main` (whose embedding and head serve when the layer stores none).
Expected<std::unique_ptr<DraftModel>> load_mtp_draft(LoadContext& ctx, const Compute& compute, std::unique_ptr<Model> body,
                                                     const Model& main, const MtpSpec& spec);

}  // namespace stormo::toolkit
