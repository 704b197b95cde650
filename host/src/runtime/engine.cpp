#include "compute/kernel_table.hpp"
#include "runtime/engine.hpp"
#include "util/file.hpp"
#include "util/format_bytes.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "runtime/memory_plan.hpp"

namespace stormo {

Engine::~Engine() {
    // The pipelines and the store refer to the models and the source: they go first, and the
    // draft model refers to the main one.
    pipeline_.reset();
    draft_pipeline_.reset();
    draft_model_.reset();
    store_.reset();
    model_.reset();
}

namespace {

// What the load will read, before the family says: the checkpoint's tensors but the routed
// experts and a draft layer, plus the experts when every one is likely to fit in RAM (the store's
// plan, made once the dense part is in, settles it).
uint64_t bytes_to_read(const ModelSource& source, const Family& family, const SizeSpec& budget, DenseWeights weights) {
    uint64_t dense = 0, experts = 0;
    for (const TensorInfo& t : source.tensors()) {
        const TensorRole role = family.classify(t.name);
        if (role == TensorRole::experts) experts += t.nbytes;
        else if (role != TensorRole::draft) dense += t.nbytes;
    }
    const uint64_t available = available_memory().bytes;
    const bool resident = budget.kind == SizeSpec::Kind::all ||
                          (budget.kind == SizeSpec::Kind::bytes && budget.bytes >= experts) ||
                          (budget.kind == SizeSpec::Kind::automatic && available > dense + experts + memory_reserve(available));
    return (weights == DenseWeights::read ? dense : 0) + (resident ? experts : 0);
}

}  // namespace

Expected<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
    std::unique_ptr<Engine> engine(new Engine());
    STORMO_TRY(open_model_setup(options.setup, engine->setup_));
    // Before the weights load: a context beyond the model's positions fails in a moment.
    STORMO_TRY(check_context_fits(options.context > 0 ? options.context : options.context_need, options.context_origin,
                                  engine->source().config(), 0, AvailableMemory{UINT64_MAX, ""}));
    STORMO_TRY(engine->check_draft_layers(options));
    engine->table_ = build_kernel_table(engine->setup_.kernels);
    engine->int8_activations_ = options.activations == ActivationRoad::int8;
    engine->rewind_slack_ = speculation_rewind_slack(options);
    engine->speculation_ = options.speculation;

    engine->pool_ = std::make_unique<WorkerPool>(options.threads > 0 ? options.threads : physical_core_count(), options.pin_threads);
    if (!engine->pool_->pin_error().empty())
        return fail(ErrorKind::resource, "pin_threads: " + engine->pool_->pin_error());

    const LoadedPlugin& family = *engine->setup_.family.plugin;
    LoadMeter meter(options.on_load_progress,
                    options.on_load_progress
                        ? bytes_to_read(engine->source(), *family.family, options.expert_budget, options.dense_weights)
                        : 0);
    const bool experts_only = options.dense_weights == DenseWeights::placeholders;
    HostLoadContext context(engine->source(), engine->compute(), options.dense_bf16 == DenseBf16::packed, &meter,
                            options.dense_weights);
    auto model = family.family->load(context);
    if (!model) return tl::unexpected(with_context(model.error(), family.name + " could not load " + options.setup.model_dir));
    engine->model_ = bind_to_library(std::move(*model), family.library);
    if (!experts_only) {
        STORMO_TRY(engine->load_draft_layer(options, context));
    }
    {
        STORMO_TRY_ASSIGN(const ModelSummary summary, family.family->summarize(engine->source().config()));
        STORMO_TRY(check_every_tensor_used(engine->source(), context.used_tensors(), summary.draft_layers,
                                           options.setup.model_dir));
    }
    for (const auto& t : context.loaded()) {
        engine->dense_bytes_ += t.nbytes;
        engine->unread_dense_bytes_ += t.unread;
        if (t.packed) engine->packed_bytes_[t.name] = t.nbytes;
    }
    engine->drop_model_page_cache();
    // Before the expert budget is planned, so the copy's RAM is counted as the dense part is.
    STORMO_TRY(engine->make_compact_head(experts_only ? HeadRead::exact_only : options.head));

    STORMO_TRY_ASSIGN(auto store, engine->make_store(options, context.expert_layouts(), meter));
    engine->store_ = std::move(store);
    meter.finish();
    if (experts_only) return engine;
    engine->pipeline_ = std::make_unique<Pipeline>(*engine->model_, *engine->store_, options.pipeline);
    if (engine->compact_head_) engine->pipeline_->use_bounded_head(&*engine->compact_head_, engine->compute());
    engine->pipeline_->run_experts_on(engine->compute().pool);
    if (engine->draft_model_) {
        engine->draft_pipeline_ = std::make_unique<Pipeline>(*engine->draft_model_, *engine->store_, options.pipeline);
        engine->mtp_ = MtpDraft{engine->draft_model_.get(), engine->draft_pipeline_.get()};
        engine->pipeline_->draft_with(&engine->mtp_);
    }
    return engine;
}

Pipeline& Engine::pipeline() {
    if (!pipeline_) {
        std::fprintf(stderr, "stormo: internal error: the forward pass of an experts-only engine was asked for\n");
        std::abort();
    }
    return *pipeline_;
}

Expected<void> Engine::check_draft_layers(const EngineOptions& options) const {
    if (options.speculation.mode != SpeculateMode::mtp) return {};
    STORMO_TRY_ASSIGN(const ModelSummary summary, setup_.family.plugin->family->summarize(source().config()));
    return check_speculation(options.speculation, options.setup.model_dir, options.speculation_origin,
                             !summary.draft_layers.empty());
}

// The first draft layer (DeepSeek-V3 and GLM-5 carry one), after the main model and before the
// store, so its experts join the store's layers and its tensors the dense part.
Expected<void> Engine::load_draft_layer(const EngineOptions& options, HostLoadContext& context) {
    if (!loads_mtp(options.speculation.mode)) return {};
    const LoadedPlugin& family = *setup_.family.plugin;
    STORMO_TRY_ASSIGN(const ModelSummary summary, family.family->summarize(source().config()));
    if (summary.draft_layers.empty()) return {};
    auto draft = family.family->load_draft(context, *model_, 0);
    if (!draft)
        return tl::unexpected(with_context(draft.error(), family.name + " could not load the multi-token-prediction layer " +
                                                              summary.draft_layers.front() + " of " + options.setup.model_dir));
    draft_model_ = bind_to_library(std::move(*draft), family.library);
    return {};
}

// The dense part is in RAM now and the experts are read past the page cache (or streamed): the
// cached copy of the files would only crowd memory. A full page cache makes the kernel reclaim
// and compact while the experts load, so part of them lands in small pages and decode slows, and
// the next program on the machine starts with that work ahead of it (docs/expert_store.md).
void Engine::drop_model_page_cache() const {
    for (const std::string& f : source().files()) drop_page_cache(f);
}

Expected<void> Engine::make_compact_head(HeadRead head) {
    if (head == HeadRead::exact_only) {
        head_note_ = "exact-only (--head)";
        return {};
    }
    const WeightView* weight = model_->head_weight();
    if (weight == nullptr) {
        head_note_ = "full head: the family's head is not a plain matrix product";
        return {};
    }
    if (auto why = CompactHead::unsupported(*weight, compute())) {
        head_note_ = "full head: " + *why;
        return {};
    }
    if (const uint64_t own = CompactHead::own_bytes(*weight).value_or(0);
        !CompactHead::copy_saves_bytes(own, weight->rows, weight->cols)) {
        head_note_ = std::string("full head: its ") + weight_format_name(weight->format) + " rows (" + format_bytes(own) +
                     ") are no larger than an int8 copy (" + format_bytes(CompactHead::bytes_for(*weight)) + ")";
        return {};
    }
    STORMO_TRY_ASSIGN(auto compact, CompactHead::build(*weight, compute()));
    compact_head_ = std::move(compact);
    head_note_ = "bounded";
    return {};
}

// Everything resident when the budget holds every expert; else the streaming store. The budget is
// planned now, with the dense part already in RAM.
Expected<std::unique_ptr<ExpertStore>> Engine::make_store(const EngineOptions& options,
                                                          std::vector<ExpertLayerLayout>& layouts, LoadMeter& meter) {
    RunMemoryRequest request;
    request.config = &source().config();
    for (int l = 0; l < model_->n_layers(); ++l)
        for (const auto& kv : model_->layer_plan(l).kv) request.kv.push_back(kv);
    // A loaded MTP layer's KV is one more layer's per sequence (its own session, as long).
    if (draft_model_)
        for (const auto& kv : draft_model_->layer_plan(draft_model_->draft_layer()).kv) request.kv.push_back(kv);
    request.context = options.context;
    request.context_need = options.context_need;
    request.context_origin = options.context_origin;
    request.rewind_slack = speculation_rewind_slack(options);
    request.expert_budget = options.expert_budget;
    request.expert_budget_origin = options.expert_budget_origin;
    request.available = available_memory();
    request.sequences = options.sequences;
    request.sequences_origin = options.sequences_origin;
    std::function<bool(int, int)> holds = options.holds_expert;
    if (options.choose_experts) {
        STORMO_TRY_ASSIGN(holds, choose_held_experts(options, layouts, request));
    }
    // A rank of a distributed run keeps only its share of each main layer's experts. The draft
    // layer's stay whole: rank 0 drafts alone, and no other rank loads that layer.
    if (holds)
        for (auto& layout : layouts)
            if (!is_draft_layer(layout.layer))
                for (size_t e = 0; e < layout.locations.size(); ++e)
                    if (!holds(static_cast<int>(e), static_cast<int>(layout.locations.size()))) layout.locations[e].clear();
    uint64_t total = 0;
    size_t min_slots = 1;
    for (const auto& layout : layouts) total += layout.held_bytes();
    for (int l = 0; l < model_->n_layers(); ++l)
        min_slots = std::max(min_slots, static_cast<size_t>(std::max(0, model_->layer_plan(l).top_k)));
    request.expert_bytes = total;
    STORMO_TRY_ASSIGN(memory_, plan_run_memory(request));

    std::unique_ptr<ExpertStore> store;
    // Experts already in RAM (a GGUF tensor dequantized on load) have no file to stream from.
    const auto in_memory = [&] {
        for (const auto& layout : layouts)
            for (const auto& expert : layout.locations)
                for (const auto& part : expert)
                    if (setup_.source->in_memory(*part.tensor)) return true;
        return false;
    };
    const bool resident = memory_.budget.all || layouts.empty() || in_memory();
    // A resident store reads every expert now; a streaming one reads them as they are routed to.
    meter.expect(resident ? total : 0);
    if (resident) {
        store = make_resident_expert_store(*setup_.source);
    } else {
        std::vector<std::string> files;
        for (const auto& layout : layouts)
            for (const auto& expert : layout.locations)
                for (const auto& part : expert)
                    if (std::find(files.begin(), files.end(), part.tensor->file) == files.end()) files.push_back(part.tensor->file);
        STORMO_TRY_ASSIGN(auto backend, make_pread_backend(files, options.direct_io));
        if (options.wrap_read_backend) backend = options.wrap_read_backend(std::move(backend));
        StreamingStoreOptions so;
        so.budget_bytes = memory_.budget.bytes;
        so.min_slots = min_slots;
        so.eviction = options.eviction;
        so.io_threads = options.io_threads;
        store = make_streaming_expert_store(std::move(backend), so);
    }
    for (auto& layout : layouts) {
        const uint64_t bytes = layout.held_bytes();
        STORMO_TRY(store->add_layer(std::move(layout)));
        if (resident) meter.add(bytes);
    }
    if (auto done = store->finish_loading(); !done) {
        Error e = done.error();
        if (options.expert_budget.kind == SizeSpec::Kind::bytes) e = with_context(e, options.expert_budget_origin);
        return tl::unexpected(e);
    }
    return store;
}

// The memory this process could give every expert, planned as the store's budget is (an asked
// size as it is; auto and all as what the auto budget would be), then the options' choice.
Expected<std::function<bool(int, int)>> Engine::choose_held_experts(const EngineOptions& options,
                                                                    const std::vector<ExpertLayerLayout>& layouts,
                                                                    RunMemoryRequest request) const {
    // The split is of the main layers, which every rank has; a draft layer is rank 0's alone,
    // and takes its part of the memory as every layer does.
    std::vector<ExpertLayerLayout> main;
    uint64_t all_bytes = 0;
    for (const auto& layout : layouts) {
        all_bytes += layout.held_bytes();
        if (!is_draft_layer(layout.layer)) main.push_back(layout);
    }
    ExpertShareRequest share;
    share.layouts = &main;
    for (const auto& layout : main) share.expert_bytes += layout.held_bytes();
    request.expert_bytes = all_bytes;
    if (request.expert_budget.kind != SizeSpec::Kind::bytes) request.expert_budget = SizeSpec{};
    STORMO_TRY_ASSIGN(const RunMemory planned, plan_run_memory(request));
    share.expert_memory = all_bytes == 0 ? planned.budget.bytes
                                         : static_cast<uint64_t>(static_cast<double>(planned.budget.bytes) *
                                                                 static_cast<double>(share.expert_bytes) /
                                                                 static_cast<double>(all_bytes));
    share.memory_reason = planned.budget.reason;
    return options.choose_experts(share);
}

bool Engine::is_draft_layer(int layer) const { return draft_model_ && layer == draft_model_->draft_layer(); }

size_t speculation_rewind_slack(const EngineOptions& options) {
    return options.rewind_slack + (options.speculation.mode != SpeculateMode::off ? options.speculation.draft_max : 0);
}

Expected<std::unique_ptr<Session>> Engine::new_session(size_t capacity, size_t max_block) const {
    if (capacity == 0) return fail(ErrorKind::invalid_argument, "a session needs a context of at least one position");
    const ModelConfig& config = setup_.source->config();
    if (config.has("max_position_embeddings")) {
        STORMO_TRY_ASSIGN(auto max_positions, config.integer("max_position_embeddings"));
        if (capacity > static_cast<size_t>(max_positions))
            return fail(ErrorKind::resource, "a context of " + std::to_string(capacity) +
                                                 " positions exceeds the model's max_position_embeddings (" +
                                                 std::to_string(max_positions) + ", " + config.source() + ")");
    }
    std::lock_guard lock(*page_pool_mutex_);
    auto session = std::make_unique<Session>(*model_, capacity, max_block, rewind_slack_, page_pool_);
    if (page_pool_ == nullptr) page_pool_ = session->page_pool();
    return session;
}

}  // namespace stormo
