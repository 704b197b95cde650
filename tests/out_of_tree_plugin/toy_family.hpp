#pragma once
// The toy family's parts beyond the plugin entry (toy_plugin.cpp): its synthetic checkpoint and
// its model.
#include <memory>
#include <vector>

#include "stormo/family.hpp"

namespace toy {

// toy_synth.cpp: the "toy-tiny" preset `stormo synth` writes.
std::vector<stormo::SynthPreset> synth_presets();
stormo::Expected<stormo::SynthCheckpoint> synth_checkpoint(const stormo::SynthRequest& request);

// toy_model.cpp: a dense pre-norm decoder built from the family toolkit.
stormo::Expected<std::unique_ptr<stormo::Model>> load_model(stormo::LoadContext& ctx);

}  // namespace toy
