#pragma once
// The toy family's synthetic checkpoint: the "toy-tiny" preset `stormo synth` writes, a
// checkpoint toy_model.cpp runs.
#include <vector>

#include "stormo/family.hpp"

namespace toy {

std::vector<stormo::SynthPreset> synth_presets();
stormo::Expected<stormo::SynthCheckpoint> synth_checkpoint(const stormo::SynthRequest& request);

}  // namespace toy
