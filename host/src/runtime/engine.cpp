#include "runtime/engine.hpp"

#include "runtime/host_load_context.hpp"

namespace stormo {

Engine::~Engine() {
    // The model's code lives in the family's library: destroy it before the registry unloads it.
    pipeline_.reset();
    model_.reset();
}

Expected<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
    std::unique_ptr<Engine> engine(new Engine());
    auto registry = PluginRegistry::discover(options.search);
    if (!registry) return tl::unexpected(registry.error());
    engine->registry_ = std::move(*registry);

    auto source = open_model_directory(options.model_dir);
    if (!source) return tl::unexpected(source.error());
    engine->source_ = std::move(*source);

    auto family = select_family(engine->registry_, engine->source_->config(),
                                PluginRequest{options.family, options.family_origin});
    if (!family) return tl::unexpected(family.error());
    engine->family_selection_ = *family;

    auto kernels = select_kernels(engine->registry_, detect_cpu_features(),
                                  PluginRequest{options.kernels, options.kernels_origin});
    if (!kernels) return tl::unexpected(kernels.error());
    engine->kernels_selection_ = *kernels;
    engine->table_ = build_kernel_table(*kernels);

    engine->pool_ = std::make_unique<ThreadPool>(options.threads > 0 ? options.threads : physical_core_count());
    engine->store_ = make_resident_expert_store(*engine->source_);

    HostLoadContext context(*engine->source_, *engine->store_, Compute{&engine->table_, engine->pool_.get()});
    auto model = family->plugin->family->load(context);
    if (!model) return tl::unexpected(with_context(model.error(), family->plugin->name + " could not load " + options.model_dir));
    engine->model_ = std::move(*model);
    for (const auto& t : context.loaded()) engine->dense_bytes_ += t.nbytes;
    engine->pipeline_ = std::make_unique<Pipeline>(*engine->model_, *engine->store_);
    return engine;
}

Expected<std::unique_ptr<Session>> Engine::new_session(size_t capacity) const {
    if (capacity == 0) return fail(ErrorKind::invalid_argument, "a session needs a context of at least one position");
    const ModelConfig& config = source_->config();
    if (config.has("max_position_embeddings")) {
        auto max_positions = config.integer("max_position_embeddings");
        if (!max_positions) return tl::unexpected(max_positions.error());
        if (capacity > static_cast<size_t>(*max_positions))
            return fail(ErrorKind::resource, "a context of " + std::to_string(capacity) +
                                                 " positions exceeds the model's max_position_embeddings (" +
                                                 std::to_string(*max_positions) + ")");
    }
    return std::make_unique<Session>(*model_, capacity);
}

}  // namespace stormo
