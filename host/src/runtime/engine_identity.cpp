#include "runtime/engine_identity.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/engine.hpp"
#include "stormo/version.hpp"
#include "util/content_hash.hpp"

namespace stormo {
namespace {

// Bytes read from each end of every tensor: weights drawn from other seeds, or trained further,
// differ there, while reading them stays a few milliseconds for hundreds of tensors.
constexpr uint64_t kSampleBytes = 64;

void hash_json(ContentHash& h, const Json& j) {
    h.update_u64(static_cast<uint64_t>(j.type()));
    switch (j.type()) {
        case Json::Type::null: break;
        case Json::Type::boolean: h.update_u64(*j.as_bool() ? 1 : 0); break;
        case Json::Type::integer: h.update_u64(static_cast<uint64_t>(*j.as_int())); break;
        case Json::Type::number: {
            const double d = *j.as_double();
            uint64_t bits;
            std::memcpy(&bits, &d, sizeof bits);
            h.update_u64(bits);
            break;
        }
        case Json::Type::string: {
            const std::string s = *j.as_string();
            h.update_u64(s.size()).update(s);
            break;
        }
        case Json::Type::array:
            h.update_u64(j.as_array()->size());
            for (const Json& e : *j.as_array()) hash_json(h, e);
            break;
        case Json::Type::object:
            h.update_u64(j.as_object()->size());
            for (const auto& [key, value] : *j.as_object()) {
                h.update_u64(key.size()).update(key);
                hash_json(h, value);
            }
            break;
    }
}

Expected<std::string> checkpoint_hash(const ModelSource& source) {
    ContentHash h;
    std::array<unsigned char, 2 * kSampleBytes> sample{};
    for (const TensorInfo& t : source.tensors()) {
        h.update_u64(t.name.size()).update(t.name);
        h.update_u64(static_cast<uint64_t>(t.dtype)).update_u64(t.shape.size());
        for (const auto d : t.shape) h.update_u64(static_cast<uint64_t>(d));
        h.update_u64(t.nbytes);
        const uint64_t head = std::min(kSampleBytes, t.nbytes);
        const uint64_t tail = std::min(kSampleBytes, t.nbytes - head);
        STORMO_TRY(source.read(t, 0, head, sample.data()));
        if (tail > 0) STORMO_TRY(source.read(t, t.nbytes - tail, tail, sample.data() + head));
        h.update(sample.data(), head + tail);
    }
    return h.hex();
}

std::string short_hash(const std::string& hex) { return hex.substr(0, 12); }

}  // namespace

Expected<EngineIdentity> engine_identity(const Engine& engine) {
    EngineIdentity id;
    STORMO_TRY_ASSIGN(id.model, checkpoint_hash(engine.source()).map_error([](Error e) {
        return with_context(std::move(e), "identifying the model's checkpoint");
    }));
    ContentHash config;
    hash_json(config, engine.source().config().root());
    id.config = config.hex();
    const LoadedPlugin* family = engine.family_plugin();
    id.engine = std::string("stormo SDK ") + kSdkVersion + ", family plugin " + engine.family_name() +
                (family != nullptr ? " " + family->version : std::string());
    const LoadedPlugin* kernels = engine.kernels_plugin();
    id.kernels = "kernels " + engine.kernels_name() + (kernels != nullptr ? " " + kernels->version : std::string()) +
                 ", " + (engine.int8_activations() ? "int8" : "f32") + " activations";
    return id;
}

std::string identity_mismatch(const EngineIdentity& saved, const EngineIdentity& running) {
    if (saved.model != running.model)
        return "it was saved from another model (checkpoint " + short_hash(saved.model) + ", this one is " +
               short_hash(running.model) + ")";
    if (saved.config != running.config)
        return "it was saved with another config.json (config " + short_hash(saved.config) + ", this one is " +
               short_hash(running.config) + ")";
    if (saved.engine != running.engine) return "it was saved by another engine (" + saved.engine + "; this is " + running.engine + ")";
    if (saved.kernels != running.kernels)
        return "it was saved with other kernels (" + saved.kernels + "; this run uses " + running.kernels + ")";
    return {};
}

}  // namespace stormo
