// Out-of-line key functions of the SDK's family interfaces: one vtable and one typeinfo each, in
// the core library, shared by the host and every plugin.
#include "stormo/family.hpp"

namespace stormo {

Tracer::~Tracer() = default;
Model::~Model() = default;
const WeightView* Model::head_weight() const { return nullptr; }
LoadContext::~LoadContext() = default;
std::optional<packed_bf16::Packed> LoadContext::pack_bf16(const std::string&, const WeightView&) { return std::nullopt; }
DraftModel::~DraftModel() = default;
Family::~Family() = default;
Expected<std::unique_ptr<DraftModel>> Family::load_draft(LoadContext&, const Model&, int index) const {
    return fail(ErrorKind::unsupported, "this family loads no draft layer (asked for draft layer " + std::to_string(index) + ")");
}
std::vector<std::string> Family::gguf_architectures() const { return {}; }
Expected<GgufMappedModel> Family::map_gguf(const GgufView& file) const {
    return fail(ErrorKind::unsupported, file.path() + ": this family maps no GGUF architecture");
}
std::vector<SynthPreset> Family::synth_presets() const { return {}; }
Expected<SynthCheckpoint> Family::synth_checkpoint(const SynthRequest& request) const {
    return fail(ErrorKind::unsupported, "synth preset \"" + request.preset + "\": this family describes no presets");
}

const char* tensor_role_name(TensorRole r) {
    switch (r) {
        case TensorRole::embedding: return "embedding";
        case TensorRole::attention: return "attention";
        case TensorRole::norm: return "norm";
        case TensorRole::router: return "router";
        case TensorRole::experts: return "experts";
        case TensorRole::dense_ffn: return "dense_ffn";
        case TensorRole::head: return "head";
        case TensorRole::other: return "other";
        case TensorRole::draft: return "draft";
    }
    return "other";
}

TensorRole tensor_role(const Family& family, const ModelSummary& summary, std::string_view tensor_name) {
    for (const std::string& prefix : summary.draft_layers)
        if (tensor_name.starts_with(prefix)) return TensorRole::draft;
    return family.classify(tensor_name);
}

}  // namespace stormo
