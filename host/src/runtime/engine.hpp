#pragma once
// The engine wires one model run together: the plugins found, the family chosen for the model's
// config.json, the kernels chosen for this CPU (or forced), the thread pool, the model source,
// the expert store and the loaded model, with a pipeline over them.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compute/worker_pool.hpp"
#include "model/model_source.hpp"
#include "plugin_loading/library_bound.hpp"
#include "runtime/compact_head.hpp"
#include "runtime/engine_config.hpp"
#include "runtime/forward.hpp"
#include "runtime/host_load_context.hpp"
#include "runtime/load_meter.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/model_setup.hpp"
#include "runtime/mtp_draft_source.hpp"
#include "runtime/session.hpp"
#include "runtime/speculation.hpp"
#include "store/expert_store.hpp"
#include "stormo/kernels.hpp"

namespace stormo {

// What a rank of a distributed run can give the routed experts (EngineOptions::choose_experts).
struct ExpertShareRequest {
    // Every main layer's experts, as the checkpoint has them (a draft layer's are not split).
    const std::vector<ExpertLayerLayout>* layouts = nullptr;
    uint64_t expert_bytes = 0;  // all of them
    // The RAM the store may use for those experts: the asked budget in bytes, else (auto or all)
    // what is available once the dense part is in, less the KV cache and the reserve; its reason
    // says how. A draft layer held beside them takes its part first (its share of the bytes).
    uint64_t expert_memory = 0;
    std::string memory_reason;
};

struct EngineOptions {
    SetupRequest setup;            // the model directory, plugin search, family and kernels asked
    size_t threads = 0;            // 0: physical cores
    bool pin_threads = false;      // pin the pool's workers (WorkerPool); failing to is an error
    SizeSpec expert_budget;        // auto by default
    std::string expert_budget_origin = "--expert-budget";
    EvictionSettings eviction;
    bool direct_io = true;
    size_t io_threads = 4;
    PipelineSettings pipeline;
    // The KV context the budget leaves room for; 0: chosen from memory at open (choose_context),
    // at least context_need, and memory().context says which.
    size_t context = 4096;
    size_t context_need = 0;
    std::string context_origin = "--context";  // names the context in errors
    size_t rewind_slack = 0;       // positions sessions may rewind without a replay (Session)
    // Speculative decoding for the run's requests; when on, the sessions' rewind slack grows by
    // draft_max (the rows a verify step may reject), which the memory plan counts.
    SpeculationSettings speculation;
    // Names the speculation setting in errors (--speculate mtp on a model without an MTP layer).
    std::string speculation_origin = "speculate";
    // Sessions of `context` the run holds at once (a server's slots): the plan reserves each one's
    // KV cache before the expert budget. 0: as many as memory allows (plan_sequences).
    size_t sequences = 1;
    std::string sequences_origin = "--parallel";
    ActivationRoad activations = ActivationRoad::f32;  // int8: the integer road (Compute::int8_activations)
    HeadRead head = HeadRead::bounded;  // bounded: a compact copy of the head for greedy steps
    DenseBf16 dense_bf16 = DenseBf16::packed;  // packed: dense BF16 matrices held as BF16_PACKED
    // The load's progress in bytes of weights read (runtime/load_meter.hpp); empty: not reported.
    LoadProgress on_load_progress;
    // Wraps the streaming store's read backend (tests inject failed and short reads with it).
    std::function<std::unique_ptr<ReadBackend>(std::unique_ptr<ReadBackend>)> wrap_read_backend;
    // Which routed experts of each main layer this process keeps in its store (a rank of a
    // distributed run: its share of a layer of n_experts, distributed/expert_split.hpp); the
    // others are computed elsewhere. A loaded draft layer's are all kept. Empty: every one.
    std::function<bool(int expert, int n_experts)> holds_expert;
    // Chooses holds_expert once the dense part is in and before the store is planned, from what
    // this process can give the experts (a weighted split: the ranks measure and agree on shares).
    // Empty: holds_expert as given.
    std::function<Expected<std::function<bool(int, int)>>(const ExpertShareRequest&)> choose_experts;
    // Under mpirun: how long rank 0 waits for another rank's answer (docs/distributed.md).
    int rank_timeout_seconds = 60;
    RankSplit rank_split = RankSplit::even;  // how the ranks share the experts (distributed/rank_split.hpp)
    // placeholders: an experts-only engine (a rank other than 0 of a distributed run): the dense
    // part is never read, no draft layer is loaded (rank 0 holds its experts) and there is no
    // pipeline; only the store and the model's expert_ffn run.
    DenseWeights dense_weights = DenseWeights::read;
};

// The rewind slack sessions get: the options', plus draft_max when speculation is on. A verify
// block fits the session's block, so its rejected rows already lie within a ring's block rows;
// the slack keeps a later rewind (a chat's next turn) as free as it was without the drafts'
// overshoot.
size_t speculation_rewind_slack(const EngineOptions& options);

class Engine {
public:
    static Expected<std::unique_ptr<Engine>> open(const EngineOptions& options);
    ~Engine();

    const ModelSource& source() const { return *setup_.source; }
    const Model& model() const { return *model_; }
    // The forward pass. An experts-only engine (DenseWeights::placeholders) has none: asking for
    // it is a programming error that ends the process, never a pass over placeholder weights.
    Pipeline& pipeline();
    ExpertStore& store() { return *store_; }
    const KernelTable& kernels() const { return table_; }
    bool int8_activations() const { return int8_activations_; }
    // What the family computes with: the table, the pool and the road.
    Compute compute() const { return Compute{&table_, pool_.get(), int8_activations_}; }
    const std::string& family_name() const { return setup_.family.plugin->name; }
    const std::string& kernels_name() const { return setup_.kernels.name; }
    // The plugins chosen (the kernels' is null for the reference kernels): names and versions.
    const LoadedPlugin* family_plugin() const { return setup_.family.plugin; }
    const LoadedPlugin* kernels_plugin() const { return setup_.kernels.plugin; }
    const PluginRegistry& registry() const { return setup_.registry; }
    size_t threads() const { return pool_->size(); }
    const std::vector<int>& pinned_cpus() const { return pool_->pinned_cpus(); }
    uint64_t dense_bytes() const { return dense_bytes_; }
    // The checkpoint bytes of the dense tensors an experts-only engine gave as placeholders.
    uint64_t unread_dense_bytes() const { return unread_dense_bytes_; }
    // The dense matrices held as BF16_PACKED, by tensor name, with their bytes in RAM (what a
    // pass over each reads instead of its checkpoint bytes).
    const std::map<std::string, uint64_t, std::less<>>& packed_bytes() const { return packed_bytes_; }
    const ExpertBudget& expert_budget() const { return memory_.budget; }
    // The KV caches, sequences and expert budget planned at open (plan_run_memory: `inspect` plans
    // the same).
    const RunMemory& memory() const { return memory_; }
    // The sessions' rewind slack (EngineOptions::rewind_slack, grown for speculation).
    size_t rewind_slack() const { return rewind_slack_; }
    const SpeculationSettings& speculation() const { return speculation_; }
    // The compact copy greedy steps read the head by (nullptr with --head exact-only, or when
    // the head cannot be read by bound: head_note() says why).
    const CompactHead* compact_head() const { return compact_head_ ? &*compact_head_ : nullptr; }
    // The checkpoint's multi-token-prediction layer, loaded when the speculation mode drafts from
    // it (mtp, auto) and the checkpoint has one; null otherwise. Its tensors count in
    // dense_bytes(), its experts are the store's layer draft_layer(), its KV in memory().
    const DraftModel* draft_model() const { return draft_model_.get(); }
    const std::string& head_note() const { return head_note_; }

    // A session whose KV cache holds `capacity` positions; more than the model's
    // max_position_embeddings is an error. Its rings keep the engine's rewind slack.
    Expected<std::unique_ptr<Session>> new_session(size_t capacity, size_t max_block = Session::kDefaultMaxBlock) const;

private:
    Engine() = default;
    Expected<void> make_compact_head(HeadRead head);
    // Loads the MTP layer through `context` when the options' mode drafts from it and the
    // checkpoint has one; --speculate mtp without one fails here, before the weights load.
    Expected<void> check_draft_layers(const EngineOptions& options) const;
    Expected<void> load_draft_layer(const EngineOptions& options, HostLoadContext& context);
    void drop_model_page_cache() const;
    bool is_draft_layer(int layer) const;  // the loaded MTP layer's (its experts are the store's layer of that number)
    Expected<std::function<bool(int, int)>> choose_held_experts(const EngineOptions& options,
                                                                const std::vector<ExpertLayerLayout>& layouts,
                                                                RunMemoryRequest request) const;
    Expected<std::unique_ptr<ExpertStore>> make_store(const EngineOptions& options, std::vector<ExpertLayerLayout>& layouts,
                                                      LoadMeter& meter);
    ModelSetup setup_;
    KernelTable table_;
    bool int8_activations_ = false;
    std::unique_ptr<WorkerPool> pool_;
    std::unique_ptr<ExpertStore> store_;
    LibraryBound<Model> model_;  // keeps the family's library loaded while the model lives
    std::unique_ptr<Pipeline> pipeline_;
    LibraryBound<DraftModel> draft_model_;  // refers to model_: goes first
    std::unique_ptr<Pipeline> draft_pipeline_;
    MtpDraft mtp_;
    uint64_t dense_bytes_ = 0;
    uint64_t unread_dense_bytes_ = 0;
    std::map<std::string, uint64_t, std::less<>> packed_bytes_;
    size_t rewind_slack_ = 0;
    // The KV pages of every session this engine makes, set by the first (the pages' size is the
    // model's); behind a lock because sessions may be made on several threads.
    mutable std::unique_ptr<std::mutex> page_pool_mutex_ = std::make_unique<std::mutex>();
    mutable std::shared_ptr<PagePool> page_pool_;
    SpeculationSettings speculation_;
    RunMemory memory_;
    std::optional<CompactHead> compact_head_;
    std::string head_note_;
};

}  // namespace stormo
