#pragma once
// What decides the bits of a session's KV, so a saved session or a cached prefix is only ever
// restored where it gives the bits a run that never stopped would have: the checkpoint, its
// config, the engine's code (SDK, family plugin, file format) and its numerics (kernels plugin and
// activation road). Thread count, expert budget and streaming do not change a bit (tested), so they
// are not part of it.
#include <string>

#include "stormo/error.hpp"

namespace stormo {

class Engine;

struct EngineIdentity {
    std::string model;    // the checkpoint: every tensor's name, type, shape, and sampled bytes of each
    std::string config;   // the model's configuration as the engine read it
    std::string engine;   // the SDK version, the family plugin and its version
    std::string kernels;  // the kernels plugin and its version, the activation road
};

// Reads a few bytes of every tensor (a few milliseconds from the page cache; once per run).
Expected<EngineIdentity> engine_identity(const Engine& engine);

// Empty when `saved` matches `running`; else one sentence naming the first part that differs,
// e.g. "it was saved from another model (checkpoint 3f2a..., this one is 9bc0...)".
std::string identity_mismatch(const EngineIdentity& saved, const EngineIdentity& running);

}  // namespace stormo
