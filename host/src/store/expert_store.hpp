#pragma once
// The expert store: the single boundary through which the forward pass gets routed experts'
// bytes. The forward pass never knows whether an expert came from a RAM slot or from disk.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/family.hpp"
#include "stormo/model_source.hpp"

namespace stormo {

// Where one expert's part lives in the checkpoint.
struct ExpertPartLocation {
    const TensorInfo* tensor = nullptr;
    uint64_t offset = 0;  // within the tensor's data
    uint64_t nbytes = 0;
};

// A layer's experts as the checkpoint stores them: locations[expert][part].
struct ExpertLayerLayout {
    int layer = 0;
    std::vector<ExpertPartDecl> parts;
    std::vector<std::vector<ExpertPartLocation>> locations;
    uint64_t bytes_per_expert() const;
};

struct ExpertStoreStats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t bytes_read = 0;
    double read_wait_seconds = 0.0;
};

class ExpertStore {
public:
    virtual ~ExpertStore() = default;
    virtual Expected<void> add_layer(ExpertLayerLayout layout) = 0;
    // Views of the requested experts, in the order asked; valid until release(layer).
    virtual Expected<std::vector<ExpertView>> acquire(int layer, std::span<const int32_t> experts) = 0;
    virtual void release(int layer) = 0;
    virtual ExpertStoreStats stats() const = 0;
    virtual uint64_t resident_bytes() const = 0;
    virtual uint64_t total_expert_bytes() const = 0;
};

// Every expert read into RAM at load, in its checkpoint format: the "all" budget.
std::unique_ptr<ExpertStore> make_resident_expert_store(const ModelSource& source);

// Resolves a family's declaration against the checkpoint: names, dtypes and shapes checked,
// errors naming the tensor.
Expected<ExpertLayerLayout> resolve_expert_layout(const ModelSource& source, int layer,
                                                  const std::vector<ExpertPartDecl>& parts,
                                                  int n_experts);

}  // namespace stormo
