#pragma once
// The LoadContext the host gives a family: dense tensors are checked against the declaration and
// read into RAM (or, for a process that computes experts only, given as placeholders); expert
// declarations are resolved and handed to the expert store.
#include <set>
#include <string>
#include <vector>

#include "runtime/load_meter.hpp"

#include "store/expert_store.hpp"
#include "stormo/family.hpp"
#include "model/model_source.hpp"

namespace stormo {

struct LoadedTensorRecord {
    std::string name;
    TensorRole role;
    uint64_t nbytes;  // as held in RAM: a packed matrix's packed bytes; 0 for a placeholder
    bool packed = false;
    uint64_t unread = 0;  // a placeholder's bytes in the checkpoint, never read
};

// What a load does with the dense tensors: `read` them into RAM; or give the family
// `placeholders` (model/placeholder_tensor.hpp), never read, for a rank other than 0 of a
// distributed run: it computes only the experts it holds, with Model::expert_ffn, which reads
// nothing but the expert and the config, so the dense part would be gigabytes held for nothing.
enum class DenseWeights { read, placeholders };

class HostLoadContext final : public LoadContext {
public:
    // pack_bf16_matrices: hold dense BF16 matrices as BF16_PACKED where that saves bytes.
    // meter: counts the bytes of every dense tensor read (may be null).
    HostLoadContext(const ModelSource& source, Compute compute, bool pack_bf16_matrices, LoadMeter* meter = nullptr,
                    DenseWeights dense = DenseWeights::read)
        : source_(source), compute_(compute), pack_bf16_(pack_bf16_matrices), meter_(meter), dense_(dense) {}

    const ModelConfig& config() const override { return source_.config(); }
    const std::optional<ModelConfig>& generation_config() const override { return source_.generation_config(); }
    bool has_tensor(std::string_view name) const override { return source_.find(name) != nullptr; }
    Expected<Tensor> load(const TensorDecl& decl) override;
    Expected<void> declare_experts(int layer, const std::vector<ExpertPartDecl>& parts, int n_experts) override;
    Compute compute() const override { return compute_; }
    std::optional<packed_bf16::Packed> pack_bf16(const std::string& name, const WeightView& bf16) override;

    const std::vector<LoadedTensorRecord>& loaded() const { return loaded_; }
    // Every checkpoint tensor the family loaded or declared as an expert part.
    const std::set<std::string, std::less<>>& used_tensors() const { return used_; }
    // The experts every layer declared, resolved against the checkpoint; the engine hands them to
    // the store it chooses once it knows their size.
    std::vector<ExpertLayerLayout>& expert_layouts() { return expert_layouts_; }

private:
    const ModelSource& source_;
    std::vector<ExpertLayerLayout> expert_layouts_;
    Compute compute_;
    bool pack_bf16_ = true;
    LoadMeter* meter_ = nullptr;
    DenseWeights dense_ = DenseWeights::read;
    std::vector<LoadedTensorRecord> loaded_;
    std::set<std::string, std::less<>> used_;
};

// Adds the checkpoint tensors a layer's expert declarations resolved to.
void note_expert_tensors(const ExpertLayerLayout& layout, std::set<std::string, std::less<>>& used);

// Every checkpoint tensor is one the family used (a draft layer's, loaded or not, excepted, and
// the rotary inverse frequencies old checkpoints carry, which the families compute): one left
// over means config.json and the weights disagree (layers past num_hidden_layers, a shared expert
// the config turns off), and the model would answer from part of its weights with exit 0.
Expected<void> check_every_tensor_used(const ModelSource& source, const std::set<std::string, std::less<>>& used,
                                       const std::vector<std::string>& draft_layers, const std::string& model_dir);

}  // namespace stormo
