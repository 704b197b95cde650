// A would-be plugin that reaches past the SDK into the host: it calls the engine's factory, the
// model directory reader and the expert store's factory, declared here as the host declares
// them. Linked against the SDK library alone (as stormo_add_plugin links every plugin) it must
// fail with undefined references; linked against the host library it links, which shows the
// symbols exist and only the seal keeps them out of reach.
#include <memory>
#include <string>

#include "stormo/error.hpp"

namespace stormo {
struct EngineOptions;
class ModelSource {
public:
    virtual ~ModelSource();
};
class ExpertStore {
public:
    virtual ~ExpertStore() = default;
};
class Engine {
public:
    ~Engine();
    static Expected<std::unique_ptr<Engine>> open(const EngineOptions& options);
};
Expected<std::unique_ptr<ModelSource>> open_model_directory(const std::string& dir);
std::unique_ptr<ExpertStore> make_resident_expert_store(const ModelSource& source);
}  // namespace stormo

extern "C" __attribute__((visibility("default"))) bool stormo_reach_into_the_host(const stormo::EngineOptions& o) {
    auto engine = stormo::Engine::open(o);
    auto source = stormo::open_model_directory("/nonexistent");
    if (!engine || !source) return false;
    return stormo::make_resident_expert_store(**source) != nullptr;
}
