#pragma once
// The model-family interface: what a family plugin implements, and what the host gives it.
// A family knows one architecture's math and tensor names; the host owns files, memory, the KV
// cache, the expert store, threads and the forward driver.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/gguf_view.hpp"
#include "stormo/json.hpp"
#include "stormo/kernels.hpp"
#include "stormo/packed_bf16.hpp"
#include "stormo/synth_preset.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

// What every tensor is for, for the census in `stormo inspect` and for placement. `draft`: a tensor
// of a layer the checkpoint carries for drafting (multi-token prediction), which the forward pass
// does not load; the host assigns it from ModelSummary::draft_layers (see tensor_role below).
enum class TensorRole : uint8_t { embedding, attention, norm, router, experts, dense_ffn, head, other, draft };
STORMO_API const char* tensor_role_name(TensorRole r);

// A tensor a family requires: the host checks name, dtype and shape before anything runs.
struct TensorDecl {
    std::string name;
    TensorRole role = TensorRole::other;
    std::vector<DType> dtypes;  // accepted dtypes
    Shape shape;                // exact shape
};

// One part of a routed expert (e.g. GPT-OSS "gate_up_blocks"). Checkpoints store experts either
// fused over the expert axis (one tensor [E, ...], expert e is slice e of dim 0) or one tensor per
// expert; `tensor` is then a pattern with "{e}" replaced by the expert id.
struct ExpertPartDecl {
    std::string part;
    std::string tensor;
    bool fused = true;
    std::vector<DType> dtypes;
    Shape expert_shape;  // the shape of one expert's slice
};

// Resolved bytes of one expert's part, valid while the expert is held.
struct ExpertPart {
    DType dtype = DType::F32;
    Shape shape;
    const std::byte* data = nullptr;
};

struct ExpertView {
    int layer = 0;
    int expert = 0;
    std::vector<ExpertPart> parts;  // in the order of the layer's ExpertPartDecl list
};

// Per-position KV storage a layer needs, declared by the family and owned by the host session:
// e.g. GPT-OSS {"k", kv_heads*head_dim}, {"v", kv_heads*head_dim}; an MLA latent is one buffer.
struct KvBufferDecl {
    std::string name;
    size_t floats_per_position = 0;
    // > 0: the layer never looks more than `window` positions back (a sliding window), so the
    // session keeps only a ring of the last rows instead of one row per position of the context.
    size_t window = 0;
    // per_position: a row per position (KV, latents, indexer keys). state: one row for the whole
    // sequence that every step overwrites in place (a linear-attention or recurrent layer's state):
    // the layer treats it as zeros at position 0 and updates it row by row through a block; the
    // session copies it into snapshots, and a rewind anywhere but to a snapshot owes a replay.
    enum class Kind : uint8_t { per_position, state };
    Kind kind = Kind::per_position;
};

enum class FfnKind : uint8_t { dense, moe };

struct LayerPlan {
    std::vector<KvBufferDecl> kv;
    FfnKind ffn = FfnKind::moe;
    int n_experts = 0;           // routed experts (moe)
    int top_k = 0;               // experts per token (moe)
    bool shared_experts = false; // a shared FFN added to the routed sum
    std::vector<ExpertPartDecl> expert_parts;
};

// One KV buffer of a layer as the session holds it. Position p lives at index i = p % rows, in
// page i / page_rows, row i % page_rows of it; a row is `width` floats and a page's rows follow
// each other from `offset` floats past the page's start. A full-attention buffer is paged
// (rows == the session's capacity): sessions that hold the same prompt prefix hold its pages
// once, and each page is allocated when a position in it is first written. A sliding window's
// ring is one page of `rows` rows, long enough for the window plus one forward block (a block
// writes all its rows before attending, so its first row's keys must survive its last row's
// writes).
struct KvBufferView {
    float* const* pages = nullptr;  // the page table: pages[k] starts page k
    size_t offset = 0;
    size_t page_rows = 0;
    size_t rows = 0;
    size_t width = 0;
};

// The session's KV rows of one layer: one KvBufferView per buffer the layer declared.
struct KvView {
    std::vector<KvBufferView> buffers;
    size_t capacity = 0;  // positions the session can hold
    // The row of `position` in buffer `buffer`.
    float* at(size_t buffer, int64_t position) const {
        const KvBufferView& b = buffers[buffer];
        const size_t i = static_cast<size_t>(position) % b.rows;
        return b.pages[i / b.page_rows] + b.offset + (i % b.page_rows) * b.width;
    }
    // How many positions from `position` on have their rows one after another in memory (to the
    // end of its page): a reader that takes rows in runs breaks them there.
    size_t run(size_t buffer, int64_t position) const {
        const KvBufferView& b = buffers[buffer];
        return b.page_rows - (static_cast<size_t>(position) % b.rows) % b.page_rows;
    }
};

// The rows of one sequence in a block: rows [first_row, first_row + n_rows) belong to it and
// attend only to its KV. A block holds one sequence (a prompt, a decode step) or several (a
// batched step of several requests); each sequence's rows are contiguous and in position order.
struct SequenceKv {
    size_t first_row = 0;
    size_t n_rows = 0;
    KvView kv;
};
// Every sequence of a block, in row order, covering its rows.
using BlockKv = std::span<const SequenceKv>;

// Rows of activations: n rows of `width` floats, contiguous.
struct Rows {
    float* data = nullptr;
    size_t n = 0;
    size_t width = 0;
    float* row(size_t r) const { return data + r * width; }
};

// The routing of a block: per row, top_k (expert, weight) in the router's canonical order; the
// host reduces expert outputs in exactly this order.
struct Routing {
    size_t top_k = 0;
    std::vector<int32_t> experts;  // [n_rows * top_k]
    std::vector<float> weights;    // [n_rows * top_k]
};

// Named intermediates for `--dump`: a family reports them, the host writes the ones asked for.
class STORMO_API Tracer {
public:
    virtual ~Tracer();
    virtual bool wants(int layer) const = 0;
    // data holds n_rows rows of `width` floats for the block's positions.
    virtual void record(const std::string& name, int layer, const float* data, size_t n_rows,
                        size_t width, std::span<const int64_t> positions) = 0;
};

// One forward step's context: the positions of the block's rows and an optional tracer.
struct StepContext {
    std::span<const int64_t> positions;  // each row's position in its sequence, ascending within it
    Tracer* tracer = nullptr;
};

// What the pipeline calls. All activations are float32. Heavy math goes through compute().
class STORMO_API Model {
public:
    virtual ~Model();
    virtual int n_layers() const = 0;
    virtual size_t hidden_size() const = 0;
    virtual size_t vocab_size() const = 0;
    virtual const LayerPlan& layer_plan(int layer) const = 0;

    virtual Expected<void> embed(std::span<const int32_t> tokens, Rows out) const = 0;
    enum class NormSite { attention, ffn, final };
    virtual void norm(NormSite site, int layer, const Rows& in, Rows out) const = 0;
    // Writes each sequence's rows' K/V into its kv at ctx.positions, attends each row over its own
    // sequence's positions up to its own, and writes the attention output (after o_proj) to out.
    // Every row's output is the bits it gets in a block of its sequence alone.
    // An error (a broken precondition: a position past the KV capacity) fails the request.
    virtual Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv,
                                     Rows out) const = 0;
    virtual Routing route(int layer, const StepContext& ctx, const Rows& normed) const = 0;
    // One expert over the rows that chose it: out gets the expert's output before routing weights.
    // Reads the expert and the config only, never a dense tensor: a rank of a distributed run
    // that computes experts for another loads its dense tensors as placeholders (docs/plugins.md).
    virtual Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const = 0;
    // Dense FFN layers, and the shared experts of MoE layers that have them.
    virtual Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const = 0;
    virtual void head(const Rows& normed, Rows logits) const = 0;
    // The matrix head() multiplies by, when head() is exactly matmul(compute, *head_weight(),
    // normed, ...) (every toolkit family); nullptr otherwise. The host's bounded head
    // (docs/head_bound.md) keeps a compact copy of it and recomputes single rows of it; a model
    // returning nullptr always gets the full head.
    virtual const WeightView* head_weight() const;
};

// A checkpoint's multi-token-prediction layer as a draft model (DeepSeek-V3's and GLM-5's
// `num_nextn_predict_layers`; docs/speculation-mtp.md). Its layers are numbered as the
// checkpoint's: layer draft_layer() (num_hidden_layers + index) is the MTP decoder layer, the
// layers before it are empty plans (no KV, never run), so its experts are the store's layer
// draft_layer(). The host runs its decoder layer from draft_input() instead of embed(); the
// final norm is the layer's shared_head.norm and head() the head it predicts with.
class STORMO_API DraftModel : public Model {
public:
    ~DraftModel() override;
    virtual int draft_layer() const = 0;
    // The decoder layer's input rows: eh_proj([enorm(embed(tokens[i])) ; hnorm(hidden.row(i))]),
    // hidden holding the main model's final-normed rows (or a carried row when chaining).
    virtual Expected<void> draft_input(std::span<const int32_t> tokens, const Rows& hidden, Rows out) const = 0;
    // What a chained draft carries into the next step's hnorm: true, the layer's output after the
    // final norm (GLM-5); false, the raw output before it (DeepSeek-V3).
    virtual bool carries_normed() const = 0;
};

// Given by the host to a family's load: the checkpoint and the compute.
class STORMO_API LoadContext {
public:
    virtual ~LoadContext();
    virtual const ModelConfig& config() const = 0;
    virtual const std::optional<ModelConfig>& generation_config() const = 0;
    virtual bool has_tensor(std::string_view name) const = 0;
    // Checks the declaration against the checkpoint and reads the tensor into RAM.
    virtual Expected<Tensor> load(const TensorDecl& decl) = 0;
    // Checks every expert part of every layer against the checkpoint (names, dtypes, shapes);
    // the host's expert store serves them from then on.
    virtual Expected<void> declare_experts(int layer, const std::vector<ExpertPartDecl>& parts,
                                           int n_experts) = 0;
    virtual Compute compute() const = 0;
    // The resident form of a dense BF16 out_in matrix just loaded: a BF16_PACKED copy (the same
    // values in about 0.75 of the bytes, stormo/packed_bf16_layout.hpp) and the buffer holding it,
    // or nullopt to keep the matrix as loaded (packing turned off, or it would not pay). The host
    // decides and counts the packed bytes as the tensor's.
    virtual std::optional<packed_bf16::Packed> pack_bf16(const std::string& name, const WeightView& bf16);
};

// What `stormo inspect` shows of a model without loading it.
struct ModelSummary {
    std::vector<std::pair<std::string, int64_t>> dimensions;  // read from config.json, in print order
    int n_layers = 0;
    int n_moe_layers = 0;
    int n_experts = 0;            // routed experts per MoE layer
    int top_k = 0;
    size_t hidden_size = 0;
    size_t vocab_size = 0;
    size_t kv_floats_per_token = 0;  // over all layers
    // Every layer's KV buffers, in layer order, as its LayerPlan will declare them: with them the
    // host plans a sliding window's ring as the session will hold it. Empty: kv_floats_per_token
    // floats for every position of the context.
    std::vector<KvBufferDecl> kv_buffers;
    // Name prefixes of the layers the checkpoint carries for drafting (DeepSeek-V3's and GLM-5's
    // multi-token-prediction layers, "model.layers.61."): recognised, counted apart from the
    // dense part and the routed experts, loaded only as a draft model (Family::load_draft).
    std::vector<std::string> draft_layers;
};

class STORMO_API Family {
public:
    virtual ~Family();
    virtual Expected<ModelSummary> summarize(const ModelConfig& config) const = 0;
    // The role of a checkpoint tensor by its name (experts, attention, ...).
    virtual TensorRole classify(std::string_view tensor_name) const = 0;
    virtual Expected<std::unique_ptr<Model>> load(LoadContext& ctx) const = 0;
    // The checkpoint's draft layer `index` (of ModelSummary::draft_layers) as a draft model, loaded
    // after `main` through the same context (its experts declared as layer draft_layer()); `main`
    // outlives it (it may use main's embedding and head). Unsupported by default.
    virtual Expected<std::unique_ptr<DraftModel>> load_draft(LoadContext& ctx, const Model& main, int index) const;
    // GGUF: the general.architecture values (llama.cpp's names) this family maps, none by default;
    // and the mapping of a file of one of them onto its config.json and checkpoint tensors.
    virtual std::vector<std::string> gguf_architectures() const;
    virtual Expected<GgufMappedModel> map_gguf(const GgufView& file) const;
    // The synthetic checkpoints `stormo synth` writes in this family's shapes (none by default),
    // and one of them at a depth and expert count the host checked against the preset's bounds.
    virtual std::vector<SynthPreset> synth_presets() const;
    virtual Expected<SynthCheckpoint> synth_checkpoint(const SynthRequest& request) const;
};

// A checkpoint tensor's role in a model: `draft` under one of the summary's draft layers, else
// what the family classifies it as. Every census of a checkpoint (inspect, the bench) goes by it.
STORMO_API TensorRole tensor_role(const Family& family, const ModelSummary& summary, std::string_view tensor_name);

}  // namespace stormo
